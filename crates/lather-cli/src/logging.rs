//! Log output on stderr: `--log-level`, else `RUST_LOG`, else `info`; as text (coloured
//! only on a terminal) or JSON lines (`--log-format`, `LATHER_LOG_FORMAT`), timestamps in
//! RFC 3339, UTC.

use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::time::SystemTime;

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub(crate) enum LogFormat {
    /// `2025-05-01T09:30:00.123456Z  INFO target: message key=value …`
    #[default]
    Text,
    /// One JSON object a line: `timestamp`, `level`, `target`, the event's fields (its
    /// message as `message`) at the top level, and the current span if any.
    Json,
}

/// Whether text lines are coloured: stderr is a terminal and `NO_COLOR` is not set.
fn colours() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Installs the global subscriber writing to stderr.
pub(crate) fn init(level: Option<&str>, format: LogFormat) {
    let filter = match level {
        Some(level) => EnvFilter::try_new(level),
        None => EnvFilter::try_from_default_env().or_else(|_| EnvFilter::try_new("info")),
    }
    .unwrap_or_else(|e| {
        eprintln!("warning: bad log filter ({e}); using info");
        EnvFilter::new("info")
    });
    // `SystemTime` writes RFC 3339 in UTC with microseconds: 2025-05-01T09:30:00.123456Z.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_timer(SystemTime);
    match format {
        // Colours only for a person at a terminal: a file or journald gets plain text.
        LogFormat::Text => builder.with_ansi(colours()).init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .init(),
    }
}
