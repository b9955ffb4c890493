//! e. Big event fan-out: many subscriptions to a sink that never answers,
//! then one 200 KB event.

use std::time::Duration;

use super::{CaseVerdict, Ctx, describe, publish, subscribe_many, unsubscribe_all};
use crate::abuse::client::RawAnswer;
use crate::abuse::sink::MuteSink;

/// RSS growth allowed in the full form once every subscription is made: the event is
/// held once (4 × its size for rendering and copies in flight), and each subscription's
/// delivery task, its connection and the reader of its answers take at most 8 KiB — so
/// memory grows with the number of sinks, never with sinks × event size (which was
/// 145 KB per sink before notifications shared the event's bytes).
pub(crate) const PER_SINK_BYTES: u64 = 8 * 1024;

/// The size of the event published.
const EVENT_BYTES: usize = 200 * 1024;

/// The expectation: the publish is answered (queued, or refused with a
/// fault rather than growing memory); in the full form the RSS bound too.
pub(crate) fn expected(answer: &Result<RawAnswer, String>) -> bool {
    answer
        .as_ref()
        .is_ok_and(|a| a.status < 300 || a.is_soap_fault())
}

/// Runs the case.
pub(crate) async fn run(ctx: &Ctx) -> CaseVerdict {
    let sink = match MuteSink::start().await {
        Ok(s) => s,
        Err(e) => return CaseVerdict::new(false, format!("mute sink: {e}")),
    };
    let wanted = ctx.pick(200, 10_000);
    let (granted, refused) = subscribe_many(ctx, &sink.url(), None, wanted).await;
    // Let the delivery tasks connect before the baseline is read.
    tokio::time::sleep(Duration::from_secs(ctx.pick(1, 3))).await;
    let subscribed = ctx.watched.rss_bytes().ok();
    let event = crate::abuse::messages::event_of_bytes(EVENT_BYTES);
    let answer = publish(ctx, &event, Duration::from_secs(30)).await;
    // Let the deliveries run (and pile up at the mute sink).
    tokio::time::sleep(Duration::from_secs(ctx.pick(2, 10))).await;
    let queued = answer
        .as_ref()
        .ok()
        .and_then(|a| {
            let at = a.body.find("queued=\"")? + 8;
            Some(a.body[at..at + a.body[at..].find('"')?].to_owned())
        })
        .unwrap_or_else(|| "?".to_owned());
    let granted_count = granted.len();
    let note = format!(
        "{} subscriptions granted, {refused} refused; RSS once subscribed {:.1} MB; publish: {}, queued {queued}; sink held {} connections",
        granted.len(),
        subscribed.unwrap_or(0) as f64 / 1e6,
        describe(&answer),
        sink.connections()
    );
    unsubscribe_all(ctx, granted).await;
    drop(sink);
    CaseVerdict {
        met: expected(&answer),
        note,
        rss_growth_bound: Some(PER_SINK_BYTES * granted_count as u64 + 4 * EVENT_BYTES as u64),
        rss_baseline: subscribed,
    }
}
