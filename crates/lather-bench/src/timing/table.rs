//! The 16-point table: each span's mean, p50 and p99, and what can be inferred.

use super::Sample;

/// One row: a span's label and its values over the calls, in nanoseconds.
#[derive(Debug, Clone)]
struct Row {
    label: &'static str,
    values: Vec<u64>,
}

impl Row {
    fn mean_us(&self) -> f64 {
        self.values.iter().sum::<u64>() as f64 / self.values.len().max(1) as f64 / 1e3
    }

    fn quantile_us(&self, q: f64) -> f64 {
        let mut sorted = self.values.clone();
        sorted.sort_unstable();
        let Some(last) = sorted.len().checked_sub(1) else {
            return 0.0;
        };
        sorted[((last as f64) * q).round() as usize] as f64 / 1e3
    }
}

/// The table of one URL.
#[derive(Debug, Clone)]
pub(super) struct Summary {
    url: String,
    rows: Vec<Row>,
    /// Whether the server sent `Server-Timing` on every call.
    timed: bool,
}

/// The server's phases that make up the service span (points 8–9).
const SERVICE_PHASES: [&str; 3] = ["request-stages", "call", "response-stages"];

impl Summary {
    /// The spans of `samples` from `url`.
    pub(super) fn of(url: &str, samples: &[Sample]) -> Self {
        let timed = samples.iter().all(|s| s.server_span("total").is_some());
        let client = |f: fn(&[u64; 7]) -> u64| samples.iter().map(|s| f(&s.client)).collect();
        let mut rows = vec![
            Row {
                label: "1→2   call start → message creation starts",
                values: client(|c| c[0]),
            },
            Row {
                label: "2→3   client marshalling",
                values: client(|c| c[1] - c[0]),
            },
            Row {
                label: "3→4   → the transport starts sending",
                values: client(|c| c[2] - c[1]),
            },
            Row {
                label: "4→13  sending, the server, receiving",
                values: client(|c| c[3] - c[2]),
            },
        ];
        if timed {
            let server = |name: &str| -> Vec<u64> {
                samples
                    .iter()
                    .map(|s| s.server_span(name).unwrap_or(0))
                    .collect()
            };
            let service: Vec<u64> = samples
                .iter()
                .map(|s| SERVICE_PHASES.iter().filter_map(|p| s.server_span(p)).sum())
                .collect();
            let network: Vec<u64> = samples
                .iter()
                .map(|s| {
                    (s.client[3] - s.client[2]).saturating_sub(s.server_span("total").unwrap_or(0))
                })
                .collect();
            rows.extend([
                Row {
                    label: "  4→5   the request's head to its body's end (server)",
                    values: server("receive"),
                },
                Row {
                    label: "  5→6   admission queue",
                    values: server("queue"),
                },
                Row {
                    label: "  6→7   server unmarshalling (decode)",
                    values: server("decode"),
                },
                Row {
                    label: "  8→9   the service, handler stages inside",
                    values: service,
                },
                Row {
                    label: "          request stages",
                    values: server("request-stages"),
                },
                Row {
                    label: "          the call",
                    values: server("call"),
                },
                Row {
                    label: "          response stages",
                    values: server("response-stages"),
                },
                Row {
                    label: "  10→12 server marshalling, until sending",
                    values: server("encode"),
                },
                Row {
                    label: "  server total (head arrival → sending)",
                    values: server("total"),
                },
                Row {
                    label: "  network + HTTP both ways (4→13 − server)",
                    values: network,
                },
            ]);
        }
        rows.extend([
            Row {
                label: "13→14 → decoding starts",
                values: client(|c| c[4] - c[3]),
            },
            Row {
                label: "14→15 client unmarshalling",
                values: client(|c| c[5] - c[4]),
            },
            Row {
                label: "15→16 → the call ends",
                values: client(|c| c[6] - c[5]),
            },
            Row {
                label: "1→16  round trip",
                values: client(|c| c[6]),
            },
        ]);
        Summary {
            url: url.to_owned(),
            rows,
            timed,
        }
    }

