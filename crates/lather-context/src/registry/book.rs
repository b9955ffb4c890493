//! The registrations and their rules: leases, owners, bounds, queries.

use crate::Owner;
use crate::mint;
use lather_eventing::xpath::{ParsedEvent, Verdict, XPathFilter};
use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;
use subtle::ConstantTimeEq;

/// The registry's bounds; each is a key of a `registry` service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegistryLimits {
    /// Most registrations at once (`max_registrations`, default 10 000).
    pub max_registrations: usize,
    /// Longest lease granted (`max_lease_s`, default 3 600 s); also the lease when a
    /// registration asks for none.
    pub max_lease: Duration,
    /// Most bytes of one registration's metadata (default 65 536).
    pub max_metadata_bytes: usize,
    /// Most node visits one XPath query may make per document (default 100 000).
    pub xpath_budget: u64,
}

impl Default for RegistryLimits {
    fn default() -> Self {
        RegistryLimits {
            max_registrations: 10_000,
            max_lease: Duration::from_secs(3_600),
            max_metadata_bytes: 65_536,
            xpath_budget: lather_eventing::xpath::DEFAULT_FILTER_BUDGET,
        }
    }
}

/// One registered service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registration {
    /// Its id (`urn:uuid:…`).
    pub id: String,
    /// The service's name.
    pub name: String,
    /// Where it is reached.
    pub endpoint: String,
    /// Its version, if it gave one.
    pub version: Option<String>,
    /// Name/value metadata.
    pub properties: Vec<(String, String)>,
    /// XML metadata documents, each an element standing on its own.
    pub documents: Vec<String>,
    /// When its lease ends, in milliseconds since the Unix epoch.
    pub expires_at_ms: u64,
    owner: Owner,
}

/// What a service registers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegisterRequest {
    /// The service's name.
    pub name: String,
    /// Where it is reached (`http://…`).
    pub endpoint: String,
    /// Its version.
    pub version: Option<String>,
    /// Name/value metadata.
    pub properties: Vec<(String, String)>,
    /// XML metadata documents.
    pub documents: Vec<String>,
    /// The lease asked for (capped; `None`: the longest).
    pub lease: Option<Duration>,
}

/// What to look for; every criterion given must hold.
#[derive(Debug, Clone, Default)]
pub struct Query {
    /// The service's name.
    pub name: Option<String>,
    /// Properties it must have, with these values.
    pub properties: Vec<(String, String)>,
    /// An expression true of at least one of its documents.
    pub xpath: Option<XPathFilter>,
}

/// Why the registry refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum RegistryError {
    /// No registration has this id (or its lease has ended).
    #[error("no registration {id} (unknown, or its lease has ended)")]
    Unknown {
        /// The id asked for.
        id: String,
    },
    /// The caller did not create it.
    #[error("not the owner of registration {id}: present its token or the identity that made it")]
    NotOwner {
        /// The id.
        id: String,
    },
    /// The registry holds its most registrations.
    #[error("the registry is full ({max} registrations)")]
    Full {
        /// `max_registrations`.
        max: usize,
    },
    /// The metadata is larger than the registry takes.
    #[error("the registration's metadata is {bytes} bytes; the registry takes at most {max}")]
    TooLarge {
        /// Its size.
        bytes: usize,
        /// The bound.
        max: usize,
    },
    /// A required field is missing or not acceptable.
    #[error("{0}")]
    Invalid(String),
}

/// The registrations.
#[derive(Debug, Default)]
pub struct Registry {
    limits: RegistryLimits,
    entries: Mutex<HashMap<String, Registration>>,
}

