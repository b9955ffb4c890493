//! `lather worker`: host remote handlers for the services of a configuration, answering
//! through NATS until SIGINT or SIGTERM, then drain.

use crate::exit::Refusal;
use anyhow::Context;
use lather_config::Config;
use lather_remote::Link;
use lather_remote::worker::Hosted;
use std::path::Path;

/// Hosts `handlers` (default: every handler with `placement = "remote"` or `"auto"`) of the
/// configuration at `path`.
pub(crate) fn run(path: &Path, handlers: Option<&str>, concurrency: usize) -> anyhow::Result<()> {
    let config = Config::load(path)?;
    let Some(nats) = &config.nats else {
        return Err(Refusal::Config(format!(
            "{}: a worker needs a [nats] table with the url of the NATS server",
            path.display()
        ))
        .into());
    };
    let names: Vec<String> = match handlers {
        Some(list) => list
            .split(',')
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .map(str::to_owned)
            .collect(),
        None => config
            .handlers
            .iter()
            .filter(|(_, h)| h.placement().uses_workers())
            .map(|(name, _)| name.clone())
            .collect(),
    };
    if names.is_empty() {
        return Err(Refusal::Config(format!(
            "{}: no handler to host: name them with --handlers or set placement = \"remote\" or \"auto\"",
            path.display()
        ))
        .into());
    }
    let mut hosted = Vec::new();
    for name in &names {
        let Some(cfg) = config.handlers.get(name) else {
            let known: Vec<&str> = config.handlers.keys().map(String::as_str).collect();
            return Err(Refusal::Usage(format!(
                "--handlers: {} has no handler named {name:?} (handlers: {})",
                path.display(),
                known.join(", ")
            ))
            .into());
        };
        let (handler, options) = lather_compose::build_handler(name, cfg, &config)?;
        hosted.push(Hosted {
            name: name.clone(),
            handler,
            options,
        });
    }
    // The TLS and authentication files, checked before anything starts.
    lather_remote::connect_options(nats).map_err(|e| config.error_at(e.span(), e.to_string()))?;
    let limits = lather_compose::limits(&config);
    // Per core (the default): the NATS connection, the queue loop and the handlers that
    // wait rather than compute share one thread, so a call wakes no other thread; CPU-bound
    // handlers run on the blocking pool either way. Work stealing: one runtime of a thread
    // per core, as before.
    let mut runtime = match config.server.threading {
        lather_config::Threading::PerCore => tokio::runtime::Builder::new_current_thread(),
        lather_config::Threading::WorkStealing => tokio::runtime::Builder::new_multi_thread(),
    };
    let runtime = runtime
        .enable_all()
        .build()
        .context("starting the runtime")?;
    let nats = nats.clone();
    // The queue loop runs as a task, not as the `block_on` future: a task woken by the
    // NATS connection's task runs right after it, while a woken `block_on` future is
    // polled only after the runtime has looked for I/O once more (an `epoll_wait` on
    // every request's way in).
    let serving = async move {
        let link = Link::new(&nats);
        link.connect().await?;
        tracing::info!(url = %link.url(), handlers = %names.join(","), "lather worker starting");
        // The signals are watched on a task of their own: the queue loop polls its stop
        // future on every request, and polling three signal streams there cost as much
        // as decoding the request frame; a one-shot receiver costs next to nothing.
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            crate::serve::shutdown_signal().await;
            let _ = stop.send(());
        });
        lather_remote::worker::serve_bounded(&link, hosted, limits, concurrency, async {
            let _ = stopped.await;
        })
        .await?;
        tracing::info!("stopped");
        Ok::<(), anyhow::Error>(())
    };
    runtime.block_on(async {
        tokio::spawn(serving)
            .await
            .context("the worker's task ended abnormally")?
    })
}
