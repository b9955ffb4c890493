//! One remote call on the wire: the request goes out with a reply subject of its own, and
//! the worker's acknowledgement, heartbeats and answer come back on it. The call is over
//! when the answer comes, when NATS says nobody serves the subject, or as soon as the
//! worker is known to be lost — not acknowledged in time, silent for too long, or the
//! connection to NATS dropped — rather than when a long timeout runs out.

use crate::Liveness;
use crate::frame::Reply;
use crate::frame_batcher::{BatchNews, FrameBatcher};
use crate::reply_router::ReplyRouter;
use async_nats::StatusCode;
use bytes::Bytes;
use futures_util::StreamExt;
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// How one exchange with the workers ended.
#[derive(Debug)]
pub(crate) enum Exchange {
    /// A frame that is not progress came back (the answer, or bytes to refuse as one).
    Answered {
        /// The frame.
        payload: Bytes,
        /// From sending the request to receiving the answer.
        round_trip: Duration,
    },
    /// NATS answered "no responders": no worker is subscribed; nothing ran.
    NoResponders,
    /// No acknowledgement within the ack timeout: the worker that was handed the request
    /// (NATS found one) is gone or cannot keep up; the handler may or may not run.
    NotTaken,
    /// Acknowledged, then silent for longer than the heartbeats allow: the worker died or
    /// was cut off with the call in hand.
    Silent,
    /// The connection to NATS dropped while the call was out (`taken`: it had been
    /// acknowledged).
    Disconnected {
        /// Whether the worker had acknowledged the call.
        taken: bool,
    },
    /// The worker kept the call alive but gave no answer within the timeout.
    TimedOut {
        /// Whether the worker had acknowledged the call.
        taken: bool,
    },
    /// The request could not be sent (nothing ran).
    Unsent(String),
}

/// What one exchange needs besides the client.
#[derive(Debug)]
pub(crate) struct Call<'a> {
    /// The handler's subject.
    pub(crate) subject: &'a str,
    /// The request frame's bytes.
    pub(crate) frame: Bytes,
    /// The request's message id (progress frames for another id are ignored).
    pub(crate) id: u128,
    /// When acknowledgements and heartbeats are due.
    pub(crate) liveness: Liveness,
    /// The longest the call may take.
    pub(crate) timeout: Duration,
}

/// Sends `call` through `client` and follows it to its end (see [`Exchange`]). `drops`
/// counts the connection's drops, taken before the connection was found up: a change
/// since ends the call at once.
///
/// With a `batcher` the request goes with others to the same subject
/// ([`FrameBatcher`]), and its acknowledgement is awaited the batch's time cut-off longer.
pub(crate) async fn exchange(
    client: &async_nats::Client,
    call: Call<'_>,
    mut drops: watch::Receiver<u64>,
    router: &ReplyRouter,
    batcher: Option<&FrameBatcher>,
) -> Exchange {
    let (inbox, mut route) = router.open();
    let sent = Instant::now();
    let mut ack_timeout = call.liveness.ack_timeout;
    let mut undelivered = None;
    match batcher {
        Some(batcher) => {
            ack_timeout += batcher.wait();
            undelivered = Some(batcher.send(call.subject, inbox, call.frame));
        }
        None => {
            if let Err(e) = client
                .publish_with_reply(call.subject.to_owned(), inbox, call.frame)
                .await
            {
                return Exchange::Unsent(format!("cannot send the request: {e}"));
            }
        }
    }
    let told = async {
        match undelivered {
            Some(hear) => match hear.await {
                Ok(news) => news,
                // Nothing will be told: the call's own frames say it all.
                Err(_) => std::future::pending().await,
            },
            None => std::future::pending().await,
        }
    };
    tokio::pin!(told);
    let mut heard = false;
    let deadline = sent + call.timeout;
    let mut taken = false;
    let mut quiet_until = sent + ack_timeout;
    loop {
        let wake = quiet_until.min(deadline);
        tokio::select! {
            // A reply already received wins over a timer that fired meanwhile.
            biased;
            news = &mut told, if !heard => match news {
                BatchNews::Taken => {
                    heard = true;
                    taken = true;
                    quiet_until = Instant::now() + call.liveness.silence();
                }
                BatchNews::NoResponders => return Exchange::NoResponders,
                BatchNews::Unsent(why) => return Exchange::Unsent(why),
            },
            message = route.replies.next() => {
                let Some(message) = message else {
                    return Exchange::Disconnected { taken };
                };
                match message.status {
                    Some(StatusCode::NO_RESPONDERS) => return Exchange::NoResponders,
                    Some(status) if !status.is_success() => {
                        return Exchange::Unsent(format!("NATS answered status {status}"));
                    }
                    _ => {}
                }
                match Reply::decode(message.payload.clone()) {
                    Ok(Reply::Progress(progress)) => {
                        if progress.id == call.id {
                            taken = true;
                            quiet_until = Instant::now() + call.liveness.silence();
                        }
                    }
                    _ => {
                        return Exchange::Answered {
                            payload: message.payload,
                            round_trip: sent.elapsed(),
                        };
                    }
                }
            }
            _ = drops.changed() => return Exchange::Disconnected { taken },
            () = tokio::time::sleep_until(wake.into()) => {
                return if Instant::now() >= deadline {
                    Exchange::TimedOut { taken }
                } else if taken {
                    Exchange::Silent
                } else {
                    Exchange::NotTaken
                };
            }
        }
    }
}
