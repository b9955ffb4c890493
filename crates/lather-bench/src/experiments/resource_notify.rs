//! Resource + notify (the Distributed Handler Architecture paper's Table 1): a stateful
//! WSRF resource update and an eventing-style notification on each message, run as two
//! sequential stages and as one parallel stage.
//!
//! The message updates a sensor resource (`wsrf-resource`, kept in a redb file) and
//! announces itself to a sink (`notify`, an HTTP POST to a second lather server). Each
//! handler's time is measured as the service with that handler alone minus the bare
//! service.

use super::chart::{self, BarGroup};
use super::drive::sequential;
use super::files::{Scratch, out_dir};
use super::server::InProcess;
use super::{cores, mean_sd, ms, publish};
use crate::{BenchError, LatencySummary};
use std::fmt::Write as _;
use std::path::PathBuf;

/// Arguments of `lather-bench resource-notify`.
#[derive(Debug, Clone, clap::Args)]
pub struct ResourceNotifyArgs {
    /// Requests observed per configuration
    #[arg(long, default_value_t = 100)]
    pub requests: u64,
    /// Seconds of warm-up load before each measured configuration
    #[arg(long, default_value_t = 1.0)]
    pub warmup: f64,
    /// Directory for the table and chart
    #[arg(long, default_value = "docs/bench")]
    pub out: PathBuf,
    /// Think time of the notification sink in milliseconds (0 = none): a subscriber
    /// farther away than loopback
    #[arg(long, default_value_t = 0)]
    pub sink_delay_ms: u64,
}

const REQUEST: &str = r#"<?xml version="1.0" encoding="UTF-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Header><wsrf:ResourceId xmlns:wsrf="urn:lather:wsrf">sensor-california-1</wsrf:ResourceId></soap:Header><soap:Body><s:Reading xmlns:s="urn:lather:sensor"><s:topic>/sensor/california</s:topic><s:value>42.5</s:value><s:unit>celsius</s:unit></s:Reading></soap:Body></soap:Envelope>"#;

/// Runs the experiment.
pub fn run(args: &ResourceNotifyArgs) -> Result<(), BenchError> {
    out_dir(&args.out)?;
    let scratch = Scratch::new("resource-notify")?;
    let body = scratch.write("request.xml", REQUEST.as_bytes())?;
    let sink_handlers = if args.sink_delay_ms > 0 {
        format!(
            "[handlers.think]\nkind = \"sleep\"\nmillis = {}\n",
            args.sink_delay_ms
        )
    } else {
        String::new()
    };
    let sink_flow = if args.sink_delay_ms > 0 {
        "request = [[\"think\"]]\n"
    } else {
        ""
    };
    let sink = InProcess::start(
        &format!(
            "[server]\nlisten = \"127.0.0.1:0\"\n{sink_handlers}[[service]]\nname = \"sink\"\npath = \"/sink\"\nbuiltin = \"echo\"\n{sink_flow}"
        ),
        1,
    )?;
    let store = scratch.path("resources.redb");
    let toml = format!(
        r#"[server]
listen = "127.0.0.1:0"
max_in_flight = 64

[handlers.wsrf]
kind = "wsrf-resource"
path = "{}"

[handlers.notify]
kind = "notify"
sink = "{}"

[[service]]
name = "bare"
path = "/bare"
builtin = "echo"

[[service]]
name = "wsrf"
path = "/wsrf"
builtin = "echo"
request = [["wsrf"]]

[[service]]
name = "notify"
path = "/notify"
builtin = "echo"
request = [["notify"]]

[[service]]
name = "sequential"
path = "/sequential"
builtin = "echo"
request = [["wsrf"], ["notify"]]

[[service]]
name = "parallel"
path = "/parallel"
builtin = "echo"
request = [["wsrf", "notify"]]
"#,
        store.display(),
        sink.url("/sink")
    );
    let server = InProcess::start(&toml, cores())?;
    let run = |path: &str| -> Result<LatencySummary, BenchError> {
        eprintln!("table 1: /{path}");
        sequential(
            &server.url(&format!("/{path}")),
            &body,
            args.requests,
            args.warmup,
        )
    };
    let bare = run("bare")?;
    let wsrf = run("wsrf")?;
    let notify = run("notify")?;
    let seq = run("sequential")?;
    let par = run("parallel")?;
    drop(server);
    drop(sink);

    let w = (wsrf.mean - bare.mean).max(0.0);
    let n = (notify.mean - bare.mean).max(0.0);
    let mut md = String::new();
    let _ = writeln!(
        md,
        "#### Resource + notify — wsrf-resource and notify ({} cores, {} requests each)\n",
        cores(),
        args.requests
    );
    let _ = writeln!(
        md,
        "| | WSRF alone | notify alone | total: sequential stages | total: one parallel stage | bare service |\n|---|---:|---:|---:|---:|---:|"
    );
    let _ = writeln!(
        md,
        "| response time, mean ± sd (ms) | {} | {} | {} | {} | {} |",
        mean_sd(&wsrf),
        mean_sd(&notify),
        mean_sd(&seq),
        mean_sd(&par),
        mean_sd(&bare)
    );
    let _ = writeln!(
        md,
        "| handler time (alone − bare, ms) | {:.3} | {:.3} | | | |",
        ms(w),
        ms(n)
    );
    let _ = writeln!(
        md,
        "\nParallel vs sequential: {:.1}% less time per request (ideal, eq. 5: {:.1}%).\n",
        100.0 * (seq.mean - par.mean) / seq.mean,
        100.0 * w.min(n) / (bare.mean + w + n)
    );
    chart::bars(
        &args.out.join("resource-notify.svg"),
        "Resource + notify — WSRF + notify per request",
        "response time (ms)",
        &["mean ± sd"],
        &[
            ("bare", &bare),
            ("WSRF alone", &wsrf),
            ("notify alone", &notify),
            ("sequential", &seq),
            ("parallel", &par),
        ]
        .map(|(label, l)| BarGroup {
            label: label.to_owned(),
            values: vec![(ms(l.mean), ms(l.stdev))],
        }),
    )?;
    let _ = writeln!(md, "![resource-notify](bench/resource-notify.svg)\n");
    publish(&args.out, "resource-notify", &md)
}
