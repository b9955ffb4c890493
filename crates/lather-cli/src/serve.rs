//! `lather serve`: run the services until SIGINT or SIGTERM, then shut down gracefully;
//! SIGHUP reloads the configuration file.

use crate::exit::Refusal;
use anyhow::Context;
use lather_config::Config;
use std::path::Path;

/// Runs the server of the configuration at `path` (its process id in `pid_file`, if
/// given, while it runs); returns after a graceful shutdown.
pub(crate) fn run(path: &Path, pid_file: Option<&Path>) -> anyhow::Result<()> {
    let mut config = Config::load(path)?;
    cpu_overrides(&mut config.server)?;
    let _pid_file = pid_file.map(crate::reload::PidFile::write).transpose()?;
    let threads = match config.server.workers {
        0 => std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get),
        n => n,
    };
    // Per core: this thread's runtime and `threads - 1` more, one per thread, started by
    // the server; work stealing: one runtime with `threads` workers.
    let (mut runtime, io_threads) = match config.server.threading {
        lather_config::Threading::PerCore => {
            (tokio::runtime::Builder::new_current_thread(), threads)
        }
        lather_config::Threading::WorkStealing => {
            let mut runtime = tokio::runtime::Builder::new_multi_thread();
            runtime.worker_threads(threads);
            (runtime, 1)
        }
    };
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
        let (hangups, hung_up) = tokio::sync::mpsc::unbounded_channel();
        if let Some(reloader) = server.reloader() {
            tokio::spawn(reload_on_hangup(path.to_owned(), reloader, hung_up));
        }
        server
            .io_threads(io_threads)
            .serve(shutdown_signal_then(move || {
                let _ = hangups.send(());
            }))
            .await?;
        tracing::info!("stopped");
        Ok(())
    })
}

/// Reads the configuration at `path` again on each SIGHUP and reloads the server with it;
/// a file that does not validate, or a change only a restart applies, is logged at error
/// and the server goes on as it was.
async fn reload_on_hangup(
    path: std::path::PathBuf,
    reloader: lather_http::Reloader,
    mut hung_up: tokio::sync::mpsc::UnboundedReceiver<()>,
) {
    while hung_up.recv().await.is_some() {
        let config = match Config::load(&path) {
            Ok(config) => config,
            Err(e) => {
                tracing::error!(error = %e, "reload refused: the configuration does not validate; serving the previous one");
                continue;
            }
        };
        match reloader.reload(&config).await {
            Ok(done) => {
                tracing::info!(
                    services = done.services,
                    carried = ?done.carried,
                    "configuration reloaded from {}",
                    path.display()
                );
                if !done.start_only.is_empty() {
                    tracing::warn!(keys = ?done.start_only, "these [server] keys changed but apply only at the next start");
                }
            }
            Err(e) => {
                tracing::error!(error = %e, "reload refused; serving the previous configuration")
            }
        }
    }
}

/// Completes on SIGINT (Ctrl-C) or SIGTERM. SIGHUP is logged and ignored: without a
/// handler it would kill the process and drop every request in flight.
pub(crate) async fn shutdown_signal() {
    shutdown_signal_then(|| {
        tracing::info!("SIGHUP received; this command has no configuration to reload, ignoring");
    })
    .await;
}

/// Completes on SIGINT (Ctrl-C) or SIGTERM; calls `on_hangup` on each SIGHUP.
pub(crate) async fn shutdown_signal_then(on_hangup: impl Fn()) {
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
                    Some(()) => {
                        tracing::info!("SIGHUP received");
                        on_hangup();
                    }
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
/// number is a configuration error naming the variable.
pub(crate) fn cpu_overrides(server: &mut lather_config::ServerConfig) -> anyhow::Result<()> {
    let bad = |v: &str, var: &str, what: &str| {
        Refusal::Config(format!("{var}={v:?} is not a number of {what}"))
    };
    if let Ok(v) = std::env::var(CPU_THREADS_VAR) {
        server.cpu_threads = v.parse().map_err(|_| bad(&v, CPU_THREADS_VAR, "threads"))?;
    }
    if let Ok(v) = std::env::var(CPU_INLINE_VAR) {
        server.cpu_inline_micros = v
            .parse()
            .map_err(|_| bad(&v, CPU_INLINE_VAR, "microseconds"))?;
    }
    Ok(())
}
