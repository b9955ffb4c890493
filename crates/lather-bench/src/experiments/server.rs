//! A lather server started inside the experiment's process, on a runtime of its own.

use crate::BenchError;
use std::net::SocketAddr;
use std::thread::JoinHandle;
use tokio::sync::oneshot;

/// A running server; dropping it shuts the server down and waits for it.
#[derive(Debug)]
pub(crate) struct InProcess {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl InProcess {
    /// Starts a server for the configuration `toml` (its `listen` should be port 0) on a
    /// runtime with `threads` workers, without access log.
    pub(crate) fn start(toml: &str, threads: usize) -> Result<InProcess, BenchError> {
        let mut config = lather_config::Config::from_toml(toml, "experiment")
            .map_err(|e| BenchError::Experiment(format!("experiment configuration: {e}")))?;
        // Off while measuring throughput: a log line per request, written to the
        // experiment's terminal, would cost more than the requests measured.
        config.server.access_log = false;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads.max(1))
            .thread_name("lather-exp-server")
            .enable_all()
            .build()
            .map_err(|e| BenchError::Experiment(format!("server runtime: {e}")))?;
        let server = runtime
            .block_on(lather_http::Server::bind(&config))
            .map_err(|e| BenchError::Experiment(format!("server: {e}")))?;
        let addr = server.local_addr();
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("lather-exp-server".into())
            .spawn(move || {
                let _ = runtime.block_on(server.serve(async {
                    let _ = stopped.await;
                }));
            })
            .map_err(|e| BenchError::Experiment(format!("server thread: {e}")))?;
        Ok(InProcess {
            addr,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// `http://addr{path}`.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

impl Drop for InProcess {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
