//! The keys of asynchronous replies: `async_replies` and the keys that need it.

use crate::ConfigError;
use crate::model::{ServiceConfig, ServiceKind};
use std::time::Duration;

/// The default of `async_max_pending`.
pub const DEFAULT_ASYNC_MAX_PENDING: u64 = 1000;
/// The default of `reply_attempts`.
pub const DEFAULT_REPLY_ATTEMPTS: u64 = 6;
/// The default of `reply_keep_s`.
pub const DEFAULT_REPLY_KEEP_S: u64 = 300;

/// A service's asynchronous reply settings, defaults filled in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AsyncReplies {
    /// Where pending work is kept (`None`: memory).
    pub store: Option<String>,
    /// Most requests pending at once.
    pub max_pending: usize,
    /// Delivery attempts per answer.
    pub attempts: u32,
    /// How long a polled answer is kept.
    pub keep: Duration,
    /// `reply_allow` entries.
    pub allow: Vec<String>,
}

impl ServiceConfig {
    /// The asynchronous reply settings, when `async_replies = true`.
    pub fn async_replies(&self) -> Option<AsyncReplies> {
        if !self.async_replies.as_ref().is_some_and(|v| *v.get_ref()) {
            return None;
        }
        let number = |v: &Option<toml::Spanned<u64>>, default: u64| {
            v.as_ref().map_or(default, |v| *v.get_ref())
        };
        Some(AsyncReplies {
            store: self.async_store.as_ref().map(|s| s.get_ref().clone()),
            max_pending: usize::try_from(number(
                &self.async_max_pending,
                DEFAULT_ASYNC_MAX_PENDING,
            ))
            .unwrap_or(usize::MAX),
            attempts: u32::try_from(number(&self.reply_attempts, DEFAULT_REPLY_ATTEMPTS))
                .unwrap_or(u32::MAX),
            keep: Duration::from_secs(number(&self.reply_keep_s, DEFAULT_REPLY_KEEP_S)),
            allow: self.reply_allow.as_ref().map_or_else(Vec::new, |list| {
                list.get_ref().iter().map(|e| e.get_ref().clone()).collect()
            }),
        })
    }
}

/// The JetStream names of a service's shared asynchronous replies (see
/// [`ServiceConfig::shares_async_replies`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AsyncNames {
    /// The work-queue stream of pending requests: `{PREFIX}_ASYNC_{NAME}`.
    pub stream: String,
    /// Its subject: `{prefix}.async.{name}`.
    pub subject: String,
    /// The KV bucket of answers made (and of polled requests): `{prefix}_{name}_async`.
    pub bucket: String,
}

impl ServiceConfig {
    /// Whether pending asynchronous requests sit in JetStream: `async_replies = true`,
    /// `[nats]` exists and no `async_store` names a local file.
    pub fn shares_async_replies(&self, nats: Option<&crate::NatsConfig>) -> bool {
        self.async_replies.as_ref().is_some_and(|v| *v.get_ref())
            && nats.is_some()
            && self.async_store.is_none()
    }

    /// The JetStream names of this service's shared asynchronous replies; every character
    /// outside `[A-Za-z0-9_-]` becomes `_`.
    pub fn async_names(&self, nats: &crate::NatsConfig) -> AsyncNames {
        let safe = crate::subscriptions::jetstream_name;
        let (prefix, name) = (nats.subject_prefix.as_str(), self.name.get_ref());
        AsyncNames {
            stream: safe(&format!("{prefix}_ASYNC_{name}")).to_ascii_uppercase(),
            subject: format!("{prefix}.async.{}", safe(name)),
            bucket: safe(&format!("{prefix}_{name}_async")),
        }
    }
}