    fn row(&self, label_start: &str) -> Option<&Row> {
        self.rows
            .iter()
            .find(|r| r.label.trim_start().starts_with(label_start))
    }

    /// Prints the table and the inferences.
    pub(super) fn print(&self) {
        let calls = self.rows.first().map_or(0, |r| r.values.len());
        println!("\n{} ({} calls, µs)", self.url, calls);
        println!("{:<52} {:>9} {:>9} {:>9}", "span", "mean", "p50", "p99");
        for row in &self.rows {
            println!(
                "{:<52} {:>9.1} {:>9.1} {:>9.1}",
                row.label,
                row.mean_us(),
                row.quantile_us(0.5),
                row.quantile_us(0.99)
            );
        }
        let mean = |label: &str| self.row(label).map_or(0.0, Row::mean_us);
        println!(
            "round-trip overhead (this call's round trip, when it is an echo): {:.1} µs",
            mean("1→16")
        );
        if self.timed {
            let marshalling = mean("2→3") + mean("14→15") + mean("6→7") + mean("10→12");
            println!(
                "marshalling, both sides (2→3 + 6→7 + 10→12 + 14→15): {marshalling:.1} µs; network + HTTP: {:.1} µs; the service: {:.1} µs",
                mean("network"),
                mean("8→9")
            );
        } else {
            println!(
                "no Server-Timing: the server and the network are one span (4→13); run a server that sends it on the same path to split them"
            );
        }
    }
}

/// Side by side: each URL's round trip, its wait (4→13), the client's marshalling, and
/// the server's own time where it sent `Server-Timing`.
pub(super) fn print_comparison(summaries: &[Summary]) {
    println!("\ncomparison (means, µs)");
    println!(
        "{:<40} {:>10} {:>10} {:>10} {:>12}",
        "URL", "1→16", "4→13", "2→3+14→15", "server"
    );
    for s in summaries {
        let mean = |label: &str| s.row(label).map_or(0.0, Row::mean_us);
        let server = if s.timed {
            format!("{:.1}", mean("server total"))
        } else {
            "–".to_owned()
        };
        println!(
            "{:<40} {:>10.1} {:>10.1} {:>10.1} {:>12}",
            s.url,
            mean("1→16"),
            mean("4→13"),
            mean("2→3") + mean("14→15"),
            server
        );
    }
    if let Some(timed) = summaries.iter().find(|s| s.timed) {
        let network = timed.row("network").map_or(0.0, Row::mean_us);
        println!(
            "network + HTTP layers at both ends, measured against {}: {network:.1} µs; for a server without Server-Timing, 4→13 less this is its time only as far as its HTTP layer costs what lather's does (to infer the network alone, time the same server locally and remotely: the difference of 4→13 is the network's)",
            timed.url
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(server: bool) -> Sample {
        Sample {
            client: [1_000, 11_000, 12_000, 112_000, 113_000, 133_000, 134_000],
            server: if server {
                vec![
                    ("receive".into(), 5_000),
                    ("decode".into(), 10_000),
                    ("call".into(), 40_000),
                    ("encode".into(), 5_000),
                    ("total".into(), 60_000),
                ]
            } else {
                Vec::new()
            },
        }
    }

    #[test]
    fn spans_come_from_the_points_and_the_network_by_subtraction() {
        let s = Summary::of("http://x/", &[sample(true), sample(true)]);
        let mean = |label: &str| s.row(label).unwrap().mean_us();
        assert_eq!(mean("2→3"), 10.0);
        assert_eq!(mean("4→13"), 100.0);
        assert_eq!(mean("network"), 40.0);
        assert_eq!(mean("8→9"), 40.0);
        assert_eq!(mean("14→15"), 20.0);
        assert_eq!(mean("1→16"), 134.0);
        let untimed = Summary::of("http://y/", &[sample(false)]);
        assert!(!untimed.timed);
        assert!(untimed.row("network").is_none());
    }
}
