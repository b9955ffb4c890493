//! The TCP bindings: one persistent connection per subscription; every notification
//! queued when the task wakes is encoded into one buffer and written with one write. A
//! failed write closes the connection; the batch is then written again on a new one (so
//! a sink may see a notification twice after a reconnect), with backoff, and after the
//! last attempt the sink is given up.
//!
//! `soap.tcp://` frames each envelope with a 4-byte big-endian length (of the envelope's
//! bytes, at most [`MAX_SOAP_FRAME`]) followed by the envelope; [`split_length_prefixed`]
//! reads them. The length's top bit ([`GZIP_FLAG`]) marks a gzip-compressed envelope (the
//! other 31 bits are then the compressed length); a plain frame is as it always was, and
//! [`decode_soap_frame`] reads both. `lather.bin://` frames are self-delimiting
//! ([`super::binary`]).
//!
//! A subscription's SubscriptionEnd may be the last thing written on its stream
//! (`StreamSink::write_last`, see `super::end`).

use super::binary::SubscriptionPart;
use super::soap::Template;
use super::wire::{Out, Wire};
use crate::Subscription;
use crate::delivery::address_policy::DeliveryPolicy;
use crate::delivery::sink_queue::Queued;
use crate::delivery::stamped::Stamped;
use crate::delivery::{DeliveryError, RetryPolicy};
use crate::protocol::compression::GunzipError;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::time::Instant;

/// Largest envelope a `soap.tcp://` frame carries (16 MiB).
pub const MAX_SOAP_FRAME: usize = 16 * 1024 * 1024;

/// The length prefix's top bit: the frame's bytes are a gzip-compressed envelope (sent to
/// subscribers that asked for `lev:Compression` gzip, from the source's threshold on).
/// Uncompressed frames never have it: their length is at most [`MAX_SOAP_FRAME`].
pub const GZIP_FLAG: u32 = 0x8000_0000;

/// Why bytes on a `soap.tcp://` stream are not a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameTooLong(pub usize);

impl std::fmt::Display for FrameTooLong {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "soap.tcp frame of {} bytes exceeds {MAX_SOAP_FRAME}",
            self.0
        )
    }
}

impl std::error::Error for FrameTooLong {}

/// Reads the `soap.tcp://` frame at the start of `buf`: `Ok(None)` if more bytes are
/// needed, else the envelope's bytes and how many bytes the frame took.
pub fn split_length_prefixed(buf: &[u8]) -> Result<Option<(&[u8], usize)>, FrameTooLong> {
    let Some(prefix) = buf.get(..4) else {
        return Ok(None);
    };
    let len = u32::from_be_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]) as usize;
    if len > MAX_SOAP_FRAME {
        return Err(FrameTooLong(len));
    }
    Ok(buf.get(4..4 + len).map(|frame| (frame, 4 + len)))
}

/// Why a `soap.tcp://` frame cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SoapFrameError {
    /// The (compressed) length is beyond [`MAX_SOAP_FRAME`].
    TooLong(FrameTooLong),
    /// The compressed envelope is not gzip, or inflates beyond [`MAX_SOAP_FRAME`].
    Gzip(GunzipError),
}

impl std::fmt::Display for SoapFrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SoapFrameError::TooLong(e) => e.fmt(f),
            SoapFrameError::Gzip(why) => write!(f, "compressed soap.tcp frame: {why}"),
        }
    }
}

impl std::error::Error for SoapFrameError {}

/// A `soap.tcp://` frame's envelope: borrowed from the stream's bytes, or inflated.
pub type SoapEnvelope<'a> = std::borrow::Cow<'a, [u8]>;

/// Reads the `soap.tcp://` frame at the start of `buf`, plain or compressed:
/// `Ok(None)` if more bytes are needed, else the envelope (inflated, at most
/// [`MAX_SOAP_FRAME`] bytes — a frame that inflates beyond is refused) and how many bytes
/// the frame took.
pub fn decode_soap_frame(buf: &[u8]) -> Result<Option<(SoapEnvelope<'_>, usize)>, SoapFrameError> {
    let Some(prefix) = buf.get(..4) else {
        return Ok(None);
    };
    let raw = u32::from_be_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]);
    let gzip = raw & GZIP_FLAG != 0;
    let len = (raw & !GZIP_FLAG) as usize;
    if len > MAX_SOAP_FRAME {
        return Err(SoapFrameError::TooLong(FrameTooLong(len)));
    }
    let Some(frame) = buf.get(4..4 + len) else {
        return Ok(None);
    };
    if !gzip {
        return Ok(Some((std::borrow::Cow::Borrowed(frame), 4 + len)));
    }
    let envelope = crate::protocol::compression::gunzip(frame, MAX_SOAP_FRAME)
        .map_err(SoapFrameError::Gzip)?;
    Ok(Some((std::borrow::Cow::Owned(envelope), 4 + len)))
}

