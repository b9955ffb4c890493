//! The event source and its subscription manager: the facade over the layers below. It
//! answers requests ([`crate::protocol`]), keeps subscriptions ([`crate::store`]), hands
//! events to their sinks ([`crate::delivery`]), sweeps expired subscriptions and sends
//! SubscriptionEnd.

mod keeping;
mod nats_events;
mod offer;
mod quota;
mod shared;
mod wsn;

pub use shared::SharedSettings;

use crate::delivery::address_policy::DeliveryPolicy;
use crate::delivery::gauges::Gauges;
use crate::delivery::sink_queue::SinkQueue;
use crate::delivery::stamped::Stamped;
use crate::delivery::{self, DeliveryProbe, RetryPolicy, SinkLimits, Stop};
use crate::error::EventingError;
use crate::protocol::event::Event;
use crate::protocol::expires::{self, Requested};
use crate::protocol::problem::{Problem, Refusal, refuse};
use crate::protocol::reply::{self, EndStatus};
use crate::protocol::request::{self, ExpiresRequest};
use crate::protocol::subscription::new_uuid;
use crate::protocol::version::LATHER_EVENTING_NS;
use crate::protocol::xpath::XPathFilter;
use crate::store::jetstream::sync::Replica;
use crate::store::{JetStreamStore, MemoryStore, RedbStore, SubscriptionStore};
use crate::{Subscription, Version};
use bytes::Bytes;
use keeping::Change;
use lather_envelope::{Envelope, Fault, FaultKind, QName, SoapVersion};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The `wsa:Action` of notifications whose publish request named none.
pub const DEFAULT_EVENT_ACTION: &str = "urn:lather:eventing:Event";

/// How an event source behaves.
#[derive(Debug, Clone)]
pub struct SourceSettings {
    /// The redb file subscriptions are kept in; `None` keeps them in memory only.
    pub store: Option<PathBuf>,
    /// The longest expiration granted; also the grant when a Subscribe asks for none.
    pub max_expires: Duration,
    /// Most subscriptions held at once.
    pub max_subscriptions: usize,
    /// Notifications that may wait per sink; beyond it new ones are dropped for that sink.
    pub queue_capacity: usize,
    /// Delivery retries and timeout.
    pub retry: RetryPolicy,
    /// How often expired subscriptions are looked for.
    pub sweep_every: Duration,
    /// The notifications' `wsa:Action` when the publish request names none.
    pub default_action: String,
    /// Told of each notification a sink took (for benchmarks); `None` normally.
    pub delivered: Option<DeliveryProbe>,
    /// Notifications to subscribers that asked for gzip are compressed from this size (in
    /// bytes) on; smaller ones are sent plain.
    pub compress_min_bytes: usize,
    /// Where notifications and SubscriptionEnd may go (service keys `notify_allow`,
    /// `notify_schemes`); the default refuses loopback, link-local and the server itself.
    pub notify_policy: DeliveryPolicy,
    /// Most subscriptions held at once for one subscriber identity (the client's address
    /// until a wsse identity is known; service key `max_subscriptions_per_identity`).
    pub max_subscriptions_per_identity: usize,
    /// Most node visits one XPath filter evaluation may make (service key
    /// `filter_budget`): an event needing more is not taken; a filter needing more on the
    /// worst-case event checked at Subscribe is refused.
    pub filter_budget: u64,
    /// Most bytes of notifications one sink holds (queued or being delivered); beyond it
    /// new ones are dropped for that sink (an empty sink takes one of any size).
    pub sink_queue_bytes: u64,
    /// Most bytes of events the source holds for its sinks, each event counted once
    /// however many sinks it waits for; a publish beyond it is refused with
    /// `PublishQueueFull`.
    pub queue_bytes_total: u64,
}

/// The default of [`SourceSettings::max_subscriptions_per_identity`].
pub const DEFAULT_MAX_SUBSCRIPTIONS_PER_IDENTITY: usize = 100;

impl SourceSettings {
    /// The defaults, with delivery to loopback sinks allowed
    /// ([`DeliveryPolicy::allow_loopback`]): for tests and benchmarks whose sinks run on
    /// this machine.
    pub fn allowing_loopback() -> Self {
        SourceSettings {
            notify_policy: DeliveryPolicy::allow_loopback(),
            ..SourceSettings::default()
        }
    }
}

/// The default [`SourceSettings::sink_queue_bytes`]: 8 MiB.
pub const DEFAULT_SINK_QUEUE_BYTES: u64 = 8 * 1024 * 1024;
/// The default [`SourceSettings::queue_bytes_total`]: 256 MiB.
pub const DEFAULT_QUEUE_BYTES_TOTAL: u64 = 256 * 1024 * 1024;

