//! `context-compact`: the configured header blocks out, one reference header in.

use super::{CompactionSettings, Reference};
use crate::client::{RemoteContext, StoreClient};
use crate::contents_digest;
use lather_envelope::{QName, SoapVersion};
use lather_pipeline::{
    Access, BuildEnv, Handler, HandlerFuture, HandlerKind, Message, Patch, SettingsError, Verdict,
};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// Replaces the blocks named in its settings by a reference to a context holding them. A
/// message without them passes unchanged; so does one whose context cannot be made (the
/// store is down): it goes out whole, and the failure is counted and logged.
#[derive(Debug)]
pub struct CompactHandler {
    store: StoreClient,
    names: Vec<QName>,
    ttl: Duration,
    cache_entries: usize,
    /// Digest of the blocks → the context holding them.
    cache: Mutex<HashMap<String, RemoteContext>>,
    compacted: AtomicU64,
    created: AtomicU64,
    passed_whole: AtomicU64,
}

impl CompactHandler {
    /// Compacts `names` into contexts of `store` living `ttl`, remembering `cache_entries`.
    pub fn new(store: StoreClient, names: Vec<QName>, ttl: Duration, cache_entries: usize) -> Self {
        CompactHandler {
            store,
            names,
            ttl,
            cache_entries: cache_entries.max(1),
            cache: Mutex::new(HashMap::new()),
            compacted: AtomicU64::new(0),
            created: AtomicU64::new(0),
            passed_whole: AtomicU64::new(0),
        }
    }

    /// The context for `contents`: remembered while it has a tenth of its life left, else
    /// made anew.
    async fn context_for(&self, contents: &str, digest: &str) -> Option<RemoteContext> {
        let margin = u64::try_from(self.ttl.as_millis() / 10).unwrap_or(u64::MAX);
        let now = crate::mint::now_ms();
        let remembered = self
            .cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(digest)
            .filter(|c| c.expires_at_ms > now.saturating_add(margin))
            .cloned();
        if remembered.is_some() {
            return remembered;
        }
        match self.store.create(contents, self.ttl).await {
            Ok(made) if made.digest == digest => {
                self.created.fetch_add(1, Ordering::Relaxed);
                let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
                if cache.len() >= self.cache_entries {
                    cache.clear();
                }
                cache.insert(digest.to_owned(), made.clone());
                Some(made)
            }
            Ok(made) => {
                tracing::warn!(uri = %made.uri, store = self.store.url(), "the store kept other contents than sent; sending the message whole");
                None
            }
            Err(e) => {
                tracing::warn!(
                    store = self.store.url(),
                    "cannot make a context, sending the message whole: {e}"
                );
                None
            }
        }
    }
}

impl Handler for CompactHandler {
    fn access(&self) -> Access {
        super::header_access(&self.names)
    }

    fn call<'a>(&'a self, message: &'a Message) -> HandlerFuture<'a> {
        Box::pin(async move {
            let envelope = message.envelope();
            if envelope.header(&Reference::name()).is_some() {
                return Verdict::proceed();
            }
            let (blocks, contents) = contents_of(envelope, &self.names);
            if blocks.is_empty() {
                return Verdict::proceed();
            }
            let digest = contents_digest(contents.as_bytes());
            let Some(context) = self.context_for(&contents, &digest).await else {
                self.passed_whole.fetch_add(1, Ordering::Relaxed);
                return Verdict::proceed();
            };
            self.compacted.fetch_add(1, Ordering::Relaxed);
            let mut patch = Patch::new();
            let mut removed: Vec<&QName> = Vec::new();
            for block in &blocks {
                if !removed.contains(&block.name()) {
                    removed.push(block.name());
                    patch = patch.remove_header(block.name().clone());
                }
            }
            let reference = Reference {
                uri: context.uri,
                digest,
            };
            let version: SoapVersion = envelope.version();
            Verdict::Continue(patch.add_header(Reference::name(), reference.to_block(version)))
        })
    }

    fn observations(&self) -> Vec<lather_pipeline::Observation> {
        vec![
            lather_pipeline::Observation::counter(
                "context_compacted",
                "messages whose headers went out as a context reference",
                self.compacted.load(Ordering::Relaxed),
            ),
            lather_pipeline::Observation::counter(
                "context_created",
                "contexts made in the store",
                self.created.load(Ordering::Relaxed),
            ),
            lather_pipeline::Observation::counter(
                "context_sent_whole",
                "messages sent whole because no context could be made",
                self.passed_whole.load(Ordering::Relaxed),
            ),
        ]
    }
}

/// The blocks of `envelope` named in `names`, in document order, and the contents that
/// stand for them: each block on its own, concatenated.
pub(super) fn contents_of<'e>(
    envelope: &'e lather_envelope::Envelope,
    names: &[QName],
) -> (Vec<&'e lather_envelope::HeaderBlock>, String) {
    let blocks: Vec<_> = envelope
        .headers()
        .iter()
        .filter(|b| names.contains(b.name()))
        .collect();
    let contents = blocks
        .iter()
        .map(|b| String::from_utf8_lossy(&envelope.extract_header(b)).into_owned())
        .collect();
    (blocks, contents)
}

/// The `context-compact` kind.
#[derive(Debug, Clone, Copy, Default)]
pub struct CompactKind;

impl HandlerKind for CompactKind {
    type Settings = CompactionSettings;

    fn name(&self) -> &'static str {
        "context-compact"
    }

    fn build(
        &self,
        settings: CompactionSettings,
        _env: &BuildEnv<'_>,
    ) -> Result<Arc<dyn Handler>, SettingsError> {
        let (store, names) = settings.store_and_names()?;
        if settings.ttl_s == Some(0) {
            return Err(SettingsError::key("ttl_s", "must be at least 1"));
        }
        Ok(Arc::new(CompactHandler::new(
            store,
            names,
            Duration::from_secs(settings.ttl_s.unwrap_or(3_600)),
            settings.cache_entries.unwrap_or(1_024),
        )))
    }
}
