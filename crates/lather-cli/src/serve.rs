//! `lather serve`: run the services until SIGINT or SIGTERM, then shut down gracefully.

use anyhow::Context;
use lather_config::Config;
use std::path::Path;

/// Runs the server of the configuration at `path`; returns after a graceful shutdown.
pub(crate) fn run(path: &Path) -> anyhow::Result<()> {
    let mut config = Config::load(path)?;
    cpu_overrides(&mut config.server)?;
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if config.server.workers > 0 {
        runtime.worker_threads(config.server.workers);
    }
    let runtime = runtime
        .enable_all()
        .build()
        .context("starting the runtime")?;
    runtime.block_on(async {
        let server = lather_http::Server::from_config(&config)
            .await
            .map_err(|e| match e {
                // The message names the file and line, or the NATS URL.
                lather_http::ServeError::Config(_)
                | lather_http::ServeError::NatsUnreachable(_) => anyhow::Error::new(e),
                other => anyhow::Error::new(other)
                    .context(format!("cannot serve on {}", config.server.listen)),
            })?;
        tracing::info!(
            address = %server.local_addr(),
            services = config.services.len(),
            "lather listening on {}://{}",
            server.scheme(),
            server.local_addr()
        );
        server.serve(shutdown_signal()).await?;
        tracing::info!("stopped");
        Ok(())
    })
}

/// Completes on SIGINT (Ctrl-C) or SIGTERM. SIGHUP is logged and ignored (configuration
/// reload is not supported yet): without a handler it would kill the process and drop
/// every request in flight.
pub(crate) async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = match signal(SignalKind::terminate()) {
            Ok(term) => term,
            Err(e) => {
                tracing::warn!(error = %e, "cannot watch SIGTERM; only SIGINT stops the server");
                let _ = interrupt.await;
                return;
            }
        };
        let mut hangup = signal(SignalKind::hangup())
            .inspect_err(|e| tracing::warn!(error = %e, "cannot watch SIGHUP"))
            .ok();
        let mut interrupt = std::pin::pin!(interrupt);
        loop {
            tokio::select! {
                _ = &mut interrupt => {
                    tracing::info!("SIGINT received");
                    return;
                }
                _ = term.recv() => {
                    tracing::info!("SIGTERM received");
                    return;
                }
                got = async {
                    match hangup.as_mut() {
                        Some(h) => h.recv().await,
                        None => std::future::pending().await,
                    }
                } => match got {
                    Some(()) => tracing::info!(
                        "SIGHUP received; configuration reload is not supported yet, ignoring"
                    ),
                    // The signal stream ended: stop watching it (SIGHUP stays ignored).
                    None => hangup = None,
                }
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = interrupt.await;
    }
}

/// Environment variable overriding `[server] cpu_threads` (for benchmark scripts).
pub(crate) const CPU_THREADS_VAR: &str = "LATHER_CPU_THREADS";
/// Environment variable overriding `[server] cpu_inline_micros`.
pub(crate) const CPU_INLINE_VAR: &str = "LATHER_CPU_INLINE_MICROS";

/// Applies [`CPU_THREADS_VAR`] and [`CPU_INLINE_VAR`] when set; a value that is not a
/// number is an error naming the variable.
pub(crate) fn cpu_overrides(server: &mut lather_config::ServerConfig) -> anyhow::Result<()> {
    if let Ok(v) = std::env::var(CPU_THREADS_VAR) {
        server.cpu_threads = v
            .parse()
            .with_context(|| format!("{CPU_THREADS_VAR}={v:?} is not a number of threads"))?;
    }
    if let Ok(v) = std::env::var(CPU_INLINE_VAR) {
        server.cpu_inline_micros = v
            .parse()
            .with_context(|| format!("{CPU_INLINE_VAR}={v:?} is not a number of microseconds"))?;
    }
    Ok(())
}
