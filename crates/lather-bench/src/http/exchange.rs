//! One request/answer exchange on a (possibly re-established) connection.

use std::sync::Arc;

use http::HeaderMap;
use http::header::CONNECTION;
use http_body_util::BodyExt;
use tokio::time::Instant;

use super::conn::Conn;
use super::counting::IoCounters;
use super::finished::{ErrorKind, Finished, RequestFailure, RequestResult};
use super::plan::RunPlan;

/// A complete answer.
#[derive(Debug)]
struct HttpAnswer {
    status: u16,
    expect_ok: bool,
    /// The server announced it will close the connection.
    close: bool,
}

/// The byte counters of the connection a request went out on, and their
/// values before it did.
#[derive(Debug, Default)]
struct Traffic {
    counters: Option<(Arc<IoCounters>, (u64, u64))>,
}

impl Traffic {
    fn start(&mut self, counters: &Arc<IoCounters>) {
        self.counters = Some((Arc::clone(counters), counters.snapshot()));
    }

    fn delta(&self) -> (u64, u64) {
        match &self.counters {
            None => (0, 0),
            Some((counters, (sent0, recv0))) => {
                let (sent, recv) = counters.snapshot();
                (sent.saturating_sub(*sent0), recv.saturating_sub(*recv0))
            }
        }
    }
}

/// Sends one request on `slot` (connecting first when it is empty or
/// closed) and reads the whole answer, giving up at `deadline`.
///
/// After a failure, a timeout, or an answer with `Connection: close`, the
/// connection is dropped so that the next request reconnects. `scratch`
/// holds the body while it is checked against `--expect`.
pub(crate) async fn exchange(
    plan: &RunPlan,
    slot: &mut Option<Conn>,
    deadline: Instant,
    scratch: &mut Vec<u8>,
) -> Finished {
    let mut traffic = Traffic::default();
    let result =
        tokio::time::timeout_at(deadline, attempt(plan, slot, scratch, &mut traffic)).await;
    let finished = Instant::now();
    let outcome = match result {
        Ok(Ok(answer)) => {
            if answer.close {
                *slot = None;
            }
            RequestResult::Answer {
                status: answer.status,
                expect_ok: answer.expect_ok,
            }
        }
        Ok(Err(failure)) => {
            *slot = None;
            RequestResult::Failed(failure)
        }
        Err(_elapsed) => {
            *slot = None;
            RequestResult::Failed(RequestFailure::new(
                ErrorKind::Timeout,
                format!("no complete answer within {} ms", plan.timeout.as_millis()),
            ))
        }
    };
    let (bytes_sent, bytes_received) = traffic.delta();
    Finished {
        outcome,
        finished,
        bytes_sent,
        bytes_received,
    }
}

async fn attempt(
    plan: &RunPlan,
    slot: &mut Option<Conn>,
    scratch: &mut Vec<u8>,
    traffic: &mut Traffic,
) -> Result<HttpAnswer, RequestFailure> {
    let mut request = plan.request.build();
    // A kept-alive connection the server closed while idle is replaced
    // without counting an error: once when it is found closed before the
    // request, and once when hyper hands the unsent request back.
    let mut fresh = false;
    let response = loop {
        let conn = ready_conn(plan, slot, &mut fresh).await?;
        traffic.start(&conn.counters);
        match conn.sender.try_send_request(request).await {
            Ok(response) => break response,
            Err(mut err) => match err.take_message() {
                Some(unsent) if !fresh => {
                    *slot = None;
                    request = unsent;
                }
                _ => return Err(RequestFailure::from_hyper(&err.into_error())),
            },
        }
    };

    let status = response.status();
    let close = wants_close(response.headers());
    let check = plan.expect.is_some() && status.is_success();
    scratch.clear();
    let mut body = response.into_body();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| RequestFailure::from_hyper(&e))?;
        if check && let Some(data) = frame.data_ref() {
            scratch.extend_from_slice(data);
        }
    }
    let expect_ok = match &plan.expect {
        Some(finder) if check => finder.find(scratch).is_some(),
        _ => true,
    };
    Ok(HttpAnswer {
        status: status.as_u16(),
        expect_ok,
        close,
    })
}

/// The connection in `slot`, ready for a request; reconnects when there is
/// none or the old one was closed. Sets `fresh` when it connected.
async fn ready_conn<'a>(
    plan: &RunPlan,
    slot: &'a mut Option<Conn>,
    fresh: &mut bool,
) -> Result<&'a mut Conn, RequestFailure> {
    loop {
        if slot.as_ref().is_none_or(|c| c.sender.is_closed()) {
            *slot = None;
            *slot = Some(Conn::connect(plan.addr).await?);
            *fresh = true;
        }
        let Some(conn) = slot.as_mut() else {
            continue;
        };
        match conn.sender.ready().await {
            Ok(()) => break,
            Err(e) if *fresh => return Err(RequestFailure::from_hyper(&e)),
            Err(_) => *slot = None,
        }
    }
    slot.as_mut()
        .ok_or_else(|| RequestFailure::new(ErrorKind::Closed, "connection vanished"))
}

/// `Connection: close` (any token, case-insensitive).
fn wants_close(headers: &HeaderMap) -> bool {
    headers.get_all(CONNECTION).iter().any(|v| {
        v.to_str().is_ok_and(|s| {
            s.split(',')
                .any(|token| token.trim().eq_ignore_ascii_case("close"))
        })
    })
}
