//! Reading the store's requests from an envelope's Body.

use super::fault::invalid_request;
use super::{ContextReference, NS};
use crate::{Credentials, NewContext, Readers};
use lather_envelope::{Element, Envelope, Fault, Limits, Node};
use std::time::Duration;

/// One request to the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContextRequest {
    /// `SetContext`: create or change a context.
    Set {
        /// What to write.
        context: NewContext,
        /// The token presented (`lc:Token`).
        token: Option<String>,
    },
    /// `GetContext`: read one.
    Get {
        /// Its URI.
        uri: String,
        /// The token presented.
        token: Option<String>,
    },
    /// `RemoveContext`: remove one.
    Remove {
        /// Its URI.
        uri: String,
        /// The token presented.
        token: Option<String>,
    },
}

impl ContextRequest {
    /// The credentials of the request: its token and the message's identity.
    pub fn credentials(&self, identity: Option<String>) -> Credentials {
        let token = match self {
            ContextRequest::Set { token, .. }
            | ContextRequest::Get { token, .. }
            | ContextRequest::Remove { token, .. } => token.clone(),
        };
        Credentials { token, identity }
    }
}

/// Reads the request in `envelope`'s Body (its first child names the operation).
pub fn parse_request(envelope: &Envelope, limits: &Limits) -> Result<ContextRequest, Fault> {
    let payload = envelope.extract_payload().ok_or_else(|| {
        invalid_request("the Body is empty: send SetContext, GetContext or RemoveContext")
    })?;
    let element = Element::parse(&payload, limits)?;
    let op = element.name();
    if op.namespace() != NS {
        return Err(invalid_request(format!(
            "{{{}}}{} is not a context store operation",
            op.namespace(),
            op.local()
        )));
    }
    let token = child_text(&element, "Token");
    match op.local() {
        "SetContext" => Ok(ContextRequest::Set {
            context: NewContext {
                uri: uri_of(&element),
                contents: contents(&element, &payload)?,
                ttl: number(&element, "TtlSeconds")?.map(Duration::from_secs),
                readers: readers(&element)?,
                if_version: number(&element, "IfVersion")?,
            },
            token,
        }),
        "GetContext" => Ok(ContextRequest::Get {
            uri: required_uri(&element)?,
            token,
        }),
        "RemoveContext" => Ok(ContextRequest::Remove {
            uri: required_uri(&element)?,
            token,
        }),
        other => Err(invalid_request(format!(
            "{other} is not a context store operation"
        ))),
    }
}

fn child<'e>(element: &'e Element, local: &str) -> Option<&'e Element> {
    element
        .elements()
        .find(|e| e.name().namespace() == NS && e.name().local() == local)
}

fn child_text(element: &Element, local: &str) -> Option<String> {
    child(element, local)
        .map(|e| e.text().trim().to_owned())
        .filter(|t| !t.is_empty())
}

/// The URI as `lc:Uri`, or as a `wsctx:context` reference.
fn uri_of(element: &Element) -> Option<String> {
    child_text(element, "Uri").or_else(|| {
        element
            .elements()
            .find(|e| e.name().local() == "context")
            .and_then(ContextReference::from_element)
            .map(|r| r.uri)
    })
}

fn required_uri(element: &Element) -> Result<String, Fault> {
    uri_of(element).ok_or_else(|| {
        invalid_request(format!(
            "{} needs the context's URI (lc:Uri or a wsctx:context reference)",
            element.name().local()
        ))
    })
}

fn number(element: &Element, local: &str) -> Result<Option<u64>, Fault> {
    child_text(element, local)
        .map(|t| {
            t.parse::<u64>().map_err(|_| {
                invalid_request(format!("lc:{local} must be a whole number, got '{t}'"))
            })
        })
        .transpose()
}

fn readers(element: &Element) -> Result<Readers, Fault> {
    match child_text(element, "Readers").as_deref() {
        None | Some("owner") => Ok(Readers::Owner),
        Some("anyone") => Ok(Readers::Anyone),
        Some(other) => Err(invalid_request(format!(
            "lc:Readers is 'owner' or 'anyone', got '{other}'"
        ))),
    }
}

/// The elements inside `lc:Contents`, each standing on its own, concatenated.
fn contents(element: &Element, source: &[u8]) -> Result<String, Fault> {
    let holder = child(element, "Contents").ok_or_else(|| {
        invalid_request("SetContext needs lc:Contents holding the context's elements")
    })?;
    let mut out = String::new();
    for node in holder.children() {
        match node {
            Node::Element(e) => {
                let bytes = e
                    .standalone_minimal(source)
                    .ok_or_else(|| invalid_request("lc:Contents could not be read"))?;
                out.push_str(
                    std::str::from_utf8(&bytes)
                        .map_err(|_| invalid_request("lc:Contents is not UTF-8"))?,
                );
            }
            Node::Text(t) if t.trim().is_empty() => {}
            Node::Text(_) => {
                return Err(invalid_request("lc:Contents holds elements only, not text"));
            }
        }
    }
    if out.is_empty() {
        return Err(invalid_request("lc:Contents is empty"));
    }
    Ok(out)
}
