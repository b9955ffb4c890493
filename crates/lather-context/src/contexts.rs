//! The store's rules, independent of SOAP: minted URIs and owner tokens, who may read and
//! change a context, expiry, size and count bounds, versions.

use crate::mint;
use crate::store::{ContextStore, PutOutcome, StoreError};
use crate::{Owner, Readers, StoredContext};
use std::sync::Arc;
use std::time::Duration;
use subtle::ConstantTimeEq;

/// The bounds of a store; each is a `[[service]]` key of a `context-store` service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreLimits {
    /// Most bytes of one context's contents (`max_context_bytes`, default 65 536).
    pub max_context_bytes: usize,
    /// Most contexts stored at once (`max_contexts`, default 100 000).
    pub max_contexts: usize,
    /// A context's lifetime when its writer names none (`context_ttl_s`, default 3 600 s).
    pub default_ttl: Duration,
    /// The longest lifetime granted (`max_context_ttl_s`, default 86 400 s).
    pub max_ttl: Duration,
}

impl Default for StoreLimits {
    fn default() -> Self {
        StoreLimits {
            max_context_bytes: 65_536,
            max_contexts: 100_000,
            default_ttl: Duration::from_secs(3_600),
            max_ttl: Duration::from_secs(86_400),
        }
    }
}

/// Longest URI a writer may choose.
const MAX_URI_BYTES: usize = 512;

/// Who is asking: the owner token they present, and the identity a handler authenticated.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Credentials {
    /// The token handed out when the context was created.
    pub token: Option<String>,
    /// The authenticated identity (e.g. set by `wsse-username`).
    pub identity: Option<String>,
}

/// A context to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewContext {
    /// Its URI; `None` asks the store to mint one.
    pub uri: Option<String>,
    /// The contents (XML elements, each declaring its namespaces).
    pub contents: String,
    /// Its lifetime; `None` for the store's default. Capped at the store's maximum.
    pub ttl: Option<Duration>,
    /// Who may read it.
    pub readers: Readers,
    /// Write only if the stored version is this one.
    pub if_version: Option<u64>,
}

/// What a write did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// The context as stored now.
    pub context: StoredContext,
    /// The owner token, when this write created the context and no identity owns it.
    pub token: Option<String>,
}

/// Why the store refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ContextError {
    /// No context has this URI.
    #[error("no context {uri}")]
    Unknown {
        /// The URI asked for.
        uri: String,
    },
    /// The context has expired.
    #[error("context {uri} has expired")]
    Expired {
        /// The URI asked for.
        uri: String,
    },
    /// The contents are larger than the store takes.
    #[error("the context is {bytes} bytes; this store takes at most {max}")]
    TooLarge {
        /// The contents' size.
        bytes: usize,
        /// `max_context_bytes`.
        max: usize,
    },
    /// The store holds its most contexts.
    #[error("the context store is full ({max} contexts); try again when some expire")]
    Full {
        /// `max_contexts`.
        max: usize,
    },
    /// The caller is not the context's owner (and may not read it either, for a read).
    #[error("not the owner of context {uri}: present its token or the identity that created it")]
    NotOwner {
        /// The URI asked for.
        uri: String,
    },
    /// The context's version is not the one the write was conditional on (or it changed
    /// meanwhile).
    #[error("context {uri} is at version {current}, not the one expected")]
    VersionConflict {
        /// The URI.
        uri: String,
        /// Its version now.
        current: u64,
    },
    /// The URI is not one the store takes.
    #[error("not a context URI: {why}")]
    InvalidUri {
        /// What is wrong with it.
        why: String,
    },
    /// The store itself failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The store's rules over a [`ContextStore`].
#[derive(Debug, Clone)]
pub struct Contexts {
    store: Arc<dyn ContextStore>,
    limits: StoreLimits,
}

impl Contexts {
    /// Rules `limits` over `store`.
    pub fn new(store: Arc<dyn ContextStore>, limits: StoreLimits) -> Contexts {
        Contexts { store, limits }
    }

    /// The bounds.
    pub fn limits(&self) -> &StoreLimits {
        &self.limits
    }

