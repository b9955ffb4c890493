//! Calling a context store over SOAP/HTTP: what the compaction handlers need.

use crate::protocol::{ContextReference, NS};
use lather_client::{Call, Client, ClientError};
use lather_envelope::escape::escape_text;
use lather_envelope::{Element, Envelope, Limits};
use std::time::Duration;

/// Why a store call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreCallError {
    /// The call failed, or the store answered with a fault.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The store's answer does not have the shape of one.
    #[error("the context store's answer {0}")]
    Answer(&'static str),
}

/// A context as the store reported it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteContext {
    /// Its URI.
    pub uri: String,
    /// The contents' SHA-256, hexadecimal.
    pub digest: String,
    /// When it expires, in milliseconds since the Unix epoch.
    pub expires_at_ms: u64,
    /// The contents (from `GetContext` only).
    pub contents: Option<String>,
}

/// A client of one context store.
#[derive(Debug, Clone)]
pub struct StoreClient {
    client: Client,
    url: String,
}

impl StoreClient {
    /// A client of the store at `url`, each call bounded by `timeout`.
    pub fn new(url: impl Into<String>, timeout: Duration) -> Result<StoreClient, ClientError> {
        let client = Client::builder().request_timeout(timeout).build()?;
        Ok(StoreClient {
            client,
            url: url.into(),
        })
    }

    /// The store's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Creates a context anyone knowing its (minted, unguessable) URI may read.
    pub async fn create(
        &self,
        contents: &str,
        ttl: Duration,
    ) -> Result<RemoteContext, StoreCallError> {
        let body = format!(
            "<lc:SetContext xmlns:lc=\"{NS}\"><lc:TtlSeconds>{}</lc:TtlSeconds><lc:Readers>anyone</lc:Readers><lc:Contents>{contents}</lc:Contents></lc:SetContext>",
            ttl.as_secs().max(1)
        );
        let answer = self.client.call(&self.url, &Call::new(body)).await?;
        facts(&answer, false)
    }

    /// Reads a context.
    pub async fn get(&self, uri: &str) -> Result<RemoteContext, StoreCallError> {
        let body = format!(
            "<lc:GetContext xmlns:lc=\"{NS}\"><lc:Uri>{}</lc:Uri></lc:GetContext>",
            escape_text(uri)
        );
        let answer = self.client.call(&self.url, &Call::new(body)).await?;
        facts(&answer, true)
    }
}

fn facts(answer: &Envelope, with_contents: bool) -> Result<RemoteContext, StoreCallError> {
    let payload = answer
        .extract_payload()
        .ok_or(StoreCallError::Answer("has an empty Body"))?;
    let unbounded = Limits {
        max_message_bytes: usize::MAX,
        ..Limits::default()
    };
    let element =
        Element::parse(&payload, &unbounded).map_err(|_| StoreCallError::Answer("is not XML"))?;
    let field = |local: &str| {
        element
            .elements()
            .find(|e| e.name().namespace() == NS && e.name().local() == local)
    };
    let uri = element
        .elements()
        .find(|e| e.name().local() == "context")
        .and_then(ContextReference::from_element)
        .ok_or(StoreCallError::Answer("names no context"))?
        .uri;
    let digest = field("Digest")
        .map(|e| e.text().trim().to_owned())
        .ok_or(StoreCallError::Answer("has no lc:Digest"))?;
    let expires_at_ms = field("ExpiresAtMs")
        .and_then(|e| e.text().trim().parse().ok())
        .ok_or(StoreCallError::Answer("has no lc:ExpiresAtMs"))?;
    let contents = if with_contents {
        let holder = field("Contents").ok_or(StoreCallError::Answer("has no lc:Contents"))?;
        let range = holder.range();
        let inner = &payload[range.clone()];
        // The text between <lc:Contents> and </lc:Contents>: the stored bytes as they are.
        let start = inner
            .iter()
            .position(|&b| b == b'>')
            .map(|p| p + 1)
            .ok_or(StoreCallError::Answer("has a broken lc:Contents"))?;
        let end = inner
            .iter()
            .rposition(|&b| b == b'<')
            .ok_or(StoreCallError::Answer("has a broken lc:Contents"))?;
        let text = std::str::from_utf8(&inner[start..end.max(start)])
            .map_err(|_| StoreCallError::Answer("is not UTF-8"))?;
        Some(text.to_owned())
    } else {
        None
    };
    Ok(RemoteContext {
        uri,
        digest,
        expires_at_ms,
        contents,
    })
}
