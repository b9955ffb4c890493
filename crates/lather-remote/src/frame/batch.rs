//! A batch frame: several request frames for one handler sent to the workers as one NATS
//! message (transfer batching, `[nats] batch_max_items`), each with the reply subject its
//! caller listens on, so the worker answers each as if it had come alone.

use super::wire::{Reader, Writer};
use super::{FrameError, KIND_BATCH, read_start, write_start};
use bytes::Bytes;

/// One request in a batch: the caller's reply subject and the request frame's bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchItem {
    /// Where the worker sends this request's acknowledgement, heartbeats and answer;
    /// empty in a batch of oneway hand-offs, which are not answered.
    pub reply: String,
    /// The request frame, as [`super::CallRequest::encode`] made it.
    pub frame: Bytes,
}

/// Requests for one handler travelling together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallBatch {
    /// The requests, in the order they were gathered.
    pub items: Vec<BatchItem>,
}

impl CallBatch {
    /// Start, a u16 count, then per item the reply subject (u16 length) and the request
    /// frame (u32 length).
    pub fn encode(&self) -> Result<Bytes, FrameError> {
        let size: usize = self
            .items
            .iter()
            .map(|i| 6 + i.reply.len() + i.frame.len())
            .sum();
        let mut w = Writer::with_capacity(8 + size);
        write_start(&mut w, KIND_BATCH);
        w.count(self.items.len(), "batch item count")?;
        for item in &self.items {
            w.str16(&item.reply, "reply subject")?;
            w.blob32(&item.frame, "batched request")?;
        }
        Ok(w.finish())
    }

    /// Reads a batch frame; any other bytes are a [`FrameError`]. The request frames are
    /// not decoded here (each is decoded as it is handled).
    pub fn decode(bytes: Bytes) -> Result<CallBatch, FrameError> {
        let mut r = Reader::new(bytes);
        read_start(&mut r, KIND_BATCH)?;
        let n = r.count(6, "batch item count")?;
        let mut items = Vec::with_capacity(n);
        for _ in 0..n {
            let reply = r.str16("reply subject")?;
            let frame = r.blob32("batched request")?;
            items.push(BatchItem { reply, frame });
        }
        r.end()?;
        Ok(CallBatch { items })
    }

    /// Whether `bytes` start like a batch frame (this build's magic, version and kind).
    pub fn is_batch(bytes: &[u8]) -> bool {
        bytes.len() >= 6
            && bytes[..4] == super::MAGIC
            && bytes[4] == super::VERSION
            && bytes[5] == KIND_BATCH
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_round_trips_and_damaged_ones_are_refused() {
        let batch = CallBatch {
            items: vec![
                BatchItem {
                    reply: "_INBOX.a".into(),
                    frame: Bytes::from_static(b"LTHR\x03\x01one"),
                },
                BatchItem {
                    reply: "_INBOX.b".into(),
                    frame: Bytes::from_static(b"two"),
                },
            ],
        };
        let bytes = batch.encode().unwrap();
        assert!(CallBatch::is_batch(&bytes));
        assert_eq!(CallBatch::decode(bytes.clone()).unwrap(), batch);
        for cut in 0..bytes.len() {
            assert!(
                CallBatch::decode(bytes.slice(..cut)).is_err(),
                "cut at {cut}"
            );
        }
        let mut longer = bytes.to_vec();
        longer.push(0);
        assert_eq!(
            CallBatch::decode(longer.into()),
            Err(FrameError::TrailingBytes(1))
        );
        // A count larger than the bytes could hold is refused before allocating.
        let mut huge = bytes[..6].to_vec();
        huge.extend_from_slice(&[0xff, 0xff]);
        assert!(matches!(
            CallBatch::decode(huge.into()),
            Err(FrameError::Truncated(_))
        ));
        assert!(!CallBatch::is_batch(b"LTHR\x03\x01"));
    }
}
