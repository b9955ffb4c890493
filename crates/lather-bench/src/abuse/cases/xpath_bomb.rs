//! b. XPath filter bomb: a subscription whose filter costs ~n⁴ per event,
//! then two publishers of 100-node events at once.

use std::time::Duration;

use tokio::task::JoinSet;

use super::{CaseVerdict, Ctx, describe, publish, unsubscribe_all};
use crate::abuse::client::{RawAnswer, RawCall, send};
use crate::abuse::messages;
use crate::abuse::sink::MuteSink;

/// The filter of issue 10.
pub(crate) const FILTER: &str = "//*[//*[//*[//*]]]";
/// Bound on each publish's answer.
const PUBLISH_WITHIN: Duration = Duration::from_secs(10);

/// The expectation: Subscribe is refused with a fault, or every publish is
/// answered within [`PUBLISH_WITHIN`] (a 2xx, or a fault that refuses it).
pub(crate) fn expected(
    subscribe: &Result<RawAnswer, String>,
    publishes: &[Result<RawAnswer, String>],
) -> bool {
    let refused = subscribe.as_ref().is_ok_and(RawAnswer::is_soap_fault);
    refused
        || publishes.iter().all(|p| {
            p.as_ref()
                .is_ok_and(|a| a.status < 300 || a.is_soap_fault())
        })
}

/// Runs the case.
pub(crate) async fn run(ctx: &Ctx) -> CaseVerdict {
    let sink = match MuteSink::start().await {
        Ok(s) => s,
        Err(e) => return CaseVerdict::new(false, format!("mute sink: {e}")),
    };
    let body = messages::subscribe(&sink.url(), Some(FILTER));
    let subscribe = send(
        ctx.addr,
        &RawCall::soap12(&ctx.events, body.as_bytes(), Duration::from_secs(10)),
    )
    .await;
    let id = subscribe
        .as_ref()
        .ok()
        .filter(|a| a.status == 200)
        .and_then(|a| messages::identifier(&a.body));
    let mut publishes = Vec::new();
    if id.is_some() {
        let each = ctx.pick(1, 3);
        let mut set = JoinSet::new();
        for _ in 0..2 {
            let ctx = ctx.clone();
            set.spawn(async move {
                let event = messages::event_of_nodes(100);
                let mut answers = Vec::new();
                for _ in 0..each {
                    answers.push(publish(&ctx, &event, PUBLISH_WITHIN).await);
                }
                answers
            });
        }
        while let Some(joined) = set.join_next().await {
            publishes.extend(joined.unwrap_or_else(|e| vec![Err(e.to_string())]));
        }
    }
    let met = expected(&subscribe, &publishes);
    let note = format!(
        "subscribe: {}; publishes: {}",
        describe(&subscribe),
        publishes
            .iter()
            .map(describe)
            .collect::<Vec<_>>()
            .join(", ")
    );
    unsubscribe_all(ctx, id.into_iter().collect()).await;
    drop(sink);
    CaseVerdict::new(met, note)
}
