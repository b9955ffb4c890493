//! The event source and its subscription manager: the facade over the layers below. It
//! answers requests ([`crate::protocol`]), keeps subscriptions ([`crate::store`]), hands
//! events to their sinks ([`crate::delivery`]), sweeps expired subscriptions and sends
//! SubscriptionEnd.

mod answer;
mod depths;
mod keeping;
mod nats_events;
mod offer;
mod quota;
mod settings;
mod shared;
mod wsn;

pub use depths::SinkDepths;
pub use settings::{
    DEFAULT_EVENT_ACTION, DEFAULT_MAX_SUBSCRIPTIONS_PER_IDENTITY, DEFAULT_QUEUE_BYTES_TOTAL,
    DEFAULT_SINK_QUEUE_BYTES, SourceSettings,
};
pub use shared::SharedSettings;

use crate::delivery::gauges::Gauges;
use crate::delivery::sink_queue::SinkQueue;
use crate::delivery::stamped::Stamped;
use crate::delivery::{self, SinkLimits, Stop};
use crate::error::EventingError;
use crate::protocol::event::Event;
use crate::protocol::reply::{self, EndStatus};
use crate::protocol::version::LATHER_EVENTING_NS;
use crate::protocol::xpath::XPathFilter;
use crate::store::jetstream::sync::Replica;
use crate::store::{JetStreamStore, MemoryStore, RedbStore, SubscriptionStore};
use crate::{Subscription, Version};
use bytes::Bytes;
use keeping::Change;
use lather_envelope::{Envelope, Fault, FaultKind, QName};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A WS-Eventing event source with its subscription manager (both versions). Cheap to
/// clone; tasks it started stop once every clone is dropped.
#[derive(Debug, Clone)]
pub struct EventSource {
    pub(crate) inner: Arc<Inner>,
}

/// What the source's tasks share.
#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) settings: SourceSettings,
    active: Mutex<HashMap<String, Active>>,
    /// Where subscriptions are kept until the source shares over NATS.
    pub(crate) store: Arc<dyn SubscriptionStore>,
    /// The JetStream KV bucket shared with the other nodes, once the source shares over
    /// NATS; from then on subscriptions are kept there.
    pub(crate) shared: OnceLock<Arc<JetStreamStore>>,
    /// Subscriptions admitted and not yet held (taken under the `active` lock).
    reserved: Mutex<quota::Reserved>,
    /// XPath filter evaluations stopped at their budget.
    filters_over_budget: std::sync::atomic::AtomicU64,
    /// Bytes queued, delivery tasks alive, drops and refusals.
    pub(crate) gauges: Arc<Gauges>,
}

/// A held subscription and its sink's queue.
#[derive(Debug)]
pub(crate) struct Active {
    pub(crate) sub: Subscription,
    queue: SinkQueue,
    /// `sub.xpath` compiled.
    xpath: Option<XPathFilter>,
    /// Hands the delivery task the SubscriptionEnd to write last on its stream.
    farewell: crate::delivery::binding::end::FarewellSender,
    /// Stops the delivery task when the subscription goes.
    stop: Stop,
}

/// Queues `event` for the subscription `id`'s sink; a full queue (by count or bytes) drops
/// it with a warning. Whether it was queued.
pub(crate) fn enqueue(id: &str, queue: &SinkQueue, event: &Arc<Stamped>) -> bool {
    queue.offer(id, event)
}

