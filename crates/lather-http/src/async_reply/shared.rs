//! Asynchronous requests kept in NATS JetStream (`async_replies` with `[nats]` and no
//! `async_store`), shared by every lather node serving the service:
//!
//! - pending requests go to the work-queue stream `{PREFIX}_ASYNC_{NAME}` (file storage,
//!   at most `async_max_pending` messages, a publish to a full stream refused), published
//!   with `Nats-Msg-Id` = the MessageID so a resent request within two minutes is stored
//!   once. Every node pulls from one durable consumer, so each request is taken by one
//!   node; a node that dies with it in hand leaves it unacknowledged and another node takes
//!   it after the ack wait.
//! - answers once made, and polled requests not yet answered, go to the KV bucket
//!   `{prefix}_{name}_async` (history 1, entries dropped after `reply_keep_s`): a retried
//!   delivery reuses the answer instead of running the request again, and a poll reaches
//!   the answer from any node.

use super::job::Job;
use async_nats::jetstream::{self, consumer, kv, stream};
use lather_config::AsyncNames;
use lather_eventing::store::jetstream::{key_of, open_expiring_bucket};
use std::time::Duration;

/// How long JetStream remembers a `Nats-Msg-Id` (a resent request within it is not stored
/// twice).
const DUPLICATE_WINDOW: Duration = Duration::from_secs(120);

/// How long a node may hold a request unacknowledged before another node takes it:
/// longer than making an answer and one delivery attempt take.
pub(crate) const ACK_WAIT: Duration = Duration::from_secs(60);

/// How long any one exchange with JetStream may take.
const ANSWER_WITHIN: Duration = Duration::from_secs(5);

/// The durable consumer every node pulls from.
const CONSUMER: &str = "lather-async";

/// A service's shared queue of pending requests and its answers.
#[derive(Clone)]
pub(crate) struct SharedJobs {
    js: jetstream::Context,
    names: AsyncNames,
    answers: kv::Store,
    consumer: consumer::PullConsumer,
}

impl std::fmt::Debug for SharedJobs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedJobs")
            .field("names", &self.names)
            .finish_non_exhaustive()
    }
}

/// JetStream refused or failed an operation on the shared queue.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SharedError {
    /// The stream holds `async_max_pending` requests.
    #[error("the asynchronous request queue {stream} is full")]
    Full {
        /// The stream's name.
        stream: String,
    },
    /// Any other failure, with JetStream's words.
    #[error("the asynchronous request queue {what}: {reason}")]
    Failed {
        /// The stream or bucket and what was done.
        what: String,
        /// What JetStream said.
        reason: String,
    },
}

impl SharedJobs {
    /// Opens (creating when absent) the stream, its consumer and the answers' bucket.
    pub(crate) async fn open(
        client: async_nats::Client,
        names: AsyncNames,
        max_pending: usize,
        keep: Duration,
    ) -> Result<Self, SharedError> {
        let js = jetstream::new(client.clone());
        let fail = |what: &str, e: &dyn std::fmt::Display| SharedError::Failed {
            what: what.to_owned(),
            reason: e.to_string(),
        };
        let config = stream::Config {
            name: names.stream.clone(),
            description: Some("lather asynchronous requests waiting for their answer".into()),
            subjects: vec![names.subject.clone()],
            retention: stream::RetentionPolicy::WorkQueue,
            storage: stream::StorageType::File,
            max_messages: i64::try_from(max_pending).unwrap_or(i64::MAX),
            discard: stream::DiscardPolicy::New,
            duplicate_window: DUPLICATE_WINDOW,
            num_replicas: 1,
            ..Default::default()
        };
        let stream = match js.get_or_create_stream(config.clone()).await {
            Ok(stream) => stream,
            // Another node created it meanwhile.
            Err(first) => js
                .get_stream(&config.name)
                .await
                .map_err(|_| fail(&format!("stream {}", config.name), &first))?,
        };
        let consumer = stream
            .get_or_create_consumer(
                CONSUMER,
                consumer::pull::Config {
                    durable_name: Some(CONSUMER.to_owned()),
                    ack_policy: consumer::AckPolicy::Explicit,
                    ack_wait: ACK_WAIT,
                    ..Default::default()
                },
            )
            .await
            .map_err(|e| fail(&format!("consumer {CONSUMER} on {}", config.name), &e))?;
        let answers =
            open_expiring_bucket(client, &names.bucket, "lather asynchronous answers", keep)
                .await
                .map_err(|e| fail(&format!("bucket {}", names.bucket), &e))?;
        Ok(SharedJobs {
            js,
            names,
            answers,
            consumer,
        })
    }

