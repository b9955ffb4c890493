//! The authenticated identity as a message-context property: `wsse-username` sets it,
//! `require-identity` (a later stage) lets through only who it names, and a gateway passes
//! it to its backend in the `identity_header` it is configured with — never a client's own.

use crate::support;

use bytes::Bytes;
use http::StatusCode;
use lather_envelope::{EnvelopeBuilder, FaultKind, SoapVersion, WSSE_NS};
use lather_http::Server;
use lather_pipeline::{Reply, ServiceFuture, ServiceRequest, SoapService};
use lather_test_util::ScratchDir;
use support::*;

/// A backend that answers with the `X-Authenticated-User` header it received.
struct WhoAmI;

impl SoapService for WhoAmI {
    fn call<'a>(&'a self, request: ServiceRequest<'a>) -> ServiceFuture<'a> {
        Box::pin(async move {
            let user = request
                .headers
                .get_all("x-authenticated-user")
                .iter()
                .map(|v| v.to_str().unwrap_or("?").to_owned())
                .collect::<Vec<_>>()
                .join(",");
            let body = format!(r#"<w:user xmlns:w="urn:who">[{user}]</w:user>"#);
            let version = request.envelope.version();
            Ok(Reply::Written(
                version,
                EnvelopeBuilder::new(version)
                    .body(Bytes::from(body))
                    .build(),
            ))
        })
    }
}

fn token(user: &str, password: &str) -> String {
    format!(
        r#"<wsse:Security xmlns:wsse="{WSSE_NS}"><wsse:UsernameToken><wsse:Username>{user}</wsse:Username><wsse:Password>{password}</wsse:Password></wsse:UsernameToken></wsse:Security>"#
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_identity_reaches_require_identity_and_the_backend_but_a_forged_header_does_not() {
    let backend = Server::builder()
        .listen("127.0.0.1:0".parse().unwrap())
        .service("/who", WhoAmI)
        .bind()
        .await
        .unwrap();
    let backend_addr = backend.local_addr();
    tokio::spawn(backend.serve(std::future::pending()));
    let dir = ScratchDir::new("identity");
    let users = dir.write("users", "alice:s3cret\nbob:hunter2\n");
    let gateway = TestServer::start(&format!(
        "[handlers.auth]\nkind = \"wsse-username\"\nusers_file = \"{}\"\n\
         [handlers.only_alice]\nkind = \"require-identity\"\nallow = [\"alice\"]\n\
         [[service]]\nname = \"gw\"\npath = \"/gw\"\nupstream = [\"http://{backend_addr}/who\"]\n\
         identity_header = \"X-Authenticated-User\"\nrequest = [[\"auth\"], [\"only_alice\"]]\n",
        users.display()
    ))
    .await;

    let send = |security: String, forged: Option<&'static str>| {
        let mut request = soap_request(
            gateway.addr,
            "/gw",
            SoapVersion::V12,
            envelope(SoapVersion::V12, &security, "<w:who xmlns:w=\"urn:who\"/>"),
        );
        if let Some(name) = forged {
            request
                .headers_mut()
                .insert("x-authenticated-user", name.parse().unwrap());
        }
        send(gateway.addr, request)
    };

    let alice = send(token("alice", "s3cret"), Some("mallory")).await;
    assert_eq!(alice.status, StatusCode::OK, "{}", alice.text());
    assert!(
        alice.text().contains("[alice]</w:user>"),
        "{}",
        alice.text()
    );

    let bob = send(token("bob", "hunter2"), None).await;
    bob.assert_fault(FaultKind::FailedAuthentication, SoapVersion::V12);
    assert!(
        bob.text().contains("may not use this service"),
        "{}",
        bob.text()
    );

    let wrong = send(token("alice", "nope"), Some("alice")).await;
    wrong.assert_fault(FaultKind::FailedAuthentication, SoapVersion::V12);
}

#[tokio::test]
async fn require_identity_without_an_authenticating_stage_refuses_everything() {
    let server = TestServer::start(
        "[handlers.who]\nkind = \"require-identity\"\n\
         [[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\nrequest = [[\"who\"]]\n",
    )
    .await;
    let answer = post(
        server.addr,
        "/echo",
        SoapVersion::V11,
        envelope(SoapVersion::V11, "", ECHO_PAYLOAD),
    )
    .await;
    answer.assert_fault(FaultKind::FailedAuthentication, SoapVersion::V11);
    assert!(
        answer.text().contains("not authenticated"),
        "{}",
        answer.text()
    );
}

#[tokio::test]
async fn an_empty_allow_list_names_its_line() {
    let text = "[server]\nlisten = \"127.0.0.1:0\"\n[handlers.who]\nkind = \"require-identity\"\nallow = []\n\
                [[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\nrequest = [[\"who\"]]\n";
    let config = lather_config::Config::from_toml(text, "who.toml").unwrap();
    let error = Server::from_config(&config).await.unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("who.toml:5: handlers.who.allow: lists nobody"),
        "{error}"
    );
}
