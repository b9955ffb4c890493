//! `lather qos select` and `lather qos list` against a broker and a service run as
//! `lather serve` processes: the service registers its offers with the broker named in
//! `[qos] broker`, the client gets the offer that fits (or an error saying why none does),
//! and `lather check` explains the offers and the broker.

use crate::serving;

use lather_test_util::ScratchDir;
use serving::{Running, free_port, lather, wait_healthy};
use std::process::Stdio;
use std::time::{Duration, Instant};

fn serve(config: &std::path::Path) -> Running {
    Running(
        lather()
            .args(["serve", "--config"])
            .arg(config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start lather"),
    )
}

fn qos(args: &[&str]) -> (bool, String, String) {
    let out = lather()
        .arg("qos")
        .args(args)
        .output()
        .expect("run lather qos");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_client_selects_the_offer_a_served_service_registered() {
    let (broker_port, service_port) = (free_port(), free_port());
    let dir = ScratchDir::new("qosb");
    let store = dir.join("offers.sqlite");
    let broker_config = dir.write(
        "broker.toml",
        format!(
            "[server]\nlisten = \"127.0.0.1:{broker_port}\"\n\
             [[service]]\nname = \"broker\"\npath = \"/qos\"\nbuiltin = \"qos-broker\"\nstore = \"{}\"\n",
            store.display()
        ),
    );
    let url = format!("http://127.0.0.1:{broker_port}/qos");
    let service_config = dir.write(
        "service.toml",
        format!(
            "[server]\nlisten = \"127.0.0.1:{service_port}\"\n\
             [qos]\nbroker = \"{url}\"\nbroker_refresh_s = 1\n\
             [qos.class.gold]\ndscp = 46\npriority = \"high\"\n\
             [[service]]\nname = \"quotes\"\npath = \"/quotes\"\nbuiltin = \"echo\"\n\
             [[service.offer]]\nname = \"gold\"\nresponse_time_ms = 20\nthroughput = 500\nprice = 10\nclass = \"gold\"\n\
             [[service.offer]]\nname = \"bronze\"\nresponse_time_ms = 200\nthroughput = 100\nprice = 1\n\
             [service.offer.adaptive]\n"
        ),
    );
    let check = lather()
        .args(["check", "--config"])
        .arg(&service_config)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&check.stdout);
    assert!(check.status.success(), "{text}");
    for says in [
        "offer gold: 20 ms, 500/s, price 10, class gold (GET /quotes?qos)",
        "adaptive: cpu averaged over 30 s; above 80 the price rises 0.1 (up to 2), below 70 it falls 0.1 (down to 1)",
        &format!("offers registered with the QoS broker {url} at start, every 1 s"),
    ] {
        assert!(text.contains(says), "{says}\n{text}");
    }
    let check = lather()
        .args(["check", "--config"])
        .arg(&broker_config)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&check.stdout);
    assert!(
        text.contains("builtin qos-broker (offers in the SQLite file"),
        "{text}"
    );

    let mut broker = serve(&broker_config);
    wait_healthy(broker_port, &mut broker.0);
    let mut service = serve(&service_config);
    wait_healthy(service_port, &mut service.0);
    let deadline = Instant::now() + Duration::from_secs(15);
    let listed = loop {
        let (ok, out, err) = qos(&["list", "--broker", &url, "--service", "quotes"]);
        assert!(ok, "{err}");
        if out.lines().count() == 2 {
            break out;
        }
        assert!(Instant::now() < deadline, "never registered: {out}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        listed.contains(&format!(
            "quotes gold http://127.0.0.1:{service_port}/quotes response_time_ms=20 throughput=500 price=10 class=gold"
        )),
        "{listed}"
    );
    let (ok, out, err) = qos(&[
        "select",
        "--broker",
        &url,
        "--service",
        "quotes",
        "--max-response-time-ms",
        "50",
    ]);
    assert!(ok, "{err}");
    assert!(out.starts_with("quotes gold "), "{out}");
    let (ok, _, err) = qos(&[
        "select",
        "--broker",
        &url,
        "--service",
        "quotes",
        "--max-price",
        "0.5",
    ]);
    assert!(!ok);
    assert!(
        err.contains("none of the 2 offers for \"quotes\" fits: 2 dearer than asked"),
        "{err}"
    );
    let (ok, _, err) = qos(&[
        "select",
        "--broker",
        &url,
        "--service",
        "quotes",
        "--min-throughput",
        "lots",
    ]);
    assert!(!ok);
    assert!(err.contains("--min-throughput"), "{err}");
    // A stopped service takes its offers with it.
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &service.0.id().to_string()])
        .status();
    let _ = service.0.wait();
    let (ok, out, err) = qos(&["list", "--broker", &url]);
    assert!(ok, "{err}");
    assert_eq!(out, "", "the offers outlived a graceful stop");
    drop(broker);
}
