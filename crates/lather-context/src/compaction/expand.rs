//! `context-expand`: the reference header out, the blocks it stands for back in.

use super::{CompactionSettings, Reference};
use crate::client::StoreClient;
use crate::contents_digest;
use crate::protocol::fault::unresolved;
use lather_envelope::{Bytes, Element, Fault, Limits, QName};
use lather_pipeline::{
    Access, BuildEnv, Handler, HandlerFuture, HandlerKind, Message, Patch, SettingsError, Verdict,
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
        super::header_access(&self.names)
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
        let (store, names) = settings.store_and_names()?;
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

#[cfg(test)]
mod tests {
    use super::super::compact::contents_of;
    use super::*;
    use lather_envelope::Envelope;
    use proptest::prelude::*;

    const WSA: &str = "http://www.w3.org/2005/08/addressing";

    /// A header block: a WS-Addressing name, an optional prefix of its own, text with
    /// characters that need escaping, and an optional child in another namespace.
    fn block() -> impl Strategy<Value = String> {
        (
            prop::sample::select(vec!["To", "From", "ReplyTo", "FaultTo", "Action"]),
            any::<bool>(),
            "[a-z<&>\"' ]{0,12}",
            prop::option::of("[a-z]{1,6}"),
        )
            .prop_map(|(local, own_prefix, text, child)| {
                let text = text
                    .replace('&', "&amp;")
                    .replace('<', "&lt;")
                    .replace('>', "&gt;");
                let child = child.map_or_else(String::new, |c| {
                    format!(r#"<x:{c} xmlns:x="urn:x" x:a="q:{c}">{c}</x:{c}>"#)
                });
                if own_prefix {
                    format!(r#"<a:{local} xmlns:a="{WSA}">{text}{child}</a:{local}>"#)
                } else {
                    format!("<wsa:{local}>{text}{child}</wsa:{local}>")
                }
            })
    }

    proptest! {
        /// What the compactor stores for any set of blocks, split again by the expander,
        /// gives back each block exactly as it stood on its own, in order.
        #[test]
        fn compacted_contents_split_back_into_the_same_blocks(
            blocks in prop::collection::vec(block(), 1..6),
            others in "[a-z]{0,5}",
        ) {
            let header: String = blocks.concat();
            let text = format!(
                r#"<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope" xmlns:wsa="{WSA}" xmlns:q="urn:q"><s:Header><o:Other xmlns:o="urn:o">{others}</o:Other>{header}</s:Header><s:Body><m:x xmlns:m="urn:m"/></s:Body></s:Envelope>"#
            );
            let envelope = Envelope::parse(Bytes::from(text), &Limits::default()).unwrap();
            let names = super::super::default_headers();
            let (found, contents) = contents_of(&envelope, &names);
            prop_assert_eq!(found.len(), blocks.len());
            let split = split(&contents).unwrap();
            prop_assert_eq!(split.len(), found.len());
            for ((name, bytes), block) in split.iter().zip(&found) {
                prop_assert_eq!(name, block.name());
                prop_assert_eq!(bytes, &envelope.extract_header(block));
                // Each standing block parses on its own, with its QName values resolvable.
                let alone = Element::parse(bytes, &Limits::default()).unwrap();
                prop_assert_eq!(alone.name(), block.name());
            }
        }
    }
}
