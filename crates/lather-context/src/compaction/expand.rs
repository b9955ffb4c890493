//! `context-expand`: the reference header out, the blocks it stands for back in.

use super::compact::store_client;
use super::{CompactionSettings, Reference};
use crate::client::StoreClient;
use crate::contents_digest;
use crate::protocol::fault::unresolved;
use lather_envelope::{Bytes, Element, Fault, Limits, QName};
use lather_pipeline::{
    Access, BuildEnv, Handler, HandlerFuture, HandlerKind, Message, Parts, Patch, SettingsError,
    Verdict,
};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// Header blocks with their names, in order.
type Blocks = Vec<(QName, Bytes)>;

/// Puts back the blocks a reference header stands for, fetching each context once (then
/// from its cache, while the reference's digest is the one cached). A reference it cannot
/// resolve, whose contents do not match its digest, or that holds a block it may not add
/// is a fault naming the URI — never a silently different message.
#[derive(Debug)]
pub struct ExpandHandler {
    store: StoreClient,
    names: Vec<QName>,
    cache_entries: usize,
    /// URI → (digest, the blocks).
    cache: Mutex<HashMap<String, (String, Blocks)>>,
}

impl ExpandHandler {
    /// Expands references to contexts of `store` into blocks named in `names`.
    pub fn new(store: StoreClient, names: Vec<QName>, cache_entries: usize) -> Self {
        ExpandHandler {
            store,
            names,
            cache_entries: cache_entries.max(1),
            cache: Mutex::new(HashMap::new()),
        }
    }

    async fn blocks_for(&self, reference: &Reference) -> Result<Blocks, Fault> {
        if let Some((digest, blocks)) = self
            .cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&reference.uri)
            && *digest == reference.digest
        {
            return Ok(blocks.clone());
        }
        let unresolved = |why: String| {
            unresolved(
                Some(&reference.uri),
                format!("context {} cannot be expanded: {why}", reference.uri),
            )
        };
        let fetched = self
            .store
            .get(&reference.uri)
            .await
            .map_err(|e| unresolved(e.to_string()))?;
        let contents = fetched.contents.unwrap_or_default();
        if contents_digest(contents.as_bytes()) != reference.digest {
            return Err(unresolved(
                "its stored contents do not match the message's digest (changed or tampered with)"
                    .to_owned(),
            ));
        }
        let blocks = split(&contents).map_err(unresolved)?;
        if let Some((name, _)) = blocks.iter().find(|(name, _)| !self.names.contains(name)) {
            return Err(unresolved(format!(
                "it holds {{{}}}{}, which this handler's headers setting does not list",
                name.namespace(),
                name.local()
            )));
        }
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        if cache.len() >= self.cache_entries {
            cache.clear();
        }
        cache.insert(
            reference.uri.clone(),
            (reference.digest.clone(), blocks.clone()),
        );
        Ok(blocks)
    }
}

/// The elements of `contents`, each as it stands (they declare their namespaces).
fn split(contents: &str) -> Result<Blocks, String> {
    let wrapped = format!("<w>{contents}</w>");
    let root = Element::parse(wrapped.as_bytes(), &Limits::default())
        .map_err(|f| format!("its contents are not XML: {}", f.reason()))?;
    root.elements()
        .map(|e| {
            let bytes = Bytes::copy_from_slice(&wrapped.as_bytes()[e.range()]);
            Ok((e.name().clone(), bytes))
        })
        .collect()
}

impl Handler for ExpandHandler {
    fn access(&self) -> Access {
        let parts = self
            .names
            .iter()
            .fold(Parts::none().header(Reference::name()), |p, n| {
                p.header(n.clone())
            });
        Access::read_write(parts)
    }

    fn call<'a>(&'a self, message: &'a Message) -> HandlerFuture<'a> {
        Box::pin(async move {
            let reference = match Reference::find(message.envelope(), &Limits::default()) {
                None => return Verdict::proceed(),
                Some(Err(why)) => {
                    return Verdict::Fault(unresolved(None, why));
                }
                Some(Ok(reference)) => reference,
            };
            let blocks = match self.blocks_for(&reference).await {
                Ok(blocks) => blocks,
                Err(fault) => return Verdict::Fault(fault),
            };
            let patch = blocks.into_iter().fold(
                Patch::new().remove_header(Reference::name()),
                |p, (name, block)| p.add_header(name, block),
            );
            Verdict::Continue(patch)
        })
    }
}

/// The `context-expand` kind.
#[derive(Debug, Clone, Copy, Default)]
pub struct ExpandKind;

impl HandlerKind for ExpandKind {
    type Settings = CompactionSettings;

    fn name(&self) -> &'static str {
        "context-expand"
    }

    fn build(
        &self,
        settings: CompactionSettings,
        _env: &BuildEnv<'_>,
    ) -> Result<Arc<dyn Handler>, SettingsError> {
        let store = store_client(&settings)?;
        let names = settings
            .header_names()
            .map_err(|why| SettingsError::key("headers", why))?;
        if settings.ttl_s.is_some() {
            return Err(SettingsError::key(
                "ttl_s",
                "belongs to context-compact (the side that makes contexts)",
            ));
        }
        Ok(Arc::new(ExpandHandler::new(
            store,
            names,
            settings.cache_entries.unwrap_or(1_024),
        )))
    }
}
