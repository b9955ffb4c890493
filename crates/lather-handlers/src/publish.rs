//! `publish`: the eventing handler — each message's Body published as an event to an event
//! source of the same process, with no HTTP hop.

use crate::event_sink::EventSinks;
use lather_envelope::{Fault, FaultKind, QName, WSA04_NS, WSA10_NS};
use lather_pipeline::{
    Access, BuildEnv, Direction, Handler, HandlerFuture, HandlerKind, Message, Observation,
    ObservationKind, Parts, SettingsError, Verdict,
};
use serde::Deserialize;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Publishes the first element of each message's Body as an event to the event source
/// named `source` (a `builtin = "event-source"` service of this process), as a POST to its
/// `{path}/publish` would: the event's topics are its root element's name and the
/// configured `topic` words; the notifications' `wsa:Action` is the configured `action`,
/// else the message's action, else the source's `event_action`.
///
/// The message is not changed. Publishing only queues notifications (delivery runs on the
/// source's own tasks), so a slow subscriber never delays the message. A Body with no
/// element is refused with `NoEventToPublish`; a source that is not running in this
/// process with `EventSourceNotRunning`.
#[derive(Debug)]
pub struct Publish {
    source: String,
    sinks: EventSinks,
    action: Option<String>,
    topics: Vec<String>,
    events: AtomicU64,
    notifications: AtomicU64,
}

impl Publish {
    /// A handler publishing to the sink registered in `sinks` as `source`, with `action`
    /// as the notifications' action (when given) and the words of `topic` as extra topics.
    pub fn new(
        source: &str,
        sinks: EventSinks,
        action: Option<String>,
        topic: Option<&str>,
    ) -> Publish {
        Publish {
            source: source.to_owned(),
            sinks,
            action,
            topics: topic
                .map(|t| t.split_whitespace().map(str::to_owned).collect())
                .unwrap_or_default(),
            events: AtomicU64::new(0),
            notifications: AtomicU64::new(0),
        }
    }

    /// The topics of an event whose root element is `root`: its name, then the configured
    /// ones.
    fn topics(&self, root: Option<&QName>) -> Vec<String> {
        let mut topics = Vec::with_capacity(1 + self.topics.len());
        if let Some(op) = root {
            topics.push(format!("{{{}}}{}", op.namespace(), op.local()));
        }
        topics.extend(self.topics.iter().cloned());
        topics
    }
}

/// The message's own action: in the request flow its SOAP action, else its `wsa:Action`
/// header (either addressing version).
fn message_action(message: &Message) -> Option<String> {
    let context = message.context();
    if context.direction == Direction::Request
        && let Some(action) = context.action.as_deref().filter(|a| !a.is_empty())
    {
        return Some(action.to_owned());
    }
    let envelope = message.envelope();
    [WSA10_NS, WSA04_NS].into_iter().find_map(|ns| {
        let block = envelope.header(&QName::new(ns, "Action"))?;
        envelope.header_text(block)
    })
}

impl Handler for Publish {
    fn access(&self) -> Access {
        let reads = Parts::none().body();
        Access::read_only(match self.action {
            Some(_) => reads,
            None => reads
                .header(QName::new(WSA10_NS, "Action"))
                .header(QName::new(WSA04_NS, "Action")),
        })
    }

    fn call<'a>(&'a self, message: &'a Message) -> HandlerFuture<'a> {
        Box::pin(async move {
            let envelope = message.envelope();
            let Some(event) = envelope.extract_payload() else {
                return Verdict::Fault(Fault::with_reason(
                    FaultKind::NoEventToPublish,
                    format!(
                        "publish to {:?}: the Body holds no event element",
                        self.source
                    ),
                ));
            };
            let Some(sink) = self.sinks.get(&self.source) else {
                return Verdict::Fault(Fault::with_reason(
                    FaultKind::EventSourceNotRunning,
                    format!(
                        "publish: event source {:?} is not running in this process",
                        self.source
                    ),
                ));
            };
            let topics = self.topics(envelope.operation());
            let action = self.action.clone().or_else(|| message_action(message));
            match sink.publish(&event, &topics, action.as_deref()) {
                Ok(queued) => {
                    self.events.fetch_add(1, Ordering::Relaxed);
                    self.notifications
                        .fetch_add(u64::try_from(queued).unwrap_or(u64::MAX), Ordering::Relaxed);
                    Verdict::proceed()
                }
                Err(fault) => Verdict::Fault(fault),
            }
        })
    }

