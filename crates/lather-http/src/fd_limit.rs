//! The process's file-descriptor limit, read from `/proc/self/limits`, against
//! `max_connections`.

/// Descriptors kept aside for everything but client connections: the listener, the
/// reserve descriptor, stores, logs, upstream and NATS connections.
pub(crate) const HEADROOM: u64 = 64;

/// `max_connections`, lowered (with a warning) when the soft `RLIMIT_NOFILE` cannot hold
/// it plus [`HEADROOM`]. Where the limit cannot be read, `wanted` is kept.
pub(crate) fn fit(wanted: usize) -> usize {
    let Ok(text) = std::fs::read_to_string("/proc/self/limits") else {
        return wanted;
    };
    match soft_nofile(&text).map(|soft| cap_for(wanted, soft)) {
        Some(cap) if cap < wanted => {
            tracing::warn!(
                max_connections = wanted,
                lowered_to = cap,
                "the file descriptor limit (RLIMIT_NOFILE, see `ulimit -n`) cannot hold max_connections; lowering it"
            );
            cap
        }
        _ => wanted,
    }
}

/// The soft limit on open files in the text of `/proc/self/limits`; `None` when it is
/// unlimited or cannot be read.
pub(crate) fn soft_nofile(limits: &str) -> Option<u64> {
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line["Max open files".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The cap that fits under a soft limit of `soft` descriptors (at least 1).
pub(crate) fn cap_for(wanted: usize, soft: u64) -> usize {
    let room = usize::try_from(soft.saturating_sub(HEADROOM)).unwrap_or(usize::MAX);
    wanted.min(room).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: &str = "Limit                     Soft Limit           Hard Limit           Units     \n\
Max cpu time              unlimited            unlimited            seconds   \n\
Max open files            1024                 1048576              files     \n";

    #[test]
    fn the_soft_limit_lowers_the_cap() {
        assert_eq!(soft_nofile(LIMITS), Some(1024));
        assert_eq!(cap_for(10_000, 1024), 960);
        assert_eq!(cap_for(500, 1024), 500);
        assert_eq!(cap_for(10, 3), 1);
        assert_eq!(
            soft_nofile(
                "Max open files            unlimited            unlimited            files\n"
            ),
            None
        );
        assert_eq!(soft_nofile("nothing here"), None);
        assert!(soft_nofile(&std::fs::read_to_string("/proc/self/limits").unwrap()).is_some());
    }
}
