//! `wsse-username`: WS-Security UsernameToken authentication.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use lather_envelope::{Element, Fault, FaultKind, Limits, QName, WSSE_NS};
use lather_pipeline::{Access, Handler, HandlerFuture, Message, Parts, Verdict};
use sha1::{Digest as _, Sha1};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};
use subtle::ConstantTimeEq;

/// The WS-Security utility namespace (`wsu:Created`).
const WSU_NS: &str =
    "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-utility-1.0.xsd";
/// `Password@Type` for a digest.
const PASSWORD_DIGEST: &str = "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-username-token-profile-1.0#PasswordDigest";
/// `Password@Type` for clear text (also the default).
const PASSWORD_TEXT: &str = "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-username-token-profile-1.0#PasswordText";
/// Allowed clock skew for a `Created` in the future, in seconds.
const FUTURE_SKEW: i64 = 60;
/// Most nonces remembered at once; beyond, new tokens are refused until old ones expire.
const MAX_NONCES: usize = 1_000_000;

/// Authenticates each message by its `wsse:Security/wsse:UsernameToken` against a user
/// table: `PasswordText`, or `PasswordDigest` = Base64(SHA-1(nonce ‖ created ‖ password)),
/// compared in constant time.
///
/// A digest token must carry `Nonce` and `Created`. A `Created` older than `window_s`
/// seconds (or more than a minute ahead) gives `wsse:MessageExpired`; a nonce seen within
/// the window gives `wsse:FailedAuthentication` (replay). Every authentication failure —
/// unknown user, wrong password, replay — gives the same `wsse:FailedAuthentication`, so a
/// client learns nothing about which; a missing or malformed header gives
/// `wsse:InvalidSecurity`.
#[derive(Debug)]
pub struct WsseUsername {
    users: HashMap<String, String>,
    window_s: i64,
    nonces: Mutex<HashMap<Vec<u8>, i64>>,
}

impl WsseUsername {
    /// A handler with `users` (name → password) and a freshness window of `window_s` seconds.
    pub fn new(users: HashMap<String, String>, window_s: u64) -> Self {
        WsseUsername {
            users,
            window_s: i64::try_from(window_s).unwrap_or(i64::MAX),
            nonces: Mutex::new(HashMap::new()),
        }
    }

