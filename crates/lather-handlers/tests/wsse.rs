//! `wsse-username`: its replay cache under a stream of distinct nonces, and the identity it
//! gives the stages after it.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use lather_envelope::{Envelope, EnvelopeBuilder, FaultKind, Limits, SoapVersion, WSSE_NS};
use lather_handlers::{WsseSettings, WsseUsername};
use lather_pipeline::{
    Access, Context, Handler, HandlerFuture, Identity, Message, Options, Outcome, Plan, Step,
    Verdict, run,
};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

const WSU_NS: &str =
    "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-utility-1.0.xsd";

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

/// Records the identity each message it sees carries.
#[derive(Debug, Default)]
struct SeesIdentity {
    seen: std::sync::Mutex<Vec<Option<Identity>>>,
}

impl Handler for SeesIdentity {
    fn access(&self) -> Access {
        Access::default()
    }

    fn call<'a>(&'a self, message: &'a Message) -> HandlerFuture<'a> {
        Box::pin(async move {
            let identity = message.context().properties.get::<Identity>().cloned();
            self.seen.lock().unwrap().push(identity);
            Verdict::proceed()
        })
    }
}

#[tokio::test]
async fn a_verified_token_sets_the_identity_the_next_stage_sees() {
    let auth: Arc<dyn Handler> = Arc::new(WsseUsername::new(
        HashMap::from([("alice".to_owned(), "s3cret".to_owned())]),
        300,
    ));
    let probe = Arc::new(SeesIdentity::default());
    let plan = Plan::new(vec![
        vec![Arc::new(Step::new("auth", auth, Options::default()))],
        vec![Arc::new(Step::new(
            "probe",
            probe.clone() as Arc<dyn Handler>,
            Options::default(),
        ))],
    ])
    .unwrap();
    let created = now();
    let Outcome::Continue(out) = run(
        &plan,
        message("s3cret", b"nonce-1", &created),
        &Limits::default(),
    )
    .await
    else {
        panic!("a good token was refused")
    };
    // The Security header is gone, the identity stays with the message.
    assert!(out.envelope().headers().is_empty());
    assert_eq!(
        out.context().properties.get::<Identity>(),
        Some(&Identity("alice".into()))
    );
    assert_eq!(
        *probe.seen.lock().unwrap(),
        [Some(Identity("alice".into()))]
    );
    // A bad password: a fault, no identity, and the next stage never runs.
    let outcome = run(
        &plan,
        message("guess", b"nonce-2", &created),
        &Limits::default(),
    )
    .await;
    let Outcome::Fault(fault) = outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(fault.kind(), FaultKind::FailedAuthentication);
    assert_eq!(probe.seen.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn a_bad_token_under_must_perform_false_sets_no_identity() {
    let auth: Arc<dyn Handler> = Arc::new(WsseUsername::new(
        HashMap::from([("alice".to_owned(), "s3cret".to_owned())]),
        300,
    ));
    let lenient = Options {
        must_perform: false,
        ..Options::default()
    };
    let probe = Arc::new(SeesIdentity::default());
    let plan = Plan::new(vec![
        vec![Arc::new(Step::new("auth", auth, lenient))],
        vec![Arc::new(Step::new(
            "probe",
            probe.clone() as Arc<dyn Handler>,
            Options::default(),
        ))],
    ])
    .unwrap();
    let outcome = run(
        &plan,
        message("guess", b"nonce-3", &now()),
        &Limits::default(),
    )
    .await;
    let Outcome::Continue(out) = outcome else {
        panic!("{outcome:?}")
    };
    assert!(out.context().properties.get::<Identity>().is_none());
    assert_eq!(*probe.seen.lock().unwrap(), [None]);
}
