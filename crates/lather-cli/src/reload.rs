//! `lather reload`: asks a running `lather serve` to re-read its configuration (SIGHUP to
//! the process named in its `--pid-file`), after checking the file it will read.

use crate::exit::Refusal;
use anyhow::Context;
use lather_config::Config;
use std::path::Path;

/// Checks `config` (when given; every error is reported and nothing is signalled), then
/// sends SIGHUP to the process whose id `pid_file` holds.
pub(crate) fn run(pid_file: &Path, config: Option<&Path>) -> anyhow::Result<()> {
    if let Some(path) = config {
        Config::load(path)?;
    }
    let text = std::fs::read_to_string(pid_file)
        .with_context(|| format!("cannot read the pid file {}", pid_file.display()))?;
    let pid: u32 = text.trim().parse().map_err(|_| {
        Refusal::Usage(format!(
            "{} holds {:?}, not a process id",
            pid_file.display(),
            text.trim()
        ))
    })?;
    if pid <= 1 {
        return Err(Refusal::Usage(format!(
            "{} names process {pid}, which is not lather",
            pid_file.display()
        ))
        .into());
    }
    let status = std::process::Command::new("kill")
        .args(["-HUP", &pid.to_string()])
        .status()
        .context("cannot run kill")?;
    if !status.success() {
        anyhow::bail!("no process {pid} to signal (is lather serve running?)");
    }
    println!(
        "asked lather (pid {pid}) to reload; its log says whether the new configuration was taken"
    );
    Ok(())
}

/// Writes this process's id to `path` and removes the file when dropped.
#[derive(Debug)]
pub(crate) struct PidFile(std::path::PathBuf);

impl PidFile {
    /// Writes the pid file.
    pub(crate) fn write(path: &Path) -> anyhow::Result<PidFile> {
        std::fs::write(path, format!("{}\n", std::process::id()))
            .with_context(|| format!("cannot write the pid file {}", path.display()))?;
        Ok(PidFile(path.to_owned()))
    }
}

impl Drop for PidFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
