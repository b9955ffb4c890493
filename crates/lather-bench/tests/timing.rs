//! `lather-bench timing` (also `lather bench timing` in a `lather` built with the `bench`
//! feature: the same code) as a user runs it: against lather it splits the call into the
//! client's and the server's points (from Server-Timing); against a server that sends no
//! Server-Timing it says so and keeps the client's points; a bad URL is an error naming it.

use std::net::SocketAddr;
use std::process::{Command, Output};

async fn lather(server_timing: &str) -> SocketAddr {
    let text = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\nserver_timing = \"{server_timing}\"\n\n\
         [[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\n"
    );
    let config = lather_config::Config::from_toml(&text, "t.toml").unwrap();
    let server = lather_http::Server::bind(&config).await.unwrap();
    let addr = server.local_addr();
    tokio::spawn(server.serve(std::future::pending::<()>()));
    addr
}

async fn timing(urls: &[String]) -> Output {
    let urls = urls.to_vec();
    tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_lather-bench"))
            .args(["timing", "--requests", "50", "--warmup", "5"])
            .args(&urls)
            .output()
            .expect("run lather-bench")
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_points_come_from_server_timing_where_it_is_sent() {
    let timed = format!("http://{}/echo", lather("on-request").await);
    let untimed = format!("http://{}/echo", lather("off").await);
    let out = timing(&[timed.clone(), untimed.clone()]).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (first, rest) = stdout.split_once(&format!("{untimed} (50 calls")).unwrap();
    assert!(first.contains(&format!("{timed} (50 calls")), "{stdout}");
    for row in [
        "2→3   client marshalling",
        "6→7   server unmarshalling (decode)",
        "8→9   the service",
        "network + HTTP both ways",
        "14→15 client unmarshalling",
        "1→16  round trip",
    ] {
        assert!(
            first.contains(row),
            "no {row:?} for the timed server: {first}"
        );
    }
    assert!(!rest.contains("server unmarshalling"), "{rest}");
    assert!(rest.contains("no Server-Timing"), "{rest}");
    assert!(rest.contains("comparison"), "{rest}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_or_bad_url_is_an_error_naming_it() {
    let out = timing(&["ftp://127.0.0.1/x".to_owned()]).await;
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("ftp://127.0.0.1/x"), "{stderr}");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed = listener.local_addr().unwrap();
    drop(listener);
    let out = timing(&[format!("http://{closed}/echo")]).await;
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("cannot connect"), "{stderr}");
}
