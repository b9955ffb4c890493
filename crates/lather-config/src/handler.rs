//! `[handlers.NAME]`: a handler instance — its kind, the engine's options, and the kind's own
//! settings.

use serde::Deserialize;
use serde::de::{self, MapAccess, Visitor};
use std::collections::BTreeMap;
use std::fmt;
use toml::Spanned;

/// The keys of a `[handlers.NAME]` table the engine reads itself; every other key belongs to
/// the handler's kind.
pub const ENGINE_KEYS: &[&str] = &[
    "kind",
    "must_perform",
    "oneway",
    "retries",
    "retry_backoff_ms",
    "timeout_ms",
    "work",
    "snapshot",
    "after",
    "placement",
    "fallback",
];

/// One `[handlers.NAME]` table.
///
/// `kind` picks the implementation; the engine's options apply to every kind; every other
/// key is one of the kind's own [`settings`](HandlerConfig::settings), which the kind reads
/// (and refuses, naming the key, when it does not take it) when the handler is built.
#[derive(Debug, Clone)]
pub struct HandlerConfig {
    /// The implementation, e.g. `"logging"`, `"cpu-burn"`.
    pub kind: Spanned<String>,
    /// A failure halts the message (default true); false: logged and ignored.
    pub must_perform: Option<bool>,
    /// Fire and forget (default false).
    pub oneway: Option<bool>,
    /// Extra attempts after a timeout or panic (default 0).
    pub retries: Option<Spanned<u32>>,
    /// Wait before the first retry, in milliseconds (default 5; doubles).
    pub retry_backoff_ms: Option<u64>,
    /// Time allowed per attempt, in milliseconds (default 30 000).
    pub timeout_ms: Option<Spanned<u64>>,
    /// `"cpu"` (run on the CPU pool) or `"io"` (run inline on the message's task); the
    /// default is the kind's own.
    pub work: Option<Spanned<String>>,
    /// Reads the message as it entered its stage, so it may share a stage with handlers
    /// that write what it reads (default false).
    pub snapshot: Option<bool>,
    /// In an `auto` flow: handlers that must finish before this one starts.
    pub after: Option<Spanned<Vec<Spanned<String>>>>,
    /// `"local"` (default: in the serving process), `"remote"` (on a `lather worker`
    /// through `[nats]`) or `"auto"` (per call, where the message finishes sooner).
    pub placement: Option<Spanned<crate::Placement>>,
    /// A remote handler whose workers cannot be reached: `"fault"` (default) or `"local"`.
    pub fallback: Option<Spanned<crate::Fallback>>,
    /// The kind's own settings: every other key of the table, with its value and where the
    /// value stands in the configuration text.
    pub settings: BTreeMap<String, Spanned<toml::Value>>,
}

impl HandlerConfig {
    /// Where the handler runs (default local).
    pub fn placement(&self) -> crate::Placement {
        self.placement
            .as_ref()
            .map_or_else(Default::default, |p| *p.get_ref())
    }

    /// What a remote handler does when its workers cannot be reached (default fault).
    pub fn fallback(&self) -> crate::Fallback {
        self.fallback
            .as_ref()
            .map_or_else(Default::default, |f| *f.get_ref())
    }

    /// The kind's settings that were set, by key, with their spans.
    pub fn parameters(&self) -> Vec<(&str, std::ops::Range<usize>)> {
        self.settings
            .iter()
            .map(|(key, value)| (key.as_str(), value.span()))
            .collect()
    }
}

impl<'de> Deserialize<'de> for HandlerConfig {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(HandlerVisitor)
    }
}

/// Reads the engine's keys into their typed fields and keeps the rest for the kind.
struct HandlerVisitor;

impl<'de> Visitor<'de> for HandlerVisitor {
    type Value = HandlerConfig;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a handler table with a kind")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<HandlerConfig, A::Error> {
        let mut kind = None;
        let mut cfg = HandlerConfig {
            kind: Spanned::new(0..0, String::new()),
            must_perform: None,
            oneway: None,
            retries: None,
            retry_backoff_ms: None,
            timeout_ms: None,
            work: None,
            snapshot: None,
            after: None,
            placement: None,
            fallback: None,
            settings: BTreeMap::new(),
        };
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "kind" => kind = Some(map.next_value()?),
                "must_perform" => cfg.must_perform = Some(map.next_value()?),
                "oneway" => cfg.oneway = Some(map.next_value()?),
                "retries" => cfg.retries = Some(map.next_value()?),
                "retry_backoff_ms" => cfg.retry_backoff_ms = Some(map.next_value()?),
                "timeout_ms" => cfg.timeout_ms = Some(map.next_value()?),
                "work" => cfg.work = Some(map.next_value()?),
                "snapshot" => cfg.snapshot = Some(map.next_value()?),
                "after" => cfg.after = Some(map.next_value()?),
                "placement" => cfg.placement = Some(map.next_value()?),
                "fallback" => cfg.fallback = Some(map.next_value()?),
                _ => {
                    let value = map.next_value()?;
                    cfg.settings.insert(key, value);
                }
            }
        }
        cfg.kind = kind.ok_or_else(|| de::Error::missing_field("kind"))?;
        Ok(cfg)
    }
}
