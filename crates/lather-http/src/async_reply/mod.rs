//! Asynchronous requests: a request whose WS-Addressing `ReplyTo` is not anonymous is
//! accepted at once with `202 Accepted`, kept (in a redb file with `async_store`), run
//! through the service later, and its answer POSTed to the `ReplyTo` with `RelatesTo` —
//! retried, and delivered after a restart. A client that cannot take callbacks names
//! `urn:lather:async:poll` and fetches the answer with `GET {path}?reply={MessageID}`.

mod deliver;
pub(crate) mod job;
pub(crate) mod shared;
mod store;

use crate::respond::{self, HttpResponse};
use bytes::Bytes;
use http::StatusCode;
use job::{Job, POLL_ADDRESS};
use lather_envelope::{Element, Envelope, Fault, FaultKind, Limits, WSA04_NS, WSA10_NS};
use lather_eventing::DeliveryPolicy;
use shared::{SharedError, SharedJobs};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use store::JobStore;
use tokio::sync::mpsc;

pub(crate) use deliver::post;
pub(crate) use store::JobStoreError;

/// The longest MessageID an asynchronous request may have: it becomes a key of the job
/// store (with NATS, part of a subject, whose length the server bounds).
pub(crate) const MAX_MESSAGE_ID_BYTES: usize = 256;

/// One service's asynchronous replies: where pending requests wait, the bound, the delivery
/// policy.
#[derive(Debug)]
pub(crate) struct AsyncReplies {
    kept: Kept,
    max_pending: usize,
    /// Delivery attempts per answer.
    pub(crate) attempts: u32,
    /// How long a polled answer is kept.
    pub(crate) keep: Duration,
    /// Which `ReplyTo` addresses are delivered to.
    pub(crate) policy: DeliveryPolicy,
}

/// Where a service's pending requests wait.
#[derive(Debug)]
enum Kept {
    /// In this process (memory or the redb file `async_store`), worked by its own worker.
    Local {
        store: JobStore,
        /// Jobs accepted and not yet delivered, fetched or expired.
        pending: AtomicUsize,
        queue: mpsc::UnboundedSender<String>,
    },
    /// In JetStream, shared by every node serving the service; set once NATS is connected.
    Shared(Box<OnceLock<SharedJobs>>),
}

