//! Asynchronous requests: a request whose WS-Addressing `ReplyTo` is not anonymous is
//! accepted at once with `202 Accepted`, kept (in a redb file with `async_store`), run
//! through the service later, and its answer POSTed to the `ReplyTo` with `RelatesTo` —
//! retried, and delivered after a restart. A client that cannot take callbacks names
//! `urn:lather:async:poll` and fetches the answer with `GET {path}?reply={MessageID}`.

mod deliver;
pub(crate) mod job;
mod store;

use crate::respond::{self, HttpResponse};
use bytes::Bytes;
use http::StatusCode;
use job::{Job, POLL_ADDRESS};
use lather_envelope::{Element, Envelope, Fault, FaultKind, Limits, WSA04_NS, WSA10_NS};
use lather_eventing::DeliveryPolicy;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use store::JobStore;
use tokio::sync::mpsc;

pub(crate) use deliver::post;
pub(crate) use store::JobStoreError;

/// One service's asynchronous replies: the kept jobs, the bound, the delivery policy, and
/// the queue to its worker.
#[derive(Debug)]
pub(crate) struct AsyncReplies {
    store: JobStore,
    /// Jobs accepted and not yet delivered, fetched or expired.
    pending: AtomicUsize,
    max_pending: usize,
    /// Delivery attempts per answer.
    pub(crate) attempts: u32,
    /// How long a polled answer is kept.
    pub(crate) keep: Duration,
    /// Which `ReplyTo` addresses are delivered to.
    pub(crate) policy: DeliveryPolicy,
    queue: mpsc::UnboundedSender<String>,
}

impl AsyncReplies {
    /// The replies of a service with `settings`, delivering under `policy`; the receiver
    /// is the worker's. Opening the store blocks.
    pub(crate) fn open(
        settings: &lather_config::AsyncReplies,
        policy: DeliveryPolicy,
    ) -> Result<(Self, mpsc::UnboundedReceiver<String>), JobStoreError> {
        let store = match &settings.store {
            Some(path) => JobStore::open(std::path::Path::new(path))?,
            None => JobStore::memory(),
        };
        let kept = store.load()?.len();
        let (queue, jobs) = mpsc::unbounded_channel();
        Ok((
            AsyncReplies {
                store,
                pending: AtomicUsize::new(kept),
                max_pending: settings.max_pending,
                attempts: settings.attempts.max(1),
                keep: settings.keep,
                policy,
                queue,
            },
            jobs,
        ))
    }

    /// Takes `envelope` for an asynchronous answer when its `ReplyTo` is not anonymous:
    /// `202` once it is kept (or already was: a resent message is not run twice); `None`
    /// when it is to be answered on the connection.
    pub(crate) async fn intake(
        &self,
        envelope: &Envelope,
        action: Option<&str>,
    ) -> Result<Option<HttpResponse>, Fault> {
        let Some((wsa_ns, reply_to)) = reply_to(envelope)? else {
            return Ok(None);
        };
        let invalid = |why: String| Fault::with_reason(FaultKind::InvalidAddressingHeader, why);
        let id = envelope
            .header(&lather_envelope::QName::new(wsa_ns, "MessageID"))
            .and_then(|block| envelope.header_text(block))
            .map(|id| id.trim().to_owned())
            .filter(|id| !id.is_empty())
            .ok_or_else(|| {
                Fault::with_reason(
                    FaultKind::MessageAddressingHeaderRequired,
                    "a request with a ReplyTo needs a MessageID, which its answer relates to",
                )
            })?;
        if reply_to != POLL_ADDRESS {
            if !reply_to.starts_with("http://") {
                return Err(invalid(format!(
                    "ReplyTo {reply_to:?}: answers go to http:// addresses, or to {POLL_ADDRESS} to be fetched"
                )));
            }
            self.policy
                .check_address(&reply_to)
                .map_err(|refused| invalid(format!("ReplyTo refused: {refused} (reply_allow)")))?;
        }
        let store = self.store.clone();
        let known = {
            let id = id.clone();
            blocking(move || store.get(&id)).await?
        };
        if known.is_some() {
            return Ok(Some(accepted(envelope.version())));
        }
        if self.pending.load(Ordering::Relaxed) >= self.max_pending {
            return Err(Fault::with_reason(
                FaultKind::ServerBusy,
                format!(
                    "{} asynchronous requests are waiting (async_max_pending); retry later",
                    self.max_pending
                ),
            ));
        }
        let request = String::from_utf8(envelope.as_bytes().to_vec())
            .map_err(|_| Fault::with_reason(FaultKind::NotUtf8, "the request is not UTF-8"))?;
        let job = Job {
            id: id.clone(),
            reply_to,
            wsa_ns: wsa_ns.to_owned(),
            soap: if envelope.version() == lather_envelope::SoapVersion::V11 {
                11
            } else {
                12
            },
            action: action.map(str::to_owned),
            request,
            answer: None,
            answered_at: None,
        };
        let store = self.store.clone();
        blocking(move || store.put(&job)).await?;
        self.pending.fetch_add(1, Ordering::Relaxed);
        // The worker lives as long as the server; if it is gone the job waits in the store
        // for the next start.
        let _ = self.queue.send(id);
        Ok(Some(accepted(envelope.version())))
    }