    /// Creates or changes a context. A context that exists (and has not expired) is
    /// changed only by its owner; creating one makes the caller's identity its owner, or
    /// else a new token, returned once.
    pub async fn set(&self, new: NewContext, who: &Credentials) -> Result<Written, ContextError> {
        if new.contents.len() > self.limits.max_context_bytes {
            return Err(ContextError::TooLarge {
                bytes: new.contents.len(),
                max: self.limits.max_context_bytes,
            });
        }
        let uri = match new.uri {
            Some(uri) => check_uri(uri)?,
            None => mint::uuid_uri(),
        };
        let now = mint::now_ms();
        let ttl = new
            .ttl
            .unwrap_or(self.limits.default_ttl)
            .min(self.limits.max_ttl);
        let expires_at_ms = now.saturating_add(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX));
        let stored = self.store.get(&uri).await?;
        let live = stored.as_ref().filter(|c| !c.is_expired(now));
        if let Some(current) = live
            && !may_change(current, who)
        {
            return Err(ContextError::NotOwner { uri });
        }
        let current_version = stored.as_ref().map(|c| c.version);
        if let Some(wanted) = new.if_version {
            let live_version = live.map_or(0, |c| c.version);
            if wanted != live_version {
                return Err(ContextError::VersionConflict {
                    uri,
                    current: live_version,
                });
            }
        }
        let (owner, token) = match live {
            Some(current) => (current.owner.clone(), None),
            None => new_owner(who),
        };
        let context = StoredContext {
            uri,
            contents: new.contents,
            // Versions never repeat for a URI, even across an expiry.
            version: current_version.map_or(1, |v| v + 1),
            owner,
            readers: new.readers,
            expires_at_ms,
        };
        let mut outcome = self.put(&context, current_version).await?;
        if outcome == PutOutcome::Full && self.sweep().await? > 0 {
            // Expired contexts made room. (Full means the URI was absent: the retry is
            // conditional on that still.)
            outcome = self.put(&context, current_version).await?;
        }
        match outcome {
            PutOutcome::Written => Ok(Written { context, token }),
            PutOutcome::Full => Err(ContextError::Full {
                max: self.limits.max_contexts,
            }),
            PutOutcome::Conflict => {
                let current = self.store.get(&context.uri).await?.map_or(0, |c| c.version);
                Err(ContextError::VersionConflict {
                    uri: context.uri,
                    current,
                })
            }
        }
    }

    async fn put(
        &self,
        context: &StoredContext,
        expected: Option<u64>,
    ) -> Result<PutOutcome, StoreError> {
        self.store
            .put(context, expected, self.limits.max_contexts)
            .await
    }

    /// Reads a context: anyone may if it says so, else only its owner.
    pub async fn get(&self, uri: &str, who: &Credentials) -> Result<StoredContext, ContextError> {
        let context = self.live(uri).await?;
        if context.readers == Readers::Owner && !may_change(&context, who) {
            return Err(ContextError::NotOwner {
                uri: uri.to_owned(),
            });
        }
        Ok(context)
    }

    /// Removes a context; only its owner may.
    pub async fn remove(&self, uri: &str, who: &Credentials) -> Result<(), ContextError> {
        let context = self.live(uri).await?;
        if !may_change(&context, who) {
            return Err(ContextError::NotOwner {
                uri: uri.to_owned(),
            });
        }
        if self.store.remove(uri, context.version).await? {
            Ok(())
        } else {
            let current = self.store.get(uri).await?.map_or(0, |c| c.version);
            Err(ContextError::VersionConflict {
                uri: uri.to_owned(),
                current,
            })
        }
    }

    /// Removes the expired contexts; how many.
    pub async fn sweep(&self) -> Result<usize, ContextError> {
        Ok(self.store.remove_expired(mint::now_ms()).await?)
    }

    async fn live(&self, uri: &str) -> Result<StoredContext, ContextError> {
        match self.store.get(uri).await? {
            None => Err(ContextError::Unknown {
                uri: uri.to_owned(),
            }),
            Some(c) if c.is_expired(mint::now_ms()) => Err(ContextError::Expired {
                uri: uri.to_owned(),
            }),
            Some(c) => Ok(c),
        }
    }
}

/// Whether `who` owns `context`.
fn may_change(context: &StoredContext, who: &Credentials) -> bool {
    match &context.owner {
        Owner::Identity { name } => who.identity.as_deref() == Some(name.as_str()),
        Owner::Token { sha256 } => who.token.as_deref().is_some_and(|token| {
            bool::from(mint::token_hash(token).as_bytes().ct_eq(sha256.as_bytes()))
        }),
    }
}

/// The owner of a new context: the caller's identity, else a fresh token (returned).
fn new_owner(who: &Credentials) -> (Owner, Option<String>) {
    match &who.identity {
        Some(name) => (Owner::Identity { name: name.clone() }, None),
        None => {
            let (token, sha256) = mint::owner_token();
            (Owner::Token { sha256 }, Some(token))
        }
    }
}

/// A writer's URI: an absolute URI (a scheme, then `:`), without spaces or markup, at most
/// 512 bytes.
fn check_uri(uri: String) -> Result<String, ContextError> {
    let uri = uri.trim().to_owned();
    let bad = |why: &str| {
        Err(ContextError::InvalidUri {
            why: why.to_owned(),
        })
    };
    if uri.is_empty() {
        return bad("empty");
    }
    if uri.len() > MAX_URI_BYTES {
        return bad("longer than 512 bytes");
    }
    let scheme_ok = uri.split_once(':').is_some_and(|(scheme, rest)| {
        !rest.is_empty()
            && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    });
    if !scheme_ok {
        return bad("it needs a scheme, e.g. urn:… or http://…");
    }
    if uri
        .chars()
        .any(|c| c.is_whitespace() || c.is_control() || matches!(c, '<' | '>' | '"'))
    {
        return bad("it holds a space, a control character, <, > or \"");
    }
    Ok(uri)
}
