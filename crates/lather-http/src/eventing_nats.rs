//! Event sources whose subscriptions live in NATS (`[nats]` configured, `subscriptions`
//! not `"local"`): at start each connects, loads the shared subscriptions and joins the
//! queue group of its event subject.

use crate::ServeError;
use crate::state::State;
use lather_config::Config;
use lather_eventing::SharedSettings;
use lather_remote::Link;
use std::sync::Arc;

/// Shares every such event source over NATS. NATS unreachable → a `ConnectionRefused`
/// error naming the URL; JetStream KV unavailable → an error naming the service, URL and
/// bucket.
pub(crate) async fn share(config: &Config, state: &State) -> Result<(), ServeError> {
    let Some(nats) = &config.nats else {
        return Ok(());
    };
    let mut link: Option<Arc<Link>> = None;
    for svc in &config.services {
        if !svc.shares_subscriptions(Some(nats)) {
            continue;
        }
        let Some(service) = state.services.get(svc.path.get_ref()) else {
            continue;
        };
        let Some(source) = &service.event_source else {
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
        let settings = SharedSettings {
            bucket: svc.subscription_bucket(nats),
            event_subject: svc.event_subject(nats),
            queue_group: svc.event_queue_group(nats),
        };
        source
            .share_over_nats(client.clone(), &settings)
            .await
            .map_err(|e| ServeError::EventSource {
                service: svc.name.get_ref().clone(),
                reason: format!("NATS at {}: {e}", link.url()),
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