    /// `GET {path}?reply=ID`: the answer kept for a polling client (200 or the fault's
    /// status, then forgotten), `202` while it is being made, `404` for an id not kept
    /// for polling.
    pub(crate) async fn poll(&self, id: &str) -> HttpResponse {
        let store = self.store.clone();
        let owned = id.to_owned();
        let job = blocking(move || store.get(&owned)).await.ok().flatten();
        match job {
            Some(job) if job.is_polled() => match &job.answer {
                None => respond::with_type(
                    StatusCode::ACCEPTED,
                    "text/plain; charset=utf-8",
                    Bytes::from_static(b"the answer is being made\n"),
                ),
                Some(answer) => {
                    self.forget(&job.id).await;
                    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::OK);
                    respond::soap(status, job.version(), Bytes::from(answer.body.clone()))
                }
            },
            _ => respond::with_type(
                StatusCode::NOT_FOUND,
                "text/plain; charset=utf-8",
                Bytes::from_static(b"no answer is kept for polling under this MessageID\n"),
            ),
        }
    }

    /// Every job kept (at the worker's start).
    pub(crate) async fn kept(&self) -> Result<Vec<Job>, Fault> {
        let store = self.store.clone();
        blocking(move || store.load()).await
    }

    /// The job `id`, if kept.
    pub(crate) async fn job(&self, id: &str) -> Option<Job> {
        let store = self.store.clone();
        let id = id.to_owned();
        blocking(move || store.get(&id)).await.ok().flatten()
    }

    /// Keeps `job` as it is now (its answer made).
    pub(crate) async fn save(&self, job: Job) -> Result<(), Fault> {
        let store = self.store.clone();
        blocking(move || store.put(&job)).await
    }

    /// Forgets the job `id` (delivered, given up, fetched or expired).
    pub(crate) async fn forget(&self, id: &str) {
        let store = self.store.clone();
        let owned = id.to_owned();
        match blocking(move || store.remove(&owned)).await {
            Ok(()) => {
                let _ = self
                    .pending
                    .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
            }
            Err(fault) => tracing::warn!(id, %fault, "an asynchronous job could not be removed"),
        }
    }

    /// Jobs accepted and not yet done.
    pub(crate) fn pending(&self) -> usize {
        self.pending.load(Ordering::Relaxed)
    }
}

/// The `ReplyTo` address of `envelope` and its WS-Addressing namespace, when it names one
/// that is not anonymous or none.
fn reply_to(envelope: &Envelope) -> Result<Option<(&'static str, String)>, Fault> {
    for ns in [WSA10_NS, WSA04_NS] {
        let Some(block) = envelope.header(&lather_envelope::QName::new(ns, "ReplyTo")) else {
            continue;
        };
        let epr = Element::parse(&envelope.extract_header(block), &Limits::default())?;
        let address = epr
            .child(&lather_envelope::QName::new(ns, "Address"))
            .map(|a| a.text().trim().to_owned())
            .unwrap_or_default();
        let back_channel = [
            format!("{ns}/anonymous"),
            format!("{ns}/none"),
            format!("{ns}/role/anonymous"),
        ];
        if address.is_empty() || back_channel.contains(&address) {
            return Ok(None);
        }
        return Ok(Some((ns, address)));
    }
    Ok(None)
}

fn accepted(version: lather_envelope::SoapVersion) -> HttpResponse {
    respond::soap(StatusCode::ACCEPTED, version, Bytes::new())
}

/// Runs store work on a blocking thread; its failure is an `Internal` fault.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, JobStoreError> + Send + 'static,
) -> Result<T, Fault> {
    let internal = |why: String| Fault::with_reason(FaultKind::Internal, why);
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| internal(format!("the asynchronous reply store failed: {e}")))?
        .map_err(|e| {
            tracing::error!("{e}");
            internal("the asynchronous reply store failed".to_owned())
        })
}