    /// Queues `job`; `true` when JetStream already held a request with its MessageID.
    pub(crate) async fn enqueue(&self, job: &Job) -> Result<bool, SharedError> {
        let payload = serde_json::to_vec(job).map_err(|e| self.failed("publish", &e))?;
        let mut headers = async_nats::HeaderMap::new();
        headers.insert(async_nats::header::NATS_MESSAGE_ID, job.id.as_str());
        let publish = async {
            self.js
                .publish_with_headers(self.names.subject.clone(), headers, payload.into())
                .await?
                .await
        };
        match self.within("publish", publish).await? {
            Ok(ack) => Ok(ack.duplicate),
            Err(e) if e.to_string().contains("maximum messages") => Err(SharedError::Full {
                stream: self.names.stream.clone(),
            }),
            Err(e) => Err(self.failed("publish", &e)),
        }
    }

    /// The job kept under `id` in the bucket (a polled request, or an answer made).
    pub(crate) async fn kept(&self, id: &str) -> Result<Option<Job>, SharedError> {
        let entry = self
            .within("read", self.answers.entry(key_of(id)))
            .await?
            .map_err(|e| self.failed("read", &e))?;
        Ok(entry
            .filter(|e| e.operation == kv::Operation::Put)
            .and_then(|e| serde_json::from_slice(&e.value).ok()))
    }

    /// Keeps `job` in the bucket.
    pub(crate) async fn keep(&self, job: &Job) -> Result<(), SharedError> {
        let value = serde_json::to_vec(job).map_err(|e| self.failed("write", &e))?;
        self.within("write", self.answers.put(key_of(&job.id), value.into()))
            .await?
            .map(drop)
            .map_err(|e| self.failed("write", &e))
    }

    /// Drops the job `id` from the bucket.
    pub(crate) async fn forget(&self, id: &str) {
        match self.within("delete", self.answers.delete(key_of(id))).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(id, "an asynchronous answer could not be removed: {e}"),
            Err(e) => tracing::warn!(id, "an asynchronous answer could not be removed: {e}"),
        }
    }

    /// At most `n` requests for this node to take, as JetStream hands them out within
    /// `wait` (fetched only when there is room to work them, so none sits here while its
    /// ack wait runs).
    pub(crate) async fn fetch(
        &self,
        n: usize,
        wait: Duration,
    ) -> Result<consumer::pull::Batch, SharedError> {
        let pull = self
            .consumer
            .batch()
            .max_messages(n)
            .expires(wait)
            .messages();
        self.within("pull", pull)
            .await?
            .map_err(|e| self.failed("pull", &e))
    }

    /// `work`, or a failure naming `what` when JetStream does not answer within
    /// [`ANSWER_WITHIN`] (NATS gone: its requests would otherwise wait for ever).
    async fn within<T>(&self, what: &str, work: impl Future<Output = T>) -> Result<T, SharedError> {
        tokio::time::timeout(ANSWER_WITHIN, work)
            .await
            .map_err(|_| self.failed(what, &format!("no answer within {ANSWER_WITHIN:?}")))
    }

    fn failed(&self, what: &str, e: &dyn std::fmt::Display) -> SharedError {
        SharedError::Failed {
            what: format!("{} ({what})", self.names.stream),
            reason: e.to_string(),
        }
    }
}
