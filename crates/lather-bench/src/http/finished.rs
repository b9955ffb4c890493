//! What became of one request, and how failures are classified.

use std::error::Error as _;
use std::io;
use tokio::time::Instant;

use serde::Serialize;

/// Kinds of failed requests, the keys of [`Report::errors`](crate::Report::errors).
///
/// Non-2xx answers are not listed here: they are counted per status code in
/// [`Report::status_counts`](crate::Report::status_counts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorKind {
    /// The TCP connection could not be established (refused, unreachable …).
    Connect,
    /// The request did not complete within `--timeout-ms`.
    Timeout,
    /// The server closed the connection before the answer was complete.
    Closed,
    /// The connection was reset (or the pipe broke) while in use.
    Reset,
    /// Another I/O error on an established connection.
    Io,
    /// The answer was not valid HTTP/1.1.
    Protocol,
    /// A 2xx answer whose body lacks the `--expect` string.
    ExpectMismatch,
}

impl ErrorKind {
    /// Every kind, in report order.
    pub(crate) const ALL: [Self; 7] = [
        Self::Connect,
        Self::Timeout,
        Self::Closed,
        Self::Reset,
        Self::Io,
        Self::Protocol,
        Self::ExpectMismatch,
    ];

    /// Index into per-kind counter arrays.
    pub(crate) fn index(self) -> usize {
        self as usize
    }

    /// The name used in reports (`snake_case`).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Connect => "connect",
            Self::Timeout => "timeout",
            Self::Closed => "closed",
            Self::Reset => "reset",
            Self::Io => "io",
            Self::Protocol => "protocol",
            Self::ExpectMismatch => "expect_mismatch",
        }
    }
}

/// A failed request: its kind and a human-readable cause.
#[derive(Debug)]
pub(crate) struct RequestFailure {
    pub(crate) kind: ErrorKind,
    pub(crate) detail: String,
}

impl RequestFailure {
    pub(crate) fn new(kind: ErrorKind, detail: impl Into<String>) -> Self {
        Self {
            kind,
            detail: detail.into(),
        }
    }

    /// Classifies a connect error.
    pub(crate) fn connect(err: &io::Error) -> Self {
        Self::new(ErrorKind::Connect, err.to_string())
    }

    /// Classifies an error reported by hyper on an established connection.
    pub(crate) fn from_hyper(err: &hyper::Error) -> Self {
        let kind = if let Some(io) = find_io_error(err) {
            match io.kind() {
                io::ErrorKind::ConnectionReset
                | io::ErrorKind::ConnectionAborted
                | io::ErrorKind::BrokenPipe => ErrorKind::Reset,
                io::ErrorKind::UnexpectedEof => ErrorKind::Closed,
                _ => ErrorKind::Io,
            }
        } else if err.is_canceled() || err.is_incomplete_message() || err.is_closed() {
            ErrorKind::Closed
        } else if err.is_parse() || err.is_parse_status() || err.is_parse_too_large() {
            ErrorKind::Protocol
        } else {
            ErrorKind::Io
        };
        Self::new(kind, err.to_string())
    }
}

fn find_io_error(err: &hyper::Error) -> Option<&io::Error> {
    let mut source = err.source();
    while let Some(e) = source {
        if let Some(io) = e.downcast_ref::<io::Error>() {
            return Some(io);
        }
        source = e.source();
    }
    None
}

/// The result of one request.
#[derive(Debug)]
pub(crate) enum RequestResult {
    /// A complete HTTP answer.
    Answer {
        /// Its status code.
        status: u16,
        /// `false` when `--expect` was given, the status is 2xx and the
        /// body lacks the expected string.
        expect_ok: bool,
    },
    /// No (complete) answer.
    Failed(RequestFailure),
}

/// One finished request.
#[derive(Debug)]
pub(crate) struct Finished {
    pub(crate) outcome: RequestResult,
    /// When the answer was read completely (or the failure was noticed).
    pub(crate) finished: Instant,
    /// Bytes written to the socket for this request.
    pub(crate) bytes_sent: u64,
    /// Bytes read from the socket for this request.
    pub(crate) bytes_received: u64,
}
