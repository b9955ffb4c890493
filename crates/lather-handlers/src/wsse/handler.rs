//! `wsse-username`: WS-Security UsernameToken authentication.

use super::nonce_cache::{NonceCache, Seen};
use super::security_header;
use super::token::{PasswordKind, UsernameToken, password_digest};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use lather_envelope::{Element, Envelope, Fault, FaultKind, Limits};
use lather_pipeline::{
    Access, Handler, HandlerFuture, Identity, Message, Observation, Parts, Patch, Verdict,
};
use std::collections::HashMap;
use std::time::{SystemTime, UNIX_EPOCH};
use subtle::ConstantTimeEq;

/// Allowed clock skew for a `Created` in the future, in seconds.
const FUTURE_SKEW: i64 = 60;

/// The settings of a [`WsseUsername`] handler, as `[handlers.NAME]` gives them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WsseSettings {
    /// How old a `wsu:Created` may be, in seconds (`window_s`, default 300).
    pub window_s: u64,
    /// Longest `wsse:Nonce` accepted, in decoded bytes (`max_nonce_bytes`, default 128).
    pub max_nonce_bytes: usize,
    /// Most nonces remembered at once (`max_nonces`, default 100 000).
    pub max_nonces: usize,
    /// Every token must carry `wsse:Nonce` and `wsu:Created`, PasswordText ones too
    /// (`require_nonce`, default false).
    pub require_nonce: bool,
    /// Pass the Security header on (without its passwords and its `mustUnderstand`)
    /// rather than remove it (`forward_security`, default false).
    pub forward_security: bool,
}

impl Default for WsseSettings {
    fn default() -> Self {
        WsseSettings {
            window_s: 300,
            max_nonce_bytes: 128,
            max_nonces: 100_000,
            require_nonce: false,
            forward_security: false,
        }
    }
}

/// Authenticates each message by the `wsse:Security/wsse:UsernameToken` aimed at this node
/// against a user table: `PasswordText`, or `PasswordDigest` = Base64(SHA-1(nonce ‖
/// created ‖ password)), compared in constant time.
///
/// A digest token must carry `Nonce` and `Created` (every token must, with
/// `require_nonce`). A `Created` older than `window_s` seconds (or more than a minute
/// ahead) gives `wsse:MessageExpired`; a nonce seen within the window gives
/// `wsse:FailedAuthentication` (replay). Every authentication failure — unknown user, wrong
/// password, replay — gives the same `wsse:FailedAuthentication`, so a client learns
/// nothing about which; a missing or malformed header, two Security headers aimed at this
/// node, an empty nonce or one longer than `max_nonce_bytes` give `wsse:InvalidSecurity`.
///
/// Nonces are remembered as 16-byte digests, `window_s` + 60 s from when they were seen, in
/// a cache of at most `max_nonces` entries; when it is full, a token with a new nonce gets
/// `ReplayCacheFull` (503) until entries expire.
///
/// Once authenticated, the message's context gets the user as its
/// [`Identity`](lather_pipeline::Identity) (for the handlers, service and gateway after this
/// stage), and the Security header aimed at this node is removed from the message
/// (it has been processed here; a backend would otherwise receive the password and a
/// mandatory header it may not understand). With `forward_security` it is passed on
/// instead, without its `wsse:Password` elements and its `mustUnderstand` attribute.
/// Security headers aimed at other roles are left alone.
#[derive(Debug)]
pub struct WsseUsername {
    users: HashMap<String, String>,
    window_s: i64,
    settings: WsseSettings,
    nonces: NonceCache,
}

impl WsseUsername {
    /// A handler with `users` (name → password) and a freshness window of `window_s`
    /// seconds; the other settings take their defaults.
    pub fn new(users: HashMap<String, String>, window_s: u64) -> Self {
        Self::with_settings(
            users,
            WsseSettings {
                window_s,
                ..WsseSettings::default()
            },
        )
    }

