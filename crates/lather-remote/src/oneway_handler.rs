//! `OnewayRemoteHandler`: a oneway handler stage handed to workers through a JetStream
//! work-queue stream instead of waited on.

use crate::frame::CallRequest;
use crate::oneway_batcher::{OnewayBatcher, Target};
pub use crate::oneway_counters::OnewayCounters;
use crate::oneway_stream::{ensure_stream, oneway_message_id};
use crate::stand_in::StandIn;
use crate::{Link, request_for};
use async_nats::jetstream::{self, context::PublishErrorKind};
use lather_config::Fallback;
use lather_pipeline::{
    Access, Handler, HandlerFuture, Message, Observation, Patch, Verdict, current_attempt,
};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tracing::Instrument;

/// Stands for the oneway handler `name` and hands each message to the workers: the request
/// frame (the same frame as request/reply, with no deadline: the worker's own timeout bounds
/// the handler) is published to `{prefix}.oneway.{name}` in the work-queue stream with the
/// header `Nats-Msg-Id: {message id hex}.{name}`, and the call ends when JetStream
/// acknowledges it. A worker acknowledges the message after handling it, so delivery is
/// at-least-once; the id lets a handler drop repeats.
///
/// A publish that fails follows the `fallback`: run the local instance, or a
/// `HandlerFailed` fault (which the engine counts as a oneway failure).
pub struct OnewayRemoteHandler {
    stand: StandIn,
    timeout: Duration,
    jetstream: OnceLock<jetstream::Context>,
    stream_ready: AtomicBool,
    counters: Arc<OnewayCounters>,
    batcher: OnceLock<OnewayBatcher>,
}

impl std::fmt::Debug for OnewayRemoteHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OnewayRemoteHandler")
            .field("stand_in", &self.stand)
            .finish_non_exhaustive()
    }
}

impl OnewayRemoteHandler {
    /// The oneway remote stand-in for `local`, configured as `name`, through `link`;
    /// `timeout` bounds each hand-over (publish and acknowledgement).
    pub fn new(
        name: &str,
        local: Arc<dyn Handler>,
        link: Arc<Link>,
        fallback: Fallback,
        timeout: Duration,
    ) -> Self {
        OnewayRemoteHandler {
            stand: StandIn::new(
                name,
                local,
                link.clone(),
                link.oneway_subject(name),
                fallback,
            ),
            timeout,
            jetstream: OnceLock::new(),
            stream_ready: AtomicBool::new(false),
            counters: Arc::default(),
            batcher: OnceLock::new(),
        }
    }

    /// The counters.
    pub fn counters(&self) -> &OnewayCounters {
        &self.counters
    }

    /// Hands `message` over to the work queue, or runs the fallback.
    async fn hand_over(&self, message: &Message) -> Verdict {
        match self.publish(message).await {
            Ok(()) => {
                self.counters.published.fetch_add(1, Ordering::Relaxed);
                Verdict::Continue(Patch::new())
            }
            Err(why) => {
                self.counters.failed.fetch_add(1, Ordering::Relaxed);
                self.stand
                    .fall_back(message, "oneway remote handler", why)
                    .await
            }
        }
    }

    async fn publish(&self, message: &Message) -> Result<(), String> {
        let Some(client) = self.stand.link.available() else {
            return Err("NATS is not connected".to_owned());
        };
        let js = self.jetstream.get_or_init(|| {
            jetstream::ContextBuilder::new()
                .timeout(self.timeout)
                .build(client.clone())
        });
        if !self.stream_ready.load(Ordering::Acquire) {
            ensure_stream(&self.stand.link, js)
                .await
                .map_err(|e| e.to_string())?;
            self.stream_ready.store(true, Ordering::Release);
        }
        // No deadline: the message may wait in the stream for a worker.
        let mut request = request_for(
            &self.stand.name,
            &self.stand.access,
            message,
            current_attempt(),
            u64::MAX,
        );
        // The hand-over is the exported call span; the worker's run continues its context.
        let span =
            lather_pipeline::telemetry::remote_call_span(&self.stand.name, &self.stand.subject);
        if let Some(traceparent) = lather_pipeline::telemetry::traceparent_of(&span) {
            request.trace = Some(traceparent);
        }
        self.queue(js, request).instrument(span).await
    }

    /// Queues `request` on the work queue (batched with others when `[nats]` batches).
    async fn queue(&self, js: &jetstream::Context, request: CallRequest) -> Result<(), String> {
        let frame = request
            .encode()
            .map_err(|e| format!("the message cannot be framed: {e}"))?;
        if let Some(cut) = self.stand.link.cutoffs() {
            let batcher = self.batcher.get_or_init(|| {
                let target = Target {
                    js: js.clone(),
                    subject: self.stand.subject.clone(),
                    name: self.stand.name.clone(),
                    counters: self.counters.clone(),
                };
                OnewayBatcher::start(target, cut)
            });
            return batcher.hand_over(request.id, frame).await.map_err(|e| {
                if e.stream_missing {
                    // Deleted meanwhile: create it again on the next message.
                    self.stream_ready.store(false, Ordering::Release);
                }
                e.why
            });
        }
        let mut headers = async_nats::HeaderMap::new();
        headers.insert(
            async_nats::header::NATS_MESSAGE_ID,
            oneway_message_id(request.id, &self.stand.name).as_str(),
        );
        let sent = js
            .publish_with_headers(self.stand.subject.clone(), headers, frame)
            .await;
        let acked = match sent {
            Ok(ack) => ack.await,
            Err(e) => Err(e),
        };
        match acked {
            Ok(ack) => {
                if ack.duplicate {
                    tracing::debug!(handler = %self.stand.name, id = %format!("{:032x}", request.id), "already queued");
                }
                Ok(())
            }
            Err(e) => {
                if e.kind() == PublishErrorKind::StreamNotFound {
                    // Deleted meanwhile: create it again on the next message.
                    self.stream_ready.store(false, Ordering::Release);
                }
                Err(format!("JetStream publish failed: {e}"))
            }
        }
    }
}

impl Handler for OnewayRemoteHandler {
    fn access(&self) -> Access {
        self.stand.access.clone()
    }

    fn call<'a>(&'a self, message: &'a Message) -> HandlerFuture<'a> {
        Box::pin(self.hand_over(message))
    }

    fn observations(&self) -> Vec<Observation> {
        let mut out = self.stand.local.observations();
        let figures = [
            (
                "remote_oneway_published",
                "Oneway messages a remote handler handed to the JetStream work queue",
                &self.counters.published,
            ),
            (
                "remote_oneway_failed",
                "Oneway messages that could not be handed over and went to the fallback",
                &self.counters.failed,
            ),
            (
                "remote_oneway_batches",
                "JetStream messages that carried several oneway hand-offs ([nats] batch_max_items)",
                &self.counters.batches,
            ),
            (
                "remote_oneway_batched",
                "Oneway hand-offs that went in such a message",
                &self.counters.batched,
            ),
        ];
        out.extend(figures.into_iter().map(|(name, help, counter)| {
            Observation::counter(name, help, counter.load(Ordering::Relaxed))
        }));
        out
    }
}
