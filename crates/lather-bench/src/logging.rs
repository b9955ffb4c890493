//! Log output: `--log-level`, else `RUST_LOG`, else `info`.

use tracing_subscriber::EnvFilter;

/// Installs the global subscriber writing to stderr.
pub(crate) fn init(level: Option<&str>) {
    let filter = match level {
        Some(level) => EnvFilter::try_new(level),
        None => EnvFilter::try_from_default_env().or_else(|_| EnvFilter::try_new("info")),
    }
    .unwrap_or_else(|e| {
        eprintln!("warning: bad log filter ({e}); using info");
        EnvFilter::new("info")
    });
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}
