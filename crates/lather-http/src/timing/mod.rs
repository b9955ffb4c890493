//! The server-side points of a request's timing breakdown (the seed's 16-point list: 5
//! reception complete, 6–7 decoding, 8–9 the service with its handler stages inside,
//! 10–11 encoding, 12 sending starts), measured on every request as the spans between
//! them. They go into per-service histograms at `/metrics` (`lather_phase_seconds`) and,
//! for clients that ask, into a `Server-Timing` response header.

mod histograms;
mod timeline;

pub(crate) use histograms::PhaseHistograms;
pub(crate) use timeline::Timeline;

/// The request header a client sends (any value) to get a `Server-Timing` answer header.
pub(crate) const ASK_HEADER: http::HeaderName = http::HeaderName::from_static("lather-timing");

/// One span of a request's time on the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// The request head's arrival to the body's end (point 5).
    Receive,
    /// Waiting for admission (the service's queue).
    Queue,
    /// Decompressing and parsing the envelope (points 6–7), routing and mustUnderstand.
    Decode,
    /// The request handler stages (inside the service span, points 8–9).
    RequestStages,
    /// The service itself: the echo, the store, a gateway's backend.
    Call,
    /// The response (or fault) handler stages.
    ResponseStages,
    /// Writing the answer (points 10–11): the envelope into the HTTP body, compression,
    /// up to handing it to the connection to send (point 12).
    Encode,
}

impl Phase {
    /// Every phase, in the order a request passes them.
    pub(crate) const ALL: [Phase; 7] = [
        Phase::Receive,
        Phase::Queue,
        Phase::Decode,
        Phase::RequestStages,
        Phase::Call,
        Phase::ResponseStages,
        Phase::Encode,
    ];

    /// Its name in `Server-Timing` and in the `phase` label.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Phase::Receive => "receive",
            Phase::Queue => "queue",
            Phase::Decode => "decode",
            Phase::RequestStages => "request-stages",
            Phase::Call => "call",
            Phase::ResponseStages => "response-stages",
            Phase::Encode => "encode",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}
