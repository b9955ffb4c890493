//! `lather serve`: run the services until SIGINT or SIGTERM, then shut down gracefully.

use anyhow::Context;
use lather_config::Config;
use std::path::Path;

/// Runs the server of the configuration at `path`; returns after a graceful shutdown.
pub(crate) fn run(path: &Path) -> anyhow::Result<()> {
    let config = Config::load(path)?;
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if config.server.workers > 0 {
        runtime.worker_threads(config.server.workers);
    }
    let runtime = runtime
        .enable_all()
        .build()
        .context("starting the runtime")?;
    runtime.block_on(async {
        let server = lather_http::Server::bind(&config).await.map_err(|e| {
            if e.kind() == std::io::ErrorKind::ConnectionRefused {
                // NATS unreachable: the error names its URL.
                anyhow::Error::new(e)
            } else {
                anyhow::Error::new(e).context(format!("cannot listen on {}", config.server.listen))
            }
        })?;
        tracing::info!(
            address = %server.local_addr(),
            services = config.services.len(),
            "lather listening on http://{}",
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
