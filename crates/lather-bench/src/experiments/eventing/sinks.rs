//! Sink processes: `lather-bench eventing-sink` started from this very binary, their
//! addresses read from their first line, their records from their last; ended by PID when
//! dropped.

use super::BindingArg;
use super::sink::SinkRecord;
use crate::BenchError;
use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdout, Command, Stdio};

/// The sinks of one run.
#[derive(Debug)]
pub(crate) struct Sinks {
    children: Vec<(Child, BufReader<ChildStdout>)>,
    /// Each sink's listening address (`host:port`), in start order.
    pub(crate) addresses: Vec<String>,
}

impl Sinks {
    /// Starts `count` sinks in `binding`, each stopping after `expect` notifications.
    pub(crate) fn start(
        count: usize,
        binding: BindingArg,
        expect: u64,
        auth_key: Option<&str>,
        fetch_refs: bool,
        max_secs: u64,
    ) -> Result<Sinks, BenchError> {
        let exe = std::env::current_exe()
            .map_err(|e| BenchError::Experiment(format!("cannot find this program: {e}")))?;
        let mut sinks = Sinks {
            children: Vec::new(),
            addresses: Vec::new(),
        };
        for _ in 0..count {
            let mut command = Command::new(&exe);
            command
                .args(["--log-level", "warn", "eventing-sink", "--binding"])
                .arg(binding.name())
                .args(["--expect", &expect.to_string()])
                .args(["--max-secs", &max_secs.to_string()]);
            if let Some(key) = auth_key {
                command.args(["--auth-key", key]);
            }
            if fetch_refs {
                command.arg("--fetch-refs");
            }
            let mut child = command
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .map_err(|e| BenchError::Experiment(format!("cannot start a sink: {e}")))?;
            let Some(stdout) = child.stdout.take() else {
                let _ = child.kill();
                let _ = child.wait();
                return Err(BenchError::Experiment("a sink has no stdout".into()));
            };
            let mut reader = BufReader::new(stdout);
            let mut line = String::new();
            let _ = reader.read_line(&mut line);
            sinks.children.push((child, reader));
            let Some(address) = line.trim().strip_prefix("LISTEN ") else {
                return Err(BenchError::Experiment(format!(
                    "a sink did not start: {line:?}"
                )));
            };
            sinks.addresses.push(address.to_owned());
        }
        Ok(sinks)
    }

    /// Tells every sink no more will come (closes their stdin) and collects their records.
    pub(crate) fn finish(mut self) -> Result<Vec<SinkRecord>, BenchError> {
        for (child, _) in &mut self.children {
            drop(child.stdin.take());
        }
        let mut records = Vec::new();
        for (child, reader) in &mut self.children {
            let mut line = String::new();
            let _ = reader.read_line(&mut line);
            let _ = child.wait();
            records.push(serde_json::from_str(line.trim()).map_err(|e| {
                BenchError::Experiment(format!("a sink's record is unreadable ({e}): {line:.200}"))
            })?);
        }
        Ok(records)
    }
}

impl Drop for Sinks {
    fn drop(&mut self) {
        for (child, _) in &mut self.children {
            if let Ok(None) = child.try_wait() {
                let _ = child.kill();
            }
            let _ = child.wait();
        }
    }
}
