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
}
