//! The hostile cases of issue 10, each bounded in count and time, each
//! ending with a [`CaseVerdict`] from a small expectation function.

pub(crate) mod fan_out;
pub(crate) mod idle;
pub(crate) mod must_understand;
pub(crate) mod nonce;
pub(crate) mod slot_leak;
pub(crate) mod slow_bodies;
pub(crate) mod ssrf;
pub(crate) mod xpath_bomb;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use super::client::{RawAnswer, RawCall, send};
use super::messages;

/// What a case needs to know about the server under test.
#[derive(Debug, Clone)]
pub(crate) struct Ctx {
    /// The server's address (loopback).
    pub(crate) addr: SocketAddr,
    /// The CI form: smaller counts and shorter runs.
    pub(crate) quick: bool,
    /// Path of the echo service.
    pub(crate) echo: String,
    /// Path of the `max_in_flight = 1` service with a 10 ms sleep handler.
    pub(crate) slow: String,
    /// Its service name, as `/metrics` labels it.
    pub(crate) slow_service: String,
    /// Path of the event source.
    pub(crate) events: String,
    /// Path of the service with the `wsse-username` handler.
    pub(crate) secure: String,
    /// A user of that handler's users file.
    pub(crate) user: String,
    /// Its password.
    pub(crate) password: String,
    /// The server process, for a case that reads its RSS between its own steps.
    pub(crate) watched: crate::procfs::WatchedProcess,
}

impl Ctx {
    /// The quick or the full value.
    pub(crate) fn pick<T>(&self, quick: T, full: T) -> T {
        if self.quick { quick } else { full }
    }

    /// `http://addr{path}`.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

/// How a case ended.
#[derive(Debug, Clone)]
pub(crate) struct CaseVerdict {
    /// Whether the hostile input got the expected treatment.
    pub(crate) met: bool,
    /// The facts seen.
    pub(crate) note: String,
    /// In the full form: the most the server's RSS may grow (peak over
    /// before, or over `rss_baseline`) for the expectation to hold.
    pub(crate) rss_growth_bound: Option<u64>,
    /// The RSS the growth is counted from, when not the RSS before the case
    /// (e.g. after the case's own set-up).
    pub(crate) rss_baseline: Option<u64>,
}

impl CaseVerdict {
    /// A verdict without an RSS bound.
    pub(crate) fn new(met: bool, note: String) -> Self {
        CaseVerdict {
            met,
            note,
            rss_growth_bound: None,
            rss_baseline: None,
        }
    }
}

/// A short description of an answer or an error.
pub(crate) fn describe(result: &Result<RawAnswer, String>) -> String {
    match result {
        Ok(a) if a.is_fault() => format!("{} fault", a.status),
        Ok(a) => format!("{}", a.status),
        Err(e) => e.clone(),
    }
}

/// Subscribes `count` times to `ctx.events` (16 at a time), delivering to
/// `notify_to`; returns the identifiers granted and the number refused.
pub(crate) async fn subscribe_many(
    ctx: &Ctx,
    notify_to: &str,
    xpath: Option<&str>,
    count: usize,
) -> (Vec<String>, usize) {
    let body = Arc::new(messages::subscribe(notify_to, xpath));
    let gate = Arc::new(Semaphore::new(16));
    let mut set = JoinSet::new();
    for _ in 0..count {
        let (body, gate, addr, path) = (
            Arc::clone(&body),
            Arc::clone(&gate),
            ctx.addr,
            ctx.events.clone(),
        );
        set.spawn(async move {
            let _permit = gate.acquire_owned().await;
            let r = send(
                addr,
                &RawCall::soap12(&path, body.as_bytes(), Duration::from_secs(10)),
            )
            .await;
            r.ok()
                .filter(|a| a.status == 200)
                .and_then(|a| messages::identifier(&a.body))
        });
    }
    let (mut granted, mut refused) = (Vec::new(), 0);
    while let Some(joined) = set.join_next().await {
        match joined.ok().flatten() {
            Some(id) => granted.push(id),
            None => refused += 1,
        }
    }
    (granted, refused)
}

/// Unsubscribes every identifier (16 at a time), so that no case leaves
/// deliveries behind for the next.
pub(crate) async fn unsubscribe_all(ctx: &Ctx, ids: Vec<String>) {
    let gate = Arc::new(Semaphore::new(16));
    let mut set = JoinSet::new();
    for id in ids {
        let (gate, addr, path) = (Arc::clone(&gate), ctx.addr, ctx.events.clone());
        set.spawn(async move {
            let _permit = gate.acquire_owned().await;
            let body = messages::unsubscribe(&id);
            let _ = send(
                addr,
                &RawCall::soap12(&path, body.as_bytes(), Duration::from_secs(10)),
            )
            .await;
        });
    }
    while set.join_next().await.is_some() {}
}

/// Publishes `event` at `{events}/publish`.
pub(crate) async fn publish(
    ctx: &Ctx,
    event: &str,
    timeout: Duration,
) -> Result<RawAnswer, String> {
    let path = format!("{}/publish", ctx.events);
    let body = messages::publish(event);
    send(ctx.addr, &RawCall::soap12(&path, body.as_bytes(), timeout)).await
}
