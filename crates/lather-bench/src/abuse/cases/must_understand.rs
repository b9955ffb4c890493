//! c. mustUnderstand amplification: thousands of unknown mustUnderstand
//! header blocks sharing a long namespace, ~150 KB in all.

use std::time::Duration;

use super::{CaseVerdict, Ctx, describe};
use crate::abuse::client::{RawAnswer, RawCall, send};
use crate::abuse::messages;

/// The largest fault accepted.
pub(crate) const MAX_FAULT_BYTES: u64 = 64 * 1024;

/// The expectation: a SOAP Fault of at most [`MAX_FAULT_BYTES`].
pub(crate) fn expected(answer: &Result<RawAnswer, String>) -> bool {
    answer
        .as_ref()
        .is_ok_and(|a| a.is_soap_fault() && !a.truncated && a.body_len <= MAX_FAULT_BYTES)
}

/// Runs the case.
pub(crate) async fn run(ctx: &Ctx) -> CaseVerdict {
    let request = messages::must_understand_flood(4500, 200);
    let mut call = RawCall::soap12(&ctx.echo, request.as_bytes(), Duration::from_secs(30));
    // Enough to tell "too big" without reading hundreds of MB.
    call.max_read = 4 * 1024 * 1024;
    let answer = send(ctx.addr, &call).await;
    let size = match &answer {
        Ok(a) if a.truncated => format!("more than {} B (stopped reading)", a.body_len),
        Ok(a) => format!("{} B", a.body_len),
        Err(_) => "-".to_owned(),
    };
    CaseVerdict::new(
        expected(&answer),
        format!(
            "{} B request: {}, answer body {size}",
            request.len(),
            describe(&answer)
        ),
    )
}
