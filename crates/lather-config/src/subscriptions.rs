//! Where an event source keeps its subscriptions, and the NATS names it uses when they are
//! shared: `subscriptions = "nats" | "local"` and `event_subject`.

use crate::{ConfigError, NatsConfig, ServiceConfig, SubscriptionsMode};

impl ServiceConfig {
    /// Whether this event source keeps its subscriptions in JetStream KV: `[nats]` exists
    /// and `subscriptions` is not `"local"`.
    pub fn shares_subscriptions(&self, nats: Option<&NatsConfig>) -> bool {
        let is_source = self
            .builtin
            .as_ref()
            .is_some_and(|b| *b.get_ref() == crate::Builtin::EventSource);
        let mode = self.subscriptions.as_ref().map(|m| *m.get_ref());
        is_source && nats.is_some() && mode != Some(SubscriptionsMode::Local)
    }

    /// Whether this context store keeps its contexts in JetStream KV: `[nats]` exists and
    /// `contexts` is not `"local"`.
    pub fn shares_contexts(&self, nats: Option<&NatsConfig>) -> bool {
        let is_store = self
            .builtin
            .as_ref()
            .is_some_and(|b| *b.get_ref() == crate::Builtin::ContextStore);
        let mode = self.contexts.as_ref().map(|m| *m.get_ref());
        is_store && nats.is_some() && mode != Some(SubscriptionsMode::Local)
    }

    /// The KV bucket of the shared contexts: `{prefix}_{name}_contexts`, every character
    /// outside `[A-Za-z0-9_-]` replaced by `_`.
    pub fn context_bucket(&self, nats: &NatsConfig) -> String {
        jetstream_name(&format!(
            "{}_{}_contexts",
            nats.subject_prefix,
            self.name.get_ref()
        ))
    }

    /// The KV bucket of the shared subscriptions: `{prefix}_{name}_subscriptions`, every
    /// character outside `[A-Za-z0-9_-]` replaced by `_`.
    pub fn subscription_bucket(&self, nats: &NatsConfig) -> String {
        jetstream_name(&format!(
            "{}_{}_subscriptions",
            nats.subject_prefix,
            self.name.get_ref()
        ))
    }

    /// The subject events are taken from: `event_subject`, else
    /// `{prefix}.events.{name}` (spaces, dots, `*` and `>` in the name become `_`).
    pub fn event_subject(&self, nats: &NatsConfig) -> String {
        if let Some(subject) = &self.event_subject {
            return subject.get_ref().clone();
        }
        let name: String = self
            .name
            .get_ref()
            .chars()
            .map(|c| {
                if c.is_whitespace() || matches!(c, '.' | '*' | '>') {
                    '_'
                } else {
                    c
                }
            })
            .collect();
        format!("{}.events.{name}", nats.subject_prefix)
    }

    /// The queue group every node of this service takes events in, so that exactly one
    /// node takes each: the event subject followed by `.nodes`.
    pub fn event_queue_group(&self, nats: &NatsConfig) -> String {
        let subject = self.event_subject(nats);
        format!("{subject}.nodes")
    }
}

/// Checks the subscription keys of service `i`: `subscriptions = "nats"` needs `[nats]`;
/// shared subscriptions exclude `store`; `event_subject` needs shared subscriptions and
/// must be a plain subject.
pub(crate) fn check(
    svc: &ServiceConfig,
    i: usize,
    nats: Option<&NatsConfig>,
    at: &impl Fn(std::ops::Range<usize>, String) -> ConfigError,
) -> Result<(), ConfigError> {
    if let Some(mode) = &svc.subscriptions
        && *mode.get_ref() == SubscriptionsMode::Nats
        && nats.is_none()
    {
        return Err(at(
            mode.span(),
            format!(
                "service[{i}].subscriptions: \"nats\" needs a [nats] table with the url of the NATS server"
            ),
        ));
    }
    if let Some(mode) = &svc.contexts
        && *mode.get_ref() == SubscriptionsMode::Nats
        && nats.is_none()
    {
        return Err(at(
            mode.span(),
            format!(
                "service[{i}].contexts: \"nats\" needs a [nats] table with the url of the NATS server"
            ),
        ));
    }
    if let Some(store) = &svc.store
        && svc.shares_contexts(nats)
    {
        return Err(at(
            store.span(),
            format!(
                "service[{i}].store: with [nats] the contexts live in JetStream KV; \
                 set contexts = \"local\" to keep them in this file instead"
            ),
        ));
    }
    let shared = svc.shares_subscriptions(nats);
    if let Some(store) = &svc.store
        && shared
    {
        return Err(at(
            store.span(),
            format!(
                "service[{i}].store: with [nats] the subscriptions live in JetStream KV; \
                 set subscriptions = \"local\" to keep them in this file instead"
            ),
        ));
    }
    if let Some(subject) = &svc.event_subject {
        if !shared {
            return Err(at(
                subject.span(),
                format!(
                    "service[{i}].event_subject: only an event source whose subscriptions live in NATS takes it"
                ),
            ));
        }
        let s = subject.get_ref();
        let valid = !s.is_empty()
            && !s.contains(char::is_whitespace)
            && !s.starts_with('.')
            && !s.ends_with('.')
            && !s.contains("..")
            && !s.contains(['*', '>']);
        if !valid {
            return Err(at(
                subject.span(),
                format!(
                    "service[{i}].event_subject: {s:?} is not a NATS subject (no spaces, wildcards or empty tokens)"
                ),
            ));
        }
    }
    Ok(())
}

