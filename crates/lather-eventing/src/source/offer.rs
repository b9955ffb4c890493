//! Offering an event to the subscriptions whose XPath filters may take it.

use crate::delivery::sink_queue::SinkQueue;
use crate::delivery::stamped::Stamped;
use crate::protocol::xpath::{ParsedEvent, Verdict, XPathFilter};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Queues `event` for each subscription (id, queue) whose XPath filter takes it; the event
/// is parsed once and each distinct filter evaluated once, within `budget` node visits. A
/// filter over its budget takes nothing: counted in `over_budget`, with a warning naming a
/// subscription. On a multi-threaded runtime the evaluations run with the worker handed
/// over to tokio's blocking pool ([`tokio::task::block_in_place`]), so other requests
/// (`/health` among them) are served meanwhile. Returns how many were queued.
pub(crate) fn offer(
    candidates: Vec<(XPathFilter, String, SinkQueue)>,
    event: &Arc<Stamped>,
    budget: u64,
    over_budget: &AtomicU64,
) -> usize {
    if candidates.is_empty() {
        return 0;
    }
    let run = || {
        let parsed = ParsedEvent::new(&event.payload);
        let mut verdicts: HashMap<XPathFilter, Verdict> = HashMap::new();
        let mut queued = 0;
        for (xpath, id, queue) in candidates {
            let verdict = *verdicts.entry(xpath).or_insert_with_key(|xpath| {
                let verdict = xpath.evaluate(&parsed, budget);
                if verdict == Verdict::OverBudget {
                    over_budget.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(
                        subscription = %id,
                        expression = %xpath.expression(),
                        budget,
                        "XPath filter over its budget (service key filter_budget): event not taken"
                    );
                }
                verdict
            });
            if verdict == Verdict::Taken {
                queued += usize::from(super::enqueue(&id, &queue, event));
            }
        }
        queued
    };
    let multi_thread = tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    if multi_thread {
        tokio::task::block_in_place(run)
    } else {
        run()
    }
}
