//! What the remote-stage tests share: a handler's own figures, waiting for a worker to
//! serve a handler, and `lather check`.

#![allow(dead_code, reason = "each test file uses its own part of the harness")]

use bytes::Bytes;
use lather_config::Config;
use lather_pipeline::Step;
use lather_remote::Link;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// A handler's own figure by name (from `Handler::observations`, as `/metrics` reads it).
pub(crate) fn figure(step: &Step, name: &str) -> u64 {
    step.observations()
        .into_iter()
        .find(|o| o.name == name)
        .map_or_else(|| panic!("no figure {name}"), |o| o.value)
}

/// Waits, `within` at most, until a worker answers on handler `name`'s subject (a probe
/// frame it refuses).
pub(crate) async fn wait_for_worker(config: &Config, name: &str, within: Duration) {
    let link = Link::new(config.nats.as_ref().unwrap());
    link.connect().await.unwrap();
    let client = link.client().unwrap();
    let deadline = Instant::now() + within;
    loop {
        let probe = client.request(link.subject(name), Bytes::from_static(b"probe"));
        if let Ok(Ok(_)) = tokio::time::timeout(Duration::from_millis(500), probe).await {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "no worker answered for {name} within {within:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `lather check --config path`.
pub(crate) fn check(path: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lather"))
        .args(["check", "--config"])
        .arg(path)
        .output()
        .unwrap()
}