/// How a stream sink writes notifications.
#[derive(Debug)]
pub(crate) enum Encoding {
    SoapLengthPrefixed(Template),
    Binary(SubscriptionPart),
}

/// Most bytes gathered for one write.
const MAX_WRITE: usize = 256 * 1024;

/// A `soap.tcp://` or `lather.bin://` sink.
///
/// Retry budget: a write that fails (or takes no bytes within `policy.timeout`) closes the
/// connection, and the same notifications are written again on a new one after a backoff
/// (`first_backoff`, doubled each time). `policy.attempts` failed connections in a row
/// give the sink up. The count restarts only when a write completes on a connection open
/// for at least `policy.timeout`: a sink that takes a burst into its socket buffers and
/// then reads nothing does not earn new attempts by each fresh connection's buffers.
#[derive(Debug)]
pub(crate) struct StreamSink {
    authority: String,
    encoding: Encoding,
    policy: RetryPolicy,
    stream: Option<TcpStream>,
    /// When the open connection was made.
    opened: Option<Instant>,
    /// Failed connections since the count last restarted.
    failures: u32,
    wire: Wire,
    /// A notification rendered whole, to compress it.
    scratch: Vec<u8>,
    /// Notifications of at least this many bytes go gzip-compressed (`None`: never).
    gzip_from: Option<usize>,
    /// Where connections may go.
    guard: DeliveryPolicy,
}

impl StreamSink {
    pub(crate) fn new(
        sub: &Subscription,
        encoding: Encoding,
        policy: RetryPolicy,
        gzip_from: Option<usize>,
        guard: DeliveryPolicy,
    ) -> StreamSink {
        let address = &sub.notify_to.address;
        let rest = address.split_once("://").map_or("", |(_, rest)| rest);
        StreamSink {
            authority: crate::protocol::address::host_port(rest)
                .unwrap_or(rest)
                .to_owned(),
            encoding,
            policy,
            stream: None,
            opened: None,
            failures: 0,
            wire: Wire::default(),
            scratch: Vec::new(),
            gzip_from,
            guard,
        }
    }

    /// Writes `bytes` (a SubscriptionEnd frame) as the last thing on the stream — after
    /// every notification written before — once, connecting if no connection is open, and
    /// closes the stream.
    pub(crate) async fn write_last(&mut self, bytes: &[u8]) -> Result<(), DeliveryError> {
        self.wire = Wire::of(bytes);
        let written = self.write_once().await;
        if let Some(mut stream) = self.stream.take() {
            let _ = tokio::time::timeout(self.policy.timeout, stream.shutdown()).await;
        }
        written
    }

    pub(crate) async fn deliver(
        &mut self,
        batch: &[Queued],
        ready: &(dyn Fn(&[Queued]) + Send + Sync),
    ) -> Result<(), DeliveryError> {
        let mut start = 0;
        while start < batch.len() {
            self.wire.clear();
            let mut end = start;
            while end < batch.len() && (end == start || self.wire.len() < MAX_WRITE) {
                self.encode(&batch[end])?;
                end += 1;
            }
            ready(&batch[start..end]);
            self.write_with_retries().await?;
            start = end;
        }
        self.wire.clear();
        if self.scratch.capacity() > 4 * MAX_WRITE {
            self.scratch = Vec::new();
        }
        Ok(())
    }

