//! Context stores whose contexts live in NATS (`[nats]` configured, `contexts` not
//! `"local"`): at start each connects and opens its JetStream KV bucket.

use crate::ServeError;
use crate::shared_nats::{SharedNats, services_where};
use crate::state::State;
use lather_config::{Config, NatsConfig};
use std::sync::Arc;

/// Opens every such store's bucket. NATS unreachable → [`ServeError::NatsUnreachable`]
/// naming the URL; JetStream KV unavailable → [`ServeError::ContextStore`] naming the
/// service, URL and bucket.
pub(crate) async fn share(
    config: &Config,
    state: &State,
    nats: &NatsConfig,
    shared: &mut SharedNats<'_>,
) -> Result<(), ServeError> {
    for (svc, service) in services_where(config, state, |s| s.shares_contexts(Some(nats))) {
        let Some(deferred) = &service.shared_contexts else {
            continue;
        };
        let (client, url) = shared.client().await?;
        let bucket = svc.context_bucket(nats);
        let store = lather_context::JetStreamStore::open(client, &bucket)
            .await
            .map_err(|e| ServeError::ContextStore {
                service: svc.name.get_ref().clone(),
                reason: format!("NATS at {url}: {e}"),
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