impl Default for SourceSettings {
    fn default() -> Self {
        SourceSettings {
            store: None,
            max_expires: Duration::from_secs(3600),
            max_subscriptions: 10_000,
            queue_capacity: 1024,
            retry: RetryPolicy::default(),
            sweep_every: Duration::from_millis(100),
            default_action: DEFAULT_EVENT_ACTION.to_owned(),
            delivered: None,
            compress_min_bytes: crate::DEFAULT_COMPRESS_MIN_BYTES,
            notify_policy: DeliveryPolicy::default(),
            max_subscriptions_per_identity: DEFAULT_MAX_SUBSCRIPTIONS_PER_IDENTITY,
            filter_budget: crate::protocol::xpath::DEFAULT_FILTER_BUDGET,
            sink_queue_bytes: DEFAULT_SINK_QUEUE_BYTES,
            queue_bytes_total: DEFAULT_QUEUE_BYTES_TOTAL,
        }
    }
}

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
        let mut direct = Vec::new();
        let mut filtered = Vec::new();
        for active in self.lock().values() {
            if active.sub.expires_ms <= now
                || !active.sub.wants(&stamped.topics)
                || !active.sub.wants_action(&stamped.action)
            {
                continue;
            }
            if let Some(xpath) = &active.xpath {
                filtered.push((xpath.clone(), active.sub.id.clone(), active.queue.clone()));
                continue;
            }
            direct.push((active.sub.id.clone(), active.queue.clone()));
        }
        if direct.is_empty() && filtered.is_empty() {
            return Ok(0);
        }
        // Counted with this event: refused if it does not fit beside what is held.
        let held = self.gauges.queued_bytes();
        if held > self.settings.queue_bytes_total {
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
        let mut queued = 0;
        for (id, queue) in direct {
            queued += usize::from(enqueue(&id, &queue, &stamped));
        }
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

    /// The response's action name and body for a request in `version`.
    async fn answer(
        self: &Arc<Self>,
        envelope: &Envelope,
        version: Version,
        manager: &str,
        identity: Option<&str>,
    ) -> Result<(String, String), Refusal> {
        let (payload, element) = match request::body_element(envelope) {
            Ok(read) => read,
            Err(why) => return refuse(Problem::Malformed, why.to_string()),
        };
        if element.name().local() != "GetStatus" {
            self.check_shared()?;
        }
        match element.name().local() {
            "Subscribe" => {
                let request = request::subscribe(&element, &payload, version)?;
                self.subscribe(request, envelope, version, manager, identity)
                    .await
            }
            "Renew" => {
                let id = identifier(envelope, version).ok_or_else(|| Refusal {
                    problem: Problem::UnknownRenew,
                    reason: "Renew names no subscription identifier".into(),
                })?;
                let wanted = element
                    .child(&QName::new(version.eventing_ns(), "Expires"))
                    .map(request::expires);
                let granted = self.grant(version, wanted.as_ref())?;
                let sub = {
                    let mut active = self.lock();
                    let Some(a) = active.get_mut(&id) else {
                        return refuse(Problem::UnknownRenew, format!("no subscription {id}"));
                    };
                    a.sub.expires_ms = now_ms().saturating_add(millis(granted));
                    a.sub.clone()
                };
                let id = sub.id.clone();
                self.keep(Change::Put(Box::new(sub))).await?;
                // An Unsubscribe or expiry that came in meanwhile must not be undone.
                if !self.lock().contains_key(&id) {
                    self.keep(Change::Remove(id)).await?;
                }
                let body = reply::granted_response(
                    version,
                    "RenewResponse",
                    &expires::format_duration(granted),
                );
                Ok(("RenewResponse".into(), body))
            }
            "GetStatus" => {
                let id = self.known(envelope, version)?;
                let left = self.lock().get(&id).map_or(0, |a| a.sub.expires_ms);
                let left = Duration::from_millis(left.saturating_sub(now_ms()));
                let body = reply::granted_response(
                    version,
                    "GetStatusResponse",
                    &expires::format_duration(left),
                );
                Ok(("GetStatusResponse".into(), body))
            }
            "Unsubscribe" => {
                let id = self.known(envelope, version)?;
                self.lock().remove(&id);
                self.keep(Change::Remove(id)).await?;
                Ok((
                    "UnsubscribeResponse".into(),
                    reply::unsubscribe_response(version),
                ))
            }
            other => refuse(
                Problem::Malformed,
                format!("{other} is not a WS-Eventing request this source answers"),
            ),
        }
    }

    /// The identifier of a known subscription the request names.
    fn known(&self, envelope: &Envelope, version: Version) -> Result<String, Refusal> {
        match identifier(envelope, version) {
            Some(id) if self.lock().contains_key(&id) => Ok(id),
            Some(id) => refuse(Problem::Unknown, format!("no subscription {id}")),
            None => refuse(
                Problem::Unknown,
                "the request names no subscription identifier",
            ),
        }
    }

    async fn subscribe(
        self: &Arc<Self>,
        request: request::SubscribeRequest,
        envelope: &Envelope,
        version: Version,
        manager: &str,
        identity: Option<&str>,
    ) -> Result<(String, String), Refusal> {
        let granted = self.grant(version, request.expires.as_ref())?;
        let policy = &self.settings.notify_policy;
        for (what, to) in [
            ("NotifyTo", Some(&request.notify_to)),
            ("EndTo", request.end_to.as_ref()),
        ] {
            if let Some(to) = to
                && let Err(why) = policy.check_address(&to.address)
            {
                return refuse(Problem::UnusableEpr, format!("{what} refused: {why}"));
            }
        }
        if let Some(xpath) = &request.xpath
            && let Err(why) = xpath.check_cost(self.settings.filter_budget)
        {
            return refuse(Problem::CostlyFilter, why.to_string());
        }
        let slot = self
            .reserve(identity)
            .or_else(|full| refuse(Problem::Unable, full.to_string()))?;
        let sub = Subscription {
            id: new_uuid(),
            version,
            soap12: envelope.version() == SoapVersion::V12,
            notify_to: request.notify_to,
            end_to: request.end_to,
            manager: manager.to_owned(),
            expires_ms: now_ms().saturating_add(millis(granted)),
            topics: request.topics,
            actions: request.actions,
            xpath: request.xpath.as_ref().map(|x| x.expression().to_owned()),
            xpath_namespaces: request
                .xpath
                .as_ref()
                .map(|x| x.namespaces().to_vec())
                .unwrap_or_default(),
            gzip: request.gzip,
            wsn: None,
            wrapped: request.wrapped,
            owner: identity.map(str::to_owned),
        };
        self.keep(Change::Put(Box::new(sub.clone()))).await?;
        let body = reply::subscribe_response(version, &sub, &expires::format_duration(granted));
        self.activate_reserved(sub, slot);
        Ok(("SubscribeResponse".into(), body))
    }

    /// The expiration to grant for `wanted`.
    fn grant(
        &self,
        version: Version,
        wanted: Option<&ExpiresRequest>,
    ) -> Result<Duration, Refusal> {
        let max = self.settings.max_expires;
        let Some(wanted) = wanted else {
            return Ok(max);
        };
        match expires::parse(&wanted.text, now_ms()) {
            None => refuse(
                Problem::BadExpires,
                format!(
                    "Expires {:?} is neither an xs:duration nor an xs:dateTime",
                    wanted.text
                ),
            ),
            Some(Requested::Past) => refuse(
                Problem::BadExpires,
                format!("Expires {:?} is negative or in the past", wanted.text),
            ),
            // 2011 (its schema allows a zero duration; CXF asks so for a subscription that
            // does not expire): PT0S asks for an indefinite expiration, beyond any maximum.
            Some(Requested::In(d)) if d.is_zero() && !version.is_2004() => {
                if wanted.best_effort {
                    Ok(max)
                } else {
                    refuse(
                        Problem::ExpiresTooLong,
                        format!(
                            "Expires {:?} asks for an indefinite expiration; the maximum is {}; set BestEffort=\"true\" to accept it",
                            wanted.text,
                            expires::format_duration(max)
                        ),
                    )
                }
            }
            Some(Requested::In(d)) if d.is_zero() => refuse(Problem::BadExpires, "Expires is zero"),
            Some(Requested::In(d)) if d > max => {
                if version.is_2004() || wanted.best_effort {
                    Ok(max)
                } else {
                    refuse(
                        Problem::ExpiresTooLong,
                        format!(
                            "Expires {:?} is beyond the maximum {}; set BestEffort=\"true\" to accept it",
                            wanted.text,
                            expires::format_duration(max)
                        ),
                    )
                }
            }
            Some(Requested::In(d)) => Ok(d),
        }
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
fn message_id(envelope: &Envelope, version: Version) -> Option<String> {
    let block = envelope.header(&QName::new(version.addressing_ns(), "MessageID"))?;
    envelope.header_text(block)
}

/// The subscription identifier the request carries as a header block (the manager EPR's
/// reference parameter): `wse:Identifier` (2004/08) or `lev:Identifier` (2011; either is
/// accepted in both).
fn identifier(envelope: &Envelope, version: Version) -> Option<String> {
    let (ns, local) = version.identifier();
    let block = envelope
        .header(&QName::new(ns, local))
        .or_else(|| envelope.header(&QName::new(lather_envelope::WSE04_NS, "Identifier")))
        .or_else(|| envelope.header(&QName::new(LATHER_EVENTING_NS, "Identifier")))?;
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
