//! Planning stages from declared accesses: `request = { auto = [...] }`.
//!
//! Handlers that touch a common part (one writes what the other reads or writes) must run in
//! different stages; the one listed first goes first unless an explicit `after` says
//! otherwise. Every other pair is free to share a stage. Each handler is placed in the
//! earliest stage its predecessors allow, so the plan has as few stages as the constraints
//! permit and every stage runs as much as it can at once.

use crate::plan::{Plan, PlanError, Step, conflict};
use std::sync::Arc;

/// An explicit order: `steps[before]` must finish before `steps[after]` starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Order {
    /// Index of the step that goes first.
    pub before: usize,
    /// Index of the step that waits for it.
    pub after: usize,
}

impl Plan {
    /// Plans `steps` into stages: handlers whose accesses clash are ordered (list order, or
    /// the explicit `orders`), the rest share stages, each handler in the earliest stage
    /// its predecessors allow. A cycle in the orders is refused, naming the handlers on it.
    pub fn auto(steps: Vec<Arc<Step>>, orders: &[Order]) -> Result<Plan, PlanError> {
        let n = steps.len();
        let mut preds: Vec<Vec<usize>> = vec![Vec::new(); n];
        let explicit = |a: usize, b: usize| orders.iter().any(|o| o.before == a && o.after == b);
        for order in orders {
            if order.before < n && order.after < n && !preds[order.after].contains(&order.before) {
                preds[order.after].push(order.before);
            }
        }
        for i in 0..n {
            for j in i + 1..n {
                let clash = conflict(&steps[i], &steps[j]).is_some();
                if clash && !explicit(i, j) && !explicit(j, i) {
                    preds[j].push(i);
                }
            }
        }
        let levels = levels(&preds).map_err(|cycle| PlanError::Cycle {
            handlers: cycle.iter().map(|&i| steps[i].name().to_owned()).collect(),
        })?;
        let depth = levels.iter().max().map_or(0, |d| d + 1);
        let mut stages: Vec<Vec<Arc<Step>>> = vec![Vec::new(); depth];
        for (step, level) in steps.into_iter().zip(levels) {
            stages[level].push(step);
        }
        Plan::new(stages)
    }
}

/// The stage of each node: 0 without predecessors, else one past its latest predecessor.
/// `Err` holds the nodes left on a cycle.
fn levels(preds: &[Vec<usize>]) -> Result<Vec<usize>, Vec<usize>> {
    let n = preds.len();
    let mut level: Vec<Option<usize>> = vec![None; n];
    let mut placed = 0;
    while placed < n {
        let mut progress = false;
        for v in 0..n {
            if level[v].is_some() {
                continue;
            }
            let mut stage = 0;
            let mut ready = true;
            for &p in &preds[v] {
                match level[p] {
                    Some(l) => stage = stage.max(l + 1),
                    None => ready = false,
                }
            }
            if ready {
                level[v] = Some(stage);
                placed += 1;
                progress = true;
            }
        }
        if !progress {
            return Err((0..n).filter(|&v| level[v].is_none()).collect());
        }
    }
    Ok(level.into_iter().map(|l| l.unwrap_or(0)).collect())
}

#[cfg(test)]
mod tests {
    use super::levels;

    #[test]
    fn levels_follow_the_longest_chain_of_predecessors() {
        // 0 → 1 → 3, 2 free, 0 → 3
        let preds = vec![vec![], vec![0], vec![], vec![1, 0]];
        assert_eq!(levels(&preds), Ok(vec![0, 1, 0, 2]));
    }

    #[test]
    fn a_cycle_names_the_nodes_on_it() {
        let preds = vec![vec![], vec![2], vec![1]];
        assert_eq!(levels(&preds), Err(vec![1, 2]));
    }
}
