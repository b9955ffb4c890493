use super::*;
use lather_envelope::{Envelope, Limits};
use lather_pipeline::{Context, Properties};

fn parse(text: &str) -> Envelope {
    Envelope::parse(text.as_bytes().to_vec().into(), &Limits::default()).unwrap()
}

const SOAP12: &str = "http://www.w3.org/2003/05/soap-envelope";

fn settings(operations: &[&str]) -> CacheSettings {
    CacheSettings {
        operations: operations.iter().map(|s| (*s).to_owned()).collect(),
        ..CacheSettings::default()
    }
}

fn request(operation: &str, arg: &str) -> Envelope {
    parse(&format!(
        r#"<s:Envelope xmlns:s="{SOAP12}"><s:Header><l:Locale xmlns:l="urn:l">en</l:Locale></s:Header><s:Body><m:{operation} xmlns:m="urn:shop">{arg}</m:{operation}></s:Body></s:Envelope>"#
    ))
}

fn answer(text: &str) -> Envelope {
    parse(&format!(
        r#"<s:Envelope xmlns:s="{SOAP12}"><s:Body><m:R xmlns:m="urn:shop">{text}</m:R></s:Body></s:Envelope>"#
    ))
}

fn fault() -> Envelope {
    parse(&format!(
        r#"<s:Envelope xmlns:s="{SOAP12}"><s:Body><s:Fault><s:Code><s:Value>s:Receiver</s:Value></s:Code><s:Reason><s:Text xml:lang="en">no</s:Text></s:Reason></s:Fault></s:Body></s:Envelope>"#
    ))
}

/// One exchange through the cache: the request side, then (when it did not answer) the
/// response side on `reply`. The answer the requester gets, and whether it came from the
/// cache.
async fn exchange(
    cache: &Cache,
    req: Envelope,
    props: Properties,
    reply: Envelope,
) -> (String, bool) {
    let context = Context {
        service: "shop".into(),
        properties: props,
        ..Context::default()
    };
    let verdict = cache
        .call(&Message::new(req.clone(), context.clone()))
        .await;
    let mut context = context;
    match verdict {
        Verdict::Respond(cached) => return (body(&cached), true),
        Verdict::Continue(patch) => {
            for p in patch.properties() {
                context.properties.set(p.clone());
            }
        }
        Verdict::Fault(f) => panic!("fault {f}"),
    }
    let context = Context {
        direction: Direction::Response,
        request: Some(req),
        ..context
    };
    let out = cache.call(&Message::new(reply.clone(), context)).await;
    assert!(
        matches!(out, Verdict::Continue(ref p) if p.is_empty()),
        "{out:?}"
    );
    (body(&reply), false)
}

fn body(envelope: &Envelope) -> String {
    String::from_utf8(envelope.body().to_vec()).unwrap()
}

fn with<T: lather_pipeline::PropertyValue>(value: T) -> Properties {
    let mut props = Properties::new();
    props.insert(value);
    props
}

#[tokio::test]
async fn a_repeated_request_is_answered_from_memory_and_others_are_not() {
    let cache = build(settings(&["GetPrice"])).unwrap();
    let none = Properties::new;
    let (_, cached) = exchange(&cache, request("GetPrice", "a"), none(), answer("1")).await;
    assert!(!cached);
    let (text, cached) = exchange(&cache, request("GetPrice", "a"), none(), answer("2")).await;
    assert!(cached);
    assert!(text.contains(">1<"), "{text}");
    // Another Body, another operation: not the same answer.
    let (_, cached) = exchange(&cache, request("GetPrice", "b"), none(), answer("3")).await;
    assert!(!cached);
    let (_, cached) = exchange(&cache, request("GetStock", "a"), none(), answer("4")).await;
    assert!(!cached);
    let (_, cached) = exchange(&cache, request("GetStock", "a"), none(), answer("4")).await;
    assert!(!cached, "an operation not listed was cached");
    let t = cache.tally();
    assert_eq!((t.hits, t.misses, t.stores, t.entries), (1, 2, 2, 2));
}

#[tokio::test]
async fn faults_and_passed_on_errors_are_never_stored() {
    let cache = build(settings(&["*"])).unwrap();
    exchange(&cache, request("GetPrice", "a"), Properties::new(), fault()).await;
    let (_, cached) = exchange(
        &cache,
        request("GetPrice", "a"),
        Properties::new(),
        answer("1"),
    )
    .await;
    assert!(!cached, "a fault was served from the cache");
    let status = with(ReplyStatus(503));
    exchange(
        &cache,
        request("GetStock", "a"),
        status.clone(),
        answer("x"),
    )
    .await;
    let (_, cached) = exchange(
        &cache,
        request("GetStock", "a"),
        Properties::new(),
        answer("1"),
    )
    .await;
    assert!(!cached, "a non-200 answer was served from the cache");
}

