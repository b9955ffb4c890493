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
//! ([`StreamSink::write_last`], see `super::end`).

use super::binary::SubscriptionPart;
use super::soap::Template;
use crate::Subscription;
use crate::address_policy::DeliveryPolicy;
use crate::delivery::RetryPolicy;
use crate::event::Stamped;
use std::sync::Arc;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

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
    Gzip(String),
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
    let envelope =
        crate::compression::gunzip(frame, MAX_SOAP_FRAME).map_err(SoapFrameError::Gzip)?;
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
#[derive(Debug)]
pub(crate) struct StreamSink {
    authority: String,
    encoding: Encoding,
    policy: RetryPolicy,
    stream: Option<TcpStream>,
    buffer: Vec<u8>,
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
            authority: super::host_port(rest).unwrap_or(rest).to_owned(),
            encoding,
            policy,
            stream: None,
            buffer: Vec::new(),
            gzip_from,
            guard,
        }
    }

    /// Writes `bytes` (a SubscriptionEnd frame) as the last thing on the stream — after
    /// every notification written before — once, connecting if no connection is open, and
    /// closes the stream.
    pub(crate) async fn write_last(&mut self, bytes: &[u8]) -> Result<(), String> {
        self.buffer.clear();
        self.buffer.extend_from_slice(bytes);
        let written = self.write_once().await;
        if let Some(mut stream) = self.stream.take() {
            let _ = tokio::time::timeout(self.policy.timeout, stream.shutdown()).await;
        }
        written
    }

    pub(crate) async fn deliver(
        &mut self,
        batch: &[Arc<Stamped>],
        ready: &(dyn Fn(&[Arc<Stamped>]) + Send + Sync),
    ) -> Result<(), String> {
        let mut start = 0;
        while start < batch.len() {
            self.buffer.clear();
            let mut end = start;
            while end < batch.len() && (end == start || self.buffer.len() < MAX_WRITE) {
                self.encode(&batch[end])?;
                end += 1;
            }
            ready(&batch[start..end]);
            self.write_with_retries().await?;
            start = end;
        }
        // Keep a big buffer from one burst from living on.
        if self.buffer.capacity() > 4 * MAX_WRITE {
            self.buffer = Vec::new();
        }
        Ok(())
    }

    fn encode(&mut self, event: &Stamped) -> Result<(), String> {
        match &self.encoding {
            Encoding::SoapLengthPrefixed(template) => {
                let at = self.buffer.len();
                self.buffer.extend_from_slice(&[0; 4]);
                template.render(event, &mut self.buffer);
                let len = self.buffer.len() - at - 4;
                if len > MAX_SOAP_FRAME {
                    self.buffer.truncate(at);
                    return Err(FrameTooLong(len).to_string());
                }
                let mut prefix = len as u32;
                if let Some(packed) = self
                    .gzip_from
                    .and_then(|min| crate::compression::gzip(&self.buffer[at + 4..], min))
                    .filter(|p| p.len() <= MAX_SOAP_FRAME)
                {
                    self.buffer.truncate(at + 4);
                    self.buffer.extend_from_slice(&packed);
                    // ≤ MAX_SOAP_FRAME < GZIP_FLAG
                    prefix = packed.len() as u32 | GZIP_FLAG;
                }
                self.buffer[at..at + 4].copy_from_slice(&prefix.to_be_bytes());
                Ok(())
            }
            Encoding::Binary(part) => {
                let at = self.buffer.len();
                part.render(event, &mut self.buffer)
                    .map_err(|e| e.to_string())?;
                if let Some(min) = self.gzip_from {
                    super::binary::compress_in_place(&mut self.buffer, at, min);
                }
                Ok(())
            }
        }
    }

    async fn write_with_retries(&mut self) -> Result<(), String> {
        let policy = self.policy;
        let mut backoff = policy.first_backoff;
        let mut last = String::new();
        for attempt in 0..policy.attempts.max(1) {
            if attempt > 0 {
                tokio::time::sleep(backoff).await;
                backoff = backoff.saturating_mul(2);
            }
            match self.write_once().await {
                Ok(()) => return Ok(()),
                Err(why) => {
                    self.stream = None;
                    last = why;
                }
            }
        }
        Err(last)
    }

    async fn write_once(&mut self) -> Result<(), String> {
        let timeout = self.policy.timeout;
        if self.stream.is_none() {
            self.stream = Some(super::connect(&self.authority, timeout, &self.guard, false).await?);
        }
        let Some(stream) = self.stream.as_mut() else {
            return Err("no connection".into());
        };
        tokio::time::timeout(timeout, stream.write_all(&self.buffer))
            .await
            .map_err(|_| format!("{} took no bytes within {timeout:?}", self.authority))?
            .map_err(|e| format!("writing to {}: {e}", self.authority))
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
        let packed = crate::compression::gzip(&envelope, 0).unwrap();
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