/// `raw` as a JetStream stream or bucket name: every character outside `[A-Za-z0-9_-]`
/// replaced by `_`.
pub(crate) fn jetstream_name(raw: &str) -> String {
    raw.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::Config;

    const SOURCE: &str =
        "[[service]]\nname = \"ev.ents\"\npath = \"/e\"\nbuiltin = \"event-source\"\n";
    const NATS: &str = "[nats]\nurl = \"nats://127.0.0.1:4222\"\nsubject_prefix = \"acme\"\n";

    fn error_of(text: &str) -> String {
        Config::from_toml(text, "t.toml").unwrap_err().to_string()
    }

    #[test]
    fn nats_is_the_default_when_configured_and_local_opts_out() {
        let cfg = Config::from_toml(&format!("{NATS}{SOURCE}"), "t").unwrap();
        let (svc, nats) = (&cfg.services[0], cfg.nats.as_ref());
        assert!(svc.shares_subscriptions(nats));
        let nats = nats.unwrap();
        assert_eq!(svc.subscription_bucket(nats), "acme_ev_ents_subscriptions");
        assert_eq!(svc.event_subject(nats), "acme.events.ev_ents");
        assert_eq!(svc.event_queue_group(nats), "acme.events.ev_ents.nodes");

        let local = format!("{NATS}{SOURCE}subscriptions = \"local\"\nstore = \"x.redb\"\n");
        let cfg = Config::from_toml(&local, "t").unwrap();
        assert!(!cfg.services[0].shares_subscriptions(cfg.nats.as_ref()));

        let cfg = Config::from_toml(SOURCE, "t").unwrap();
        assert!(!cfg.services[0].shares_subscriptions(cfg.nats.as_ref()));

        let subject = format!("{NATS}{SOURCE}event_subject = \"plant.alarms\"\n");
        let cfg = Config::from_toml(&subject, "t").unwrap();
        assert_eq!(
            cfg.services[0].event_subject(cfg.nats.as_ref().unwrap()),
            "plant.alarms"
        );
    }

    #[test]
    fn inconsistent_keys_are_refused_with_their_line() {
        let msg = error_of(&format!("{SOURCE}subscriptions = \"nats\"\n"));
        assert!(msg.contains("t.toml:5") && msg.contains("[nats]"), "{msg}");
        let msg = error_of(&format!("{NATS}{SOURCE}store = \"x.redb\"\n"));
        assert!(msg.contains("t.toml:8") && msg.contains("local"), "{msg}");
        let msg = error_of(&format!("{SOURCE}event_subject = \"a.b\"\n"));
        assert!(msg.contains("event_subject"), "{msg}");
        let msg = error_of(&format!("{NATS}{SOURCE}event_subject = \"a.*\"\n"));
        assert!(msg.contains("not a NATS subject"), "{msg}");
        let msg = error_of(&format!("{NATS}{SOURCE}subscriptions = \"both\"\n"));
        assert!(msg.contains("unknown variant"), "{msg}");
        let echo = "[[service]]\nname = \"a\"\npath = \"/a\"\nbuiltin = \"echo\"\nsubscriptions = \"local\"\n";
        let msg = error_of(echo);
        assert!(msg.contains("event-source"), "{msg}");
    }
}
