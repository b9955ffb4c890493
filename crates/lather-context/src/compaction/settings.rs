//! The settings both kinds of the compaction pair read.

use crate::client::StoreClient;
use lather_envelope::QName;
use lather_pipeline::SettingsError;
use serde::Deserialize;
use std::time::Duration;

/// WS-Addressing 1.0.
const WSA10: &str = "http://www.w3.org/2005/08/addressing";
/// WS-Addressing 2004/08.
const WSA04: &str = "http://schemas.xmlsoap.org/ws/2004/08/addressing";

/// The blocks compacted by default: the WS-Addressing headers (1.0 and 2004/08) other than
/// `MessageID` and `RelatesTo`, which differ in every message.
pub fn default_headers() -> Vec<QName> {
    [WSA10, WSA04]
        .into_iter()
        .flat_map(|ns| {
            ["To", "From", "ReplyTo", "FaultTo", "Action"]
                .into_iter()
                .map(move |local| QName::new(ns, local))
        })
        .collect()
}

/// `[handlers.NAME]` settings of kinds `context-compact` and `context-expand`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompactionSettings {
    /// The context store's URL, e.g. `http://127.0.0.1:8080/contexts` (required).
    pub store: Option<String>,
    /// The header blocks compacted (and, on the receiving side, that may come back), as
    /// `{namespace}local` (default: [`default_headers`]).
    pub headers: Option<Vec<String>>,
    /// `context-compact`: the lifetime of the contexts it creates, in seconds (default
    /// 3 600); a context is replaced before it expires.
    pub ttl_s: Option<u64>,
    /// Bound on one call to the store, in milliseconds (default 5 000).
    pub store_timeout_ms: Option<u64>,
    /// Most contexts remembered (default 1 024).
    pub cache_entries: Option<usize>,
}

impl CompactionSettings {
    /// The header names, parsed; `Err` names the one that is not `{namespace}local`.
    pub fn header_names(&self) -> Result<Vec<QName>, String> {
        let Some(names) = &self.headers else {
            return Ok(default_headers());
        };
        if names.is_empty() {
            return Err("lists no header: leave it out for the WS-Addressing default".to_owned());
        }
        names
            .iter()
            .map(|n| {
                let rest = n
                    .strip_prefix('{')
                    .ok_or_else(|| format!("'{n}' is not {{namespace}}local"))?;
                let (ns, local) = rest
                    .split_once('}')
                    .filter(|(ns, local)| !ns.is_empty() && !local.is_empty())
                    .ok_or_else(|| format!("'{n}' is not {{namespace}}local"))?;
                Ok(QName::new(ns, local))
            })
            .collect()
    }

    /// The store client (from `store` and `store_timeout_ms`) and the header names both
    /// kinds are built with; a bad value is refused by its key.
    pub(super) fn store_and_names(&self) -> Result<(StoreClient, Vec<QName>), SettingsError> {
        let names = self
            .header_names()
            .map_err(|why| SettingsError::key("headers", why))?;
        Ok((self.store_client()?, names))
    }

    fn store_client(&self) -> Result<StoreClient, SettingsError> {
        let Some(url) = &self.store else {
            return Err(SettingsError::key(
                "store",
                "is required: the context store's URL, e.g. http://127.0.0.1:8080/contexts",
            ));
        };
        if !url.starts_with("http://") {
            return Err(SettingsError::key(
                "store",
                format!("'{url}' is not an http:// URL"),
            ));
        }
        if self.store_timeout_ms == Some(0) {
            return Err(SettingsError::key("store_timeout_ms", "must be at least 1"));
        }
        let timeout = Duration::from_millis(self.store_timeout_ms.unwrap_or(5_000));
        StoreClient::new(url.clone(), timeout)
            .map_err(|e| SettingsError::key("store", e.to_string()))
    }
}
