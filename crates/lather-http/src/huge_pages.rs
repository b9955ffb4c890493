//! Transparent huge pages, refused for the whole process. The kernel zeroes a 2 MiB page
//! on its first touch while the faulting thread waits: mid-traffic, that held 20 eventing
//! subscribers for tens of milliseconds (p99 10.6–35.9 ms at 300 000 notifications/s,
//! against 2.5–5.0 ms without; `docs/bench/history/2026-11-29-efficiency.md`, section 2).
//! The allocator is built not to ask for them (mimalloc's `no_thp`); this also refuses
//! those a host gives unasked (`/sys/kernel/mm/transparent_hugepage/enabled` set to
//! `always`).

/// Refuses transparent huge pages for every later page fault of this process
/// (`prctl(PR_SET_THP_DISABLE)`, inherited by children). Returns whether the kernel took
/// the request; `false` where it cannot (not Linux, or a kernel older than 3.15).
pub fn refuse() -> bool {
    #[cfg(target_os = "linux")]
    {
        rustix::thread::disable_transparent_huge_pages(true).is_ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}
