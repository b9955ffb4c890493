//! A load-adaptive price (the seed's section 7.4): one load sample a second; once a
//! window of samples is in, an average above `raise_above` raises the price one step, an
//! average below `lower_below` lowers it one step, and a new window starts. The price
//! stays between the offer's own price and `max_price`.

use lather_config::AdaptiveRule;
use std::collections::VecDeque;

/// One offer's price as it follows the load.
#[derive(Debug, Clone)]
pub struct AdaptivePrice {
    rule: AdaptiveRule,
    price: f64,
    samples: VecDeque<f64>,
}

impl AdaptivePrice {
    /// The price under `rule`, starting at the offer's own.
    pub fn new(rule: AdaptiveRule) -> Self {
        AdaptivePrice {
            rule,
            price: rule.min_price,
            samples: VecDeque::with_capacity(usize::try_from(rule.window).unwrap_or(30)),
        }
    }

    /// The rule followed.
    pub fn rule(&self) -> &AdaptiveRule {
        &self.rule
    }

    /// The price now.
    pub fn price(&self) -> f64 {
        self.price
    }

    /// The window's average so far (`None` before the first sample).
    pub fn average(&self) -> Option<f64> {
        if self.samples.is_empty() {
            return None;
        }
        Some(self.samples.iter().sum::<f64>() / self.samples.len() as f64)
    }

    /// Takes one sample; returns the new price when it moved.
    pub fn observe(&mut self, sample: f64) -> Option<f64> {
        let window = usize::try_from(self.rule.window)
            .unwrap_or(usize::MAX)
            .max(1);
        if self.samples.len() == window {
            self.samples.pop_front();
        }
        self.samples.push_back(sample);
        if self.samples.len() < window {
            return None;
        }
        let average = self.average().unwrap_or(0.0);
        let wanted = if average > self.rule.raise_above {
            self.price + self.rule.step
        } else if average < self.rule.lower_below {
            self.price - self.rule.step
        } else {
            return None;
        };
        // Rounded so that steps add up to the figures an operator wrote, then kept
        // between the offer's own price and the cap (which need no rounding).
        let wanted = ((wanted * 10_000.0).round() / 10_000.0)
            .clamp(self.rule.min_price, self.rule.max_price);
        self.samples.clear();
        if wanted == self.price {
            return None;
        }
        self.price = wanted;
        Some(wanted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lather_config::LoadMetric;

    fn rule(window: u64) -> AdaptiveRule {
        AdaptiveRule {
            metric: LoadMetric::Cpu,
            window,
            raise_above: 80.0,
            lower_below: 70.0,
            step: 0.1,
            min_price: 1.0,
            max_price: 1.3,
        }
    }

    #[test]
    fn the_price_steps_up_over_80_and_down_under_70_one_window_at_a_time() {
        let mut p = AdaptivePrice::new(rule(3));
        assert_eq!(p.price(), 1.0);
        // Two hot samples are not a window yet.
        assert_eq!(p.observe(95.0), None);
        assert_eq!(p.observe(95.0), None);
        assert_eq!(p.observe(95.0), Some(1.1));
        // A new window starts after a step: two more samples change nothing.
        assert_eq!(p.observe(95.0), None);
        assert_eq!(p.observe(95.0), None);
        assert_eq!(p.observe(95.0), Some(1.2));
        // Inside the band: no move, and the window slides.
        for _ in 0..5 {
            assert_eq!(p.observe(78.0), None);
        }
        // The sliding window's average crosses 70 only when enough low samples came.
        assert_eq!(p.observe(60.0), None); // 78, 78, 60: 72
        assert_eq!(p.price(), 1.2);
        assert_eq!(p.observe(60.0), Some(1.1)); // 78, 60, 60: 66
    }

    #[test]
    fn the_price_stays_between_the_offer_s_own_and_the_cap() {
        let mut p = AdaptivePrice::new(rule(1));
        for _ in 0..10 {
            p.observe(100.0);
        }
        assert_eq!(p.price(), 1.3);
        assert_eq!(p.observe(100.0), None, "at the cap, no move is reported");
        for _ in 0..10 {
            p.observe(0.0);
        }
        assert_eq!(p.price(), 1.0);
        assert_eq!(p.observe(0.0), None);
    }
}
