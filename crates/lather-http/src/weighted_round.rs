//! One round of a smooth weighted round-robin: weights 5, 1, 1 give a a b a c a a, not
//! a a a a a b c, so no entry gets a long run of turns.

/// The indexes of `weights` in the order one round hands them out: each index as often as
/// its weight (a weight of 0 counts as 1).
pub(crate) fn smooth_round(weights: &[u32]) -> Vec<usize> {
    let total: i64 = weights.iter().map(|w| i64::from((*w).max(1))).sum();
    let mut current = vec![0i64; weights.len()];
    let mut round = Vec::with_capacity(usize::try_from(total).unwrap_or(0));
    for _ in 0..total {
        for (c, w) in current.iter_mut().zip(weights) {
            *c += i64::from((*w).max(1));
        }
        let (best, _) = current
            .iter()
            .enumerate()
            .max_by_key(|(i, c)| (**c, std::cmp::Reverse(*i)))
            .unwrap_or((0, &0));
        current[best] -= total;
        round.push(best);
    }
    round
}

#[cfg(test)]
mod tests {
    use super::smooth_round;

    #[test]
    fn weights_spread_each_entrys_turns_over_the_round() {
        assert_eq!(smooth_round(&[5, 1, 1]), [0, 0, 1, 0, 2, 0, 0]);
        assert_eq!(smooth_round(&[1, 2]), [1, 0, 1]);
        assert_eq!(smooth_round(&[0, 1]), [0, 1]);
        assert!(smooth_round(&[]).is_empty());
    }
}
