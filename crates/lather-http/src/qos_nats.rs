//! WS-QoS offers over NATS (`[nats]` configured): every `qos-broker` service takes the
//! registrations published on `{subject_prefix}.qos.offers`, and a server with
//! `[qos] broker = "nats"` publishes its own there.

use crate::ServeError;
use crate::offer_broker::{OfferBroker, OfferSender};
use crate::shared_nats::SharedNats;
use crate::state::State;
use futures_util::StreamExt;
use lather_config::{Config, NatsConfig, QosConfig};
use lather_qos::broker::offers_subject;
use std::time::Duration;

/// `[qos] broker_refresh_s`, default filled in.
pub(crate) fn refresh(qos: &QosConfig) -> Duration {
    Duration::from_secs(
        qos.broker_refresh_s
            .as_ref()
            .map_or(lather_config::DEFAULT_BROKER_REFRESH_S, |r| *r.get_ref()),
    )
}

/// Subscribes each broker to the offers subject, and returns where this server's own
/// offers go when `[qos] broker = "nats"`. NATS unreachable →
/// [`ServeError::NatsUnreachable`].
pub(crate) async fn share(
    config: &Config,
    state: &State,
    nats: &NatsConfig,
    shared: &mut SharedNats<'_>,
) -> Result<Option<OfferBroker>, ServeError> {
    let subject = offers_subject(&nats.subject_prefix);
    for service in state.unique_services() {
        let Some(book) = &service.qos_book else {
            continue;
        };
        let (client, url) = shared.client().await?;
        let mut messages = client
            .subscribe(subject.clone())
            .await
            .map_err(|e| ServeError::NatsUnreachable(format!("{url}: {e}")))?;
        let (book, limits, name) = (book.clone(), state.limits, service.name.clone());
        tokio::spawn(async move {
            while let Some(message) = messages.next().await {
                if let Err(fault) =
                    lather_qos::broker::apply(&book, &message.payload, &limits).await
                {
                    tracing::warn!(service = %name, %fault, "QoS broker: an offers message over NATS was refused");
                }
            }
        });
        tracing::info!(service = %service.name, subject, "QoS broker: taking offers over NATS");
    }
    let Some(qos) = config
        .qos
        .as_ref()
        .filter(|q| q.broker.as_ref().is_some_and(|b| b.get_ref() == "nats"))
    else {
        return Ok(None);
    };
    let (client, _) = shared.client().await?;
    Ok(Some(OfferBroker {
        sender: OfferSender::Nats(client, subject),
        refresh: refresh(qos),
    }))
}
