//! Event sources whose subscriptions live in NATS (`[nats]` configured, `subscriptions`
//! not `"local"`): at start each connects, loads the shared subscriptions and joins the
//! queue group of its event subject.

use crate::ServeError;
use crate::shared_nats::{SharedNats, services_where};
use crate::state::State;
use lather_config::{Config, NatsConfig};
use lather_eventing::SharedSettings;

/// Shares every such event source over NATS. NATS unreachable → a `ConnectionRefused`
/// error naming the URL; JetStream KV unavailable → an error naming the service, URL and
/// bucket.
pub(crate) async fn share(
    config: &Config,
    state: &State,
    nats: &NatsConfig,
    shared: &mut SharedNats<'_>,
) -> Result<(), ServeError> {
    for (svc, service) in services_where(config, state, |s| s.shares_subscriptions(Some(nats))) {
        let Some(source) = &service.event_source else {
            continue;
        };
        let (client, url) = shared.client().await?;
        let settings = SharedSettings {
            bucket: svc.subscription_bucket(nats),
            event_subject: svc.event_subject(nats),
            queue_group: svc.event_queue_group(nats),
        };
        source
            .share_over_nats(client, &settings)
            .await
            .map_err(|e| ServeError::EventSource {
                service: svc.name.get_ref().clone(),
                reason: format!("NATS at {url}: {e}"),
            })?;
        tracing::info!(
            service = svc.name.get_ref(),
            bucket = settings.bucket,
            subject = settings.event_subject,
            "subscriptions shared over NATS"
        );
    }
    Ok(())
}
