//! The connection to NATS shared by a process's remote handlers (or a worker's hosts).

use crate::cutoffs::Cutoffs;
use crate::frame_batcher::FrameBatcher;
use crate::reply_router::ReplyRouter;
use async_nats::connection::State;
use lather_config::NatsConfig;
use std::fmt;
use std::sync::OnceLock;
use std::time::Duration;
use tokio::sync::watch;

/// A process's link to the NATS server of `[nats]`: the URL, the subject prefix and, once
/// [`Link::connect`] succeeded, the client.
///
/// The client reconnects by itself for as long as the process runs; [`Link::available`]
/// reads its state at each call, so remote execution resumes as soon as NATS is back.
pub struct Link {
    url: String,
    /// The `[nats]` table, for its TLS and authentication settings.
    config: NatsConfig,
    prefix: String,
    connect_timeout: Duration,
    oneway_limits: OnewayLimits,
    liveness: Liveness,
    /// How many times the connection dropped since start: a call in flight that sees it
    /// change lost its reply subject with the connection.
    drops: watch::Sender<u64>,
    client: OnceLock<async_nats::Client>,
    /// `[nats] batch_max_items` and `batch_wait_ms`.
    frame_batch: (usize, Duration),
    batcher: OnceLock<FrameBatcher>,
    /// The batching cut-offs once known (the byte budget comes from the server).
    cutoffs: OnceLock<Cutoffs>,
    router: tokio::sync::OnceCell<ReplyRouter>,
}

/// How a caller tells a lost remote call from a slow one (`[nats] ack_timeout_ms`,
/// `heartbeat_ms`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Liveness {
    /// A call the worker has not acknowledged by then is lost.
    pub ack_timeout: Duration,
    /// Workers heartbeat calls in hand this often; [`Liveness::MISSED`] intervals without
    /// a word and the call is lost.
    pub heartbeat: Duration,
}

impl Liveness {
    /// Heartbeat intervals a call may stay silent before it counts as lost.
    pub const MISSED: u32 = 3;

    /// How long an acknowledged call may stay silent.
    pub fn silence(&self) -> Duration {
        self.heartbeat.saturating_mul(Self::MISSED)
    }
}

/// The bounds of the JetStream work-queue stream oneway remote handlers go through
/// (`[nats] oneway_max_bytes`, `oneway_max_messages`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OnewayLimits {
    /// The most bytes the stream holds.
    pub max_bytes: u64,
    /// The most messages the stream holds.
    pub max_messages: u64,
}

impl fmt::Debug for Link {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Link")
            .field("url", &self.url)
            .field("prefix", &self.prefix)
            .field("connected", &self.client.get().is_some())
            .finish()
    }
}

/// NATS could not be reached when the process started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkError {
    /// The URL tried.
    pub url: String,
    /// What went wrong.
    pub why: String,
}

impl fmt::Display for LinkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cannot reach the NATS server at {}: {}",
            self.url, self.why
        )
    }
}

impl std::error::Error for LinkError {}

impl Link {
    /// A link to the server of `config`, not connected yet.
    pub fn new(config: &NatsConfig) -> Link {
        Link {
            url: config.url.get_ref().clone(),
            config: config.clone(),
            prefix: config.subject_prefix.clone(),
            connect_timeout: Duration::from_millis(config.connect_timeout_ms),
            oneway_limits: OnewayLimits {
                max_bytes: config.oneway_max_bytes,
                max_messages: config.oneway_max_messages,
            },
            liveness: Liveness {
                ack_timeout: config.ack_timeout(),
                heartbeat: config.heartbeat(),
            },
            drops: watch::channel(0).0,
            client: OnceLock::new(),
            frame_batch: config.frame_batch(),
            batcher: OnceLock::new(),
            cutoffs: OnceLock::new(),
            router: tokio::sync::OnceCell::new(),
        }
    }