/// Now, in Unix milliseconds.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl EventSource {
    /// Opens the source: reads the stored subscriptions (from the redb file
    /// [`SourceSettings::store`] names, else none), drops expired ones and starts their
    /// delivery and the expiry sweep. Call within a tokio runtime. Fails if the store
    /// cannot be opened or read.
    pub fn open(settings: SourceSettings) -> Result<EventSource, EventingError> {
        let Some(path) = &settings.store else {
            return Ok(EventSource::start(settings, Arc::new(MemoryStore), Vec::new()).0);
        };
        let store = RedbStore::open(path)?;
        let stored = store.load_blocking()?;
        let (source, dropped) = EventSource::start(settings, Arc::new(store.clone()), stored);
        for id in dropped {
            let _ = store.remove_blocking(&id);
        }
        Ok(source)
    }

    /// [`EventSource::open`] with subscriptions kept in `store` (whatever
    /// [`SourceSettings::store`] says): loads them, forgets the expired ones and starts
    /// the rest. Call within a tokio runtime.
    pub async fn open_with_store(
        settings: SourceSettings,
        store: Arc<dyn SubscriptionStore>,
    ) -> Result<EventSource, EventingError> {
        let stored = store.load().await?;
        let (source, dropped) = EventSource::start(settings, Arc::clone(&store), stored);
        for id in dropped {
            let _ = store.remove(&id).await;
        }
        Ok(source)
    }

    /// The source over `store` holding the usable ones of `stored`, its sweep started;
    /// and the ids of the stored subscriptions it dropped (expired, or with a filter it
    /// refuses now), to be removed from the store.
    fn start(
        settings: SourceSettings,
        store: Arc<dyn SubscriptionStore>,
        stored: Vec<Subscription>,
    ) -> (EventSource, Vec<String>) {
        let inner = Arc::new(Inner {
            settings,
            active: Mutex::new(HashMap::new()),
            store,
            shared: OnceLock::new(),
            reserved: Mutex::new(quota::Reserved::default()),
            filters_over_budget: std::sync::atomic::AtomicU64::new(0),
            gauges: Arc::new(Gauges::default()),
        });
        let now = now_ms();
        let mut dropped = Vec::new();
        for sub in stored {
            let unusable = crate::protocol::filter::xpath_of(&sub).err();
            if let Some(why) = &unusable {
                tracing::warn!(subscription = %sub.id, "stored XPath filter refused, subscription dropped: {why}");
            }
            if sub.expires_ms <= now || unusable.is_some() {
                dropped.push(sub.id);
                continue;
            }
            inner.activate(sub);
        }
        tokio::spawn(sweep(Arc::downgrade(&inner)));
        (EventSource { inner }, dropped)
    }

    /// How many XPath filter evaluations stopped at their budget (`filter_budget`) since
    /// the source opened; each such event was not taken by that filter.
    pub fn filters_over_budget(&self) -> u64 {
        self.inner
            .filters_over_budget
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The subscriptions held now.
    pub fn subscriptions(&self) -> Vec<Subscription> {
        self.inner.lock().values().map(|a| a.sub.clone()).collect()
    }

    /// Answers an eventing request: Subscribe (to the source), Renew, GetStatus or
    /// Unsubscribe (to the manager). `manager` is the subscription manager's address for
    /// new subscriptions. Returns the response envelope, or the version's fault.
    ///
    /// WS-BaseNotification requests (Body in `http://docs.oasis-open.org/wsn/b-2`) are
    /// answered too; a `wsnt:Notify` is published and answered with empty bytes (one-way).
    pub async fn handle(&self, envelope: &Envelope, manager: &str) -> Result<Bytes, Fault> {
        self.handle_for(envelope, manager, None).await
    }

    /// [`EventSource::handle`] for the subscriber `identity` (the wsse identity once known,
    /// else the client's address): a Subscribe is refused once that identity holds
    /// [`SourceSettings::max_subscriptions_per_identity`] subscriptions.
    pub async fn handle_for(
        &self,
        envelope: &Envelope,
        manager: &str,
        identity: Option<&str>,
    ) -> Result<Bytes, Fault> {
        if crate::protocol::wsn::speaks(envelope) {
            return wsn::handle(&self.inner, envelope, manager, identity).await;
        }
        let Some(version) = Version::of(envelope) else {
            return Err(Fault::with_reason(
                FaultKind::InvalidEventingRequest,
                "the Body is not a WS-Eventing 2004/08 or 2011 request",
            ));
        };
        let message_id = message_id(envelope, version);
        let answer = self
            .inner
            .answer(envelope, version, manager, identity)
            .await
            .map_err(|r| r.problem.fault(version, r.reason, message_id.as_deref()))?;
        let (action, body) = answer;
        let headers = reply::addressing(
            version,
            &version.action(&action),
            Some(&version.anonymous()),
            message_id.as_deref(),
        );
        Ok(reply::envelope(envelope.version(), &headers, &body))
    }

    /// Publishes the event in `envelope`'s Body to every subscription whose filter takes
    /// it; `action` is the notifications' `wsa:Action` (the default if `None`). Returns how
    /// many notifications were queued. An event's topics are its root element's name
    /// (`{namespace}local`) and the text of a `lev:Topic` header, if any.
    pub fn publish(&self, envelope: &Envelope, action: Option<&str>) -> Result<usize, Fault> {
        let Some(event) = envelope.extract_payload() else {
            return Err(Fault::with_reason(
                FaultKind::InvalidEventingRequest,
                "the publish request's Body holds no event",
            ));
        };
        let mut topics = Vec::new();
        if let Some(op) = envelope.operation() {
            topics.push(format!("{{{}}}{}", op.namespace(), op.local()));
        }
        if let Some(block) = envelope.header(&QName::new(LATHER_EVENTING_NS, "Topic"))
            && let Some(text) = envelope.header_text(block)
        {
            topics.extend(text.split_whitespace().map(str::to_owned));
        }
        self.try_publish_event(Event {
            payload: event,
            action: action.map(str::to_owned),
            topics,
            headers: Vec::new(),
        })
    }

    /// Publishes `event` (its payload one standalone XML element; its topics by convention
    /// the root element's `{namespace}local` first, then named topics) to every
    /// subscription whose filters take it, with no envelope to parse: for publishers in the
    /// same process. Returns how many notifications were queued. The event is stamped with
    /// a sequence number and the time now, and shared by every queue: each sink's task
    /// renders its own notification in its binding.
    ///
    /// A publish refused because the source holds `queue_bytes_total` already counts 0
    /// here (logged and counted in [`EventSource::refused_publishes`]); use
    /// [`EventSource::try_publish_event`] to get the fault.
    pub fn publish_event(&self, event: Event) -> usize {
        self.try_publish_event(event).unwrap_or(0)
    }

    /// [`EventSource::publish_event`], refusing with `PublishQueueFull` (503) when the
    /// source holds `queue_bytes_total` bytes of events already and some subscription may
    /// take this one.
    pub fn try_publish_event(&self, event: Event) -> Result<usize, Fault> {
        self.inner.deliver(event)
    }

    /// Bytes of events the source's sinks hold now (queued or being delivered), each
    /// event counted once however many sinks it waits for.
    pub fn queued_bytes(&self) -> u64 {
        self.inner.gauges.queued_bytes()
    }

    /// Delivery tasks running now (one per subscription until it ends).
    pub fn delivery_tasks(&self) -> usize {
        self.inner.gauges.tasks()
    }

    /// Notifications dropped for one sink so far, its queue full by count or bytes.
    pub fn dropped_notifications(&self) -> u64 {
        self.inner
            .gauges
            .dropped
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Publishes refused so far because of `queue_bytes_total`.
    pub fn refused_publishes(&self) -> u64 {
        self.inner
            .gauges
            .refused
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Ends the subscription `id` as the source's own decision, sending SubscriptionEnd
    /// with SourceCancelling to its EndTo. Returns whether it existed.
    pub async fn cancel(&self, id: &str, reason: &str) -> bool {
        end(&self.inner, id, EndStatus::SourceCancelling, reason).await
    }

    /// Ends every subscription with SourceShuttingDown (SubscriptionEnd to each EndTo) and
    /// forgets them, also in the store: for a source going away for good. A plain restart
    /// needs none of this — stored subscriptions carry on.
    pub async fn shut_down(&self, reason: &str) {
        let ids: Vec<String> = self.inner.lock().keys().cloned().collect();
        for id in ids {
            end(&self.inner, &id, EndStatus::SourceShuttingDown, reason).await;
        }
    }
}

impl Inner {
    /// Stamps `event` and queues it for every subscription whose topic and action filters
    /// take it; XPath filters are evaluated after the lock is released, each distinct one
    /// once ([`crate::protocol::filter::offer`]). The notifications' `wsa:Action` is the event's, else
    /// the source's default. Returns how many notifications were queued; refuses with
    /// `PublishQueueFull` when some subscription may take the event and the source holds
    /// `queue_bytes_total` bytes of events with it (the event is then queued nowhere).
    pub(crate) fn deliver(&self, event: Event) -> Result<usize, Fault> {
        let action = event
            .action
            .clone()
            .unwrap_or_else(|| self.settings.default_action.clone());
        let stamped = Stamped::new(event, action, Some(&self.gauges));
        let now = now_ms();
        let takes = |active: &Active| {
            active.sub.expires_ms > now
                && active.sub.wants(&stamped.topics)
                && active.sub.wants_action(&stamped.action)
        };
        let active = self.lock();
        // Counted with this event: refused if it does not fit beside what is held and some
        // subscription takes it.
        let held = self.gauges.queued_bytes();
        if held > self.settings.queue_bytes_total {
            if !active.values().any(&takes) {
                return Ok(0);
            }
            drop(active);
            self.gauges
                .refused
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let size = stamped.size();
            tracing::warn!(
                held = held - size,
                size,
                "publish refused: the source's sinks hold too many bytes"
            );
            return Err(Fault::with_reason(
                FaultKind::PublishQueueFull,
                format!(
                    "the event source holds {} bytes of events for its subscribers; this event of {size} bytes would pass queue_bytes_total = {}",
                    held - size,
                    self.settings.queue_bytes_total
                ),
            ));
        }
        // One pass: subscriptions without an XPath filter are queued under the lock (a
        // queue never blocks), with nothing of theirs copied; those with one are offered
        // the event after the lock is released.
        let mut queued = 0;
        let mut filtered = Vec::new();
        for a in active.values().filter(|a| takes(a)) {
            match &a.xpath {
                Some(xpath) => filtered.push((xpath.clone(), a.sub.id.clone(), a.queue.clone())),
                None => queued += usize::from(enqueue(&a.sub.id, &a.queue, &stamped)),
            }
        }
        drop(active);
        Ok(queued
            + offer::offer(
                filtered,
                &stamped,
                self.settings.filter_budget,
                &self.filters_over_budget,
            ))
    }

    /// The held subscriptions.
    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Active>> {
        self.active
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Starts delivery for `sub` and holds it; if it is held already, only its record is
    /// replaced (its delivery goes on).
    pub(crate) fn activate(self: &Arc<Self>, sub: Subscription) {
        self.activate_with(sub, None);
    }

    /// [`Inner::activate`] for a subscription admitted with `slot`: the slot is given back
    /// in the same critical section the subscription is held in, so the caps stay exact.
    pub(crate) fn activate_reserved(self: &Arc<Self>, sub: Subscription, slot: quota::Slot) {
        self.activate_with(sub, Some(slot));
    }

    /// Admits a new subscription for `identity` under the caps (global and per identity),
    /// atomically: the returned slot counts until the subscription is held.
    pub(crate) fn reserve(
        self: &Arc<Self>,
        identity: Option<&str>,
    ) -> Result<quota::Slot, quota::Full> {
        let active = self.lock();
        let mut reserved = self
            .reserved
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let held_by = |who: &str| {
            active
                .values()
                .filter(|a| a.sub.owner.as_deref() == Some(who))
                .count()
        };
        reserved.admit(
            active.len(),
            identity,
            held_by,
            self.settings.max_subscriptions,
            self.settings.max_subscriptions_per_identity,
        )?;
        Ok(quota::Slot::new(Arc::downgrade(self), identity))
    }

    /// Gives a reservation back (the subscription is held now, or was not made).
    pub(crate) fn release(&self, identity: Option<&str>) {
        self.reserved
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .release(identity);
    }

    fn activate_with(self: &Arc<Self>, sub: Subscription, slot: Option<quota::Slot>) {
        if let Some(active) = self.lock().get_mut(&sub.id) {
            active.sub = sub;
            drop(slot);
            return;
        }
        let limits = SinkLimits {
            capacity: self.settings.queue_capacity,
            bytes: self.settings.sink_queue_bytes,
            wait: self.settings.delivery_wait,
            gauges: Arc::clone(&self.gauges),
        };
        let (queue, farewell, stop) = delivery::spawn_sink(
            &sub,
            limits,
            self.settings.retry,
            self.settings.delivered.clone(),
            sub.gzip.then_some(self.settings.compress_min_bytes),
            &self.settings.notify_policy,
            self.on_delivery_failure(&sub.id),
        );
        let xpath = crate::protocol::filter::xpath_of(&sub).ok().flatten();
        let mut active = self.lock();
        active.insert(
            sub.id.clone(),
            Active {
                sub,
                queue,
                xpath,
                farewell,
                stop,
            },
        );
        // Released while `active` is still locked: a concurrent reservation sees either
        // the slot or the held subscription, never both or neither.
        drop(slot);
        drop(active);
    }

    /// What a delivery task for `id` calls when every retry failed: ends the subscription
    /// with DeliveryFailure (if the source is still there).
    fn on_delivery_failure(self: &Arc<Self>, id: &str) -> delivery::OnFailure {
        let source = Arc::downgrade(self);
        let id = id.to_owned();
        Box::new(move |why| {
            Box::pin(async move {
                if let Some(source) = source.upgrade() {
                    end(&source, &id, EndStatus::DeliveryFailure, &why).await;
                }
            })
        })
    }
}

impl Replica for Inner {
    fn retain(&self, ids: &std::collections::HashSet<String>) {
        self.lock().retain(|id, _| ids.contains(id));
    }

    fn hold(self: &Arc<Self>, sub: Subscription) {
        self.activate(sub);
    }

    fn forget(&self, id: &str) {
        self.lock().remove(id);
    }
}

/// `d` in whole milliseconds (saturating).
pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The request's `wsa:MessageID`.
pub(super) fn message_id(envelope: &Envelope, version: Version) -> Option<String> {
    let block = envelope.header(&QName::new(version.addressing_ns(), "MessageID"))?;
    envelope.header_text(block)
}

/// Ends subscription `id` with `status`: forgets it (also in the store) and sends
/// SubscriptionEnd to its EndTo, if it has one. Returns whether it existed.
pub(crate) async fn end(inner: &Arc<Inner>, id: &str, status: EndStatus, reason: &str) -> bool {
    let Some(active) = inner.lock().remove(id) else {
        return false;
    };
    if !inner.keep_end(id).await {
        // Another node ended it first (and sent SubscriptionEnd), or it changed meanwhile.
        return true;
    }
    let Active {
        sub,
        queue,
        farewell,
        stop,
        ..
    } = active;
    if sub.end_to.is_none() {
        // WS-BaseNotification has no SubscriptionEnd; WS-Eventing ones may lack an EndTo.
        tracing::info!(subscription = id, ?status, "subscription removed: {reason}");
    }
    if let Some(end_to) = &sub.end_to {
        let timeout = inner.settings.retry.timeout;
        let parts = crate::delivery::binding::end::Parts {
            queue,
            farewell,
            stop,
        };
        if let Err(e) = crate::delivery::binding::end::send(
            &sub,
            end_to,
            status,
            reason,
            parts,
            (timeout, &inner.settings.notify_policy),
        )
        .await
        {
            tracing::warn!(subscription = id, "SubscriptionEnd not delivered: {e}");
        }
    }
    true
}

/// Removes expired subscriptions every `sweep_every`, until the source is gone.
async fn sweep(source: Weak<Inner>) {
    let every = match source.upgrade() {
        Some(s) => s.settings.sweep_every,
        None => return,
    };
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(inner) = source.upgrade() else {
            return;
        };
        let now = now_ms();
        let expired: Vec<String> = {
            let mut active = inner.lock();
            let ids: Vec<String> = active
                .iter()
                .filter(|(_, a)| a.sub.expires_ms <= now)
                .map(|(id, _)| id.clone())
                .collect();
            for id in &ids {
                active.remove(id);
            }
            ids
        };
        if !expired.is_empty() {
            tracing::debug!(count = expired.len(), "subscriptions expired");
            let _ = inner.keep(Change::Expired(expired)).await;
        }
    }
}
