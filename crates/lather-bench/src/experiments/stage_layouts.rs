//! Stage layouts: five handlers A–E in six stage configurations (the Distributed Handler
//! Architecture paper's Figure 3, its section 4.1), against one echo service, one client,
//! each request observed `--requests` times.
//!
//! 1. one chain: every handler inline on the message's task, one after another (the
//!    conventional in-memory handler chain);
//! 2. sequential stages (CPU-bound handlers on the CPU pool);
//! 3. A‖C, B‖D, E;  4. A‖B, C‖D, E;  5. A‖B‖C‖D, E;  6. all five in one stage.
//!
//! The ideal of equation 5 for a configuration is the service time plus, per stage, the
//! slowest handler's time; a handler's time is measured as the service with that handler
//! alone minus the bare service.

use super::chart::{self, BarGroup};
use super::drive::sequential;
use super::files::{Scratch, out_dir};
use super::server::InProcess;
use super::workers::Workers;
use super::{cores, mean_sd, ms, publish};
use crate::{BenchError, LatencySummary};
use std::fmt::Write as _;
use std::path::PathBuf;

/// Which handlers play A–E.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum HandlerSet {
    /// The real handlers: decompress, decrypt, audit-file, monitor, logging.
    Real,
    /// I/O-bound stand-ins: `sleep` of 30, 25, 15, 10 and 5 ms.
    Io,
    /// CPU-bound stand-ins: `cpu-burn` of 4, 3, 2, 1.5 and 1 ms.
    Cpu,
}

/// Arguments of `lather-bench stage-layouts`.
#[derive(Debug, Clone, clap::Args)]
pub struct StageLayoutsArgs {
    /// Handler sets to run (repeatable; default all three)
    #[arg(long = "set", value_enum)]
    pub sets: Vec<HandlerSet>,
    /// Requests observed per configuration (spread over the rounds)
    #[arg(long, default_value_t = 100)]
    pub requests: u64,
    /// Rounds: each measures the bare service, each handler alone and every configuration
    /// with its share of `--requests`, so a change in the machine's load (a shared VM)
    /// touches them all alike rather than the ones measured at that moment
    #[arg(long, default_value_t = 5)]
    pub rounds: u64,
    /// Seconds of warm-up load before each measured configuration (first round only)
    #[arg(long, default_value_t = 1.0)]
    pub warmup: f64,
    /// Directory for the tables and charts
    #[arg(long, default_value = "docs/bench")]
    pub out: PathBuf,
    /// Server runtime threads (default: one per core)
    #[arg(long)]
    pub server_threads: Option<usize>,
    /// Run A–E on `lather worker` processes (the `lather` binary next to this one, or
    /// `$LATHER_BIN`) through the NATS server at this URL (the chain, configuration 1,
    /// stays in process as the baseline)
    #[arg(long, value_name = "URL")]
    pub nats: Option<String>,
    /// Worker processes to start with `--nats`
    #[arg(long, default_value_t = 2)]
    pub workers: usize,
    /// Start each worker under this command, split at spaces, e.g. `ip netns exec w` to
    /// put the workers in another network namespace
    #[arg(long, value_name = "COMMAND")]
    pub worker_wrap: Option<String>,
}

