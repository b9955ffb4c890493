//! `GET /ready` beside `/health`: ready when every gateway has a backend and the NATS
//! connections lather holds are up; else 503 with one reason per problem. Same
//! `admin_allow` rule as `/health`, and no access-log line.

use crate::support;

use lather_envelope::SoapVersion;
use lather_test_util::nats;
use std::time::{Duration, Instant};
use support::*;

/// `/ready` until its status is `want` (bounded: a state change is awaited, not timed).
async fn ready_until(server: &TestServer, want: u16) -> Answer {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let answer = get(server.addr, "/ready").await;
        if answer.status == want || Instant::now() > deadline {
            return answer;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_plain_echo_is_ready() {
    let server = TestServer::echo().await;
    let answer = get(server.addr, "/ready").await;
    assert_eq!(answer.status, 200);
    assert_eq!(answer.text(), "ready\n");
    assert_eq!(
        answer.headers["content-type"], "text/plain; charset=utf-8",
        "{:?}",
        answer.headers
    );
}

#[tokio::test]
async fn a_gateway_following_an_empty_registry_is_not_ready_until_a_backend_registers() {
    let registry =
        TestServer::start("[[service]]\nname = \"reg\"\npath = \"/reg\"\nbuiltin = \"registry\"\n")
            .await;
    let gateway = TestServer::start(&format!(
        "[[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\n\
         [[service]]\nname = \"quotes\"\npath = \"/quotes\"\nupstream = {{ registry = \"{}\", name = \"quotes\", poll_ms = 50 }}\n",
        registry.url("/reg")
    ))
    .await;
    let answer = get(gateway.addr, "/ready").await;
    assert_eq!(answer.status, 503, "{}", answer.text());
    assert_eq!(answer.text(), "not ready: quotes: no backend\n");
    // /health only says the process is alive and not saturated.
    assert_eq!(get(gateway.addr, "/health").await.status, 200);

    let backend = fixed_backend(200, "application/soap+xml", "<ok/>", 0).await;
    let registered = post(
        registry.addr,
        "/reg",
        SoapVersion::V12,
        envelope(
            SoapVersion::V12,
            "",
            &format!(
                "<lr:Register xmlns:lr=\"urn:lather:registry\"><lr:Name>quotes</lr:Name><lr:Endpoint>http://{backend}/ws</lr:Endpoint></lr:Register>"
            ),
        ),
    )
    .await;
    assert_eq!(registered.status, 200, "{}", registered.text());
    let answer = ready_until(&gateway, 200).await;
    assert_eq!(answer.text(), "ready\n");
}

#[tokio::test]
async fn a_gateway_with_configured_backends_is_ready() {
    // Configured backends count even when down: whether they answer is the gateway's
    // business per request, not a reason to take the whole server out of rotation.
    let down = closed_port().await;
    let gateway = TestServer::start(&format!(
        "[[service]]\nname = \"quotes\"\npath = \"/quotes\"\nupstream = [\"http://{down}/ws\"]\n"
    ))
    .await;
    assert_eq!(get(gateway.addr, "/ready").await.text(), "ready\n");
}

#[tokio::test]
async fn ready_follows_admin_allow() {
    let server = TestServer::start(
        "[server]\nlisten = \"127.0.0.1:0\"\nadmin_allow = [\"10.0.0.0/8\"]\n\
         [[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\n",
    )
    .await;
    let answer = get(server.addr, "/ready").await;
    assert_eq!(answer.status, 403, "{}", answer.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn not_ready_while_nats_is_down() {
    let mut nats = nats::NatsServer::start("ready");
    let text = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n[nats]\nurl = \"{}\"\n\
         [handlers.log]\nkind = \"logging\"\nplacement = \"remote\"\nfallback = \"local\"\n\
         [[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\nrequest = [[\"log\"]]\n",
        nats.url()
    );
    let server = TestServer::start(&text).await;
    assert_eq!(get(server.addr, "/ready").await.text(), "ready\n");
    nats.stop();
    let answer = ready_until(&server, 503).await;
    assert_eq!(answer.status, 503, "{}", answer.text());
    assert_eq!(answer.text(), "not ready: nats unreachable\n");
    nats.start_again();
    let answer = ready_until(&server, 200).await;
    assert_eq!(answer.text(), "ready\n");
}
