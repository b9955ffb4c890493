//! Which CPUs a thread may run on: the process's own set, remembered before any thread is
//! pinned, so threads started later from a pinned thread can be given the whole set back.
//!
//! A thread inherits the CPU set of the thread that starts it. A host that pins its I/O
//! threads to one CPU each ([`pin_current_thread`]) would otherwise pin every thread those
//! start — tokio's blocking pool, the [`CpuPool`](crate::CpuPool) when first used there —
//! to that one CPU too. Pools call [`release_current_thread`] as each of their threads
//! starts.

use std::sync::OnceLock;

/// The process's CPU set when first asked: the CPUs it may use, in ascending order.
static PROCESS: OnceLock<Vec<usize>> = OnceLock::new();

/// The CPUs this process may run on, in ascending order, as read the first time this is
/// called (call it before pinning any thread). Empty where the set cannot be read.
pub fn process_cpus() -> &'static [usize] {
    PROCESS.get_or_init(current_thread_cpus)
}

/// Restricts the calling thread to `cpu`. The process's set is remembered first (see
/// [`process_cpus`]).
pub fn pin_current_thread(cpu: usize) -> std::io::Result<()> {
    let _ = process_cpus();
    rustix::thread::sched_setaffinity(None, &cpu_set(&[cpu])).map_err(std::io::Error::from)
}

/// Gives the calling thread the process's whole CPU set back, when one was remembered: a
/// thread started by a pinned thread is not held to its parent's CPU. Does nothing when no
/// thread was ever pinned.
pub fn release_current_thread() {
    let Some(cpus) = PROCESS.get() else {
        return;
    };
    if cpus.is_empty() {
        return;
    }
    if let Err(e) = rustix::thread::sched_setaffinity(None, &cpu_set(cpus)) {
        tracing::debug!(error = %e, "a thread cannot take back the process's CPU set");
    }
}

/// The set of `cpus`.
fn cpu_set(cpus: &[usize]) -> rustix::thread::CpuSet {
    let mut set = rustix::thread::CpuSet::new();
    for cpu in cpus {
        set.set(*cpu);
    }
    set
}

/// The CPUs the calling thread may run on, in ascending order (empty where unreadable).
pub fn current_thread_cpus() -> Vec<usize> {
    match rustix::thread::sched_getaffinity(None) {
        Ok(set) => (0..rustix::thread::CpuSet::MAX_CPU)
            .filter(|cpu| set.is_set(*cpu))
            .collect(),
        Err(_) => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pinned_thread_runs_on_its_cpu_and_a_released_one_on_the_processs_set() {
        let cpus = process_cpus().to_vec();
        assert!(
            !cpus.is_empty(),
            "the process's CPU set is readable on Linux"
        );
        let last = *cpus.last().unwrap();
        let (pinned, released, child) = std::thread::spawn(move || {
            pin_current_thread(last).unwrap();
            let pinned = current_thread_cpus();
            // A thread started here inherits the pin.
            let child = std::thread::spawn(current_thread_cpus).join().unwrap();
            release_current_thread();
            (pinned, current_thread_cpus(), child)
        })
        .join()
        .unwrap();
        assert_eq!(pinned, vec![last]);
        assert_eq!(child, vec![last]);
        assert_eq!(released, cpus);
    }
}