/// The six configurations, as stages of the letters a–e.
const CONFIGURATIONS: [(&str, &str); 6] = [
    (
        "1 chain",
        r#"[["a-inline"], ["b-inline"], ["c-inline"], ["d-inline"], ["e-inline"]]"#,
    ),
    ("2 stages", r#"[["a"], ["b"], ["c"], ["d"], ["e"]]"#),
    ("3 A‖C,B‖D,E", r#"[["a", "c"], ["b", "d"], ["e"]]"#),
    ("4 A‖B,C‖D,E", r#"[["a", "b"], ["c", "d"], ["e"]]"#),
    ("5 A‖B‖C‖D,E", r#"[["a", "b", "c", "d"], ["e"]]"#),
    ("6 all in one", r#"[["a", "b", "c", "d", "e"]]"#),
];

/// Stages of each configuration by index of A–E, for the ideal of equation 5.
const STAGES: [&[&[usize]]; 6] = [
    &[&[0], &[1], &[2], &[3], &[4]],
    &[&[0], &[1], &[2], &[3], &[4]],
    &[&[0, 2], &[1, 3], &[4]],
    &[&[0, 1], &[2, 3], &[4]],
    &[&[0, 1, 2, 3], &[4]],
    &[&[0, 1, 2, 3, 4]],
];

const LETTERS: [char; 5] = ['a', 'b', 'c', 'd', 'e'];

/// A handler set made concrete: each handler's TOML body, a description, the request.
pub(crate) struct SetSpec {
    pub(crate) title: &'static str,
    /// Per handler: (description, TOML lines of its table without the header).
    pub(crate) handlers: [(String, String); 5],
    pub(crate) body: PathBuf,
    /// A larger `max_message_bytes` than the default, for large messages.
    pub(crate) max_message_bytes: Option<usize>,
    /// Whether the handlers compute (so the core count bounds a stage) or wait.
    pub(crate) computes: bool,
}

/// Runs the experiment for each chosen set.
pub fn run(args: &StageLayoutsArgs) -> Result<(), BenchError> {
    out_dir(&args.out)?;
    let sets = if args.sets.is_empty() {
        vec![HandlerSet::Real, HandlerSet::Io, HandlerSet::Cpu]
    } else {
        args.sets.clone()
    };
    for set in sets {
        let scratch = Scratch::new("stage-layouts")?;
        let spec = match set {
            HandlerSet::Real => super::real_set::spec(&scratch)?,
            HandlerSet::Io => stand_ins(&scratch, "sleep", "millis", [30, 25, 15, 10, 5], "ms")?,
            HandlerSet::Cpu => stand_ins(
                &scratch,
                "cpu-burn",
                "micros",
                [4000, 3000, 2000, 1500, 1000],
                "µs",
            )?,
        };
        measure(args, set, &spec, &scratch)?;
    }
    Ok(())
}

fn stand_ins(
    scratch: &Scratch,
    kind: &str,
    key: &str,
    costs: [u64; 5],
    unit: &str,
) -> Result<SetSpec, BenchError> {
    let body = crate::request::soap_echo_body(crate::http::SoapVersionArg::V11, 100);
    Ok(SetSpec {
        title: if kind == "sleep" {
            "I/O-bound handlers (sleep)"
        } else {
            "CPU-bound handlers (cpu-burn)"
        },
        handlers: costs.map(|c| {
            (
                format!("{kind} {c} {unit}"),
                format!("kind = \"{kind}\"\n{key} = {c}\n"),
            )
        }),
        body: scratch.write("request.xml", &body)?,
        max_message_bytes: None,
        computes: kind == "cpu-burn",
    })
}

fn config(spec: &SetSpec, nats: Option<&str>) -> String {
    let mut toml = String::from("[server]\nlisten = \"127.0.0.1:0\"\nmax_in_flight = 64\n");
    if let Some(max) = spec.max_message_bytes {
        let _ = writeln!(toml, "max_message_bytes = {max}");
    }
    if let Some(url) = nats {
        let _ = writeln!(toml, "\n[nats]\nurl = \"{url}\"\n");
    }
    let remote = if nats.is_some() {
        "placement = \"remote\"\n"
    } else {
        ""
    };
    // `@SUFFIX@` keeps the two copies of a handler apart where they own a file.
    for (letter, (_, body)) in LETTERS.iter().zip(&spec.handlers) {
        let _ = write!(
            toml,
            "[handlers.{letter}]\n{}{remote}\n[handlers.{letter}-inline]\n{}work = \"io\"\n\n",
            body.replace("@SUFFIX@", ""),
            body.replace("@SUFFIX@", "-inline")
        );
    }
    let mut service = |path: &str, request: Option<&str>| {
        let _ = write!(
            toml,
            "[[service]]\nname = \"{path}\"\npath = \"/{path}\"\nbuiltin = \"echo\"\n"
        );
        if let Some(r) = request {
            let _ = writeln!(toml, "request = {r}");
        }
        toml.push('\n');
    };
    service("bare", None);
    for letter in LETTERS {
        service(
            &format!("only-{letter}"),
            Some(&format!("[[\"{letter}\"]]")),
        );
    }
    for (i, (_, stages)) in CONFIGURATIONS.iter().enumerate() {
        service(&format!("c{}", i + 1), Some(stages));
    }
    toml
}

fn measure(
    args: &StageLayoutsArgs,
    set: HandlerSet,
    spec: &SetSpec,
    scratch: &Scratch,
) -> Result<(), BenchError> {
    let toml = config(spec, args.nats.as_deref());
    let _workers = match &args.nats {
        Some(_) => {
            let path = scratch.write("stage-layouts.toml", toml.as_bytes())?;
            Some(Workers::start(
                &path,
                "a,b,c,d,e",
                args.workers,
                args.worker_wrap.as_deref(),
            )?)
        }
        None => None,
    };
    let server = InProcess::start(&toml, args.server_threads.unwrap_or_else(cores))?;
    let mut paths = vec!["bare".to_owned()];
    paths.extend(LETTERS.iter().map(|l| format!("only-{l}")));
    paths.extend((1..=CONFIGURATIONS.len()).map(|i| format!("c{i}")));
    let rounds = args.rounds.clamp(1, args.requests.max(1));
    let mut measured: Vec<Vec<LatencySummary>> = vec![Vec::new(); paths.len()];
    for round in 0..rounds {
        // The requests split over the rounds, the first rounds taking the remainder.
        let share = args.requests / rounds + u64::from(round < args.requests % rounds);
        let warmup = if round == 0 { args.warmup } else { 0.0 };
        for (path, samples) in paths.iter().zip(&mut measured) {
            eprintln!(
                "stage layouts ({set:?}), round {}/{rounds}: /{path}",
                round + 1
            );
            let url = server.url(&format!("/{path}"));
            samples.push(sequential(&url, &spec.body, share, warmup)?);
        }
    }
    drop(server);
    let mut combined = measured.iter().map(|runs| LatencySummary::combine(runs));
    let bare = combined.next().unwrap_or_default();
    let alone: Vec<LatencySummary> = combined.by_ref().take(LETTERS.len()).collect();
    let configs: Vec<LatencySummary> = combined.collect();

    let service = bare.mean;
    let handler_time: Vec<f64> = alone.iter().map(|l| (l.mean - service).max(0.0)).collect();
    let base = configs[0].mean;
    let mut md = String::new();
    let placement = if args.nats.is_some() {
        format!("-remote-{}w", args.workers)
    } else {
        String::new()
    };
    let name = format!(
        "stage-layouts-{}{placement}",
        format!("{set:?}").to_lowercase()
    );
    let _ = writeln!(
        md,
        "#### Stage layouts — {}{} ({} cores, {} requests per configuration in {rounds} interleaved rounds)\n",
        spec.title,
        if args.nats.is_some() {
            format!(", A–E on {} workers over NATS", args.workers)
        } else {
            String::new()
        },
        cores(),
        args.requests
    );
    let _ = writeln!(
        md,
        "| handler | what | alone (ms) | handler time (ms) |\n|---|---|---:|---:|"
    );
    let _ = writeln!(md, "| — | bare echo service | {} | — |", mean_sd(&bare));
    for (i, letter) in LETTERS.iter().enumerate() {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {:.3} |",
            letter.to_ascii_uppercase(),
            spec.handlers[i].0,
            mean_sd(&alone[i]),
            ms(handler_time[i])
        );
    }
    let _ = writeln!(
        md,
        "\n| configuration | mean ± sd (ms) | p50 (ms) | speedup vs 1 | ideal, eq. 5 (ms) | efficiency | ideal on {} cores (ms) | efficiency vs it |\n|---|---:|---:|---:|---:|---:|---:|---:|",
        cores()
    );
    let mut groups = Vec::new();
    for (i, l) in configs.iter().enumerate() {
        let ideal = service
            + STAGES[i]
                .iter()
                .map(|stage| stage.iter().map(|&h| handler_time[h]).fold(0.0, f64::max))
                .sum::<f64>();
        // The same ideal on a machine with this many cores: a stage's handlers cannot
        // finish before their summed work is spread over every core.
        let cores_f = cores() as f64;
        let core_bound = service
            + STAGES[i]
                .iter()
                .map(|stage| {
                    let times = stage.iter().map(|&h| handler_time[h]);
                    let slowest = times.clone().fold(0.0, f64::max);
                    slowest.max(times.sum::<f64>() / cores_f)
                })
                .sum::<f64>();
        let bounded = if spec.computes {
            format!(
                "{:.3} | {:.0}%",
                ms(core_bound),
                100.0 * core_bound / l.mean
            )
        } else {
            "— | —".to_owned()
        };
        let _ = writeln!(
            md,
            "| {} | {} | {:.3} | {:.2}× | {:.3} | {:.0}% | {bounded} |",
            CONFIGURATIONS[i].0,
            mean_sd(l),
            ms(l.p50 as f64),
            base / l.mean,
            ms(ideal),
            100.0 * ideal / l.mean,
        );
        groups.push(BarGroup {
            label: CONFIGURATIONS[i].0.to_owned(),
            values: vec![(ms(l.mean), ms(l.stdev)), (ms(ideal), 0.0)],
        });
    }
    chart::bars(
        &args.out.join(format!("{name}.svg")),
        &format!("Stage layouts — {}", spec.title),
        "response time (ms)",
        &["measured (mean ± sd)", "ideal (eq. 5)"],
        &groups,
    )?;
    let _ = writeln!(md, "\n![{name}](bench/{name}.svg)\n");
    publish(&args.out, &name, &md)
}
