//! The `registry` service over real sockets: register with metadata, query by name, by
//! property and by XPath over the documents; leases end unless renewed; only the
//! registrant renews or removes; bounds and bad requests fault.

use crate::support;

use lather_envelope::{FaultKind, SoapVersion};
use support::*;

const LR: &str = "urn:lather:registry";

async fn registry(extra: &str) -> TestServer {
    TestServer::start(&format!(
        "[[service]]\nname = \"reg\"\npath = \"/reg\"\nbuiltin = \"registry\"\n{extra}"
    ))
    .await
}

async fn call(server: &TestServer, payload: &str) -> Answer {
    post(
        server.addr,
        "/reg",
        SoapVersion::V12,
        envelope(SoapVersion::V12, "", payload),
    )
    .await
}

fn op(name: &str, fields: &str) -> String {
    format!(r#"<lr:{name} xmlns:lr="{LR}">{fields}</lr:{name}>"#)
}

fn count(answer: &Answer) -> usize {
    answer.text().matches("<lr:Registration>").count()
}

async fn register(server: &TestServer, name: &str, region: &str, qos: &str) -> (String, String) {
    let answer = call(
        server,
        &op(
            "Register",
            &format!(
                "<lr:Name>{name}</lr:Name><lr:Endpoint>http://10.0.0.{}:9000/ws</lr:Endpoint><lr:Version>1.2</lr:Version>\
                 <lr:Property name=\"region\">{region}</lr:Property>\
                 <lr:Document><q:Offer xmlns:q=\"urn:qos\"><q:Latency unit=\"ms\">{qos}</q:Latency><q:Binary/></q:Offer></lr:Document>",
                qos.len()
            ),
        ),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text());
    (field(&answer, "lr:Id"), field(&answer, "lr:Token"))
}

#[tokio::test]
async fn services_are_found_by_name_property_and_xpath() {
    let server = registry("").await;
    register(&server, "quotes", "eu", "20").await;
    register(&server, "quotes", "us", "150").await;
    register(&server, "orders", "eu", "40").await;

    let by_name = call(&server, &op("Query", "<lr:Name>quotes</lr:Name>")).await;
    assert_eq!(count(&by_name), 2, "{}", by_name.text());
    assert!(
        by_name.text().contains("<lr:Endpoint>http://10.0.0."),
        "{}",
        by_name.text()
    );
    assert!(
        by_name.text().contains("<q:Offer xmlns:q=\"urn:qos\">"),
        "the document comes back: {}",
        by_name.text()
    );

    let eu_quotes = call(
        &server,
        &op(
            "Query",
            "<lr:Name>quotes</lr:Name><lr:Property name=\"region\">eu</lr:Property>",
        ),
    )
    .await;
    assert_eq!(count(&eu_quotes), 1, "{}", eu_quotes.text());

    let fast = call(
        &server,
        &op(
            "Query",
            "<lr:XPath xmlns:q=\"urn:qos\">/q:Offer[number(q:Latency) &lt; 50]</lr:XPath>",
        ),
    )
    .await;
    assert_eq!(count(&fast), 2, "quotes/eu and orders: {}", fast.text());
    assert!(!fast.text().contains(">150<"), "{}", fast.text());

    let none = call(&server, &op("Query", "<lr:Name>nothing</lr:Name>")).await;
    assert_eq!(count(&none), 0);
}

#[tokio::test]
async fn leases_end_unless_renewed_and_only_the_registrant_may_renew_or_remove() {
    let server = registry("").await;
    let short = call(
        &server,
        &op("Register", "<lr:Name>tick</lr:Name><lr:Endpoint>http://h/ws</lr:Endpoint><lr:LeaseSeconds>1</lr:LeaseSeconds>"),
    )
    .await;
    let (id, token) = (field(&short, "lr:Id"), field(&short, "lr:Token"));
    let kept = call(
        &server,
        &op("Register", "<lr:Name>tock</lr:Name><lr:Endpoint>http://h/ws</lr:Endpoint><lr:LeaseSeconds>1</lr:LeaseSeconds>"),
    )
    .await;
    let (kept_id, kept_token) = (field(&kept, "lr:Id"), field(&kept, "lr:Token"));

    let stranger = call(
        &server,
        &op(
            "Renew",
            &format!("<lr:Id>{kept_id}</lr:Id><lr:Token>{token}</lr:Token>"),
        ),
    )
    .await;
    assert_app_fault(&stranger, "NotRegistrationOwner", 403);
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    let renewed = call(
        &server,
        &op("Renew", &format!("<lr:Id>{kept_id}</lr:Id><lr:Token>{kept_token}</lr:Token><lr:LeaseSeconds>60</lr:LeaseSeconds>")),
    )
    .await;
    assert_eq!(renewed.status, 200, "{}", renewed.text());
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;

    let all = call(&server, &op("Query", "")).await;
    assert_eq!(
        count(&all),
        1,
        "only the renewed one is left: {}",
        all.text()
    );
    assert!(
        all.text().contains("<lr:Name>tock</lr:Name>"),
        "{}",
        all.text()
    );
    let late = call(
        &server,
        &op(
            "Renew",
            &format!("<lr:Id>{id}</lr:Id><lr:Token>{token}</lr:Token>"),
        ),
    )
    .await;
    assert_app_fault(&late, "UnknownRegistration", 404);

    let removed = call(
        &server,
        &op(
            "Deregister",
            &format!("<lr:Id>{kept_id}</lr:Id><lr:Token>{kept_token}</lr:Token>"),
        ),
    )
    .await;
    assert_eq!(removed.status, 200, "{}", removed.text());
    assert_eq!(count(&call(&server, &op("Query", "")).await), 0);
}

#[tokio::test]
async fn bounds_and_bad_requests_fault() {
    let server = registry("max_registrations = 1\nmax_lease_s = 5\n").await;
    let first = call(
        &server,
        &op("Register", "<lr:Name>a</lr:Name><lr:Endpoint>http://h/ws</lr:Endpoint><lr:LeaseSeconds>999</lr:LeaseSeconds>"),
    )
    .await;
    assert_eq!(first.status, 200, "{}", first.text());
    let expires: u64 = field(&first, "lr:ExpiresAtMs").parse().unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    assert!(expires <= now + 5_000, "the lease is capped at max_lease_s");
    let full = call(
        &server,
        &op(
            "Register",
            "<lr:Name>b</lr:Name><lr:Endpoint>http://h/ws</lr:Endpoint>",
        ),
    )
    .await;
    assert_app_fault(&full, "RegistryFull", 503);

    let open = registry("").await;
    let no_endpoint = call(
        &open,
        &op(
            "Register",
            "<lr:Name>a</lr:Name><lr:Endpoint>ftp://x</lr:Endpoint>",
        ),
    )
    .await;
    assert_app_fault(&no_endpoint, "InvalidRegistryRequest", 400);
    let bad_xpath = call(&open, &op("Query", "<lr:XPath>/x:y</lr:XPath>")).await;
    assert_app_fault(&bad_xpath, "InvalidXPath", 400);
    let two_roots = call(
        &open,
        &op("Register", "<lr:Name>a</lr:Name><lr:Endpoint>http://h/ws</lr:Endpoint><lr:Document><a/><b/></lr:Document>"),
    )
    .await;
    assert_app_fault(&two_roots, "InvalidRegistryRequest", 400);
    let other = call(&open, "<m:ping xmlns:m=\"urn:m\"/>").await;
    other.assert_fault(FaultKind::UnknownOperation, SoapVersion::V12);
    let err = lather_config::Config::from_toml(
        "[[service]]\nname = \"e\"\npath = \"/e\"\nbuiltin = \"echo\"\nmax_lease_s = 5\n",
        "t.toml",
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("only a builtin = \"registry\""),
        "{err}"
    );
}

/// A backend answering with its name; its address.
async fn named_backend(name: &'static str) -> std::net::SocketAddr {
    let service = lather_pipeline::service_fn(move |envelope, _context| async move {
        let version = envelope.version();
        Ok(lather_pipeline::Reply::Written(
            version,
            lather_envelope::EnvelopeBuilder::new(version)
                .body(bytes::Bytes::from(format!(
                    "<w:who xmlns:w=\"urn:who\"><w:name>{name}</w:name></w:who>"
                )))
                .build(),
        ))
    });
    serve_one("/ws", service).await
}

/// The backends the gateway reaches over `tries` requests.
async fn reached(gateway: &TestServer, tries: usize) -> std::collections::BTreeSet<String> {
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..tries {
        let answer = post(
            gateway.addr,
            "/gw",
            SoapVersion::V12,
            envelope(SoapVersion::V12, "", "<m:x xmlns:m=\"urn:m\"/>"),
        )
        .await;
        if answer.status == 200 {
            seen.insert(field(&answer, "w:name"));
        } else {
            seen.insert(format!("status {}", answer.status.as_u16()));
        }
    }
    seen
}

/// Waits (up to 5 s) until the gateway reaches exactly `expected`.
async fn until_reached(gateway: &TestServer, expected: &[&str]) {
    let want: std::collections::BTreeSet<String> =
        expected.iter().map(|s| (*s).to_owned()).collect();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let seen = reached(gateway, 6).await;
        if seen == want {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the gateway reaches {seen:?}, not {want:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_follows_the_registrations_as_they_come_and_go() {
    let reg = registry("").await;
    let gateway = TestServer::start(&format!(
        "[[service]]\nname = \"gw\"\npath = \"/gw\"\nupstream = {{ registry = \"{}\", name = \"quotes\", poll_ms = 50 }}\n",
        reg.url("/reg")
    ))
    .await;
    let none = post(
        gateway.addr,
        "/gw",
        SoapVersion::V12,
        envelope(SoapVersion::V12, "", "<m:x xmlns:m=\"urn:m\"/>"),
    )
    .await;
    none.assert_fault(FaultKind::UpstreamUnavailable, SoapVersion::V12);
    assert!(
        none.text().contains("no backend is registered as quotes"),
        "{}",
        none.text()
    );

    let (a, b) = (named_backend("A").await, named_backend("B").await);
    let register = |addr: std::net::SocketAddr| {
        op(
            "Register",
            &format!("<lr:Name>quotes</lr:Name><lr:Endpoint>http://{addr}/ws</lr:Endpoint>"),
        )
    };
    let a_reg = call(&reg, &register(a)).await;
    until_reached(&gateway, &["A"]).await;
    call(&reg, &register(b)).await;
    until_reached(&gateway, &["A", "B"]).await;
    let removed = call(
        &reg,
        &op(
            "Deregister",
            &format!(
                "<lr:Id>{}</lr:Id><lr:Token>{}</lr:Token>",
                field(&a_reg, "lr:Id"),
                field(&a_reg, "lr:Token")
            ),
        ),
    )
    .await;
    assert_eq!(removed.status, 200, "{}", removed.text());
    until_reached(&gateway, &["B"]).await;
}
