//! Bytes read and written on message-stream connections, for `/metrics`.

use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes read and written, summed over connections.
#[derive(Debug, Default)]
pub(crate) struct ByteCounts {
    pub(crate) read: AtomicU64,
    pub(crate) written: AtomicU64,
}

impl crate::watched::Traffic for ByteCounts {
    fn read(&self, bytes: &[u8]) {
        self.read.fetch_add(bytes.len() as u64, Ordering::Relaxed);
    }

    fn written(&self, n: usize) {
        self.written.fetch_add(n as u64, Ordering::Relaxed);
    }
}
