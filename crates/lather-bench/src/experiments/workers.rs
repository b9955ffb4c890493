//! `lather worker` processes for the remote variants of the experiments: started from the
//! `lather` binary (see [`lather_binary`]), stopped (and reaped) by their PIDs when dropped.

use crate::BenchError;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// Worker processes serving one configuration.
#[derive(Debug)]
pub(crate) struct Workers(Vec<Child>);

impl Workers {
    /// Starts `count` workers for the configuration at `config`, hosting `handlers`
    /// (comma-separated names, as `lather worker --handlers` takes them), each under
    /// `wrap` when given: a command, split at spaces, that runs the worker's command line
    /// (e.g. `ip netns exec w`, which execs it, so the PID stays the worker's).
    pub(crate) fn start(
        config: &Path,
        handlers: &str,
        count: usize,
        wrap: Option<&str>,
    ) -> Result<Workers, BenchError> {
        let exe = lather_binary()?;
        let mut children = Vec::new();
        for _ in 0..count {
            let mut command = match wrap.map(|w| w.split_whitespace().collect::<Vec<_>>()) {
                Some(words) if !words.is_empty() => {
                    let mut c = Command::new(words[0]);
                    c.args(&words[1..]).arg(&exe);
                    c
                }
                _ => Command::new(&exe),
            };
            let child = command
                .args(["--log-level", "warn", "worker", "--config"])
                .arg(config)
                .args(["--handlers", handlers])
                .stdin(Stdio::null())
                .spawn()
                .map_err(|e| BenchError::Experiment(format!("cannot start a worker: {e}")))?;
            children.push(child);
        }
        // A worker subscribes within milliseconds of connecting; give them that.
        std::thread::sleep(std::time::Duration::from_millis(500));
        let mut workers = Workers(children);
        for child in &mut workers.0 {
            if let Ok(Some(status)) = child.try_wait() {
                return Err(BenchError::Experiment(format!(
                    "a worker exited at once ({status}); is NATS reachable?"
                )));
            }
        }
        Ok(workers)
    }
}

/// The `lather` server binary: `$LATHER_BIN` when set, else `lather` next to this program
/// (both are built into the same `target/<profile>/` directory).
fn lather_binary() -> Result<PathBuf, BenchError> {
    if let Some(path) = std::env::var_os("LATHER_BIN") {
        return Ok(PathBuf::from(path));
    }
    let this = std::env::current_exe()
        .map_err(|e| BenchError::Experiment(format!("cannot find this program: {e}")))?;
    let lather = this.with_file_name("lather");
    if lather.is_file() {
        Ok(lather)
    } else {
        Err(BenchError::Experiment(format!(
            "no `lather` binary at {} (build it with `cargo build --release -p lather-cli`, \
             or name it in LATHER_BIN)",
            lather.display()
        )))
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
