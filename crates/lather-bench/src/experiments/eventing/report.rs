//! The Markdown tables and SVG charts of `lather-bench eventing`.

use super::EventingArgs;
use super::run::{Load, RunResult};
use super::stats::percentile;
use crate::BenchError;
use crate::experiments::chart::{self, BarGroup, Line};
use crate::experiments::{cores, publish};
use std::fmt::Write as _;
use std::path::Path;

/// Milliseconds from µs, 3 decimals.
fn ms(us: f64) -> String {
    format!("{:.3}", us / 1000.0)
}

/// The 1-minute load average now, for the report.
fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".into())
}

fn header(md: &mut String, title: &str) {
    let _ = writeln!(
        md,
        "#### {title} ({} cores, 1-min load {} at the end)\n",
        cores(),
        load()
    );
}

/// The paper's columns for `runs`.
fn paper_table(md: &mut String, runs: &[RunResult]) {
    let _ = writeln!(
        md,
        "| binding | subs | event | EPE | received / expected | mean publisher (ms) | mean network (ms) | mean client (ms) | throughput (notif/s) | 95% CI of mean total (ms) | tolerance 99%/90% (ms) | p50 / p99 to sink (ms) | failures |\n|---|---:|---|---|---:|---:|---:|---:|---:|---|---:|---|---:|"
    );
    for r in runs {
        let (lo, hi) = r.total.confidence(0.95);
        let _ = writeln!(
            md,
            "| {} | {} | {:?} | {} | {} / {} | {} | {} | {} | {:.0} | {} – {} | {} | {} / {} | {} |",
            r.spec.binding.name(),
            r.spec.subscribers,
            r.spec.shape,
            r.spec.epes(),
            r.received,
            r.expected,
            ms(r.publisher.mean),
            ms((r.to_sink.mean - r.publisher.mean).max(0.0)),
            ms(r.client.mean),
            r.throughput,
            ms(lo),
            ms(hi),
            ms(r.total.tolerance_bound(0.90, 0.99)),
            ms(percentile(&r.to_sink_sorted, 0.50)),
            ms(percentile(&r.to_sink_sorted, 0.99)),
            r.failures + r.dropped,
        );
    }
}

/// The table experiments: one table per group, one chart of the time split and one of the
/// tolerance bounds, into `{name}-tables.md`, `{name}-times.svg` and
/// `{name}-tolerance.svg`.
pub(crate) fn tables(
    out: &Path,
    name: &str,
    args: &EventingArgs,
    groups: &[(String, Vec<RunResult>)],
) -> Result<(), BenchError> {
    let mut md = String::new();
    header(
        &mut md,
        &format!(
            "Eventing — delivery tables, {} events at {} events/s per run",
            args.events, args.rate
        ),
    );
    let _ = writeln!(
        md,
        "Publisher = publish → the notification's bytes ready and handed to its connection (queueing + rendering; `DeliveryProbe`); network = mean(publish → arrival at the sink) − publisher (the write, TCP, and for HTTP the request/answer protocol); client = the sink's consuming time; total = publish → consumed per notification (its 95% CI and its 99%-confidence/90%-coverage one-sided normal tolerance bound). Throughput = notifications received / (first publish → last arrival).\n"
    );
    let mut split = Vec::new();
    let mut bounds = Vec::new();
    for (title, runs) in groups {
        let _ = writeln!(md, "**{title}**\n");
        paper_table(&mut md, runs);
        md.push('\n');
        for r in runs {
            let label = format!(
                "{} {}{}{}",
                r.spec.binding.name(),
                r.spec.subscribers,
                if r.spec.epes() == "none" {
                    String::new()
                } else {
                    format!(" {}", r.spec.epes())
                },
                if matches!(r.spec.shape, super::Shape::Full) {
                    " full"
                } else {
                    ""
                }
            );
            split.push(BarGroup {
                label: label.clone(),
                values: vec![
                    (r.publisher.mean / 1000.0, 0.0),
                    ((r.to_sink.mean - r.publisher.mean).max(0.0) / 1000.0, 0.0),
                    (r.client.mean / 1000.0, 0.0),
                ],
            });
            bounds.push(BarGroup {
                label,
                values: vec![
                    (r.total.mean / 1000.0, r.total.sd / 1000.0),
                    (r.total.tolerance_bound(0.90, 0.99) / 1000.0, 0.0),
                ],
            });
        }
    }
    chart::bars(
        &out.join(format!("{name}-times.svg")),
        "Eventing — mean publisher, network and client time",
        "ms",
        &["publisher", "network", "client"],
        &split,
    )?;
    chart::bars(
        &out.join(format!("{name}-tolerance.svg")),
        "Eventing — total time and its 99%/90% tolerance bound",
        "ms",
        &["mean total (± sd)", "tolerance bound"],
        &bounds,
    )?;
    let _ = writeln!(
        md,
        "![{name}-times](bench/{name}-times.svg)\n\n![{name}-tolerance](bench/{name}-tolerance.svg)\n"
    );
    publish(out, &format!("{name}-tables"), &md)
}

