//! A recorded session: one JSON object per line, one line per exchange, with the request
//! as it was sent (method, path, headers, body in base64, so replays are byte-identical)
//! and what came back (status, size, time).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use serde::{Deserialize, Serialize};

/// One exchange as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Exchange {
    /// The request method.
    pub(crate) method: String,
    /// The request's path and query.
    pub(crate) path: String,
    /// The request headers forwarded, in order (name, value).
    pub(crate) headers: Vec<(String, String)>,
    /// The request body, base64.
    pub(crate) body: String,
    /// The answer's HTTP status.
    pub(crate) status: u16,
    /// The answer's body size in bytes.
    pub(crate) response_bytes: usize,
    /// The time from request to answer, in microseconds.
    pub(crate) micros: u64,
}

impl Exchange {
    /// The body as sent.
    pub(crate) fn body_bytes(&self) -> anyhow::Result<Bytes> {
        Ok(Bytes::from(STANDARD.decode(&self.body)?))
    }

    /// `body` in the record's form.
    pub(crate) fn encode_body(body: &[u8]) -> String {
        STANDARD.encode(body)
    }
}

/// Reads a recording: every line an [`Exchange`]; a line that is not one is an error
/// naming it.
pub(crate) fn read(text: &str) -> anyhow::Result<Vec<Exchange>> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| {
            serde_json::from_str(line)
                .map_err(|e| anyhow::anyhow!("line {} is not a recorded exchange: {e}", i + 1))
        })
        .collect()
}
