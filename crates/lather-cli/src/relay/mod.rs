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
    /// The server relayed to, as a base URL (`http://host:port` or `https://host:port`);
    /// each request keeps its own path.
    #[arg(long, value_name = "URL", required_unless_present = "replay")]
    to: Option<String>,
    /// CA certificates (PEM) trusted for an `https://` server besides the system's.
    #[arg(long, value_name = "FILE")]
    ca_file: Option<PathBuf>,
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

/// The server requests go to: its scheme and authority (`host:port`).
#[derive(Debug, Clone)]
struct Target {
    scheme: &'static str,
    authority: http::uri::Authority,
}

impl Target {
    /// The URL of `path_and_query` at the target.
    fn url(&self, path_and_query: &str) -> Result<http::Uri, http::uri::InvalidUri> {
        format!("{}://{}{path_and_query}", self.scheme, self.authority).parse()
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}://{}", self.scheme, self.authority)
    }
}

/// The target of a base URL; a URL with a path other than `/`, or neither `http://` nor
/// `https://`, is refused with the reason.
fn base_target(url: &str) -> anyhow::Result<Target> {
    let uri: http::Uri = url
        .parse()
        .map_err(|e| usage(format!("{url:?} is not a URL: {e}")))?;
    let scheme = match uri.scheme_str() {
        Some("http") => "http",
        Some("https") => "https",
        _ => {
            return Err(usage(format!(
                "{url:?}: only http:// and https:// are relayed"
            )));
        }
    };
    if !matches!(uri.path(), "" | "/") || uri.query().is_some() {
        return Err(usage(format!(
            "{url:?}: give the base URL ({scheme}://host:port); each request keeps its own path"
        )));
    }
    let authority = uri
        .authority()
        .cloned()
        .ok_or_else(|| usage(format!("{url:?} names no host")))?;
    Ok(Target { scheme, authority })
}

/// The client both directions of the relay send with: HTTP/1.1, plain or over TLS
/// verified against the system's CAs and `--ca-file`.
type RelayClient = hyper_util::client::legacy::Client<
    hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>,
    http_body_util::Full<bytes::Bytes>,
>;

/// The relay's client, trusting `--ca-file` beside the system's CAs.
fn client(args: &RelayArgs) -> anyhow::Result<RelayClient> {
    let tls = match &args.ca_file {
        Some(path) => lather_client::OutboundTls::with_ca_file(&path.display().to_string())
            .map_err(|e| usage(format!("--ca-file {e}")))?,
        None => lather_client::OutboundTls::system(),
    };
    let mut tcp = hyper_util::client::legacy::connect::HttpConnector::new();
    tcp.enforce_http(false);
    tcp.set_nodelay(true);
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config((*tls.client_config()).clone())
        .https_or_http()
        .enable_http1()
        .wrap_connector(tcp);
    Ok(
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
            .build(connector),
    )
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
