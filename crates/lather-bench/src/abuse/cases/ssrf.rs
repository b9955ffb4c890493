//! d. Server-side request forgery: subscriptions delivering to a link-local
//! metadata address, a decimal loopback IP and the server's own publish path.

use std::time::Duration;

use super::{CaseVerdict, Ctx, describe, unsubscribe_all};
use crate::abuse::client::{RawAnswer, RawCall, send};
use crate::abuse::messages;

/// The expectation for each target: Subscribe refused with a SOAP Fault.
pub(crate) fn expected(answer: &Result<RawAnswer, String>) -> bool {
    answer.as_ref().is_ok_and(RawAnswer::is_soap_fault)
}

/// Runs the case.
pub(crate) async fn run(ctx: &Ctx) -> CaseVerdict {
    let targets = [
        "http://169.254.169.254/".to_owned(),
        "http://2130706433/".to_owned(),
        ctx.url(&format!("{}/publish", ctx.events)),
    ];
    let (mut met, mut notes, mut granted) = (true, Vec::new(), Vec::new());
    for target in &targets {
        let body = messages::subscribe(target, None);
        let answer = send(
            ctx.addr,
            &RawCall::soap12(&ctx.events, body.as_bytes(), Duration::from_secs(10)),
        )
        .await;
        met &= expected(&answer);
        if let Some(id) = answer
            .as_ref()
            .ok()
            .filter(|a| a.status == 200)
            .and_then(|a| messages::identifier(&a.body))
        {
            granted.push(id);
        }
        notes.push(format!("{target} → {}", describe(&answer)));
    }
    // A granted subscription to the publish path would loop on the next
    // publish: end them at once.
    unsubscribe_all(ctx, granted).await;
    CaseVerdict::new(met, notes.join("; "))
}
