//! The handler-stage experiments, run against a lather server started in this process:
//! stage layouts (five handlers in six stage configurations; the Distributed Handler
//! Architecture paper's Figure 3), resource + notify (a WSRF resource and an eventing
//! notify, sequential vs parallel; its Table 1), the rate knee (response time against
//! offered rate: sequential, parallel, unregulated; its Figure 10) and the digest bound
//! (what SHA-256 alone allows on these cores, for the comparison with CXF).
//!
//! Each writes a Markdown table (printed and saved) and, where it has one, an SVG chart
//! into `--out`.

mod chart;
mod context_lookup;
mod digest_bound;
mod drive;
mod eventing;
mod files;
mod qos_adaptive;
mod rate_knee;
mod real_set;
mod remote_call;
mod resource_notify;
mod server;
mod stage_layouts;
mod workers;

pub use context_lookup::{ContextLookupArgs, run as context_lookup};
pub use digest_bound::{DigestBoundArgs, run as digest_bound};
pub use eventing::{
    BindingArg, EventingArgs, EventingPart, EventingSinkArgs, Shape as EventShape, run as eventing,
    sink as eventing_sink,
};
pub use qos_adaptive::{QosAdaptiveArgs, run as qos_adaptive};
pub use rate_knee::{Logger, RateKneeArgs, run as rate_knee};
pub use remote_call::{RemoteCallArgs, run as remote_call};
pub use resource_notify::{ResourceNotifyArgs, run as resource_notify};
pub use stage_layouts::{HandlerSet, StageLayoutsArgs, run as stage_layouts};

use crate::{BenchError, LatencySummary};

/// Milliseconds from microseconds.
fn ms(us: f64) -> f64 {
    us / 1000.0
}

/// `mean ± sd` in milliseconds, for tables.
fn mean_sd(l: &LatencySummary) -> String {
    format!("{:.3} ± {:.3}", ms(l.mean), ms(l.stdev))
}

/// The cores this process may use.
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Prints `markdown` and writes it to `out/name.md`.
fn publish(out: &std::path::Path, name: &str, markdown: &str) -> Result<(), BenchError> {
    println!("{markdown}");
    let path = out.join(format!("{name}.md"));
    std::fs::write(&path, markdown)
        .map_err(|e| BenchError::Experiment(format!("cannot write {}: {e}", path.display())))
}
