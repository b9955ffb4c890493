//! One reply subscription for all of a process's remote calls: each call gets a reply
//! subject `{inbox}.{token}` under the link's own inbox, and the router hands every
//! message arriving there (progress frames, the answer, NATS's "no responders") to the call
//! with that token. A call costs no subscribe and unsubscribe of its own at the NATS server.

use futures_channel::mpsc;
use futures_util::StreamExt;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The calls listening, by token. A call's channel is futures' unbounded one: a node per
/// message, where tokio's allocates a block for 32 messages up front, and a call usually
/// gets one.
type Routes = Arc<Mutex<RouteMap>>;
type RouteMap =
    HashMap<u64, mpsc::UnboundedSender<async_nats::Message>, BuildHasherDefault<TokenHasher>>;

/// Hashes a token (a counter this process hands out, never chosen by a peer) by one
/// multiplication that spreads its low bits into the high ones the table looks at.
#[derive(Debug, Default)]
struct TokenHasher(u64);

impl Hasher for TokenHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u64(&mut self, token: u64) {
        self.0 = token.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// The wildcard subscription and the calls listening under it.
#[derive(Debug)]
pub(crate) struct ReplyRouter {
    inbox: String,
    next: AtomicU64,
    routes: Routes,
}

/// One call's reply subject and what arrives on it; dropping it stops the routing.
#[derive(Debug)]
pub(crate) struct Route {
    /// The reply subject to send the request with.
    pub(crate) subject: String,
    /// The messages for it, in order; `None` once the subscription has ended.
    pub(crate) replies: mpsc::UnboundedReceiver<async_nats::Message>,
    token: u64,
    routes: Routes,
}

impl Drop for Route {
    fn drop(&mut self) {
        lock(&self.routes).remove(&self.token);
    }
}

impl ReplyRouter {
    /// Subscribes to `{inbox}.*` through `client` and starts routing.
    pub(crate) async fn start(client: &async_nats::Client) -> Result<Self, String> {
        let inbox = client.new_inbox();
        let mut subscription = client
            .subscribe(format!("{inbox}.*"))
            .await
            .map_err(|e| format!("cannot subscribe to the reply subjects: {e}"))?;
        let routes: Routes = Arc::default();
        let routing = routes.clone();
        tokio::spawn(async move {
            while let Some(message) = subscription.next().await {
                let Some(token) = message
                    .subject
                    .rsplit('.')
                    .next()
                    .and_then(|t| t.parse::<u64>().ok())
                else {
                    continue;
                };
                if let Some(call) = lock(&routing).get(&token) {
                    let _ = call.unbounded_send(message);
                }
            }
            // The subscription ended: every call waiting hears so.
            lock(&routing).clear();
        });
        Ok(ReplyRouter {
            inbox,
            next: AtomicU64::new(1),
            routes,
        })
    }

    /// A reply subject of its own for one call.
    pub(crate) fn open(&self) -> Route {
        let token = self.next.fetch_add(1, Ordering::Relaxed);
        let (sender, replies) = mpsc::unbounded();
        lock(&self.routes).insert(token, sender);
        let mut subject = String::with_capacity(self.inbox.len() + 21);
        subject.push_str(&self.inbox);
        subject.push('.');
        subject.push_str(itoa::Buffer::new().format(token));
        Route {
            subject,
            replies,
            token,
            routes: self.routes.clone(),
        }
    }
}

fn lock(routes: &Mutex<RouteMap>) -> std::sync::MutexGuard<'_, RouteMap> {
    routes
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
