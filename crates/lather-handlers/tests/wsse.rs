//! `wsse-username` as configured: its keys and their errors, how its access now places it
//! beside `decrypt`, and its replay cache under a stream of distinct nonces.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use lather_config::Config;
use lather_envelope::{Envelope, EnvelopeBuilder, FaultKind, Limits, SoapVersion, WSSE_NS};
use lather_handlers::{WsseSettings, WsseUsername, service_plans};
use lather_pipeline::{Context, Handler, Message, Verdict};
use std::collections::HashMap;
use std::time::{SystemTime, UNIX_EPOCH};

const WSU_NS: &str =
    "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-utility-1.0.xsd";

fn scratch(test: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("lather-wsse-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("users"), "alice:s3cret\n").unwrap();
    std::fs::write(dir.join("aes.key"), "11".repeat(32)).unwrap();
    dir
}

/// The plans of one echo service whose handlers are `auth` (wsse-username, with `auth`
/// extra keys) and `open` (decrypt, with `open` extra keys), and whose request flow is
/// `request`; or the error, as text.
fn plans(test: &str, auth: &str, open: &str, request: &str) -> Result<String, String> {
    let dir = scratch(test);
    let text = format!(
        "[handlers.auth]\nkind = \"wsse-username\"\nusers_file = \"{}\"\n{auth}\n\
         [handlers.open]\nkind = \"decrypt\"\nkey_file = \"{}\"\n{open}\n\
         [[service]]\nname = \"s\"\npath = \"/s\"\nbuiltin = \"echo\"\nrequest = {request}\n",
        dir.join("users").display(),
        dir.join("aes.key").display()
    );
    let config = Config::from_toml(&text, "w.toml").map_err(|e| e.to_string())?;
    service_plans(&config)
        .map(|p| p[0].request.to_string())
        .map_err(|e| e.to_string())
}

#[test]
fn the_new_keys_are_read_and_bad_values_name_their_line() {
    let ok = plans(
        "keys",
        "max_nonce_bytes = 64\nmax_nonces = 10\nrequire_nonce = true\nforward_security = true",
        "forward_security = true",
        r#"[["auth"]]"#,
    );
    assert!(ok.is_ok(), "{ok:?}");
    for (keys, line, key) in [
        ("max_nonce_bytes = 0", 4, "max_nonce_bytes"),
        ("max_nonce_bytes = 5000", 4, "max_nonce_bytes"),
        ("window_s = 60\nmax_nonces = 0", 5, "max_nonces"),
    ] {
        let err = plans("bad", keys, "", r#"[["auth"]]"#).unwrap_err();
        assert!(
            err.starts_with(&format!("w.toml:{line}:"))
                && err.contains(&format!("handlers.auth.{key}: must be between 1 and")),
            "{err}"
        );
    }
    let err = plans("foreign", "", "max_nonces = 5", r#"[["open"]]"#).unwrap_err();
    assert!(err.contains("does not take max_nonces"), "{err}");
}

#[test]
fn both_handlers_now_write_the_security_header() {
    // Both take their parts out of wsse:Security: they cannot share a stage...
    let err = plans("clash", "", "", r#"[["open", "auth"]]"#).unwrap_err();
    assert!(
        err.contains("open and auth cannot run together") && err.contains("Security"),
        "{err}"
    );
    // ...and `auto` runs them in the order listed.
    let plan = plans("auto", "", "", r#"{ auto = ["open", "auth"] }"#).unwrap();
    assert_eq!(plan, "1: open\n2: auth\n");
    // A decrypt that forwards the header leaves it alone, so it may share a stage again.
    let plan = plans(
        "share",
        "",
        "forward_security = true",
        r#"[["open", "auth"]]"#,
    )
    .unwrap();
    assert_eq!(plan, "1: open ‖ auth\n");
}

/// `wsu:Created` for now.
fn now() -> String {
    let d = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    lather_envelope::datetime::format_utc_millis(u64::try_from(d.as_millis()).unwrap())
}

/// A message with a PasswordText token for alice carrying `nonce` and `created`.
fn message(password: &str, nonce: &[u8], created: &str) -> Message {
    let security = format!(
        r#"<wsse:Security xmlns:wsse="{WSSE_NS}" xmlns:wsu="{WSU_NS}"><wsse:UsernameToken><wsse:Username>alice</wsse:Username><wsse:Password>{password}</wsse:Password><wsse:Nonce>{}</wsse:Nonce><wsu:Created>{created}</wsu:Created></wsse:UsernameToken></wsse:Security>"#,
        STANDARD.encode(nonce)
    );
    let bytes = EnvelopeBuilder::new(SoapVersion::V12)
        .header(security.into())
        .body("<m:op xmlns:m=\"urn:m\"/>".into())
        .build();
    Message::new(
        Envelope::parse(bytes, &Limits::default()).unwrap(),
        Context::default(),
    )
}

fn gauge(h: &WsseUsername, name: &str) -> u64 {
    h.observations()
        .into_iter()
        .find(|o| o.name == name)
        .map(|o| o.value)
        .unwrap()
}

#[tokio::test]
async fn many_distinct_nonces_leave_the_cache_at_its_bound() {
    let h = WsseUsername::with_settings(
        HashMap::from([("alice".to_owned(), "s3cret".to_owned())]),
        WsseSettings {
            max_nonces: 200,
            ..WsseSettings::default()
        },
    );
    let created = now();
    let (mut passed, mut full) = (0, 0);
    for i in 0u32..5_000 {
        // Each nonce 128 bytes, the longest accepted: the cache keeps 16 of each.
        let mut nonce = [0u8; 128];
        nonce[..4].copy_from_slice(&i.to_be_bytes());
        match h.call(&message("s3cret", &nonce, &created)).await {
            Verdict::Continue(_) => passed += 1,
            Verdict::Fault(f) if f.kind() == FaultKind::ReplayCacheFull => full += 1,
            other => panic!("{other:?}"),
        }
        assert!(h.remembered_nonces() <= 200);
    }
    assert_eq!((passed, full), (200, 4_800));
    assert_eq!(gauge(&h, "wsse_nonces"), 200);
    assert_eq!(gauge(&h, "wsse_nonce_cache_full"), 4_800);
    // A replay of a remembered nonce is still a replay.
    let mut first = [0u8; 128];
    first[..4].copy_from_slice(&0u32.to_be_bytes());
    match h.call(&message("s3cret", &first, &created)).await {
        Verdict::Fault(f) => assert_eq!(f.kind(), FaultKind::FailedAuthentication),
        other => panic!("{other:?}"),
    }
    assert_eq!(gauge(&h, "wsse_replays"), 1);
    // Wrong passwords never reach the cache, however many nonces they bring.
    let fresh = WsseUsername::new(
        HashMap::from([("alice".to_owned(), "s3cret".to_owned())]),
        300,
    );
    for i in 0u32..1_000 {
        assert!(matches!(
            fresh
                .call(&message("guess", &i.to_be_bytes(), &created))
                .await,
            Verdict::Fault(_)
        ));
    }
    assert_eq!(fresh.remembered_nonces(), 0);
}