    fn encode(&mut self, event: &Stamped) -> Result<(), DeliveryError> {
        match &self.encoding {
            Encoding::SoapLengthPrefixed(template) => {
                let Some(min) = self.gzip_from else {
                    let prefix_at = self.wire.own_len();
                    let before = self.wire.len();
                    self.wire.own(&[0; 4]);
                    template.render(event, &mut self.wire);
                    let len = self.wire.len() - before - 4;
                    if len > MAX_SOAP_FRAME {
                        return Err(DeliveryError::Encode(FrameTooLong(len).to_string()));
                    }
                    // ≤ MAX_SOAP_FRAME < GZIP_FLAG
                    self.wire.own_mut()[prefix_at..prefix_at + 4]
                        .copy_from_slice(&(len as u32).to_be_bytes());
                    return Ok(());
                };
                self.scratch.clear();
                template.render(event, &mut self.scratch);
                let len = self.scratch.len();
                if len > MAX_SOAP_FRAME {
                    return Err(DeliveryError::Encode(FrameTooLong(len).to_string()));
                }
                match crate::protocol::compression::gzip(&self.scratch, min)
                    .filter(|p| p.len() <= MAX_SOAP_FRAME)
                {
                    Some(packed) => {
                        // ≤ MAX_SOAP_FRAME < GZIP_FLAG
                        let prefix = packed.len() as u32 | GZIP_FLAG;
                        self.wire.own(&prefix.to_be_bytes());
                        self.wire.own(&packed);
                    }
                    None => {
                        self.wire.own(&(len as u32).to_be_bytes());
                        self.wire.own(&self.scratch);
                    }
                }
                Ok(())
            }
            Encoding::Binary(part) => {
                let Some(min) = self.gzip_from else {
                    return part
                        .render(event, &mut self.wire)
                        .map_err(|e| DeliveryError::Encode(e.to_string()));
                };
                self.scratch.clear();
                part.render(event, &mut self.scratch)
                    .map_err(|e| DeliveryError::Encode(e.to_string()))?;
                super::binary::compress_in_place(&mut self.scratch, 0, min);
                self.wire.own(&self.scratch);
                Ok(())
            }
        }
    }

    /// Writes the gathered notifications, on a new connection after a failure, within the
    /// retry budget (see [`StreamSink`]).
    async fn write_with_retries(&mut self) -> Result<(), DeliveryError> {
        loop {
            match self.write_once().await {
                Ok(()) => {
                    if self
                        .opened
                        .is_some_and(|at| at.elapsed() >= self.policy.timeout)
                    {
                        self.failures = 0;
                    }
                    return Ok(());
                }
                Err(why) => {
                    self.stream = None;
                    self.opened = None;
                    self.failures += 1;
                    if self.failures >= self.policy.attempts.max(1) {
                        return Err(why);
                    }
                    let backoff = self
                        .policy
                        .first_backoff
                        .saturating_mul(1 << (self.failures - 1).min(16));
                    tokio::time::sleep(backoff).await;
                }
            }
        }
    }

    async fn write_once(&mut self) -> Result<(), DeliveryError> {
        let timeout = self.policy.timeout;
        if self.stream.is_none() {
            self.stream = Some(super::connect(&self.authority, timeout, &self.guard, false).await?);
            self.opened = Some(Instant::now());
        }
        let Some(stream) = self.stream.as_mut() else {
            return Err(DeliveryError::Connection("no connection".into()));
        };
        tokio::time::timeout(timeout, self.wire.write_to(stream))
            .await
            .map_err(|_| {
                DeliveryError::Timeout(format!(
                    "{} took no bytes within {timeout:?}",
                    self.authority
                ))
            })?
            .map_err(|e| DeliveryError::Connection(format!("writing to {}: {e}", self.authority)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn length_prefixed_frames_split() {
        let bytes = [0, 0, 0, 3, b'a', b'b', b'c', 0, 0];
        assert_eq!(split_length_prefixed(&bytes), Ok(Some((&b"abc"[..], 7))));
        assert_eq!(split_length_prefixed(&bytes[7..]), Ok(None));
        assert_eq!(split_length_prefixed(&bytes[..6]), Ok(None));
        assert_eq!(
            split_length_prefixed(&[0x7f, 0, 0, 0]),
            Err(FrameTooLong(0x7f00_0000))
        );
        // The plain reader (and any reader from before compression) refuses a flagged frame.
        assert_eq!(
            split_length_prefixed(&[0x80, 0, 0, 3]),
            Err(FrameTooLong(0x8000_0003))
        );
    }

    #[test]
    fn compressed_frames_are_flagged_in_the_length_and_inflate() {
        let envelope = b"<e>".repeat(400);
        let packed = crate::protocol::compression::gzip(&envelope, 0).unwrap();
        let mut frame = (packed.len() as u32 | GZIP_FLAG).to_be_bytes().to_vec();
        frame.extend_from_slice(&packed);
        let (got, used) = decode_soap_frame(&frame).unwrap().unwrap();
        assert_eq!((&got[..], used), (&envelope[..], frame.len()));
        assert_eq!(decode_soap_frame(&frame[..frame.len() - 1]).unwrap(), None);
        let plain = [0, 0, 0, 2, b'h', b'i'];
        assert_eq!(
            decode_soap_frame(&plain).unwrap(),
            Some((std::borrow::Cow::Borrowed(&b"hi"[..]), 6))
        );
        let garbage = [0x80, 0, 0, 2, b'h', b'i'];
        assert!(matches!(
            decode_soap_frame(&garbage),
            Err(SoapFrameError::Gzip(_))
        ));
    }
}
