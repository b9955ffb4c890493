//! The pool CPU-bound handlers run on, apart from the threads that serve sockets.
//!
//! A handler that declares [`Work::Cpu`](crate::Work::Cpu) is moved to this pool, so a
//! long hash or decryption never holds up the I/O reactor: connections keep being accepted
//! and answered while the pool computes. The pool is a multi-threaded tokio runtime with one
//! thread per core (or `LATHER_CPU_THREADS`), made the first time it is needed and kept for
//! the life of the process.

use std::future::Future;
use std::sync::OnceLock;
use std::time::Duration;
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

/// Runs a CPU-bound call the way the engine runs a CPU-bound step: on the CPU pool (so the
/// time it takes includes waiting there for a free thread), unless its calls take on
/// average (`average`, `None` if not measured yet) less than the hand-off to the pool and
/// back ([`CPU_INLINE_VAR`](crate::CPU_INLINE_VAR)), then inline. A panic in `work` is
/// resumed in the caller, so the engine contains it as a handler panic.
pub async fn run_cpu_bound<F>(average: Option<Duration>, work: F) -> F::Output
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    if average.is_some_and(|a| a < crate::cost::inline_below()) {
        return work.await;
    }
    match handle().spawn(work).await {
        Ok(output) => output,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => panic!("the CPU pool dropped a call: {e}"),
    }
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

    #[tokio::test]
    async fn cpu_bound_calls_go_to_the_pool_unless_measured_short() {
        use std::time::Duration;
        let thread = || async { std::thread::current().name().map(str::to_owned) };
        let pooled = super::run_cpu_bound(None, thread()).await;
        assert_eq!(pooled.as_deref(), Some("lather-cpu"), "unmeasured: pooled");
        let slow = Some(Duration::from_millis(5));
        let pooled = super::run_cpu_bound(slow, thread()).await;
        assert_eq!(pooled.as_deref(), Some("lather-cpu"), "slow: pooled");
        let short = Some(Duration::from_nanos(1));
        let inline = super::run_cpu_bound(short, thread()).await;
        assert_ne!(inline.as_deref(), Some("lather-cpu"), "short: inline");
        let panicked = tokio::spawn(super::run_cpu_bound(None, async { panic!("boom") }))
            .await
            .unwrap_err();
        assert_eq!(
            panicked.into_panic().downcast_ref::<&str>(),
            Some(&"boom"),
            "the panic comes back to the caller"
        );
    }
}