    fn observations(&self) -> Vec<Observation> {
        let labels = vec![("source", self.source.clone())];
        vec![
            Observation {
                name: "publish_events",
                help: "Events a publish handler handed to its event source",
                kind: ObservationKind::Counter,
                labels: labels.clone(),
                value: self.events.load(Ordering::Relaxed),
            },
            Observation {
                name: "publish_notifications",
                help: "Notifications queued for subscribers by a publish handler's events",
                kind: ObservationKind::Counter,
                labels,
                value: self.notifications.load(Ordering::Relaxed),
            },
        ]
    }
}

/// The `publish` kind: its handlers hand events to an event source of the serving process,
/// found in the build's resources as [`EventSinks`], so they run there only (not remote
/// capable) and are not idempotent.
#[derive(Debug, Clone, Copy, Default)]
pub struct PublishKind;

/// `[handlers.NAME]` settings of kind `publish`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PublishSettings {
    /// The `builtin = "event-source"` service (by name) events are published to (required).
    pub source: String,
    /// The notifications' `wsa:Action` (default: the message's action, else the event
    /// source's `event_action`).
    pub action: Option<String>,
    /// The topics the event carries beside its root element's name (space-separated).
    pub topic: Option<String>,
}

/// The built-in service name of an event source, as [`BuildEnv::services`] lists it.
const EVENT_SOURCE: &str = "event-source";

impl HandlerKind for PublishKind {
    type Settings = PublishSettings;

    fn name(&self) -> &'static str {
        "publish"
    }

    fn idempotent(&self) -> bool {
        false
    }

    fn remote_capable(&self) -> bool {
        false
    }

    fn build(
        &self,
        settings: PublishSettings,
        env: &BuildEnv<'_>,
    ) -> Result<Arc<dyn Handler>, SettingsError> {
        check_source(&settings.source, env)?;
        for (key, value) in [("action", &settings.action), ("topic", &settings.topic)] {
            if value.as_deref().is_some_and(|v| v.trim().is_empty()) {
                return Err(SettingsError::key(key, "must not be empty"));
            }
        }
        // Where no event source runs (`lather check`, a worker), the handler faults with
        // `EventSourceNotRunning`.
        let sinks = env
            .resources
            .get::<EventSinks>()
            .cloned()
            .unwrap_or_default();
        Ok(Arc::new(Publish::new(
            &settings.source,
            sinks,
            settings.action,
            settings.topic.as_deref(),
        )))
    }
}