/// Two services whose asynchronous replies are shared over NATS must not end up with one
/// stream, subject or bucket: names that differ only in characters made `_`, or in case
/// (stream names are upper-cased), are refused.
pub(crate) fn check_shared_names(
    config: &crate::Config,
    at: &impl Fn(std::ops::Range<usize>, String) -> ConfigError,
) -> Result<(), ConfigError> {
    let Some(nats) = config.nats.as_ref() else {
        return Ok(());
    };
    let mut seen: std::collections::HashMap<String, &str> = std::collections::HashMap::new();
    for svc in &config.services {
        if !svc.shares_async_replies(Some(nats)) {
            continue;
        }
        let names = svc.async_names(nats);
        let name = svc.name.get_ref();
        for taken in [
            names.stream,
            names.subject,
            names.bucket.to_ascii_uppercase(),
        ] {
            if let Some(first) = seen.insert(taken.clone(), name.as_str())
                && first != name.as_str()
            {
                return Err(at(
                    svc.name.span(),
                    format!(
                        "service {name:?} would share the asynchronous reply queue {taken} with service {first:?} (rename one)"
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The asynchronous reply keys of service `i`: not on an event source, the others only with
/// `async_replies = true`, the numbers at least 1.
pub(crate) fn check_service(
    svc: &ServiceConfig,
    i: usize,
    at: &impl Fn(std::ops::Range<usize>, String) -> ConfigError,
) -> Result<(), ConfigError> {
    let on = svc.async_replies.as_ref().is_some_and(|v| *v.get_ref());
    if let Some(flag) = &svc.async_replies
        && on
        && matches!(
            svc.kind(),
            ServiceKind::Builtin(crate::Builtin::EventSource)
        )
    {
        return Err(at(
            flag.span(),
            format!("service[{i}].async_replies: an event source answers on the connection"),
        ));
    }
    let needing = [
        ("async_store", svc.async_store.as_ref().map(|v| v.span())),
        (
            "async_max_pending",
            svc.async_max_pending.as_ref().map(|v| v.span()),
        ),
        (
            "reply_attempts",
            svc.reply_attempts.as_ref().map(|v| v.span()),
        ),
        ("reply_keep_s", svc.reply_keep_s.as_ref().map(|v| v.span())),
        ("reply_allow", svc.reply_allow.as_ref().map(|v| v.span())),
    ];
    for (key, span) in needing {
        if let Some(span) = span
            && !on
        {
            return Err(at(
                span,
                format!("service[{i}].{key}: only with async_replies = true"),
            ));
        }
    }
    for (key, value) in [
        ("async_max_pending", &svc.async_max_pending),
        ("reply_attempts", &svc.reply_attempts),
        ("reply_keep_s", &svc.reply_keep_s),
    ] {
        if let Some(v) = value
            && *v.get_ref() == 0
        {
            return Err(at(
                v.span(),
                format!("service[{i}].{key}: must be at least 1"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::Config;

    const ECHO: &str = "[[service]]\nname = \"e\"\npath = \"/e\"\nbuiltin = \"echo\"\n";

    #[test]
    fn the_settings_come_with_their_defaults() {
        let config = Config::from_toml(ECHO, "t").unwrap();
        assert_eq!(config.services[0].async_replies(), None);
        let config = Config::from_toml(
            &format!("{ECHO}async_replies = true\nreply_allow = [\"127.0.0.1\"]\n"),
            "t",
        )
        .unwrap();
        let settings = config.services[0].async_replies().unwrap();
        assert_eq!(settings.max_pending, 1000);
        assert_eq!(settings.attempts, 6);
        assert_eq!(settings.keep.as_secs(), 300);
        assert_eq!(settings.allow, ["127.0.0.1"]);
        assert_eq!(settings.store, None);
        assert!(!config.services[0].shares_async_replies(None));
    }

    #[test]
    fn keys_without_async_replies_or_zero_are_refused_by_name() {
        for (extra, says) in [
            (
                "reply_attempts = 3",
                "reply_attempts: only with async_replies",
            ),
            (
                "async_store = \"x.redb\"",
                "async_store: only with async_replies",
            ),
            (
                "async_replies = true\nasync_max_pending = 0",
                "async_max_pending: must be at least 1",
            ),
        ] {
            let e = Config::from_toml(&format!("{ECHO}{extra}\n"), "t").unwrap_err();
            assert!(e.message().contains(says), "{extra}: {e}");
        }
    }

    #[test]
    fn with_nats_and_no_store_the_replies_are_shared_under_safe_names() {
        let nats = "[nats]\nurl = \"nats://127.0.0.1:4222\"\nsubject_prefix = \"edge\"\n";
        let shared = Config::from_toml(
            &format!("{nats}[[service]]\nname = \"quotes.v2\"\npath = \"/q\"\nbuiltin = \"echo\"\nasync_replies = true\n"),
            "t",
        )
        .unwrap();
        let svc = &shared.services[0];
        assert!(svc.shares_async_replies(shared.nats.as_ref()));
        let names = svc.async_names(shared.nats.as_ref().unwrap());
        assert_eq!(names.stream, "EDGE_ASYNC_QUOTES_V2");
        assert_eq!(names.subject, "edge.async.quotes_v2");
        assert_eq!(names.bucket, "edge_quotes_v2_async");
        let local = Config::from_toml(
            &format!("{nats}{ECHO}async_replies = true\nasync_store = \"j.redb\"\n"),
            "t",
        )
        .unwrap();
        assert!(!local.services[0].shares_async_replies(local.nats.as_ref()));
        let clash = Config::from_toml(
            &format!(
                "{nats}[[service]]\nname = \"quotes.v2\"\npath = \"/a\"\nbuiltin = \"echo\"\nasync_replies = true\n\
                 [[service]]\nname = \"Quotes_v2\"\npath = \"/b\"\nbuiltin = \"echo\"\nasync_replies = true\n"
            ),
            "t",
        )
        .unwrap_err();
        assert!(
            clash
                .message()
                .contains("would share the asynchronous reply queue"),
            "{clash}"
        );
    }
}
