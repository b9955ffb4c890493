//! The pool CPU-bound handlers run on, apart from the threads that serve sockets.
//!
//! A handler that declares [`Work::Cpu`](crate::Work::Cpu) is moved to a [`CpuPool`], so a
//! long hash or decryption never holds up the I/O reactor: connections keep being accepted
//! and answered while the pool computes. The host gives the engine its pool with
//! [`CpuPool::scope`] around each message; without one the engine uses
//! [`CpuPool::shared`], one thread per core made the first time it is needed.

use std::fmt;
use std::future::Future;
use std::io;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::runtime::{Builder, Handle, Runtime};

/// Calls measured shorter than this on average run inline unless a pool says otherwise.
pub const DEFAULT_INLINE_BELOW: Duration = Duration::from_micros(50);

/// A pool of threads for CPU-bound handlers, with the threshold below which a measured
/// CPU-bound call stays on the message's task (handing it over would cost more than the
/// work). Cheap to clone.
#[derive(Clone)]
pub struct CpuPool {
    inner: Arc<Inner>,
    inline_below: Duration,
}

struct Inner {
    /// The runtime when the pool owns one, started on first use (shut down in the
    /// background when dropped).
    runtime: OnceLock<Runtime>,
    /// A runtime given by the program.
    given: Option<Handle>,
    threads: usize,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            // Dropping a runtime blocks; in an async context it would panic.
            runtime.shutdown_background();
        }
    }
}

tokio::task_local! {
    static CURRENT: CpuPool;
}

impl CpuPool {
    /// A pool of `threads` threads named `lather-cpu` (0: one per core). The threads
    /// start when the first CPU-bound call comes (a service without CPU-bound handlers never
    /// starts them); a runtime that cannot start then is a panic of that call, which the
    /// engine contains as a handler failure.
    pub fn new(threads: usize) -> io::Result<CpuPool> {
        let threads = if threads == 0 {
            std::thread::available_parallelism().map_or(2, |n| n.get())
        } else {
            threads
        };
        Ok(CpuPool {
            inner: Arc::new(Inner {
                runtime: OnceLock::new(),
                given: None,
                threads,
            }),
            inline_below: DEFAULT_INLINE_BELOW,
        })
    }

    /// A pool on a runtime the program already runs (its threads, its size). The runtime
    /// must have its timers enabled (`enable_time`), since handlers' timeouts run there.
    pub fn from_handle(handle: Handle) -> CpuPool {
        let threads = handle.metrics().num_workers();
        CpuPool {
            inner: Arc::new(Inner {
                runtime: OnceLock::new(),
                given: Some(handle),
                threads,
            }),
            inline_below: DEFAULT_INLINE_BELOW,
        }
    }

    /// This pool with another inline threshold (`Duration::ZERO` sends every CPU-bound
    /// call to the pool).
    pub fn inline_below(self, threshold: Duration) -> CpuPool {
        CpuPool {
            inline_below: threshold,
            ..self
        }
    }

    /// The process's default pool: one thread per core, made on first use.
    pub fn shared() -> CpuPool {
        static SHARED: OnceLock<CpuPool> = OnceLock::new();
        SHARED
            .get_or_init(|| {
                CpuPool::new(0).unwrap_or_else(|e| panic!("cannot start the CPU pool: {e}"))
            })
            .clone()
    }

    /// Runs `future` with this pool as the one CPU-bound handlers go to.
    pub fn scope<F: Future>(&self, future: F) -> impl Future<Output = F::Output> + use<F> {
        CURRENT.scope(self.clone(), future)
    }

    /// How many threads the pool has.
    pub fn threads(&self) -> usize {
        self.inner.threads
    }

    /// The threshold below which measured calls run inline.
    pub fn inline_threshold(&self) -> Duration {
        self.inline_below
    }

    /// The pool's runtime handle (to spawn on it); an owned pool's threads start here the
    /// first time.
    pub fn handle(&self) -> &Handle {
        if let Some(given) = &self.inner.given {
            return given;
        }
        let threads = self.inner.threads;
        self.inner
            .runtime
            .get_or_init(|| {
                Builder::new_multi_thread()
                    .worker_threads(threads)
                    .thread_name("lather-cpu")
                    // Made on first use, perhaps from an I/O thread pinned to one CPU.
                    .on_thread_start(crate::affinity::release_current_thread)
                    .enable_time()
                    .build()
                    .unwrap_or_else(|e| {
                        panic!("cannot start the CPU pool ({threads} threads): {e}")
                    })
            })
            .handle()
    }
}

impl fmt::Debug for CpuPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CpuPool")
            .field("threads", &self.inner.threads)
            .field("inline_below", &self.inline_below)
            .finish()
    }
}

/// The pool of the message being processed: the host's, else the shared one.
pub(crate) fn current() -> CpuPool {
    CURRENT
        .try_with(CpuPool::clone)
        .unwrap_or_else(|_| CpuPool::shared())
}

/// Runs a CPU-bound call the way the engine runs a CPU-bound step: on the current pool (so
/// the time it takes includes waiting there for a free thread), unless its calls take on
/// average (`average`, `None` if not measured yet) less than the pool's inline threshold,
/// then inline. A panic in `work` is resumed in the caller, so the engine contains it as a
/// handler panic.
pub async fn run_cpu_bound<F>(average: Option<Duration>, work: F) -> F::Output
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let pool = current();
    if average.is_some_and(|a| a < pool.inline_threshold()) {
        return work.await;
    }
    match pool.handle().spawn(work).await {
        Ok(output) => output,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => panic!("the CPU pool dropped a call: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn thread() -> Option<String> {
        std::thread::current().name().map(str::to_owned)
    }

    #[tokio::test]
    async fn cpu_bound_calls_go_to_the_current_pool_unless_measured_short() {
        let pool = CpuPool::new(1).unwrap();
        let pooled = pool.scope(run_cpu_bound(None, thread())).await;
        assert_eq!(pooled.as_deref(), Some("lather-cpu"), "unmeasured: pooled");
        let slow = Some(Duration::from_millis(5));
        let pooled = pool.scope(run_cpu_bound(slow, thread())).await;
        assert_eq!(pooled.as_deref(), Some("lather-cpu"), "slow: pooled");
        let short = Some(Duration::from_nanos(1));
        let inline = pool.scope(run_cpu_bound(short, thread())).await;
        assert_ne!(inline.as_deref(), Some("lather-cpu"), "short: inline");
        let eager = pool.clone().inline_below(Duration::ZERO);
        let pooled = eager.scope(run_cpu_bound(short, thread())).await;
        assert_eq!(pooled.as_deref(), Some("lather-cpu"), "threshold 0: pooled");
        let panicked = tokio::spawn(pool.scope(run_cpu_bound(None, async { panic!("boom") })))
            .await
            .unwrap_err();
        assert_eq!(
            panicked.into_panic().downcast_ref::<&str>(),
            Some(&"boom"),
            "the panic comes back to the caller"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_injected_runtime_is_used_and_an_owned_pool_drops_in_async_code() {
        let named = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("program-pool")
            .enable_time()
            .build()
            .unwrap();
        let pool = CpuPool::from_handle(named.handle().clone());
        assert_eq!(pool.threads(), 1);
        let ran = pool.scope(run_cpu_bound(None, thread())).await;
        assert_eq!(ran.as_deref(), Some("program-pool"));
        drop(pool);
        named.shutdown_background();
        // An owned pool dropped inside async code shuts down in the background, no panic.
        let owned = CpuPool::new(2).unwrap();
        assert_eq!(owned.threads(), 2);
        drop(owned);
    }
}
