//! What deploy/ ships holds against this build: the production example passes
//! `lather check`, and every metric the Grafana dashboard queries is one a running
//! `lather serve` (echo, gateway, event source, a handler) exposes at `/metrics`.

use crate::serving;

use lather_test_util::ScratchDir;
use serving::{Running, free_port, http_get, lather, wait_healthy};
use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

fn deploy(file: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../deploy")).join(file)
}

#[test]
fn the_production_example_passes_check_once_its_users_file_exists() {
    let prod = deploy("lather.prod.toml");
    // As shipped, it reads the user table from /etc/lather/users, absent here: check
    // names that file and nothing else.
    let out = lather()
        .args(["check", "--config"])
        .arg(&prod)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !std::path::Path::new("/etc/lather/users").exists() {
        assert!(!out.status.success());
        assert!(
            stderr.contains("handlers.auth.users_file") && stderr.contains("/etc/lather/users"),
            "{stderr}"
        );
    }
    // With /etc/lather/ standing for a directory that holds a user table, it passes.
    let text = std::fs::read_to_string(&prod).unwrap();
    let dir = ScratchDir::new("deploy");
    let users = dir.write("users", "alice:correct horse battery staple\n");
    let etc = format!("{}/", users.parent().unwrap().display());
    let config = dir.write("lather.toml", text.replace("/etc/lather/", &etc));
    let out = lather()
        .args(["check", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for shown in [
        "listen 0.0.0.0:8080, max_message_bytes 1048576",
        "gateway to http://quotes-a.internal:9000/ws, http://quotes-b.internal:9000/ws",
        "wsse-username",
        "at most 50 operation names per service",
    ] {
        assert!(stdout.contains(shown), "no {shown:?} in {stdout}");
    }
}

/// One request on a fresh connection; the whole answer.
fn request(port: u16, head: &str, body: &str) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let text = format!(
        "{head}\r\nHost: 127.0.0.1\r\nContent-Type: text/xml; charset=utf-8\r\nSOAPAction: \"\"\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(text.as_bytes()).unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    answer
}

/// The metric names a scrape shows (each sample's name: `_bucket`, `_total` … included).
fn exposed(scrape: &str) -> BTreeSet<String> {
    scrape
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| l.split(['{', ' ']).next())
        .map(str::to_owned)
        .collect()
}

/// Every `lather_…` name in a PromQL expression.
fn names_in(expr: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = expr;
    while let Some(at) = rest.find("lather_") {
        let name: String = rest[at..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
            .collect();
        rest = &rest[at + name.len()..];
        names.push(name);
    }
    names
}

/// Each query of the dashboard (panel targets and template variables) with where it is.
fn queries(dashboard: &serde_json::Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut panels: Vec<&serde_json::Value> = Vec::new();
    for panel in dashboard["panels"].as_array().unwrap() {
        panels.push(panel);
        panels.extend(panel["panels"].as_array().into_iter().flatten());
    }
    for panel in panels {
        let title = panel["title"].as_str().unwrap_or("?").to_owned();
        if panel["type"] == "row" {
            continue;
        }
        assert_eq!(
            panel["datasource"]["uid"], "${DS_PROMETHEUS}",
            "panel {title}: its datasource must be the variable"
        );
        let targets = panel["targets"].as_array().unwrap();
        assert!(!targets.is_empty(), "panel {title} has no query");
        for target in targets {
            let expr = target["expr"].as_str().unwrap();
            out.push((format!("panel {title:?}"), expr.to_owned()));
        }
    }
    for var in dashboard["templating"]["list"].as_array().unwrap() {
        let query = &var["query"];
        let text = query["query"].as_str().or(query.as_str()).unwrap_or("");
        out.push((format!("variable {}", var["name"]), text.to_owned()));
    }
    out
}

#[test]
fn every_metric_the_dashboard_queries_is_exposed() {
    let text = std::fs::read_to_string(deploy("grafana-lather.json")).unwrap();
    let dashboard: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert!(dashboard["schemaVersion"].as_u64().unwrap() >= 39);
    let vars = dashboard["templating"]["list"].as_array().unwrap();
    assert!(
        vars.iter()
            .any(|v| v["name"] == "DS_PROMETHEUS" && v["type"] == "datasource"),
        "no DS_PROMETHEUS datasource variable"
    );
    let port = free_port();
    let dir = ScratchDir::new("deploy");
    let config = dir.write(
        "scraped.toml",
        format!(
            "[server]\nlisten = \"127.0.0.1:{port}\"\n\n\
             [handlers.mon]\nkind = \"monitor\"\n\n\
             [[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\nrequest = [[\"mon\"]]\n\n\
             [[service]]\nname = \"gw\"\npath = \"/gw\"\nupstream = [\"http://127.0.0.1:{port}/echo\"]\n\n\
             [[service]]\nname = \"events\"\npath = \"/events\"\nbuiltin = \"event-source\"\n"
        ),
    );
    let mut child = Running(
        lather()
            .args(["serve", "--config"])
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_healthy(port, &mut child.0);
    let envelope = r#"<s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body><e:ping xmlns:e="urn:e"/></s:Body></s:Envelope>"#;
    for path in ["/echo", "/gw"] {
        let answer = request(port, &format!("POST {path} HTTP/1.1"), envelope);
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    }
    // A fault, so that the fault series exist.
    let refused = request(port, "PUT /echo HTTP/1.1", "");
    assert!(refused.contains("MethodNotAllowed"), "{refused}");
    let scrape = http_get(port, "/metrics").unwrap();
    let exposed = exposed(&scrape);
    let mut used = BTreeSet::new();
    for (place, expr) in queries(&dashboard) {
        for name in names_in(&expr) {
            assert!(
                exposed.contains(&name),
                "{place} queries {name}, which /metrics does not expose:\n{scrape}"
            );
            used.insert(name);
        }
    }
    // The dashboard covers the families this change added and the request basics.
    for name in [
        "lather_requests_total",
        "lather_faults_total",
        "lather_request_duration_seconds_bucket",
        "lather_in_flight_requests",
        "lather_connections_open",
        "lather_eventing_subscriptions",
        "lather_eventing_sink_queue_max_notifications",
        "lather_build_info",
    ] {
        assert!(used.contains(name), "the dashboard does not show {name}");
    }
}
