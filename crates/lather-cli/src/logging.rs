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

/// What must live as long as the process logs: the trace exporter, if one runs (dropping
/// it flushes the spans still queued).
#[derive(Debug, Default)]
pub(crate) struct Guard {
    #[cfg(feature = "otel")]
    _exporter: Option<crate::otel::Exporter>,
}

/// Where traces go: `[telemetry]`, and the trust an `https://` collector is verified
/// with (the system's CAs and `[server] outbound_ca_file`).
#[derive(Debug)]
pub(crate) struct TraceExport {
    /// The `[telemetry]` table.
    pub(crate) telemetry: lather_config::TelemetryConfig,
    /// The outbound trust.
    pub(crate) tls: lather_client::OutboundTls,
}

/// Installs the global subscriber writing to stderr and, when `export` is given,
/// exporting lather's spans to its collector.
pub(crate) fn init(level: Option<&str>, format: LogFormat, export: Option<&TraceExport>) -> Guard {
    use tracing_subscriber::Layer;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;

    let filter = match level {
        Some(level) => EnvFilter::try_new(level),
        None => EnvFilter::try_from_default_env().or_else(|_| EnvFilter::try_new("info")),
    }
    .unwrap_or_else(|e| {
        eprintln!("warning: bad log filter ({e}); using info");
        EnvFilter::new("info")
    });
    // The spans made for trace export are not log lines.
    let filter = match format!("{}=off", lather_pipeline::telemetry::TARGET).parse() {
        Ok(directive) => filter.add_directive(directive),
        Err(_) => filter,
    };
    // `SystemTime` writes RFC 3339 in UTC with microseconds: 2025-05-01T09:30:00.123456Z.
    let builder = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_timer(SystemTime);
    let logs = match format {
        // Colours only for a person at a terminal: a file or journald gets plain text.
        LogFormat::Text => builder.with_ansi(colours()).with_filter(filter).boxed(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .with_filter(filter)
            .boxed(),
    };
    let registry = tracing_subscriber::registry().with(logs);
    let Some(TraceExport { telemetry, tls }) = export else {
        registry.init();
        return Guard::default();
    };
    #[cfg(feature = "otel")]
    match crate::otel::layer(telemetry, tls) {
        Ok((traces, exporter)) => {
            registry.with(traces).init();
            tracing::info!(collector = %telemetry.traces_url(), "exporting traces");
            Guard {
                _exporter: Some(exporter),
            }
        }
        Err(e) => {
            registry.init();
            tracing::warn!(error = %e, "traces are not exported: the exporter cannot be built");
            Guard::default()
        }
    }
    #[cfg(not(feature = "otel"))]
    {
        let _ = tls;
        registry.init();
        tracing::warn!(
            collector = %telemetry.otlp_endpoint.get_ref(),
            "[telemetry] is ignored: this lather was built without the otel feature"
        );
        Guard::default()
    }
}

/// The `[telemetry]` table of the configuration at `path` and its outbound trust, read
/// before logging starts so the exporter is part of the subscriber; `None` if there is
/// none or the file does not load (the command then reports why, with logging on). A CA
/// bundle that cannot be used leaves the system's CAs here; the start then stops on it.
pub(crate) fn telemetry_of(path: &std::path::Path) -> Option<TraceExport> {
    let config = lather_config::Config::load(path).ok()?;
    let tls = config
        .server
        .outbound_ca_file
        .as_ref()
        .and_then(|path| lather_client::OutboundTls::with_ca_file(path.get_ref()).ok())
        .unwrap_or_default();
    Some(TraceExport {
        telemetry: config.telemetry?,
        tls,
    })
}
