//! What code logs through `tracing`, captured as text for a test to read.

use std::sync::{Arc, Mutex};

/// The lines `f` logs at `level` or above, as the `fmt` subscriber writes them without
/// colours (`target: message field=value …`). The subscriber is the thread's default only
/// while `f` runs.
pub fn logged_at(level: tracing::Level, f: impl FnOnce()) -> String {
    let buffer = Lines::default();
    let sink = buffer.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_ansi(false)
        .with_writer(move || sink.clone())
        .finish();
    tracing::subscriber::with_default(subscriber, f);
    let bytes = buffer.0.lock().unwrap_or_else(|e| e.into_inner()).clone();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Collects what the subscriber writes.
#[derive(Debug, Clone, Default)]
struct Lines(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Lines {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
