//! One reply subscription for all of a process's remote calls: each call gets a reply
//! subject `{inbox}.{token}` under the link's own inbox, and the router hands every
//! message arriving there (progress frames, the answer, NATS's "no responders") to the call
//! with that token. A call costs no subscribe and unsubscribe of its own at the NATS server.

use futures_channel::mpsc;
use futures_util::StreamExt;
use lather_pipeline::FnvMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The calls listening, by token. A call's channel is futures' unbounded one: a node per
/// message, where tokio's allocates a block for 32 messages up front, and a call usually
/// gets one.
type Routes = Arc<Mutex<RouteMap>>;
type RouteMap = FnvMap<u64, mpsc::UnboundedSender<async_nats::Message>>;

/// The wildcard subscription and the calls listening under it.
#[derive(Debug)]
pub(crate) struct ReplyRouter {
    inbox: String,
    next: AtomicU64,
    routes: Routes,
}

/// What arrives on one call's reply subject; dropping it stops the routing.
#[derive(Debug)]
pub(crate) struct Route {
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

    /// A reply subject of its own for one call (to send the request with), and the route
    /// its replies come in by.
    pub(crate) fn open(&self) -> (String, Route) {
        let token = self.next.fetch_add(1, Ordering::Relaxed);
        let (sender, replies) = mpsc::unbounded();
        lock(&self.routes).insert(token, sender);
        let mut subject = String::with_capacity(self.inbox.len() + 21);
        subject.push_str(&self.inbox);
        subject.push('.');
        subject.push_str(itoa::Buffer::new().format(token));
        let route = Route {
            replies,
            token,
            routes: self.routes.clone(),
        };
        (subject, route)
    }
}

fn lock(routes: &Mutex<RouteMap>) -> std::sync::MutexGuard<'_, RouteMap> {
    routes
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