#[tokio::test]
async fn entries_expire_after_the_ttl() {
    let cache = build(CacheSettings {
        ttl_ms: Some(30),
        ..settings(&["*"])
    })
    .unwrap();
    exchange(
        &cache,
        request("GetPrice", "a"),
        Properties::new(),
        answer("1"),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(60)).await;
    let (text, cached) = exchange(
        &cache,
        request("GetPrice", "a"),
        Properties::new(),
        answer("2"),
    )
    .await;
    assert!(!cached, "an entry was served past its TTL");
    assert!(text.contains(">2<"));
    assert_eq!(cache.tally().expirations, 1);
}

#[tokio::test]
async fn no_cache_bypasses_the_lookup_and_no_store_the_store() {
    let cache = build(settings(&["*"])).unwrap();
    let no_store = RequestCacheControl {
        no_cache: false,
        no_store: true,
    };
    exchange(
        &cache,
        request("GetPrice", "a"),
        with(no_store),
        answer("1"),
    )
    .await;
    assert_eq!(cache.tally().entries, 0);
    exchange(
        &cache,
        request("GetPrice", "a"),
        Properties::new(),
        answer("1"),
    )
    .await;
    let no_cache = RequestCacheControl {
        no_cache: true,
        no_store: false,
    };
    let (text, cached) = exchange(
        &cache,
        request("GetPrice", "a"),
        with(no_cache),
        answer("2"),
    )
    .await;
    assert!(!cached);
    assert!(text.contains(">2<"));
    // The fresh answer replaced the old one.
    let (text, cached) = exchange(
        &cache,
        request("GetPrice", "a"),
        Properties::new(),
        answer("3"),
    )
    .await;
    assert!(cached);
    assert!(text.contains(">2<"), "{text}");
}

#[tokio::test]
async fn never_wins_over_every_and_a_write_operation_empties_the_service() {
    let cache = build(CacheSettings {
        never: vec!["GetQuote".into()],
        invalidate_on: vec!["{urn:shop}SetPrice".into()],
        ..settings(&["*"])
    })
    .unwrap();
    exchange(
        &cache,
        request("GetQuote", "a"),
        Properties::new(),
        answer("1"),
    )
    .await;
    let (_, cached) = exchange(
        &cache,
        request("GetQuote", "a"),
        Properties::new(),
        answer("1"),
    )
    .await;
    assert!(!cached);
    exchange(
        &cache,
        request("GetPrice", "a"),
        Properties::new(),
        answer("1"),
    )
    .await;
    assert_eq!(cache.tally().entries, 1);
    let (_, cached) = exchange(
        &cache,
        request("SetPrice", "a"),
        Properties::new(),
        answer("ok"),
    )
    .await;
    assert!(!cached, "a write operation was answered from the cache");
    assert_eq!(cache.tally().entries, 0);
    let (text, cached) = exchange(
        &cache,
        request("GetPrice", "a"),
        Properties::new(),
        answer("9"),
    )
    .await;
    assert!(!cached, "a stale entry outlived the write");
    assert!(text.contains(">9<"));
}

#[tokio::test]
async fn the_identity_and_the_key_headers_are_part_of_the_key() {
    let cache = build(CacheSettings {
        key_headers: vec!["{urn:l}Locale".into()],
        ..settings(&["*"])
    })
    .unwrap();
    let ann = || with(Identity("ann".into()));
    exchange(&cache, request("GetPrice", "a"), ann(), answer("ann's")).await;
    let (_, cached) = exchange(
        &cache,
        request("GetPrice", "a"),
        with(Identity("bob".into())),
        answer("bob's"),
    )
    .await;
    assert!(!cached, "one user's answer was served to another");
    let (text, cached) = exchange(&cache, request("GetPrice", "a"), ann(), answer("x")).await;
    assert!(cached && text.contains("ann's"));
    let other_locale = parse(&format!(
        r#"<s:Envelope xmlns:s="{SOAP12}"><s:Header><l:Locale xmlns:l="urn:l">fr</l:Locale></s:Header><s:Body><m:GetPrice xmlns:m="urn:shop">a</m:GetPrice></s:Body></s:Envelope>"#
    ));
    let (_, cached) = exchange(&cache, other_locale, ann(), answer("fr")).await;
    assert!(!cached, "a key header was not part of the key");
}

#[test]
fn bad_settings_are_refused_by_key() {
    let cases = [
        (settings(&[]), "operations"),
        (settings(&["a b"]), "operations"),
        (
            CacheSettings {
                ttl_ms: Some(0),
                ..settings(&["*"])
            },
            "ttl_ms",
        ),
        (
            CacheSettings {
                max_bytes: Some(0),
                ..settings(&["*"])
            },
            "max_bytes",
        ),
        (
            CacheSettings {
                max_bytes: Some(10),
                max_entry_bytes: Some(11),
                ..settings(&["*"])
            },
            "max_entry_bytes",
        ),
        (
            CacheSettings {
                key_headers: vec!["Locale".into()],
                ..settings(&["*"])
            },
            "key_headers",
        ),
        (
            CacheSettings {
                never: vec!["{x".into()],
                ..settings(&["*"])
            },
            "never",
        ),
    ];
    for (settings, key) in cases {
        let err = build(settings).unwrap_err();
        assert_eq!(err.setting(), Some(key), "{err}");
    }
}
