//! The pool CPU-bound handlers run on, apart from the threads that serve sockets.
//!
//! A handler that declares [`Work::Cpu`](crate::Work::Cpu) is moved to this pool, so a
//! long hash or decryption never holds up the I/O reactor: connections keep being accepted
//! and answered while the pool computes. The pool is a multi-threaded tokio runtime with one
//! thread per core (or `LATHER_CPU_THREADS`), made the first time it is needed and kept for
//! the life of the process.

use std::sync::OnceLock;
use tokio::runtime::{Builder, Handle, Runtime};

/// Environment variable that sets the pool's thread count.
pub const CPU_THREADS_VAR: &str = "LATHER_CPU_THREADS";

static POOL: OnceLock<Runtime> = OnceLock::new();

/// The pool's handle; the pool is started on first use.
pub(crate) fn handle() -> &'static Handle {
    POOL.get_or_init(|| {
        let threads = std::env::var(CPU_THREADS_VAR)
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .filter(|&n| n > 0)
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()));
        Builder::new_multi_thread()
            .worker_threads(threads)
            .thread_name("lather-cpu")
            .enable_time()
            .build()
            .unwrap_or_else(|e| panic!("cannot start the CPU pool ({threads} threads): {e}"))
    })
    .handle()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_pool_runs_work_on_its_own_named_threads() {
        let name =
            super::handle().block_on(async { std::thread::current().name().map(str::to_owned) });
        // block_on runs on the calling thread; spawned tasks run on the pool's threads.
        assert_ne!(name.as_deref(), Some("lather-cpu"));
        let spawned =
            super::handle().spawn(async { std::thread::current().name().map(str::to_owned) });
        let name = super::handle().block_on(spawned).unwrap();
        assert_eq!(name.as_deref(), Some("lather-cpu"));
    }
}