/// `source` names a `builtin = "event-source"` service of this process.
fn check_source(wanted: &str, env: &BuildEnv<'_>) -> Result<(), SettingsError> {
    let found = env.services.iter().find(|(name, _)| name == wanted);
    if found.is_some_and(|(_, builtin)| builtin == EVENT_SOURCE) {
        return Ok(());
    }
    let sources: Vec<&str> = env
        .services
        .iter()
        .filter(|(_, builtin)| builtin == EVENT_SOURCE)
        .map(|(name, _)| name.as_str())
        .collect();
    let what = if found.is_some() {
        "is not a builtin = \"event-source\" service"
    } else {
        "names no service"
    };
    let known = if sources.is_empty() {
        "this configuration has no event source".to_owned()
    } else {
        format!("event sources: {}", sources.join(", "))
    };
    Err(SettingsError::key(
        "source",
        format!("{wanted:?} {what} ({known})"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event_sink::EventSink;
    use bytes::Bytes;
    use lather_envelope::{Envelope, Limits};
    use lather_pipeline::Context;
    use std::sync::{Arc, Mutex};

    /// One publish: the event, its topics, its action.
    type Published = (String, Vec<String>, Option<String>);

    /// Records what it is given.
    #[derive(Debug, Default)]
    struct Recorder {
        got: Mutex<Vec<Published>>,
    }

    impl EventSink for Recorder {
        fn publish(
            &self,
            event: &[u8],
            topics: &[String],
            action: Option<&str>,
        ) -> Result<usize, Fault> {
            self.got.lock().unwrap().push((
                String::from_utf8(event.to_vec()).unwrap(),
                topics.to_vec(),
                action.map(str::to_owned),
            ));
            Ok(2)
        }
    }

    fn message(header: &str, body: &str, action: Option<&str>, direction: Direction) -> Message {
        let xml = format!(
            r#"<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope" xmlns:t="urn:t"><s:Header>{header}</s:Header><s:Body>{body}</s:Body></s:Envelope>"#
        );
        let envelope = Envelope::parse(Bytes::from(xml), &Limits::default()).unwrap();
        Message::new(
            envelope,
            Context {
                action: action.map(str::to_owned),
                direction,
                ..Context::default()
            },
        )
    }

    fn with_recorder() -> (EventSinks, Arc<Recorder>) {
        let sinks = EventSinks::default();
        let recorder = Arc::new(Recorder::default());
        sinks.register("events", recorder.clone());
        (sinks, recorder)
    }

    #[tokio::test]
    async fn the_body_is_published_with_its_name_and_the_configured_topics() {
        let (sinks, recorder) = with_recorder();
        let publish = Publish::new("events", sinks, None, Some(" alarms  ward-3 "));
        let m = message(
            "",
            "<t:Temp>21</t:Temp>",
            Some("urn:t:Report"),
            Direction::Request,
        );
        assert!(matches!(publish.call(&m).await, Verdict::Continue(_)));
        let got = recorder.got.lock().unwrap();
        assert_eq!(got.len(), 1);
        // The event stands alone: the namespace declared on the Envelope comes with it.
        assert!(got[0].0.starts_with("<t:Temp"), "{}", got[0].0);
        assert!(got[0].0.contains(r#"xmlns:t="urn:t""#), "{}", got[0].0);
        assert_eq!(got[0].1, ["{urn:t}Temp", "alarms", "ward-3"]);
        assert_eq!(got[0].2.as_deref(), Some("urn:t:Report"));
        let observed = publish.observations();
        assert_eq!((observed[0].value, observed[1].value), (1, 2));
    }

    #[tokio::test]
    async fn the_action_is_the_configured_one_else_the_messages() {
        let (sinks, recorder) = with_recorder();
        let wsa =
            r#"<a:Action xmlns:a="http://www.w3.org/2005/08/addressing">urn:t:Answer</a:Action>"#;
        let fixed = Publish::new("events", sinks.clone(), Some("urn:fixed".into()), None);
        let own = Publish::new("events", sinks, None, None);
        let request = message(wsa, "<t:A/>", Some("urn:t:Soap"), Direction::Request);
        let response = message(wsa, "<t:A/>", Some("urn:t:Soap"), Direction::Response);
        let bare = message("", "<t:A/>", None, Direction::Request);
        fixed.call(&request).await;
        own.call(&request).await;
        own.call(&response).await;
        own.call(&bare).await;
        let actions: Vec<Option<String>> = recorder
            .got
            .lock()
            .unwrap()
            .iter()
            .map(|g| g.2.clone())
            .collect();
        assert_eq!(
            actions,
            [
                Some("urn:fixed".to_owned()),
                Some("urn:t:Soap".to_owned()),
                Some("urn:t:Answer".to_owned()),
                None
            ]
        );
    }

    #[tokio::test]
    async fn an_empty_body_and_a_missing_source_are_faults() {
        let (sinks, recorder) = with_recorder();
        let publish = Publish::new("events", sinks, None, None);
        match publish
            .call(&message("", "", None, Direction::Request))
            .await
        {
            Verdict::Fault(f) => assert_eq!(f.kind(), FaultKind::NoEventToPublish),
            other => panic!("{other:?}"),
        }
        let elsewhere = Publish::new("other", EventSinks::default(), None, None);
        match elsewhere
            .call(&message("", "<t:A/>", None, Direction::Request))
            .await
        {
            Verdict::Fault(f) => assert_eq!(f.kind(), FaultKind::EventSourceNotRunning),
            other => panic!("{other:?}"),
        }
        assert!(recorder.got.lock().unwrap().is_empty());
    }

    #[test]
    fn it_reads_the_action_headers_only_when_it_takes_the_messages_action() {
        let own = Publish::new("e", EventSinks::default(), None, None).access();
        let fixed = Publish::new("e", EventSinks::default(), Some("a".into()), None).access();
        let action = QName::new(WSA10_NS, "Action");
        assert!(own.reads.has_body() && own.reads.has_header(&action));
        assert!(fixed.reads.has_body() && !fixed.reads.has_header(&action));
        assert!(own.writes.is_empty() && fixed.writes.is_empty());
    }
}