    /// Reads a user table: one `name:password` per line; blank lines and `#` comments are
    /// skipped.
    pub fn parse_users(text: &str) -> Result<HashMap<String, String>, String> {
        let mut users = HashMap::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (name, password) = line
                .split_once(':')
                .ok_or_else(|| format!("line {}: expected name:password", i + 1))?;
            users.insert(name.to_owned(), password.to_owned());
        }
        Ok(users)
    }

    fn authenticate(&self, message: &Message, now: i64) -> Result<(), Fault> {
        let envelope = message.envelope();
        let invalid = |why: &str| Fault::with_reason(FaultKind::InvalidSecurity, why.to_owned());
        let failed =
            || Fault::with_reason(FaultKind::FailedAuthentication, "authentication failed");
        let block = envelope
            .header(&QName::new(WSSE_NS, "Security"))
            .ok_or_else(|| invalid("no wsse:Security header"))?;
        let security = Element::parse(&envelope.extract_header(block), &Limits::default())
            .map_err(|f| invalid(&format!("wsse:Security: {}", f.reason())))?;
        let token = security
            .child(&QName::new(WSSE_NS, "UsernameToken"))
            .ok_or_else(|| invalid("no wsse:UsernameToken"))?;
        let text_of = |ns: &str, local: &str| token.child(&QName::new(ns, local)).map(|e| e.text());
        let username = text_of(WSSE_NS, "Username").ok_or_else(|| invalid("no wsse:Username"))?;
        let password = token
            .child(&QName::new(WSSE_NS, "Password"))
            .ok_or_else(|| invalid("no wsse:Password"))?;
        let kind = password
            .attribute(&QName::new("", "Type"))
            .unwrap_or(PASSWORD_TEXT);
        let created = text_of(WSU_NS, "Created");
        let nonce = text_of(WSSE_NS, "Nonce")
            .map(|n| {
                STANDARD
                    .decode(n.trim())
                    .map_err(|_| invalid("wsse:Nonce is not base64"))
            })
            .transpose()?;
        // Read once: checked against the window here, it also dates the nonce below.
        let created_at = match &created {
            Some(created) => Some(
                unix_seconds(created)
                    .ok_or_else(|| invalid("wsu:Created is not a dateTime with a time zone"))?,
            ),
            None => None,
        };
        if let (Some(created), Some(at)) = (&created, created_at)
            && (now - at > self.window_s || at - now > FUTURE_SKEW)
        {
            return Err(Fault::with_reason(
                FaultKind::MessageExpired,
                format!(
                    "wsu:Created {created} is outside the {} s window",
                    self.window_s
                ),
            ));
        }
        let stored = self.users.get(username.trim());
        let ok = match kind {
            PASSWORD_TEXT => {
                stored.is_some_and(|s| bool::from(s.as_bytes().ct_eq(password.text().as_bytes())))
            }
            PASSWORD_DIGEST => {
                let (Some(nonce), Some(created)) = (&nonce, &created) else {
                    return Err(invalid(
                        "a PasswordDigest token needs wsse:Nonce and wsu:Created",
                    ));
                };
                let given = STANDARD.decode(password.text().trim()).unwrap_or_default();
                stored.is_some_and(|s| {
                    bool::from(password_digest(nonce, created, s).as_slice().ct_eq(&given))
                })
            }
            other => return Err(invalid(&format!("unsupported password type {other}"))),
        };
        if !ok {
            return Err(failed());
        }
        if let (Some(nonce), Some(at)) = (nonce, created_at) {
            let expires = at + self.window_s;
            let mut seen = self.nonces.lock().unwrap_or_else(|p| p.into_inner());
            if seen.len() >= MAX_NONCES / 2 {
                seen.retain(|_, until| *until >= now);
            }
            if seen.len() >= MAX_NONCES || seen.get(&nonce).is_some_and(|until| *until >= now) {
                return Err(failed());
            }
            seen.insert(nonce, expires);
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

/// Base64-free PasswordDigest: SHA-1(nonce ‖ created ‖ password).
pub(crate) fn password_digest(nonce: &[u8], created: &str, password: &str) -> [u8; 20] {
    let mut h = Sha1::new();
    h.update(nonce);
    h.update(created.as_bytes());
    h.update(password.as_bytes());
    h.finalize().into()
}

impl Handler for WsseUsername {
    fn access(&self) -> Access {
        Access::read_only(Parts::none().header(QName::new(WSSE_NS, "Security")))
    }

    fn call<'a>(&'a self, message: &'a Message) -> HandlerFuture<'a> {
        Box::pin(async move {
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs() as i64);
            match self.authenticate(message, now) {
                Ok(()) => Verdict::proceed(),
                Err(fault) => Verdict::Fault(fault),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn password_digest_matches_python_hashlib() {
        // base64.b64encode(hashlib.sha1(bytes(range(16)) + b'2026-11-22T10:00:00Z' + 'p@ss wörd'.encode()).digest())
        let nonce: Vec<u8> = (0u8..16).collect();
        let digest = password_digest(&nonce, "2026-11-22T10:00:00Z", "p@ss wörd");
        assert_eq!(STANDARD.encode(digest), "Qfdhd5lnsSGTSgAhW86Wl77cdns=");
    }

    use lather_envelope::{Envelope, EnvelopeBuilder, SoapVersion};
    use lather_pipeline::Context;

    const CREATED: &str = "2026-11-22T10:00:00Z";
    const AT: i64 = 1_795_341_600;

    fn handler() -> WsseUsername {
        WsseUsername::new(
            HashMap::from([("alice".to_owned(), "p@ss wörd".to_owned())]),
            300,
        )
    }

    fn message(token: &str) -> Message {
        let security = format!(
            r#"<wsse:Security xmlns:wsse="{WSSE_NS}" xmlns:wsu="{WSU_NS}"><wsse:UsernameToken>{token}</wsse:UsernameToken></wsse:Security>"#
        );
        let bytes = EnvelopeBuilder::new(SoapVersion::V11)
            .header(security.into())
            .body("<m:op xmlns:m=\"urn:m\"/>".into())
            .build();
        let env = Envelope::parse(bytes, &Limits::default()).unwrap();
        Message::new(
            env,
            Context {
                id: 1,
                service: "s".into(),
                action: None,
                client: None,
                ..Default::default()
            },
        )
    }

    fn digest_token(user: &str, password: &str, nonce: &[u8], created: &str) -> String {
        let d = STANDARD.encode(password_digest(nonce, created, password));
        format!(
            r#"<wsse:Username>{user}</wsse:Username><wsse:Password Type="{PASSWORD_DIGEST}">{d}</wsse:Password><wsse:Nonce>{}</wsse:Nonce><wsu:Created>{created}</wsu:Created>"#,
            STANDARD.encode(nonce)
        )
    }

    fn kind(r: Result<(), Fault>) -> Option<FaultKind> {
        r.err().map(|f| f.kind())
    }

    #[test]
    fn digest_tokens_authenticate_once() {
        let h = handler();
        let good = message(&digest_token("alice", "p@ss wörd", b"nonce-1", CREATED));
        assert_eq!(kind(h.authenticate(&good, AT + 10)), None);
        assert_eq!(
            kind(h.authenticate(&good, AT + 20)),
            Some(FaultKind::FailedAuthentication),
            "replay"
        );
        let other_nonce = message(&digest_token("alice", "p@ss wörd", b"nonce-2", CREATED));
        assert_eq!(kind(h.authenticate(&other_nonce, AT + 20)), None);
    }

    #[test]
    fn wrong_passwords_unknown_users_and_stale_tokens_are_refused() {
        let h = handler();
        let wrong = message(&digest_token("alice", "guess", b"n1", CREATED));
        assert_eq!(
            kind(h.authenticate(&wrong, AT)),
            Some(FaultKind::FailedAuthentication)
        );
        let nobody = message(&digest_token("mallory", "p@ss wörd", b"n2", CREATED));
        assert_eq!(
            kind(h.authenticate(&nobody, AT)),
            Some(FaultKind::FailedAuthentication)
        );
        let stale = message(&digest_token("alice", "p@ss wörd", b"n3", CREATED));
        assert_eq!(
            kind(h.authenticate(&stale, AT + 301)),
            Some(FaultKind::MessageExpired)
        );
        let future = message(&digest_token("alice", "p@ss wörd", b"n4", CREATED));
        assert_eq!(
            kind(h.authenticate(&future, AT - 61)),
            Some(FaultKind::MessageExpired)
        );
    }

    #[test]
    fn text_passwords_and_malformed_tokens() {
        let h = handler();
        let text = |pw: &str| {
            message(&format!(
                "<wsse:Username>alice</wsse:Username><wsse:Password>{pw}</wsse:Password>"
            ))
        };
        assert_eq!(kind(h.authenticate(&text("p@ss wörd"), AT)), None);
        assert_eq!(
            kind(h.authenticate(&text("p@ss"), AT)),
            Some(FaultKind::FailedAuthentication)
        );
        let no_nonce = message(&format!(
            r#"<wsse:Username>alice</wsse:Username><wsse:Password Type="{PASSWORD_DIGEST}">x</wsse:Password>"#
        ));
        assert_eq!(
            kind(h.authenticate(&no_nonce, AT)),
            Some(FaultKind::InvalidSecurity)
        );
        let no_user = message("<wsse:Password>x</wsse:Password>");
        assert_eq!(
            kind(h.authenticate(&no_user, AT)),
            Some(FaultKind::InvalidSecurity)
        );
        let bad_time = message(&digest_token(
            "alice",
            "p@ss wörd",
            b"n5",
            "2026-11-22T10:00:00",
        ));
        assert_eq!(
            kind(h.authenticate(&bad_time, AT)),
            Some(FaultKind::InvalidSecurity)
        );
    }

    #[test]
    fn user_tables_parse() {
        let users = WsseUsername::parse_users("# users\nalice:s3cret\n\nbob:pa:ss\n").unwrap();
        assert_eq!(users.get("alice").map(String::as_str), Some("s3cret"));
        assert_eq!(users.get("bob").map(String::as_str), Some("pa:ss"));
        assert!(
            WsseUsername::parse_users("nocolon\n")
                .unwrap_err()
                .contains("line 1")
        );
    }
}
