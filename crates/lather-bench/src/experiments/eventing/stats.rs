//! The statistics of the paper's tables: mean, the 95% confidence interval of the mean
//! and the one-sided normal tolerance bound (99% confidence that 90% of deliveries are
//! below it), plus percentiles.

/// A sample's summary.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct SampleSummary {
    pub(crate) n: usize,
    pub(crate) mean: f64,
    pub(crate) sd: f64,
}

impl SampleSummary {
    /// Mean and sample standard deviation of `xs` (Welford, so large samples stay exact).
    pub(crate) fn of(xs: impl IntoIterator<Item = f64>) -> SampleSummary {
        let (mut n, mut mean, mut m2) = (0usize, 0.0f64, 0.0f64);
        for x in xs {
            n += 1;
            let d = x - mean;
            mean += d / n as f64;
            m2 += d * (x - mean);
        }
        let sd = if n > 1 {
            (m2 / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        SampleSummary { n, mean, sd }
    }

    /// The two-sided `level` confidence interval of the mean (normal; n is large here).
    pub(crate) fn confidence(&self, level: f64) -> (f64, f64) {
        if self.n == 0 {
            return (f64::NAN, f64::NAN);
        }
        let z = normal_quantile(0.5 + level / 2.0);
        let half = z * self.sd / (self.n as f64).sqrt();
        (self.mean - half, self.mean + half)
    }

    /// The one-sided upper tolerance bound `mean + k·sd` such that with `confidence` at
    /// least `coverage` of the population lies below it.
    pub(crate) fn tolerance_bound(&self, coverage: f64, confidence: f64) -> f64 {
        self.mean + tolerance_k(self.n, coverage, confidence) * self.sd
    }
}

/// The one-sided normal tolerance factor k for `n` observations, by the Natrella (1963)
/// approximation: with z_p, z_γ the normal quantiles of coverage and confidence,
/// a = 1 − z_γ²/(2(n−1)), b = z_p² − z_γ²/n, k = (z_p + √(z_p² − ab)) / a.
/// Within 4% of the exact (noncentral t) value at n = 10, 0.04% from n = 50 on.
pub(crate) fn tolerance_k(n: usize, coverage: f64, confidence: f64) -> f64 {
    if n < 3 {
        return f64::INFINITY;
    }
    let zp = normal_quantile(coverage);
    let zg = normal_quantile(confidence);
    let n = n as f64;
    let a = 1.0 - zg * zg / (2.0 * (n - 1.0));
    let b = zp * zp - zg * zg / n;
    let disc = zp * zp - a * b;
    if a <= 0.0 || disc < 0.0 {
        return f64::INFINITY;
    }
    (zp + disc.sqrt()) / a
}

/// Φ⁻¹(p), Acklam's rational approximation (relative error below 1.2e-9), for 0 < p < 1.
pub(crate) fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p <= 0.0 {
        return f64::NEG_INFINITY;
    }
    if p >= 1.0 {
        return f64::INFINITY;
    }
    if p < 0.02425 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.02425 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

/// The `q`-quantile (0..=1) of `sorted` (nearest rank).
pub(crate) fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        ((a - b) / b).abs() <= rel
    }

    #[test]
    fn normal_quantiles_match_the_tables() {
        assert!(close(normal_quantile(0.975), 1.959_964, 1e-6));
        assert!(close(normal_quantile(0.90), 1.281_552, 1e-6));
        assert!(close(normal_quantile(0.99), 2.326_348, 1e-6));
        assert!(close(normal_quantile(0.01), -2.326_348, 1e-6));
    }

    /// One-sided tolerance factors. Published (Natrella 1963, Table A-7; NIST/SEMATECH
    /// e-Handbook 7.2.6.3): n = 10, γ = 0.95, p = 0.90 → 2.355; n = 20 → 1.926. The
    /// γ = 0.99, p = 0.90 values are the exact noncentral-t ones, computed with Python's
    /// mpmath 1.3.0 as t'_γ(n−1, z_p√n)/√n by integrating Φ(t√(x/ν) − δ) against the χ²_ν
    /// density (`mp.quad`) and solving for γ by bisection (it reproduces the two published
    /// values above to 4 digits: 2.35464, 1.92599).
    #[test]
    fn tolerance_factors_match_exact_values() {
        assert!(close(tolerance_k(10, 0.90, 0.95), 2.355, 0.03));
        assert!(close(tolerance_k(20, 0.90, 0.95), 1.926, 0.01));
        assert!(close(tolerance_k(10, 0.90, 0.99), 3.047_907_5, 0.04));
        assert!(close(tolerance_k(20, 0.90, 0.99), 2.275_645_9, 0.007));
        assert!(close(tolerance_k(50, 0.90, 0.99), 1.820_799_6, 4e-4));
        assert!(close(tolerance_k(100, 0.90, 0.99), 1.638_979_6, 3e-4));
        assert!(close(tolerance_k(1000, 0.90, 0.99), 1.384_621, 1e-4));
        assert!(close(tolerance_k(5000, 0.90, 0.99), 1.326_683_8, 3e-5));
        assert!(tolerance_k(2, 0.90, 0.99).is_infinite());
    }

    #[test]
    fn summaries_and_intervals() {
        let s = SampleSummary::of([1.0, 2.0, 3.0, 4.0]);
        assert_eq!(s.n, 4);
        assert!(close(s.mean, 2.5, 1e-12));
        assert!(close(s.sd, 1.290_994_448_735_805_6, 1e-12));
        let (lo, hi) = s.confidence(0.95);
        assert!(close(hi - s.mean, 1.959_964 * s.sd / 2.0, 1e-6));
        assert!(close(s.mean - lo, hi - s.mean, 1e-12));
        assert_eq!(percentile(&[1.0, 2.0, 3.0, 4.0], 0.5), 2.0);
        assert_eq!(percentile(&[1.0, 2.0, 3.0, 4.0], 0.99), 4.0);
    }
}