impl Registry {
    /// An empty registry with `limits`.
    pub fn new(limits: RegistryLimits) -> Registry {
        Registry {
            limits,
            entries: Mutex::new(HashMap::new()),
        }
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<String, Registration>> {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        let now = mint::now_ms();
        entries.retain(|_, r| r.expires_at_ms > now);
        entries
    }

    /// Registers a service; its id and, unless `identity` owns it, a token for renewing
    /// and removing it.
    pub fn register(
        &self,
        request: RegisterRequest,
        identity: Option<&str>,
    ) -> Result<(Registration, Option<String>), RegistryError> {
        if request.name.trim().is_empty() {
            return Err(RegistryError::Invalid(
                "a registration needs lr:Name".into(),
            ));
        }
        if !(request.endpoint.starts_with("http://") || request.endpoint.starts_with("https://")) {
            return Err(RegistryError::Invalid(format!(
                "lr:Endpoint must be an http:// or https:// URL, got '{}'",
                request.endpoint
            )));
        }
        let bytes = request.name.len()
            + request.endpoint.len()
            + request.version.as_ref().map_or(0, String::len)
            + request
                .properties
                .iter()
                .map(|(k, v)| k.len() + v.len())
                .sum::<usize>()
            + request.documents.iter().map(String::len).sum::<usize>();
        if bytes > self.limits.max_metadata_bytes {
            return Err(RegistryError::TooLarge {
                bytes,
                max: self.limits.max_metadata_bytes,
            });
        }
        let (owner, token) = match identity {
            Some(name) => (
                Owner::Identity {
                    name: name.to_owned(),
                },
                None,
            ),
            None => {
                let (token, sha256) = mint::owner_token();
                (Owner::Token { sha256 }, Some(token))
            }
        };
        let registration = Registration {
            id: mint::uuid_uri(),
            name: request.name,
            endpoint: request.endpoint,
            version: request.version,
            properties: request.properties,
            documents: request.documents,
            expires_at_ms: self.lease_end(request.lease),
            owner,
        };
        let mut entries = self.entries();
        if entries.len() >= self.limits.max_registrations {
            return Err(RegistryError::Full {
                max: self.limits.max_registrations,
            });
        }
        entries.insert(registration.id.clone(), registration.clone());
        Ok((registration, token))
    }

    /// Extends a registration's lease; its new end.
    pub fn renew(
        &self,
        id: &str,
        lease: Option<Duration>,
        token: Option<&str>,
        identity: Option<&str>,
    ) -> Result<u64, RegistryError> {
        let end = self.lease_end(lease);
        let mut entries = self.entries();
        let entry = owned(&mut entries, id, token, identity)?;
        entry.expires_at_ms = end;
        Ok(end)
    }

    /// Removes a registration.
    pub fn deregister(
        &self,
        id: &str,
        token: Option<&str>,
        identity: Option<&str>,
    ) -> Result<(), RegistryError> {
        let mut entries = self.entries();
        owned(&mut entries, id, token, identity)?;
        entries.remove(id);
        Ok(())
    }

    /// The live registrations matching `query`, by name then id.
    pub fn query(&self, query: &Query) -> Vec<Registration> {
        let entries = self.entries();
        let mut found: Vec<Registration> = entries
            .values()
            .filter(|r| query.name.as_ref().is_none_or(|n| *n == r.name))
            .filter(|r| {
                query
                    .properties
                    .iter()
                    .all(|wanted| r.properties.iter().any(|p| p == wanted))
            })
            .filter(|r| {
                query.xpath.as_ref().is_none_or(|filter| {
                    r.documents.iter().any(|doc| {
                        filter.evaluate(&ParsedEvent::new(doc.as_bytes()), self.limits.xpath_budget)
                            == Verdict::Taken
                    })
                })
            })
            .cloned()
            .collect();
        found.sort_by(|a, b| (&a.name, &a.id).cmp(&(&b.name, &b.id)));
        found
    }

    fn lease_end(&self, lease: Option<Duration>) -> u64 {
        let lease = lease
            .unwrap_or(self.limits.max_lease)
            .min(self.limits.max_lease);
        mint::now_ms().saturating_add(u64::try_from(lease.as_millis()).unwrap_or(u64::MAX))
    }
}

fn owned<'m>(
    entries: &'m mut HashMap<String, Registration>,
    id: &str,
    token: Option<&str>,
    identity: Option<&str>,
) -> Result<&'m mut Registration, RegistryError> {
    let entry = entries
        .get_mut(id)
        .ok_or_else(|| RegistryError::Unknown { id: id.to_owned() })?;
    let allowed = match &entry.owner {
        Owner::Identity { name } => identity == Some(name.as_str()),
        Owner::Token { sha256 } => token
            .is_some_and(|t| bool::from(mint::token_hash(t).as_bytes().ct_eq(sha256.as_bytes()))),
    };
    if allowed {
        Ok(entry)
    } else {
        Err(RegistryError::NotOwner { id: id.to_owned() })
    }
}
