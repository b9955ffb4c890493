//! A server process's CPU time (`/proc/PID/stat`) and resident memory
//! (`/proc/PID/status`), as `lather-bench http --server-pid` and
//! `lather-bench abuse` report them.

use std::path::PathBuf;
use std::time::Duration;

/// Why a process's figures could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProcError {
    /// The file could not be read (no such process, or not Linux).
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The `/proc` file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file's text is not what the kernel writes.
    #[error("{}: {what}", path.display())]
    Malformed {
        /// The `/proc` file.
        path: PathBuf,
        /// What is missing or wrong.
        what: &'static str,
    },
}

/// User and system CPU time of a process (all its threads), in clock ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CpuTicks {
    /// `utime`, field 14 of `/proc/PID/stat`.
    pub user: u64,
    /// `stime`, field 15 of `/proc/PID/stat`.
    pub system: u64,
}

/// Parses the text of `/proc/PID/stat`; `None` when it is malformed.
///
/// The second field (the command name, in parentheses) may itself hold
/// spaces and parentheses, so the fields are counted from the *last* `)`.
pub fn parse_stat(text: &str) -> Option<CpuTicks> {
    let after_comm = &text[text.rfind(')')? + 1..];
    // Field 3 (state) is the first one after the command name.
    let mut fields = after_comm.split_whitespace().skip(14 - 3);
    let user = fields.next()?.parse().ok()?;
    let system = fields.next()?.parse().ok()?;
    Some(CpuTicks { user, system })
}

/// Parses `VmRSS` from the text of `/proc/PID/status`, in bytes; `None`
/// when the line is absent (a zombie) or malformed.
pub fn parse_vm_rss(text: &str) -> Option<u64> {
    let line = text.lines().find_map(|l| l.strip_prefix("VmRSS:"))?;
    let mut parts = line.split_whitespace();
    let kib: u64 = parts.next()?.parse().ok()?;
    match parts.next() {
        Some("kB") => kib.checked_mul(1024),
        _ => None,
    }
}

/// The system's clock ticks per second: `getconf CLK_TCK`, else 100 (the
/// value on every common Linux platform), flagged as assumed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockTicks {
    /// Ticks per second.
    pub per_second: u64,
    /// True when `getconf` could not tell and 100 was assumed.
    pub assumed: bool,
}

impl ClockTicks {
    /// Asks `getconf CLK_TCK` once.
    pub fn detect() -> Self {
        let asked = std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .filter(|o| o.status.success())
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|s| s.trim().parse::<u64>().ok())
            .filter(|&n| n > 0);
        match asked {
            Some(per_second) => ClockTicks {
                per_second,
                assumed: false,
            },
            None => ClockTicks {
                per_second: 100,
                assumed: true,
            },
        }
    }

    /// `ticks` as a duration.
    pub fn duration(self, ticks: u64) -> Duration {
        let secs = ticks / self.per_second;
        let rest = ticks % self.per_second;
        Duration::from_secs(secs) + Duration::from_nanos(rest * 1_000_000_000 / self.per_second)
    }
}

/// A process watched through `/proc`.
#[derive(Debug, Clone, Copy)]
pub struct WatchedProcess {
    /// Its process id.
    pub pid: u32,
    /// The clock tick rate its CPU times are counted in.
    pub ticks: ClockTicks,
}

impl WatchedProcess {
    /// Watches `pid`; fails when `/proc/PID/stat` cannot be read now.
    pub fn new(pid: u32) -> Result<Self, ProcError> {
        let watched = WatchedProcess {
            pid,
            ticks: ClockTicks::detect(),
        };
        watched.cpu()?;
        Ok(watched)
    }

    /// The process's CPU time so far (user and system, all threads).
    pub fn cpu(&self) -> Result<CpuTicks, ProcError> {
        let path = PathBuf::from(format!("/proc/{}/stat", self.pid));
        let text = read(&path)?;
        parse_stat(&text).ok_or(ProcError::Malformed {
            path,
            what: "no utime and stime after the command name",
        })
    }

    /// The process's resident set size now, in bytes.
    pub fn rss_bytes(&self) -> Result<u64, ProcError> {
        let path = PathBuf::from(format!("/proc/{}/status", self.pid));
        let text = read(&path)?;
        parse_vm_rss(&text).ok_or(ProcError::Malformed {
            path,
            what: "no VmRSS line in kB",
        })
    }

    /// CPU time used between two readings.
    pub fn used(&self, before: CpuTicks, after: CpuTicks) -> Duration {
        let ticks =
            after.user.saturating_sub(before.user) + after.system.saturating_sub(before.system);
        self.ticks.duration(ticks)
    }
}

fn read(path: &std::path::Path) -> Result<String, ProcError> {
    std::fs::read_to_string(path).map_err(|source| ProcError::Read {
        path: path.to_owned(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "4242 (lather) S 1 4242 4242 0 -1 4194560 1234 0 0 0 \
                        731 152 0 0 20 0 9 0 123456 987654321 2345 \
                        18446744073709551615 1 1 0 0 0 0 0 4096 17664 0 0 0 17 1 0 0 0 0 0\n";

    #[test]
    fn utime_and_stime_are_fields_14_and_15() {
        assert_eq!(
            parse_stat(STAT),
            Some(CpuTicks {
                user: 731,
                system: 152
            })
        );
    }

    #[test]
    fn a_command_name_with_spaces_and_parentheses_is_skipped_whole() {
        let text = STAT.replace("(lather)", "(my (odd) ) name) 1 2 3)");
        assert_eq!(
            parse_stat(&text),
            Some(CpuTicks {
                user: 731,
                system: 152
            })
        );
    }

    #[test]
    fn truncated_or_garbled_stat_is_refused() {
        assert_eq!(parse_stat("4242 (lather) S 1 2 3"), None);
        assert_eq!(
            parse_stat("4242 lather S 1 2 3 4 5 6 7 8 9 10 11 12 13"),
            None
        );
        assert_eq!(parse_stat(&STAT.replace(" 731 ", " x ")), None);
        assert_eq!(parse_stat(""), None);
    }

    #[test]
    fn vm_rss_is_read_in_bytes() {
        let status = "Name:\tlather\nVmPeak:\t  99999 kB\nVmRSS:\t    9012 kB\nThreads:\t9\n";
        assert_eq!(parse_vm_rss(status), Some(9012 * 1024));
        assert_eq!(parse_vm_rss("Name:\tzombie\nState:\tZ (zombie)\n"), None);
        assert_eq!(parse_vm_rss("VmRSS:\t12 MB\n"), None);
    }

    #[test]
    fn ticks_become_durations() {
        let t = ClockTicks {
            per_second: 100,
            assumed: false,
        };
        assert_eq!(t.duration(250), Duration::from_millis(2500));
        assert_eq!(t.duration(0), Duration::ZERO);
    }

    #[test]
    fn this_process_can_be_watched() {
        let me = WatchedProcess::new(std::process::id()).expect("own /proc entry");
        assert!(me.rss_bytes().expect("own VmRSS") > 0);
        assert!(me.ticks.per_second > 0);
    }
}
