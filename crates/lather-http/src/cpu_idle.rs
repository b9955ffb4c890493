//! How much of each CPU's time went idle lately: the share of idle (and I/O wait) time in
//! `/proc/stat` between the last two samples, taken at least [`WINDOW`] apart by whoever
//! asks. Where a roaming connection may go ([`crate::placement::roam_to`]) depends on it:
//! a CPU with idle time can take its clients' connections, one without sheds them to a
//! CPU that has some. The kernel counts in ticks of 10 ms, so a sample covers several.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The shortest time between two samples.
const WINDOW: Duration = Duration::from_millis(100);

/// The CPUs one figure per CPU is kept for (higher ones read as busy).
const CPUS: usize = 1024;

/// Each CPU's (idle, total) ticks, indexed by CPU number.
type Ticks = Vec<(u64, u64)>;

/// Idle shares, per mille, of each CPU over the last complete sample.
struct CpuIdle {
    /// When the last sample was read and the ticks then.
    last: Mutex<Option<(Instant, Ticks)>>,
    /// Per mille idle, per CPU; 0 where unknown.
    permille: Vec<AtomicU32>,
    /// How many samples have been taken.
    samples: AtomicU64,
}

fn shared() -> &'static CpuIdle {
    static SHARED: OnceLock<CpuIdle> = OnceLock::new();
    SHARED.get_or_init(|| CpuIdle {
        last: Mutex::new(None),
        permille: (0..CPUS).map(|_| AtomicU32::new(0)).collect(),
        samples: AtomicU64::new(0),
    })
}

/// The idle shares of some CPUs, and which sample they come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Idle {
    /// Per mille, one per CPU asked about.
    pub(crate) permille: Vec<u32>,
    /// The sample's number, counting from 1 (0: none yet).
    pub(crate) sample: u64,
}

/// The idle share of each CPU of `cpus` lately, per mille (0 where not known: a CPU reads
/// as busy until two samples have been read).
pub(crate) fn idle_permille(cpus: &[usize]) -> Idle {
    let idle = shared();
    if let Ok(mut last) = idle.last.try_lock() {
        let now = Instant::now();
        if last
            .as_ref()
            .is_none_or(|(at, _)| now.duration_since(*at) >= WINDOW)
            && let Ok(text) = std::fs::read_to_string("/proc/stat")
        {
            let ticks = parse(&text);
            if let Some((_, before)) = last.as_ref() {
                for (cpu, share) in shares(before, &ticks).into_iter().enumerate() {
                    if let (Some(slot), Some(share)) = (idle.permille.get(cpu), share) {
                        slot.store(share, Ordering::Relaxed);
                    }
                }
                idle.samples.fetch_add(1, Ordering::Relaxed);
            }
            *last = Some((now, ticks));
        }
    }
    Idle {
        permille: cpus
            .iter()
            .map(|cpu| {
                idle.permille
                    .get(*cpu)
                    .map_or(0, |slot| slot.load(Ordering::Relaxed))
            })
            .collect(),
        sample: idle.samples.load(Ordering::Relaxed),
    }
}

/// Each CPU's (idle + iowait, total) ticks from `/proc/stat`, indexed by CPU number
/// ((0, 0) for a CPU not listed).
fn parse(text: &str) -> Ticks {
    let mut ticks = Vec::new();
    for line in text.lines() {
        // "cpuN …"; not "cpu  …", the line of all CPUs together.
        let Some(rest) = line
            .strip_prefix("cpu")
            .filter(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
        else {
            continue;
        };
        let mut fields = rest.split_ascii_whitespace();
        let Some(Ok(cpu)) = fields.next().map(str::parse::<usize>) else {
            continue;
        };
        if cpu >= CPUS {
            continue;
        }
        // user nice system idle iowait irq softirq steal (guest time is within user)
        let values: Vec<u64> = fields.take(8).filter_map(|f| f.parse().ok()).collect();
        if values.len() < 5 {
            continue;
        }
        let idle = values[3] + values[4];
        let total = values.iter().sum();
        if ticks.len() <= cpu {
            ticks.resize(cpu + 1, (0, 0));
        }
        ticks[cpu] = (idle, total);
    }
    ticks
}

/// Each CPU's idle share of the ticks between `before` and `after`, per mille (`None`
/// where no tick passed).
fn shares(before: &[(u64, u64)], after: &[(u64, u64)]) -> Vec<Option<u32>> {
    after
        .iter()
        .enumerate()
        .map(|(cpu, (idle, total))| {
            let (idle_then, total_then) = before.get(cpu).copied().unwrap_or((0, 0));
            let passed = total.saturating_sub(total_then);
            (passed > 0).then(|| {
                let idle = idle.saturating_sub(idle_then).min(passed);
                u32::try_from(idle * 1000 / passed).unwrap_or(1000)
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const BEFORE: &str = "cpu  100 0 100 800 0 0 0 0 0 0\n\
        cpu0 50 0 50 400 0 0 0 0 0 0\n\
        cpu1 50 0 50 400 0 0 0 0 0 0\n\
        intr 12345 0 0\nctxt 999\n";
    const AFTER: &str = "cpu  300 0 100 1000 0 0 0 0 0 0\n\
        cpu0 250 0 50 400 0 0 0 0 0 0\n\
        cpu1 50 0 50 550 50 0 0 0 0 0\n";

    #[test]
    fn each_cpus_idle_share_comes_from_its_line() {
        let (before, after) = (parse(BEFORE), parse(AFTER));
        assert_eq!(before, vec![(400, 500), (400, 500)]);
        // CPU 0 spent all 200 ticks in user time; CPU 1 all 200 idle or waiting on I/O.
        assert_eq!(shares(&before, &after), vec![Some(0), Some(1000)]);
        assert_eq!(shares(&after, &after), vec![None, None]);
    }

    #[test]
    fn the_machines_cpus_are_read() {
        let cpus = lather_pipeline::affinity::process_cpus();
        let first = idle_permille(cpus);
        assert_eq!(first.permille.len(), cpus.len());
        std::thread::sleep(WINDOW + Duration::from_millis(30));
        let second = idle_permille(cpus);
        assert!(second.sample > first.sample, "{first:?} then {second:?}");
        assert!(second.permille.iter().all(|p| *p <= 1000), "{second:?}");
        let ticks = parse(&std::fs::read_to_string("/proc/stat").unwrap());
        for cpu in cpus {
            assert!(ticks[*cpu].1 > 0, "CPU {cpu} not in /proc/stat");
        }
    }
}
