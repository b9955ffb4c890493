//! Context stores whose contexts live in NATS (`[nats]` configured, `contexts` not
//! `"local"`): at start each connects and opens its JetStream KV bucket.

use crate::ServeError;
use crate::state::State;
use lather_config::Config;
use lather_remote::Link;
use std::sync::Arc;

/// Opens every such store's bucket. NATS unreachable → [`ServeError::NatsUnreachable`]
/// naming the URL; JetStream KV unavailable → [`ServeError::ContextStore`] naming the
/// service, URL and bucket.
pub(crate) async fn share(config: &Config, state: &State) -> Result<(), ServeError> {
    let Some(nats) = &config.nats else {
        return Ok(());
    };
    let mut link: Option<Arc<Link>> = None;
    for svc in &config.services {
        if !svc.shares_contexts(Some(nats)) {
            continue;
        }
        let Some(deferred) = state
            .services
            .get(svc.path.get_ref())
            .and_then(|s| s.shared_contexts.clone())
        else {
            continue;
        };
        let link = link.get_or_insert_with(|| {
            state
                .link
                .clone()
                .unwrap_or_else(|| Arc::new(Link::new(nats)))
        });
        link.connect()
            .await
            .map_err(|e| ServeError::NatsUnreachable(e.to_string()))?;
        let Some(client) = link.client() else {
            return Err(ServeError::NatsUnreachable(format!(
                "{}: no client after connecting",
                link.url()
            )));
        };
        let bucket = svc.context_bucket(nats);
        let store = lather_context::JetStreamStore::open(client.clone(), &bucket)
            .await
            .map_err(|e| ServeError::ContextStore {
                service: svc.name.get_ref().clone(),
                reason: format!("NATS at {}: {e}", link.url()),
            })?;
        deferred.set(Arc::new(store));
        tracing::info!(
            service = svc.name.get_ref(),
            bucket,
            "contexts shared over NATS"
        );
    }
    Ok(())
}
