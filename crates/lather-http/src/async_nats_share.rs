//! Services whose asynchronous requests sit in JetStream (`async_replies` with `[nats]`
//! and no `async_store`): at start each opens its work-queue stream and answers' bucket.

use crate::ServeError;
use crate::async_reply::shared::SharedJobs;
use crate::shared_nats::{SharedNats, services_where};
use crate::state::State;
use lather_config::{Config, NatsConfig};

/// Opens every such service's queue. NATS unreachable → [`ServeError::NatsUnreachable`];
/// JetStream unavailable → [`ServeError::AsyncQueue`] naming the service and the URL.
pub(crate) async fn share(
    config: &Config,
    state: &State,
    nats: &NatsConfig,
    shared: &mut SharedNats<'_>,
) -> Result<(), ServeError> {
    for (svc, service) in services_where(config, state, |s| s.shares_async_replies(Some(nats))) {
        let Some(replies) = &service.async_replies else {
            continue;
        };
        let (client, url) = shared.client().await?;
        let names = svc.async_names(nats);
        let jobs = SharedJobs::open(client, names.clone(), replies.max_pending(), replies.keep)
            .await
            .map_err(|e| ServeError::AsyncQueue {
                service: svc.name.get_ref().clone(),
                reason: format!("NATS at {url}: {e}"),
            })?;
        replies.share(jobs);
        tracing::info!(
            service = svc.name.get_ref(),
            stream = names.stream,
            bucket = names.bucket,
            "asynchronous requests queued in JetStream"
        );
    }
    Ok(())
}