    /// Connects (once; later calls return at once) with the TLS and authentication of
    /// `[nats]` ([`crate::connect_options`]). Unreachable, refused, or a TLS or
    /// authentication file that cannot be used → a [`LinkError`] naming the URL. After this
    /// the client reconnects by itself whenever the connection drops.
    pub async fn connect(&self) -> Result<(), LinkError> {
        if self.client.get().is_some() {
            return Ok(());
        }
        let error = |why: String| LinkError {
            url: self.url.clone(),
            why,
        };
        let drops = self.drops.clone();
        let url = self.url.clone();
        let options = crate::connect_options(&self.config)
            .map_err(|e| error(e.to_string()))?
            .name("lather")
            .connection_timeout(self.connect_timeout)
            .max_reconnects(None)
            .request_timeout(None)
            .event_callback(move |event| {
                let drops = drops.clone();
                let url = url.clone();
                async move {
                    match event {
                        async_nats::Event::Disconnected | async_nats::Event::Closed => {
                            drops.send_modify(|n| *n += 1);
                            tracing::warn!(%url, "NATS connection lost; remote calls in flight fail over");
                        }
                        async_nats::Event::Connected => {
                            tracing::info!(%url, "NATS connection back");
                        }
                        _ => {}
                    }
                }
            });
        let connecting = options.connect(self.url.as_str());
        let client = tokio::time::timeout(self.connect_timeout, connecting)
            .await
            .map_err(|_| {
                error(format!(
                    "no answer within {} ms",
                    self.connect_timeout.as_millis()
                ))
            })?
            .map_err(|e| error(e.to_string()))?;
        tracing::info!(url = %self.url, "connected to NATS");
        let _ = self.client.set(client);
        Ok(())
    }

    /// The client, when connected now (not while it is reconnecting).
    pub fn available(&self) -> Option<&async_nats::Client> {
        self.client
            .get()
            .filter(|c| c.connection_state() == State::Connected)
    }

    /// Watches how many times the connection dropped (see [`Link::connect`]); a call
    /// started at one count and woken at another lost its replies with the connection.
    pub fn drops(&self) -> watch::Receiver<u64> {
        self.drops.subscribe()
    }

    /// How lost calls are told from slow ones.
    pub fn liveness(&self) -> Liveness {
        self.liveness
    }

    /// The gatherer of remote calls into batches, when `[nats] batch_max_items` is above
    /// 1 and the link has connected.
    pub(crate) fn batcher(&self) -> Option<&FrameBatcher> {
        if let Some(batcher) = self.batcher.get() {
            return Some(batcher);
        }
        let cut = self.cutoffs()?;
        let client = self.client.get()?;
        Some(
            self.batcher
                .get_or_init(|| FrameBatcher::new(client.clone(), cut, self.liveness.ack_timeout)),
        )
    }

    /// The router of remote calls' replies, subscribing on first use (NATS must be
    /// connected then); why not, if it cannot.
    pub(crate) async fn router(&self) -> Result<&ReplyRouter, String> {
        let client = self
            .client
            .get()
            .ok_or_else(|| "NATS is not connected".to_owned())?;
        self.router
            .get_or_try_init(|| ReplyRouter::start(client))
            .await
    }

    /// The transfer-batching cut-offs, when `[nats] batch_max_items` is above 1 and the
    /// link has connected (the byte budget is half the server's largest message).
    pub(crate) fn cutoffs(&self) -> Option<Cutoffs> {
        let (max_items, wait) = self.frame_batch;
        if max_items <= 1 {
            return None;
        }
        if let Some(cut) = self.cutoffs.get() {
            return Some(*cut);
        }
        // Read once: the server's information is copied out on every read.
        let client = self.client.get()?;
        Some(*self.cutoffs.get_or_init(|| Cutoffs {
            max_items,
            wait,
            budget: client.server_info().max_payload / 2,
        }))
    }

    /// The client, connected or not (`None` before [`Link::connect`]).
    pub fn client(&self) -> Option<&async_nats::Client> {
        self.client.get()
    }

    /// The configured URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The subject handler `name` is served on: `{prefix}.handler.{name}`.
    pub fn subject(&self, name: &str) -> String {
        format!("{}.handler.{name}", self.prefix)
    }

    /// The queue group the workers hosting handler `name` answer in.
    pub fn queue_group(&self, name: &str) -> String {
        format!("{}.workers.{name}", self.prefix)
    }

    /// The JetStream subject oneway handler `name` is queued on: `{prefix}.oneway.{name}`.
    pub fn oneway_subject(&self, name: &str) -> String {
        format!("{}.oneway.{name}", self.prefix)
    }

    /// The subjects the oneway work-queue stream holds: `{prefix}.oneway.>`.
    pub fn oneway_subjects(&self) -> String {
        format!("{}.oneway.>", self.prefix)
    }

    /// The oneway work-queue stream's name: the prefix upper-cased, every character a
    /// stream name may not hold made `_`, then `_ONEWAY` (`lather` → `LATHER_ONEWAY`).
    pub fn oneway_stream(&self) -> String {
        let prefix: String = self
            .prefix
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c.to_ascii_uppercase()
                } else {
                    '_'
                }
            })
            .collect();
        format!("{prefix}_ONEWAY")
    }

    /// The oneway stream's bounds.
    pub fn oneway_limits(&self) -> OnewayLimits {
        self.oneway_limits
    }
}