/// The rate sweep: one row per (binding, rate), a chart of p99 against offered rate.
pub(crate) fn sweep(out: &Path, args: &EventingArgs, runs: &[RunResult]) -> Result<(), BenchError> {
    let mut md = String::new();
    header(
        &mut md,
        &format!(
            "Eventing — rate sweep, {} subscribers, changed fields, {} s per point",
            args.subscribers, args.sweep_secs
        ),
    );
    let _ = writeln!(
        md,
        "| binding | offered events/s | offered notif/s | received / expected | delivered notif/s | mean publisher (ms) | publisher CPU per notification (µs) | p50 (ms) | p99 (ms) | max (ms) | dropped+failed |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    let mut lines: Vec<Line> = Vec::new();
    for r in runs {
        let Load::Rate { per_s, .. } = r.spec.load else {
            continue;
        };
        let p99 = percentile(&r.to_sink_sorted, 0.99);
        let _ = writeln!(
            md,
            "| {} | {:.0} | {:.0} | {} / {} | {:.0} | {} | {:.2} | {} | {} | {} | {} |",
            r.spec.binding.name(),
            r.offered,
            per_s * r.spec.subscribers as f64,
            r.received,
            r.expected,
            r.throughput,
            ms(r.publisher.mean),
            r.publisher_cpu_us,
            ms(percentile(&r.to_sink_sorted, 0.50)),
            ms(p99),
            ms(percentile(&r.to_sink_sorted, 1.0)),
            r.dropped + r.failures,
        );
        let name = r.spec.binding.name().to_owned();
        let point = (per_s * r.spec.subscribers as f64, p99 / 1000.0);
        match lines.iter_mut().find(|l| l.name == name) {
            Some(line) => line.points.push(point),
            None => lines.push(Line {
                name,
                points: vec![point],
            }),
        }
    }
    chart::lines(
        &out.join("eventing-sweep.svg"),
        "Eventing — p99 publisher-to-sink latency against offered load",
        "offered notifications/s",
        "p99 (ms)",
        &lines,
        true,
    )?;
    let _ = writeln!(md, "\n![eventing-sweep](bench/eventing-sweep.svg)\n");
    publish(out, "eventing-sweep", &md)
}

/// The max-throughput runs.
pub(crate) fn max(out: &Path, args: &EventingArgs, runs: &[RunResult]) -> Result<(), BenchError> {
    let mut md = String::new();
    header(
        &mut md,
        &format!(
            "Eventing — maximum throughput, {} subscribers, changed fields, {} s of publishing",
            args.subscribers, args.max_secs
        ),
    );
    let _ = writeln!(
        md,
        "| binding | events published | notifications received | notifications/s | publisher CPU per notification (µs) | p50 (ms) | p99 (ms) | dropped+failed |\n|---|---:|---:|---:|---:|---:|---:|---:|"
    );
    for r in runs {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {:.0} | {:.2} | {} | {} | {} |",
            r.spec.binding.name(),
            r.expected / r.spec.subscribers.max(1) as u64,
            r.received,
            r.throughput,
            r.publisher_cpu_us,
            ms(percentile(&r.to_sink_sorted, 0.50)),
            ms(percentile(&r.to_sink_sorted, 0.99)),
            r.dropped + r.failures,
        );
    }
    publish(out, "eventing-max", &md)
}
