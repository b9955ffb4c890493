//! The bytes of one write to a sink, gathered without copying events: the sink's own
//! bytes (request lines, per-subscription headers, frame heads) in one buffer, and each
//! event's payload as a shared reference to the published event's bytes. Written with
//! vectored writes, so a big event sent to many sinks is in memory once, not once per
//! sink (a gzip-compressed notification is the exception: its bytes are the sink's own;
//! so are payloads under [`SHARE_FROM`] bytes, cheaper to copy than to share).

use bytes::Bytes;
use std::io::IoSlice;
use tokio::io::{AsyncWrite, AsyncWriteExt};

/// Where a notification is rendered: own bytes are copied, an event's payload may be
/// shared.
pub(crate) trait Out {
    /// Appends bytes of the sink's own.
    fn own(&mut self, bytes: &[u8]);
    /// Appends an event's payload.
    fn payload(&mut self, payload: &Bytes);
}

impl Out for Vec<u8> {
    fn own(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }

    fn payload(&mut self, payload: &Bytes) {
        self.extend_from_slice(payload);
    }
}

/// One part of a write.
#[derive(Debug)]
enum Part {
    /// `own[start..end]`.
    Own(usize, usize),
    Shared(Bytes),
}

/// The parts of one write, in order.
#[derive(Debug, Default)]
pub(crate) struct Wire {
    own: Vec<u8>,
    /// Where the own bytes not yet in `parts` start.
    open: usize,
    parts: Vec<Part>,
    /// Bytes of the shared parts.
    shared_len: usize,
}

/// Payloads of at least this many bytes are shared; smaller ones are copied into the own
/// bytes, which costs less than a shared reference (two atomic counts) and a slice of the
/// vectored write of their own.
const SHARE_FROM: usize = 1024;

/// Most slices handed to one vectored write.
const MAX_SLICES: usize = 64;

impl Out for Wire {
    fn own(&mut self, bytes: &[u8]) {
        self.own.extend_from_slice(bytes);
    }

    fn payload(&mut self, payload: &Bytes) {
        if payload.len() < SHARE_FROM {
            self.own(payload);
            return;
        }
        self.close_own();
        self.shared_len += payload.len();
        self.parts.push(Part::Shared(payload.clone()));
    }
}

impl Wire {
    /// A write of `bytes` alone.
    pub(crate) fn of(bytes: &[u8]) -> Wire {
        let mut wire = Wire::default();
        wire.own(bytes);
        wire
    }

    fn close_own(&mut self) {
        if self.own.len() > self.open {
            self.parts.push(Part::Own(self.open, self.own.len()));
            self.open = self.own.len();
        }
    }

    /// All bytes so far.
    pub(crate) fn len(&self) -> usize {
        self.own.len() + self.shared_len
    }

    /// The own bytes, to patch a field written before its value was known (positions
    /// are [`Wire::own_len`] values taken when the field was appended).
    pub(crate) fn own_mut(&mut self) -> &mut Vec<u8> {
        &mut self.own
    }

    /// How many own bytes there are (a position in [`Wire::own_mut`]).
    pub(crate) fn own_len(&self) -> usize {
        self.own.len()
    }

    /// Forgets every part (keeping small buffers for reuse).
    pub(crate) fn clear(&mut self) {
        self.own.clear();
        if self.own.capacity() > 1024 * 1024 {
            self.own = Vec::new();
        }
        self.open = 0;
        self.parts.clear();
        self.shared_len = 0;
    }

    /// Writes every part to `w`, in order.
    pub(crate) async fn write_to<W: AsyncWrite + Unpin>(
        &mut self,
        w: &mut W,
    ) -> std::io::Result<()> {
        self.close_own();
        // (part, offset in it) of the next byte to write.
        let (mut part, mut offset) = (0usize, 0usize);
        while part < self.parts.len() {
            let mut slices = Vec::with_capacity(MAX_SLICES.min(self.parts.len() - part));
            for (i, p) in self.parts[part..].iter().take(MAX_SLICES).enumerate() {
                let bytes = self.bytes(p);
                let skip = if i == 0 { offset } else { 0 };
                slices.push(IoSlice::new(&bytes[skip..]));
            }
            let mut n = w.write_vectored(&slices).await?;
            if n == 0 {
                return Err(std::io::ErrorKind::WriteZero.into());
            }
            while n > 0 && part < self.parts.len() {
                let left = self.bytes(&self.parts[part]).len() - offset;
                if n >= left {
                    n -= left;
                    part += 1;
                    offset = 0;
                } else {
                    offset += n;
                    n = 0;
                }
            }
        }
        w.flush().await
    }

    fn bytes<'a>(&'a self, part: &'a Part) -> &'a [u8] {
        match part {
            Part::Own(start, end) => &self.own[*start..*end],
            Part::Shared(b) => b,
        }
    }

    /// Every byte in one buffer (for tests and for compressing).
    #[cfg(test)]
    pub(crate) fn gathered(&mut self) -> Vec<u8> {
        self.close_own();
        self.parts
            .iter()
            .flat_map(|p| self.bytes(p).to_vec())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn parts_go_out_in_order_and_payloads_are_not_copied() {
        let payload = Bytes::from(vec![b'p'; 300_000]);
        let small = Bytes::from_static(b"<small/>");
        let mut wire = Wire::default();
        for i in 0..100u8 {
            wire.own(&[b'<', i, b'>']);
            wire.payload(&payload);
        }
        wire.payload(&small);
        wire.own(b"end");
        assert_eq!(wire.len(), 100 * 300_003 + 8 + 3);
        // Only the own bytes are the wire's: the big payload is shared, the small one
        // copied next to the own bytes around it (one slice for `<small/>end`).
        assert!(wire.own.capacity() < 4096);
        wire.close_own();
        assert!(matches!(wire.parts.last(), Some(Part::Own(s, e)) if e - s == 11));
        let expected = wire.gathered();
        let (mut a, mut b) = tokio::io::duplex(64 * 1024);
        let reader = tokio::spawn(async move {
            let mut got = Vec::new();
            b.read_to_end(&mut got).await.unwrap();
            got
        });
        wire.write_to(&mut a).await.unwrap();
        drop(a);
        assert_eq!(reader.await.unwrap(), expected);
    }
}
