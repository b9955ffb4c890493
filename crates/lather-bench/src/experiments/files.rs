//! A scratch directory for the experiments' request bodies, audit logs and stores.

use crate::BenchError;
use std::path::{Path, PathBuf};

/// A directory removed when dropped.
#[derive(Debug)]
pub(crate) struct Scratch(PathBuf);

impl Scratch {
    /// A fresh directory under the system's temporary directory.
    pub(crate) fn new(name: &str) -> Result<Scratch, BenchError> {
        let dir = std::env::temp_dir().join(format!("lather-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)
            .map_err(|e| BenchError::Experiment(format!("cannot create {}: {e}", dir.display())))?;
        Ok(Scratch(dir))
    }

    /// A path inside the directory.
    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// Writes `bytes` to `name` inside the directory and returns its path.
    pub(crate) fn write(&self, name: &str, bytes: &[u8]) -> Result<PathBuf, BenchError> {
        let path = self.path(name);
        std::fs::write(&path, bytes)
            .map_err(|e| BenchError::Experiment(format!("cannot write {}: {e}", path.display())))?;
        Ok(path)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Makes sure `out` exists.
pub(crate) fn out_dir(out: &Path) -> Result<(), BenchError> {
    std::fs::create_dir_all(out)
        .map_err(|e| BenchError::Experiment(format!("cannot create {}: {e}", out.display())))
}
