//! The order a request tries a gateway's backends in: the policy's pick first, then the
//! other available backends; ejected or down backends only when no backend is available
//! (a gateway never turns every request away because all its backends failed recently).

use super::backend::Backend;
use lather_config::Balance;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Instant;

/// A gateway's balancing policy and its cursor.
#[derive(Debug)]
pub(crate) struct Balancer {
    policy: Balance,
    cursor: AtomicUsize,
    /// The weighted round of the backend list it was made for (by the list's address).
    round: RwLock<(usize, Arc<Vec<usize>>)>,
}

impl Balancer {
    /// A balancer following `policy`.
    pub(crate) fn new(policy: Balance) -> Self {
        Balancer {
            policy,
            cursor: AtomicUsize::new(0),
            round: RwLock::new((0, Arc::new(Vec::new()))),
        }
    }

    /// The indexes of `backends` in the order a request tries them (at most `attempts`).
    pub(crate) fn order(&self, backends: &Arc<Vec<Arc<Backend>>>, attempts: usize) -> Vec<usize> {
        let n = backends.len();
        if n == 0 {
            return Vec::new();
        }
        let now = Instant::now();
        let turn = self.cursor.fetch_add(1, Ordering::Relaxed);
        let first = match self.policy {
            Balance::RoundRobin => {
                let round = self.round_for(backends);
                round[turn % round.len()]
            }
            Balance::LeastOutstanding => turn % n,
        };
        // Every available backend once, starting at the pick, in list order (one list, no
        // second one of who is available: this runs for every request).
        let turn_order = (0..n).map(|i| (first + i) % n);
        let mut order: Vec<usize> = Vec::with_capacity(n);
        order.extend(turn_order.clone().filter(|i| backends[*i].available(now)));
        let none_available = order.is_empty();
        if none_available {
            order.extend(turn_order);
        }
        if self.policy == Balance::LeastOutstanding {
            // Fewest in flight per unit of weight first; equal loads keep the turn order.
            order.sort_by(|a, b| {
                let (a, b) = (&backends[*a], &backends[*b]);
                let load_a = a.outstanding() as u128 * u128::from(b.weight());
                let load_b = b.outstanding() as u128 * u128::from(a.weight());
                load_a.cmp(&load_b)
            });
        }
        if none_available {
            // None available: the one back soonest first, down ones last.
            order.sort_by_key(|i| backends[*i].back_at(now).map_or((1, now), |at| (0, at)));
        }
        order.truncate(attempts.max(1));
        order
    }

    /// The weighted round for `backends`, made again when the list changed.
    fn round_for(&self, backends: &Arc<Vec<Arc<Backend>>>) -> Arc<Vec<usize>> {
        let key = Arc::as_ptr(backends) as usize;
        {
            let round = self
                .round
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if round.0 == key && !round.1.is_empty() {
                return round.1.clone();
            }
        }
        let weights: Vec<u32> = backends.iter().map(|b| b.weight()).collect();
        let made = Arc::new(crate::weighted_round::smooth_round(&weights));
        *self
            .round
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = (key, made.clone());
        made
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gateway::backend::{Ejection, FailureKind};
    use lather_config::Upstream;
    use std::time::Duration;

    fn list(weights: &[u32]) -> Arc<Vec<Arc<Backend>>> {
        Arc::new(
            weights
                .iter()
                .enumerate()
                .map(|(i, w)| {
                    let url = format!("http://127.0.0.1:{}/x", 1000 + i);
                    Arc::new(Backend::new(Upstream {
                        uri: url.parse().unwrap(),
                        url,
                        weight: *w,
                    }))
                })
                .collect(),
        )
    }

    #[test]
    fn round_robin_follows_the_weights() {
        let backends = list(&[3, 1]);
        let balancer = Balancer::new(Balance::RoundRobin);
        let firsts: Vec<usize> = (0..8).map(|_| balancer.order(&backends, 3)[0]).collect();
        assert_eq!(firsts.iter().filter(|i| **i == 0).count(), 6);
        assert_eq!(firsts.iter().filter(|i| **i == 1).count(), 2);
        // The other backend follows as the second try.
        assert_eq!(balancer.order(&backends, 3).len(), 2);
    }

    #[test]
    fn least_outstanding_picks_the_least_loaded_per_weight() {
        let backends = list(&[1, 1, 2]);
        let rules = Ejection {
            after: 0,
            cool_down: Duration::from_secs(1),
            trial: Duration::from_secs(1),
        };
        let _a = backends[0].begin(&rules);
        let _b = backends[1].begin(&rules);
        let _c1 = backends[2].begin(&rules);
        let balancer = Balancer::new(Balance::LeastOutstanding);
        // 1/1, 1/1, 1/2: the weighted one has the lightest load.
        assert_eq!(balancer.order(&backends, 3)[0], 2);
        let _c2 = backends[2].begin(&rules);
        let _c3 = backends[2].begin(&rules);
        // 3/2 now: one of the others first.
        assert_ne!(balancer.order(&backends, 3)[0], 2);
    }

    #[test]
    fn ejected_backends_are_skipped_unless_none_is_left() {
        let backends = list(&[1, 1]);
        let rules = Ejection {
            after: 1,
            cool_down: Duration::from_secs(60),
            trial: Duration::from_secs(1),
        };
        backends[0].failed(FailureKind::Refused, &rules);
        let balancer = Balancer::new(Balance::RoundRobin);
        for _ in 0..4 {
            assert_eq!(balancer.order(&backends, 3), [1]);
        }
        backends[1].failed(FailureKind::Refused, &rules);
        assert_eq!(
            balancer.order(&backends, 3).len(),
            2,
            "all ejected: all tried"
        );
    }
}
