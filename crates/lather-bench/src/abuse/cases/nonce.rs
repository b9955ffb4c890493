//! h. Nonce flood: UsernameTokens with a correct digest over a 2 MB nonce,
//! each with a fresh nonce.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::{CaseVerdict, Ctx, describe};
use crate::abuse::client::{RawAnswer, RawCall, send};
use crate::abuse::messages;

/// Base64 text of each nonce, bytes.
const NONCE_TEXT: usize = 2 * 1024 * 1024;
/// RSS growth allowed in the full form.
pub(crate) const FULL_RSS_GROWTH: u64 = 64 * 1024 * 1024;

/// The expectation for each request: a SOAP Fault (the nonce is too long).
pub(crate) fn expected(answer: &Result<RawAnswer, String>) -> bool {
    answer.as_ref().is_ok_and(RawAnswer::is_soap_fault)
}

/// Runs the case.
pub(crate) async fn run(ctx: &Ctx) -> CaseVerdict {
    let count = ctx.pick(3, 100);
    let mut faults = 0;
    let mut first_miss = None;
    for i in 0..count {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        // Distinct nonces: a counter over a filler, 3 bytes per 4 of text.
        let mut nonce = vec![b'n'; NONCE_TEXT / 4 * 3];
        nonce[..8].copy_from_slice(&(i as u64).to_be_bytes());
        nonce[8..16].copy_from_slice(&now.to_be_bytes());
        let body = messages::username_token(
            &ctx.user,
            &ctx.password,
            &nonce,
            &messages::utc_timestamp(now),
        );
        let answer = send(
            ctx.addr,
            &RawCall::soap12(&ctx.secure, body.as_bytes(), Duration::from_secs(30)),
        )
        .await;
        if expected(&answer) {
            faults += 1;
        } else if first_miss.is_none() {
            first_miss = Some(describe(&answer));
        }
    }
    CaseVerdict {
        met: faults == count,
        note: format!(
            "{count} tokens with a {} MiB nonce: {faults} faults{}",
            NONCE_TEXT / (1024 * 1024),
            first_miss.map_or_else(String::new, |m| format!(", else e.g. {m}"))
        ),
        rss_growth_bound: Some(FULL_RSS_GROWTH),
        rss_baseline: None,
    }
}
