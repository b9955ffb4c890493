//! A test's own directory under the system's temporary directory, removed when the test
//! ends, whether it passed or panicked.

use std::ops::Deref;
use std::path::{Path, PathBuf};

/// A fresh, empty directory `lather-{prefix}-…` under [`std::env::temp_dir`], removed with
/// everything in it when dropped (errors ignored; `tempfile`'s [`tempfile::TempDir`]). It
/// dereferences to its [`Path`], so `dir.join("a.toml")` reads as on a path. Keep it alive
/// as long as anything (a child process, a server) uses its files.
#[derive(Debug)]
#[must_use = "the directory is removed when this is dropped"]
pub struct ScratchDir {
    dir: tempfile::TempDir,
}

impl ScratchDir {
    /// Makes a new empty directory named after `prefix` (and a random part); panics if it
    /// cannot be made.
    pub fn new(prefix: &str) -> ScratchDir {
        let dir = tempfile::Builder::new()
            .prefix(&format!("lather-{prefix}-"))
            .tempdir()
            .unwrap_or_else(|e| panic!("cannot make a scratch directory for {prefix}: {e}"));
        ScratchDir { dir }
    }

    /// The directory's path.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes `contents` to the file `name` in the directory and returns the file's path;
    /// panics if it cannot.
    pub fn write(&self, name: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let path = self.path().join(name);
        std::fs::write(&path, contents)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        path
    }
}

impl Deref for ScratchDir {
    type Target = Path;

    fn deref(&self) -> &Path {
        self.path()
    }
}

impl AsRef<Path> for ScratchDir {
    fn as_ref(&self) -> &Path {
        self.path()
    }
}

#[cfg(test)]
mod tests {
    use super::ScratchDir;

    #[test]
    fn each_is_fresh_and_gone_when_dropped() {
        let a = ScratchDir::new("scratch-self-test");
        let b = ScratchDir::new("scratch-self-test");
        assert_ne!(a.path(), b.path());
        assert!(a.is_dir() && std::fs::read_dir(&a).unwrap().next().is_none());
        let file = a.write("sub.txt", "x");
        std::fs::create_dir(a.join("nested")).unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "x");
        let kept = a.path().to_owned();
        drop(a);
        assert!(!kept.exists());
        assert!(b.is_dir());
    }

    #[test]
    fn a_panicking_test_still_removes_it() {
        let made = std::sync::Mutex::new(None);
        let result = std::panic::catch_unwind(|| {
            let dir = ScratchDir::new("scratch-self-test");
            *made.lock().unwrap() = Some(dir.path().to_owned());
            panic!("the test fails");
        });
        assert!(result.is_err());
        let made = made.lock().unwrap().take().unwrap();
        assert!(!made.exists());
    }
}
