//! `lather relay`: a transparent relay that shows each SOAP exchange as it passes
//! (operation, sizes, status, time; the envelopes indented with `--print`) and can record
//! the session to a file; `lather relay --replay FILE URL` sends a recording again — a
//! regression load made of real traffic.

mod forward;
mod pretty;
mod record;
mod replay;

use clap::Args;
use std::net::SocketAddr;
use std::path::PathBuf;

/// `lather relay` arguments.
#[derive(Debug, Args)]
pub(crate) struct RelayArgs {
    /// Where the relay listens (port 0 = any free port; the address is printed).
    #[arg(long, value_name = "ADDR", required_unless_present = "replay")]
    listen: Option<SocketAddr>,
    /// The server relayed to, as a base URL (`http://host:port`); each request keeps its
    /// own path.
    #[arg(long, value_name = "URL", required_unless_present = "replay")]
    to: Option<String>,
    /// Record each exchange to this file (one JSON line each, the request byte for byte).
    #[arg(long, value_name = "FILE")]
    record: Option<PathBuf>,
    /// Show each envelope, indented, beside its line.
    #[arg(long)]
    print: bool,
    /// The largest request or answer body relayed, in bytes (beyond it: 413 / 502).
    #[arg(long, value_name = "BYTES", default_value_t = 4 * 1024 * 1024)]
    max_body_bytes: usize,
    /// How long to wait for the server's answer, in milliseconds (beyond it: 504).
    #[arg(long, value_name = "MS", default_value_t = 30_000)]
    timeout_ms: u64,
    /// Send the exchanges recorded in FILE to URL again, in order, and print each status.
    #[arg(long, value_names = ["FILE", "URL"], num_args = 2, conflicts_with_all = ["listen", "to", "record"])]
    replay: Option<Vec<String>>,
}

/// Runs the relay until SIGINT or SIGTERM, or the replay to its end.
pub(crate) fn run(args: &RelayArgs) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Runtime::new()?;
    match (&args.replay, args.listen, &args.to) {
        (Some(replay), _, _) => {
            let [file, url] = replay.as_slice() else {
                return Err(usage("--replay takes FILE and URL"));
            };
            runtime.block_on(replay::run(std::path::Path::new(file), url, args))
        }
        (None, Some(listen), Some(to)) => runtime.block_on(forward::run(listen, to, args)),
        _ => Err(usage("give --listen ADDR --to URL, or --replay FILE URL")),
    }
}

/// A command-line problem (exit 64).
fn usage(why: impl Into<String>) -> anyhow::Error {
    crate::exit::Refusal::Usage(why.into()).into()
}

/// The authority (`host:port`) of a base URL; a URL with a path other than `/`, or not
/// `http://`, is refused with the reason.
fn base_authority(url: &str) -> anyhow::Result<http::uri::Authority> {
    let uri: http::Uri = url
        .parse()
        .map_err(|e| usage(format!("{url:?} is not a URL: {e}")))?;
    if uri.scheme_str() != Some("http") {
        return Err(usage(format!("{url:?}: only http:// is relayed")));
    }
    if !matches!(uri.path(), "" | "/") || uri.query().is_some() {
        return Err(usage(format!(
            "{url:?}: give the base URL (http://host:port); each request keeps its own path"
        )));
    }
    uri.authority()
        .cloned()
        .ok_or_else(|| usage(format!("{url:?} names no host")))
}

/// Headers that belong to one connection (RFC 9110 §7.6.1), never relayed.
const HOP_BY_HOP: [&str; 8] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "host",
];

/// Whether `name` (lower case) is relayed.
fn relayed(name: &str) -> bool {
    !HOP_BY_HOP.contains(&name)
}
