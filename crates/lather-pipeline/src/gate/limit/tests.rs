use super::*;

/// A small deterministic generator (xorshift64*), so the soaks are reproducible.
struct Rng(u64);

impl Rng {
    fn unit(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `[lo, hi)`.
    fn between(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }
}

fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s)
}

/// A saturated gate: every message was admitted with the window full.
fn saturated(l: &mut Limit, latency: f64) {
    let in_flight = l.current();
    l.observe(secs(latency), in_flight);
}

#[test]
fn a_fixed_limit_never_moves() {
    let mut l = Limit::new(LimitPolicy::Fixed(8));
    for _ in 0..1000 {
        l.observe(secs(0.5), 8);
    }
    assert_eq!(l.current(), 8);
}

#[test]
fn the_floor_and_ceiling_bound_the_start() {
    let l = Limit::new(LimitPolicy::adaptive());
    assert_eq!(l.current(), 32);
    let l = Limit::new(LimitPolicy::adaptive_with_floor(100));
    assert_eq!(l.current(), 100);
    let l = Limit::new(LimitPolicy::adaptive_with_floor(5000));
    assert_eq!(l.current(), 5000, "the ceiling rises to the floor");
    let l = Limit::new(LimitPolicy::adaptive_with_floor(0));
    assert_eq!(l.current(), 32);
}

#[test]
fn a_healthy_soak_with_jitter_and_outliers_never_collapses() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut l = Limit::new(LimitPolicy::adaptive());
    let mut lowest = l.current();
    for _ in 0..200_000 {
        // 10 ms ± 5 ms, and one message in 50 three times slower.
        let mut latency = rng.between(0.005, 0.015);
        if rng.unit() < 0.02 {
            latency *= 3.0;
        }
        saturated(&mut l, latency);
        lowest = lowest.min(l.current());
    }
    assert!(
        lowest >= 32,
        "the limit fell to {lowest} under jitter alone"
    );
    assert!(
        l.current() >= 256,
        "a healthy saturated limit grows: {}",
        l.current()
    );
}

#[test]
fn a_window_that_is_not_saturated_never_raises_or_cuts_the_limit_on_jitter() {
    let mut rng = Rng(7);
    let mut l = Limit::new(LimitPolicy::adaptive());
    for _ in 0..50_000 {
        l.observe(secs(rng.between(0.005, 0.015)), 3);
    }
    assert_eq!(l.current(), 32);
}

#[test]
fn a_real_overload_brings_the_limit_down_and_holds_it_near_the_break_even() {
    // The service runs `capacity` messages at 10 ms; beyond, latency grows with the limit.
    let mut rng = Rng(42);
    let mut l = Limit::new(LimitPolicy::adaptive());
    let mut run = |l: &mut Limit, capacity: f64, n: usize| {
        let mut highest = 0;
        for _ in 0..n {
            let in_flight = l.current() as f64;
            let latency = 0.010 * (in_flight / capacity).max(1.0) * rng.between(0.8, 1.2);
            saturated(l, latency);
            highest = highest.max(l.current());
        }
        highest
    };
    let highest = run(&mut l, 40.0, 200_000);
    assert!(highest < 160, "the limit ran away to {highest}");
    assert!(
        l.current() >= 40,
        "the limit stays above the break-even: {}",
        l.current()
    );
    // The service can take four times fewer: the limit follows it down.
    run(&mut l, 10.0, 50_000);
    let settled = l.current();
    assert!((10..40).contains(&settled), "limit {settled}");
    // And stays there: it does not learn the queue it built as normal.
    let highest = run(&mut l, 10.0, 500_000);
    assert!(highest < 40, "the limit crept up to {highest}");
}

#[test]
fn after_an_outage_the_limit_recovers() {
    let mut rng = Rng(3);
    let mut l = Limit::new(LimitPolicy::adaptive());
    for _ in 0..5_000 {
        saturated(&mut l, rng.between(0.005, 0.015));
    }
    let before = l.current();
    assert!(before > 32);
    // Every answer takes 5 s: the limit comes down, to the floor and no lower.
    let mut lowest = before;
    for _ in 0..5_000 {
        saturated(&mut l, 5.0);
        lowest = lowest.min(l.current());
    }
    assert_eq!(lowest, LimitPolicy::DEFAULT_MIN);
    // The service is back: the limit climbs back to where it was.
    let mut n = 0;
    while l.current() < before {
        saturated(&mut l, rng.between(0.005, 0.015));
        n += 1;
        assert!(n < 50_000, "still at {} after {n} answers", l.current());
    }
}

#[test]
fn a_configured_floor_holds_through_an_outage() {
    let mut l = Limit::new(LimitPolicy::adaptive_with_floor(16));
    for _ in 0..5_000 {
        saturated(&mut l, 0.010);
    }
    assert!(l.current() > 16);
    for _ in 0..5_000 {
        saturated(&mut l, 5.0);
    }
    assert_eq!(l.current(), 16);
}

#[test]
fn the_baseline_learns_a_slower_service_when_the_gate_is_not_the_bottleneck() {
    let mut l = Limit::new(LimitPolicy::adaptive());
    for _ in 0..5_000 {
        saturated(&mut l, 0.010);
    }
    // The service is now 4× slower at any load; a few quiet windows teach the baseline.
    for _ in 0..5_000 {
        l.observe(secs(0.040), 1);
    }
    let quiet = l.current();
    for _ in 0..50_000 {
        saturated(&mut l, 0.040);
    }
    assert!(l.current() >= quiet, "{quiet} → {}", l.current());
}
