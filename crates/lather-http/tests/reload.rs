//! A reload serves the new configuration's services and upstreams from the next request on,
//! keeps counting where it stopped, carries services that keep state over unchanged, and
//! refuses (changing nothing) what only a restart applies.

use crate::support;

use http::StatusCode;
use lather_config::Config;
use lather_envelope::SoapVersion;
use lather_http::ReloadError;
use support::*;
use tokio::sync::oneshot;

const ANSWER_A: &str = "<s:Envelope xmlns:s=\"http://www.w3.org/2003/05/soap-envelope\"><s:Body><a/></s:Body></s:Envelope>";
const ANSWER_B: &str = "<s:Envelope xmlns:s=\"http://www.w3.org/2003/05/soap-envelope\"><s:Body><b/></s:Body></s:Envelope>";

fn config(text: &str) -> Config {
    Config::from_toml(
        &format!("[server]\nlisten = \"127.0.0.1:0\"\n{text}"),
        "reload.toml",
    )
    .expect("config")
}

async fn start(
    config: &Config,
) -> (
    std::net::SocketAddr,
    lather_http::Reloader,
    oneshot::Sender<()>,
) {
    let server = lather_http::Server::from_config(config)
        .await
        .expect("bind");
    let addr = server.local_addr();
    let reloader = server.reloader().expect("a configured server reloads");
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(server.serve(async {
        let _ = stopped.await;
    }));
    (addr, reloader, stop)
}

async fn call(addr: std::net::SocketAddr, path: &str) -> Answer {
    post(
        addr,
        path,
        SoapVersion::V12,
        envelope(SoapVersion::V12, "", ECHO_PAYLOAD),
    )
    .await
}

fn gateway_to(addr: std::net::SocketAddr) -> String {
    format!("[[service]]\nname = \"gw\"\npath = \"/gw\"\nupstream = [\"http://{addr}/ws\"]\n")
}

const SOURCE: &str =
    "[[service]]\nname = \"events\"\npath = \"/events\"\nbuiltin = \"event-source\"\n";

#[tokio::test]
async fn a_reload_moves_a_gateway_to_new_upstreams_and_keeps_the_counts() {
    let a = fixed_backend(200, "application/soap+xml", ANSWER_A, 0).await;
    let b = fixed_backend(200, "application/soap+xml", ANSWER_B, 0).await;
    let (addr, reloader, _stop) = start(&config(&gateway_to(a))).await;
    assert_eq!(call(addr, "/gw").await.text(), ANSWER_A);
    assert_eq!(call(addr, "/echo").await.status, StatusCode::NOT_FOUND);
    let done = reloader
        .reload(&config(&format!(
            "{}[[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\n",
            gateway_to(b)
        )))
        .await
        .expect("reloaded");
    assert_eq!(done.services, 2);
    assert_eq!(call(addr, "/gw").await.text(), ANSWER_B);
    assert_eq!(call(addr, "/echo").await.status, StatusCode::OK);
    let metrics = get(addr, "/metrics").await.text().to_owned();
    assert_eq!(
        metric(
            &metrics,
            "lather_requests_total{service=\"gw\",code=\"200\"}"
        ),
        Some(2.0),
        "counted before and after the reload: {metrics}"
    );
}

#[tokio::test]
async fn services_that_keep_state_are_carried_and_may_not_change() {
    let a = fixed_backend(200, "application/soap+xml", ANSWER_A, 0).await;
    let first = config(&format!("{SOURCE}{}", gateway_to(a)));
    let (addr, reloader, _stop) = start(&first).await;
    // The event source unchanged (moved below the gateway): carried.
    let done = reloader
        .reload(&config(&format!("{}{SOURCE}", gateway_to(a))))
        .await
        .expect("reloaded");
    assert_eq!(done.carried, ["events"]);
    // Changed: refused, and nothing changes.
    let changed = config(&format!(
        "{SOURCE}max_expires_s = 60\n{}[[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\n",
        gateway_to(a)
    ));
    let refused = reloader.reload(&changed).await.unwrap_err();
    assert!(matches!(refused, ReloadError::NeedsRestart(_)), "{refused}");
    assert!(refused.to_string().contains("\"events\""), "{refused}");
    assert_eq!(call(addr, "/echo").await.status, StatusCode::NOT_FOUND);
    // A new service that keeps state is refused too.
    let added = config(&format!(
        "{SOURCE}{}[[service]]\nname = \"more\"\npath = \"/more\"\nbuiltin = \"event-source\"\n",
        gateway_to(a)
    ));
    assert!(matches!(
        reloader.reload(&added).await,
        Err(ReloadError::NeedsRestart(_))
    ));
}

#[tokio::test]
async fn a_changed_qos_section_needs_a_restart() {
    let a = fixed_backend(200, "application/soap+xml", ANSWER_A, 0).await;
    let (addr, reloader, _stop) = start(&config(&gateway_to(a))).await;
    let refused = reloader
        .reload(&config(&format!(
            "[qos]\ncompress_below_cpu = 50\n{}",
            gateway_to(a)
        )))
        .await
        .unwrap_err();
    assert!(refused.to_string().contains("[qos]"), "{refused}");
    assert_eq!(call(addr, "/gw").await.text(), ANSWER_A);
}
