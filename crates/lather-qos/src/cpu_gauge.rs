//! lather's CPU load, as the compression decision reads it: the process's CPU time over
//! the last second as a share of the CPUs it may use (the cgroup's quota, else the online
//! cores), sampled in the background every [`SAMPLE_EVERY`], read with one atomic load.

use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

/// How often the sampler reads the process's CPU time.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(200);
/// The window the share is measured over.
pub const WINDOW: Duration = Duration::from_secs(1);

/// The current CPU share, in percent of the CPUs lather may use.
#[derive(Debug, Default)]
pub struct CpuGauge {
    percent: AtomicU32,
}

impl CpuGauge {
    /// A gauge kept up to date by a background thread (ended when the gauge is dropped).
    /// Where `/proc/self/stat` cannot be read the gauge stays at 0.
    pub fn start() -> Arc<CpuGauge> {
        let gauge = Arc::new(CpuGauge::default());
        let weak = Arc::downgrade(&gauge);
        let spawned = std::thread::Builder::new()
            .name("lather-cpu-gauge".into())
            .spawn(move || sample(&weak, cpus_allowed(Path::new("/sys/fs/cgroup"))));
        if let Err(e) = spawned {
            tracing::warn!("the CPU gauge cannot sample: {e}");
        }
        gauge
    }

    /// A gauge nobody samples: it says what [`CpuGauge::set`] last said (for embedding
    /// applications with their own load signal, and for tests).
    pub fn manual(percent: u32) -> Arc<CpuGauge> {
        let gauge = Arc::new(CpuGauge::default());
        gauge.set(percent);
        gauge
    }

    /// Sets the reading.
    pub fn set(&self, percent: u32) {
        self.percent.store(percent, Ordering::Relaxed);
    }

    /// The reading: lather's CPU share over the last second, in percent (may pass 100
    /// briefly when the quota is exceeded).
    pub fn percent(&self) -> u32 {
        self.percent.load(Ordering::Relaxed)
    }
}

/// Samples until the gauge is gone.
fn sample(gauge: &Weak<CpuGauge>, cpus: f64) {
    let ticks_per_s = ticks_per_second();
    let mut samples: std::collections::VecDeque<(Instant, u64)> = Default::default();
    loop {
        let Some(gauge) = gauge.upgrade() else {
            return;
        };
        let Some(ticks) = process_ticks() else {
            return;
        };
        let now = Instant::now();
        samples.push_back((now, ticks));
        while samples
            .front()
            .is_some_and(|(at, _)| now.duration_since(*at) > WINDOW + SAMPLE_EVERY / 2)
        {
            samples.pop_front();
        }
        if let Some(&(then, before)) = samples.front() {
            let elapsed = now.duration_since(then).as_secs_f64();
            if elapsed > 0.0 {
                let used = ticks.saturating_sub(before) as f64 / ticks_per_s;
                gauge.set(share(used, elapsed, cpus));
            }
        }
        drop(gauge);
        std::thread::sleep(SAMPLE_EVERY);
    }
}

/// `used` CPU seconds in `elapsed` seconds on `cpus` CPUs, in whole percent.
fn share(used: f64, elapsed: f64, cpus: f64) -> u32 {
    let percent = (used / (elapsed * cpus.max(0.01)) * 100.0).round();
    if percent.is_finite() && percent > 0.0 {
        percent.min(f64::from(u32::MAX)) as u32
    } else {
        0
    }
}

/// The process's user + system CPU time so far, in clock ticks.
fn process_ticks() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may hold spaces) start after the last ')'.
    let rest = &stat[stat.rfind(')')? + 2..];
    let mut fields = rest.split_whitespace();
    let utime: u64 = fields.nth(11)?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

/// Clock ticks per second (`USER_HZ`); 100 on every Linux lather runs on.
fn ticks_per_second() -> f64 {
    100.0
}

/// The CPUs this process may use: the cgroup v2 quota (`cpu.max` under `cgroup`) when one
/// is set, else the online cores.
fn cpus_allowed(cgroup: &Path) -> f64 {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get) as f64;
    std::fs::read_to_string(cgroup.join("cpu.max"))
        .ok()
        .and_then(|text| quota(&text))
        .map_or(cores, |q| q.min(cores))
}

/// The CPUs a cgroup v2 `cpu.max` line (`"QUOTA PERIOD"` or `"max PERIOD"`) allows.
fn quota(text: &str) -> Option<f64> {
    let mut fields = text.split_whitespace();
    let quota: f64 = fields.next()?.parse().ok()?;
    let period: f64 = fields.next()?.parse().ok()?;
    (period > 0.0 && quota > 0.0).then(|| quota / period)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_share_is_cpu_time_over_wall_time_and_allowed_cpus() {
        assert_eq!(share(1.0, 1.0, 2.0), 50);
        assert_eq!(share(1.6, 1.0, 2.0), 80);
        assert_eq!(share(0.5, 1.0, 0.5), 100);
        assert_eq!(share(0.0, 1.0, 2.0), 0);
        assert_eq!(quota("150000 100000\n"), Some(1.5));
        assert_eq!(quota("max 100000\n"), None);
        assert_eq!(quota(""), None);
        let manual = CpuGauge::manual(42);
        assert_eq!(manual.percent(), 42);
        manual.set(90);
        assert_eq!(manual.percent(), 90);
    }

    #[test]
    fn the_sampler_reads_this_process() {
        assert!(process_ticks().is_some());
        let gauge = CpuGauge::start();
        // Burn CPU for a while; the reading follows within a few samples.
        let until = Instant::now() + Duration::from_millis(700);
        let mut x = 0u64;
        while Instant::now() < until {
            x = x.wrapping_mul(31).wrapping_add(7);
        }
        std::hint::black_box(x);
        assert!(gauge.percent() > 0, "no CPU seen");
    }
}