impl AsyncReplies {
    /// The replies of a service with `settings`, delivering under `policy`, kept in this
    /// process; the receiver is the worker's. Opening the store blocks.
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
        let kept = Kept::Local {
            store,
            pending: AtomicUsize::new(kept),
            queue,
        };
        Ok((Self::with(kept, settings, policy), jobs))
    }

    /// The replies of a service with `settings` kept in JetStream, once
    /// [`AsyncReplies::share`] hands them the queue.
    pub(crate) fn shared(settings: &lather_config::AsyncReplies, policy: DeliveryPolicy) -> Self {
        Self::with(Kept::Shared(Box::default()), settings, policy)
    }

    fn with(kept: Kept, settings: &lather_config::AsyncReplies, policy: DeliveryPolicy) -> Self {
        AsyncReplies {
            kept,
            max_pending: settings.max_pending,
            attempts: settings.attempts.max(1),
            keep: settings.keep,
            policy,
        }
    }

    /// Hands shared replies their JetStream queue (once; later calls do nothing).
    pub(crate) fn share(&self, jobs: SharedJobs) {
        if let Kept::Shared(cell) = &self.kept {
            let _ = cell.set(jobs);
        }
    }

    /// The JetStream queue, when the replies are shared and it is open.
    pub(crate) fn shared_jobs(&self) -> Option<&SharedJobs> {
        match &self.kept {
            Kept::Shared(cell) => cell.get(),
            Kept::Local { .. } => None,
        }
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
        if id.len() > MAX_MESSAGE_ID_BYTES {
            return Err(invalid(format!(
                "a MessageID of {} bytes; an asynchronous request's is at most {MAX_MESSAGE_ID_BYTES}",
                id.len()
            )));
        }
        if reply_to != POLL_ADDRESS {
            if !(reply_to.starts_with("http://") || reply_to.starts_with("https://")) {
                return Err(invalid(format!(
                    "ReplyTo {reply_to:?}: answers go to http:// or https:// addresses, or to {POLL_ADDRESS} to be fetched"
                )));
            }
            self.policy
                .check_address(&reply_to)
                .map_err(|refused| invalid(format!("ReplyTo refused: {refused} (reply_allow)")))?;
        }
        let request = String::from_utf8(envelope.as_bytes().to_vec())
            .map_err(|_| Fault::with_reason(FaultKind::NotUtf8, "the request is not UTF-8"))?;
        let job = Job {
            id,
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
        match &self.kept {
            Kept::Local {
                store,
                pending,
                queue,
            } => {
                let known = {
                    let (store, id) = (store.clone(), job.id.clone());
                    blocking(move || store.get(&id)).await?
                };
                if known.is_none() {
                    if pending.load(Ordering::Relaxed) >= self.max_pending {
                        return Err(self.busy());
                    }
                    let id = job.id.clone();
                    let store = store.clone();
                    blocking(move || store.put(&job)).await?;
                    pending.fetch_add(1, Ordering::Relaxed);
                    // The worker lives as long as the server; if it is gone the job waits
                    // in the store for the next start.
                    let _ = queue.send(id);
                }
            }
            Kept::Shared(cell) => {
                let jobs = cell
                    .get()
                    .ok_or_else(|| unreachable_queue("the queue is not open yet".to_owned()))?;
                // A request already kept (polled and waiting, or answered and being
                // delivered) is the same message sent again: not queued a second time, and
                // its kept answer not overwritten.
                let known = jobs
                    .kept(&job.id)
                    .await
                    .map_err(|e| unreachable_queue(e.to_string()))?;
                if known.is_some() {
                    return Ok(Some(accepted(envelope.version())));
                }
                if job.is_polled() {
                    // Kept first, so a poll knows it from any node.
                    jobs.keep(&job)
                        .await
                        .map_err(|e| unreachable_queue(e.to_string()))?;
                }
                match jobs.enqueue(&job).await {
                    Ok(_) => {}
                    Err(SharedError::Full { .. }) => {
                        if job.is_polled() {
                            jobs.forget(&job.id).await;
                        }
                        return Err(self.busy());
                    }
                    Err(e) => return Err(unreachable_queue(e.to_string())),
                }
            }
        }
        Ok(Some(accepted(envelope.version())))
    }

    fn busy(&self) -> Fault {
        Fault::with_reason(
            FaultKind::ServerBusy,
            format!(
                "{} asynchronous requests are waiting (async_max_pending); retry later",
                self.max_pending
            ),
        )
    }

    /// `GET {path}?reply=ID`: the answer kept for a polling client (200 or the fault's
    /// status, then forgotten), `202` while it is being made, `404` for an id not kept
    /// for polling.
    pub(crate) async fn poll(&self, id: &str) -> HttpResponse {
        let kept = if id.len() > MAX_MESSAGE_ID_BYTES {
            None
        } else {
            self.job(id).await
        };
        match kept {
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

    /// Every job kept in this process (at the worker's start; none when shared).
    pub(crate) async fn kept(&self) -> Result<Vec<Job>, Fault> {
        match &self.kept {
            Kept::Local { store, .. } => {
                let store = store.clone();
                blocking(move || store.load()).await
            }
            Kept::Shared(_) => Ok(Vec::new()),
        }
    }

    /// The job `id`, if kept (when shared: a polled request, or an answer made).
    pub(crate) async fn job(&self, id: &str) -> Option<Job> {
        match &self.kept {
            Kept::Local { store, .. } => {
                let store = store.clone();
                let id = id.to_owned();
                blocking(move || store.get(&id)).await.ok().flatten()
            }
            Kept::Shared(cell) => match cell.get()?.kept(id).await {
                Ok(job) => job,
                Err(e) => {
                    tracing::warn!(id, "{e}");
                    None
                }
            },
        }
    }

    /// Keeps `job` as it is now (its answer made).
    pub(crate) async fn save(&self, job: Job) -> Result<(), Fault> {
        match &self.kept {
            Kept::Local { store, .. } => {
                let store = store.clone();
                blocking(move || store.put(&job)).await
            }
            Kept::Shared(cell) => match cell.get() {
                Some(jobs) => jobs
                    .keep(&job)
                    .await
                    .map_err(|e| unreachable_queue(e.to_string())),
                None => Err(unreachable_queue("the queue is not open".to_owned())),
            },
        }
    }

    /// Forgets the job `id` (delivered, given up, fetched or expired).
    pub(crate) async fn forget(&self, id: &str) {
        match &self.kept {
            Kept::Local { store, pending, .. } => {
                let store = store.clone();
                let owned = id.to_owned();
                match blocking(move || store.remove(&owned)).await {
                    Ok(()) => {
                        let _ = pending.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                            n.checked_sub(1)
                        });
                    }
                    Err(fault) => {
                        tracing::warn!(id, %fault, "an asynchronous job could not be removed")
                    }
                }
            }
            Kept::Shared(cell) => {
                if let Some(jobs) = cell.get() {
                    jobs.forget(id).await;
                }
            }
        }
    }

    /// The most requests waiting at once (`async_max_pending`).
    pub(crate) fn max_pending(&self) -> usize {
        self.max_pending
    }

    /// Jobs accepted in this process and not yet done (0 when shared: JetStream counts
    /// those).
    pub(crate) fn pending(&self) -> usize {
        match &self.kept {
            Kept::Local { pending, .. } => pending.load(Ordering::Relaxed),
            Kept::Shared(_) => 0,
        }
    }
}

fn unreachable_queue(why: String) -> Fault {
    tracing::warn!("{why}");
    Fault::with_reason(FaultKind::ReplyQueueUnavailable, why)
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