    /// A handler with `users` (name → password) and `settings`.
    pub fn with_settings(users: HashMap<String, String>, settings: WsseSettings) -> Self {
        WsseUsername {
            users,
            window_s: i64::try_from(settings.window_s).unwrap_or(i64::MAX / 4),
            nonces: NonceCache::new(settings.max_nonces),
            settings,
        }
    }

    /// Nonces remembered now (at most `max_nonces`).
    pub fn remembered_nonces(&self) -> usize {
        self.nonces.len()
    }

    /// Reads a user table: one `name:password` per line; blank lines and `#` comments are
    /// skipped.
    pub fn parse_users(text: &str) -> Result<HashMap<String, String>, UsersFileError> {
        let mut users = HashMap::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (name, password) = line.split_once(':').ok_or(UsersFileError { line: i + 1 })?;
            users.insert(name.to_owned(), password.to_owned());
        }
        Ok(users)
    }

    /// [`Self::verify`]'s patch for the Security header alone.
    #[cfg(test)]
    fn process(&self, envelope: &Envelope, now: i64) -> Result<Patch, Fault> {
        self.verify(envelope, now).map(|(_, patch)| patch)
    }

    /// Authenticates the message at `now` (seconds since the epoch): the user the token
    /// proves, and the patch that takes the processed Security header out (or forwards it
    /// without its passwords).
    fn verify(&self, envelope: &Envelope, now: i64) -> Result<(Identity, Patch), Fault> {
        let invalid = |why: String| Fault::with_reason(FaultKind::InvalidSecurity, why);
        let block = security_header::find(envelope)?
            .ok_or_else(|| invalid("no wsse:Security header for this node".into()))?;
        let bytes = envelope.extract_header(block);
        let security = Element::parse(&bytes, &Limits::default())
            .map_err(|f| invalid(format!("wsse:Security: {}", f.reason())))?;
        let token = UsernameToken::read(&security, self.settings.max_nonce_bytes)?;
        self.authenticate(&token, now)?;
        let replacement = self.settings.forward_security.then(|| {
            security_header::rewrite(&bytes, &security, token.password_ranges.clone(), true)
        });
        let patch = security_header::replace(envelope, replacement);
        Ok((Identity(token.username), patch))
    }

    fn authenticate(&self, token: &UsernameToken, now: i64) -> Result<(), Fault> {
        let invalid = |why: &str| Fault::with_reason(FaultKind::InvalidSecurity, why.to_owned());
        let failed =
            || Fault::with_reason(FaultKind::FailedAuthentication, "authentication failed");
        // Read once: checked against the window here, it is also in the digest below.
        let created_at = match &token.created {
            Some(created) => Some(
                unix_seconds(created)
                    .ok_or_else(|| invalid("wsu:Created is not a dateTime with a time zone"))?,
            ),
            None => None,
        };
        if let (Some(created), Some(at)) = (&token.created, created_at)
            && (now - at > self.window_s || at - now > FUTURE_SKEW)
        {
            return Err(Fault::with_reason(
                FaultKind::MessageExpired,
                format!(
                    "wsu:Created {} is outside the {} s window",
                    created.trim(),
                    self.window_s
                ),
            ));
        }
        let needs_nonce = self.settings.require_nonce || token.kind == PasswordKind::Digest;
        if needs_nonce && (token.nonce.is_none() || token.created.is_none()) {
            return Err(invalid(if token.kind == PasswordKind::Digest {
                "a PasswordDigest token needs wsse:Nonce and wsu:Created"
            } else {
                "this service requires wsse:Nonce and wsu:Created in every token"
            }));
        }
        let stored = self.users.get(&token.username);
        let ok = match (token.kind, &token.nonce, &token.created) {
            (PasswordKind::Text, _, _) => {
                stored.is_some_and(|s| bool::from(s.as_bytes().ct_eq(token.password.as_bytes())))
            }
            (PasswordKind::Digest, Some(nonce), Some(created)) => {
                let given = STANDARD.decode(token.password.trim()).unwrap_or_default();
                stored.is_some_and(|s| {
                    bool::from(password_digest(nonce, created, s).as_slice().ct_eq(&given))
                })
            }
            (PasswordKind::Digest, _, _) => false,
        };
        if !ok {
            return Err(failed());
        }
        // Only tokens that authenticated reach the cache, so only holders of a password
        // can fill it. A token is accepted up to `window_s` after its Created, which may be
        // up to FUTURE_SKEW ahead: its nonce is kept that long from now.
        if let Some(nonce) = &token.nonce {
            let expires = now
                .saturating_add(self.window_s)
                .saturating_add(FUTURE_SKEW);
            match self.nonces.check_and_remember(nonce, now, expires) {
                Seen::New => {}
                Seen::Replay => return Err(failed()),
                Seen::Full => {
                    return Err(Fault::with_reason(
                        FaultKind::ReplayCacheFull,
                        format!(
                            "the replay cache holds {} nonces, its limit (max_nonces); retry later",
                            self.nonces.capacity()
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Seconds since the Unix epoch of a `wsu:Created`; it must name its time zone (a timestamp
/// without one cannot be compared safely). Fractions of a second are dropped.
fn unix_seconds(text: &str) -> Option<i64> {
    lather_envelope::datetime::parse(text.trim())
        .filter(|d| d.zoned)
        .map(|d| d.unix_millis.div_euclid(1000))
}

impl Handler for WsseUsername {
    fn access(&self) -> Access {
        // Reads the Security header and takes it out (or rewrites it) once processed.
        Access::read_write(Parts::none().header(security_header::security_name()))
    }

    fn call<'a>(&'a self, message: &'a Message) -> HandlerFuture<'a> {
        Box::pin(async move {
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX / 4));
            match self.verify(message.envelope(), now) {
                // The identity is set first, then the header it came from goes.
                Ok((identity, header)) => Verdict::Continue(
                    header
                        .operations()
                        .iter()
                        .cloned()
                        .fold(Patch::new().set_property(identity), Patch::with),
                ),
                Err(fault) => Verdict::Fault(fault),
            }
        })
    }

    fn observations(&self) -> Vec<Observation> {
        vec![
            Observation::gauge(
                "wsse_nonces",
                "Nonces a wsse-username handler remembers (at most its max_nonces)",
                self.nonces.len() as u64,
            ),
            Observation::counter(
                "wsse_replays",
                "Tokens a wsse-username handler refused because their nonce was seen before",
                self.nonces.replays(),
            ),
            Observation::counter(
                "wsse_nonce_cache_full",
                "Tokens a wsse-username handler refused because its replay cache was full",
                self.nonces.refused_full(),
            ),
        ]
    }
}

/// A line of a users file that is not `name:password`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UsersFileError {
    /// The 1-based line.
    pub line: usize,
}

impl std::fmt::Display for UsersFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: expected name:password", self.line)
    }
}

impl std::error::Error for UsersFileError {}

#[cfg(test)]
mod tests {
    use super::super::token::{PASSWORD_DIGEST, WSU_NS};
    use super::*;
    use lather_envelope::{EnvelopeBuilder, QName, SoapVersion, WSSE_NS};
    use lather_pipeline::PatchOp;

    const CREATED: &str = "2026-11-22T10:00:00Z";
    const AT: i64 = 1_795_341_600;

    fn handler() -> WsseUsername {
        WsseUsername::new(
            HashMap::from([("alice".to_owned(), "p@ss wörd".to_owned())]),
            300,
        )
    }

    fn envelope(token: &str) -> Envelope {
        let security = format!(
            r#"<wsse:Security xmlns:wsse="{WSSE_NS}" xmlns:wsu="{WSU_NS}"><wsse:UsernameToken>{token}</wsse:UsernameToken></wsse:Security>"#
        );
        let bytes = EnvelopeBuilder::new(SoapVersion::V11)
            .header(security.into())
            .body("<m:op xmlns:m=\"urn:m\"/>".into())
            .build();
        Envelope::parse(bytes, &Limits::default()).unwrap()
    }

    fn digest_token(user: &str, password: &str, nonce: &[u8], created: &str) -> String {
        let d = STANDARD.encode(password_digest(nonce, created, password));
        format!(
            r#"<wsse:Username>{user}</wsse:Username><wsse:Password Type="{PASSWORD_DIGEST}">{d}</wsse:Password><wsse:Nonce>{}</wsse:Nonce><wsu:Created>{created}</wsu:Created>"#,
            STANDARD.encode(nonce)
        )
    }

    fn kind(r: Result<Patch, Fault>) -> Option<FaultKind> {
        r.err().map(|f| f.kind())
    }

    #[test]
    fn digest_tokens_authenticate_once() {
        let h = handler();
        let good = envelope(&digest_token("alice", "p@ss wörd", b"nonce-1", CREATED));
        assert_eq!(kind(h.process(&good, AT + 10)), None);
        assert_eq!(
            kind(h.process(&good, AT + 20)),
            Some(FaultKind::FailedAuthentication),
            "replay"
        );
        let other_nonce = envelope(&digest_token("alice", "p@ss wörd", b"nonce-2", CREATED));
        assert_eq!(kind(h.process(&other_nonce, AT + 20)), None);
        assert_eq!(h.remembered_nonces(), 2);
    }

    #[test]
    fn wrong_passwords_unknown_users_and_stale_tokens_are_refused() {
        let h = handler();
        let wrong = envelope(&digest_token("alice", "guess", b"n1", CREATED));
        assert_eq!(
            kind(h.process(&wrong, AT)),
            Some(FaultKind::FailedAuthentication)
        );
        let nobody = envelope(&digest_token("mallory", "p@ss wörd", b"n2", CREATED));
        assert_eq!(
            kind(h.process(&nobody, AT)),
            Some(FaultKind::FailedAuthentication)
        );
        let stale = envelope(&digest_token("alice", "p@ss wörd", b"n3", CREATED));
        assert_eq!(
            kind(h.process(&stale, AT + 301)),
            Some(FaultKind::MessageExpired)
        );
        let future = envelope(&digest_token("alice", "p@ss wörd", b"n4", CREATED));
        assert_eq!(
            kind(h.process(&future, AT - 61)),
            Some(FaultKind::MessageExpired)
        );
        // Failed tokens are not remembered: only holders of a password fill the cache.
        assert_eq!(h.remembered_nonces(), 0);
    }

    #[test]
    fn text_passwords_and_malformed_tokens() {
        let h = handler();
        let text = |pw: &str| {
            envelope(&format!(
                "<wsse:Username>alice</wsse:Username><wsse:Password>{pw}</wsse:Password>"
            ))
        };
        assert_eq!(kind(h.process(&text("p@ss wörd"), AT)), None);
        assert_eq!(
            kind(h.process(&text("p@ss"), AT)),
            Some(FaultKind::FailedAuthentication)
        );
        let no_nonce = envelope(&format!(
            r#"<wsse:Username>alice</wsse:Username><wsse:Password Type="{PASSWORD_DIGEST}">x</wsse:Password>"#
        ));
        assert_eq!(
            kind(h.process(&no_nonce, AT)),
            Some(FaultKind::InvalidSecurity)
        );
        let no_user = envelope("<wsse:Password>x</wsse:Password>");
        assert_eq!(
            kind(h.process(&no_user, AT)),
            Some(FaultKind::InvalidSecurity)
        );
        let bad_time = envelope(&digest_token(
            "alice",
            "p@ss wörd",
            b"n5",
            "2026-11-22T10:00:00",
        ));
        assert_eq!(
            kind(h.process(&bad_time, AT)),
            Some(FaultKind::InvalidSecurity)
        );
    }

    #[test]
    fn require_nonce_refuses_bare_text_passwords() {
        let h = WsseUsername::with_settings(
            HashMap::from([("alice".to_owned(), "pw".to_owned())]),
            WsseSettings {
                require_nonce: true,
                ..WsseSettings::default()
            },
        );
        let bare =
            envelope("<wsse:Username>alice</wsse:Username><wsse:Password>pw</wsse:Password>");
        let f = h.process(&bare, AT).unwrap_err();
        assert_eq!(f.kind(), FaultKind::InvalidSecurity);
        assert!(f.reason().contains("requires wsse:Nonce"), "{}", f.reason());
        let fresh = format!(
            "<wsse:Username>alice</wsse:Username><wsse:Password>pw</wsse:Password><wsse:Nonce>{}</wsse:Nonce><wsu:Created>{CREATED}</wsu:Created>",
            STANDARD.encode(b"once")
        );
        assert_eq!(kind(h.process(&envelope(&fresh), AT)), None);
        assert_eq!(
            kind(h.process(&envelope(&fresh), AT + 1)),
            Some(FaultKind::FailedAuthentication),
            "a replayed PasswordText token with a nonce"
        );
    }

    #[test]
    fn a_full_replay_cache_refuses_new_nonces_with_a_503() {
        let h = WsseUsername::with_settings(
            HashMap::from([("alice".to_owned(), "p@ss wörd".to_owned())]),
            WsseSettings {
                max_nonces: 2,
                ..WsseSettings::default()
            },
        );
        for n in [b"n1", b"n2"] {
            let e = envelope(&digest_token("alice", "p@ss wörd", n, CREATED));
            assert_eq!(kind(h.process(&e, AT)), None);
        }
        let e = envelope(&digest_token("alice", "p@ss wörd", b"n3", CREATED));
        let f = h.process(&e, AT).unwrap_err();
        assert_eq!(f.kind(), FaultKind::ReplayCacheFull);
        assert_eq!(f.kind().spec().http_status, 503);
        // Past their lifetime (window + skew), the old nonces make room.
        let later = envelope(&digest_token(
            "alice",
            "p@ss wörd",
            b"n3",
            "2026-11-22T10:06:01Z",
        ));
        assert_eq!(kind(h.process(&later, AT + 361)), None);
        assert_eq!(h.remembered_nonces(), 1);
    }

    #[test]
    fn the_processed_header_is_removed_or_forwarded_without_its_password() {
        let token = "<wsse:Username>alice</wsse:Username><wsse:Password>p@ss wörd</wsse:Password>";
        let security = QName::new(WSSE_NS, "Security");
        let patch = handler().process(&envelope(token), AT).unwrap();
        assert_eq!(patch, Patch::new().remove_header(security.clone()));
        let forward = WsseUsername::with_settings(
            HashMap::from([("alice".to_owned(), "p@ss wörd".to_owned())]),
            WsseSettings {
                forward_security: true,
                ..WsseSettings::default()
            },
        );
        let patch = forward.process(&envelope(token), AT).unwrap();
        let [PatchOp::ReplaceHeader(name, block)] = patch.operations() else {
            panic!("{patch:?}")
        };
        assert_eq!(name, &security);
        let block = std::str::from_utf8(block).unwrap();
        assert!(
            block.contains("<wsse:Username>alice</wsse:Username>"),
            "{block}"
        );
        assert!(!block.contains("Password"), "{block}");
        assert!(!block.contains("p@ss"), "{block}");
    }

    #[test]
    fn user_tables_parse() {
        let users = WsseUsername::parse_users("# users\nalice:s3cret\n\nbob:pa:ss\n").unwrap();
        assert_eq!(users.get("alice").map(String::as_str), Some("s3cret"));
        assert_eq!(users.get("bob").map(String::as_str), Some("pa:ss"));
        assert!(
            WsseUsername::parse_users("nocolon\n")
                .unwrap_err()
                .to_string()
                .contains("line 1")
        );
    }
}
