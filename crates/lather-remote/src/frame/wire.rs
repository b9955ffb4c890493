//! Bounded big-endian primitives: the writer the frames are encoded with and the reader
//! that decodes them without trusting any length it reads.

use super::FrameError;
use bytes::{BufMut, Bytes, BytesMut};
use lather_envelope::QName;

/// Appends frame fields to a buffer; lengths that do not fit their field are errors.
#[derive(Debug, Default)]
pub(crate) struct Writer {
    out: BytesMut,
}

impl Writer {
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        Writer {
            out: BytesMut::with_capacity(capacity),
        }
    }

    pub(crate) fn u8(&mut self, v: u8) {
        self.out.put_u8(v);
    }

    pub(crate) fn u16(&mut self, v: u16) {
        self.out.put_u16(v);
    }

    pub(crate) fn u32(&mut self, v: u32) {
        self.out.put_u32(v);
    }

    pub(crate) fn u64(&mut self, v: u64) {
        self.out.put_u64(v);
    }

    pub(crate) fn u128(&mut self, v: u128) {
        self.out.put_u128(v);
    }

    pub(crate) fn raw(&mut self, bytes: &[u8]) {
        self.out.put_slice(bytes);
    }

    /// A count of items, at most 65 535.
    pub(crate) fn count(&mut self, n: usize, what: &'static str) -> Result<(), FrameError> {
        self.u16(u16::try_from(n).map_err(|_| FrameError::TooLong(what))?);
        Ok(())
    }

    /// A UTF-8 string of at most 65 535 bytes, after its u16 length.
    pub(crate) fn str16(&mut self, s: &str, what: &'static str) -> Result<(), FrameError> {
        self.count(s.len(), what)?;
        self.raw(s.as_bytes());
        Ok(())
    }

    /// 0, or 1 and the string.
    pub(crate) fn opt_str16(
        &mut self,
        s: Option<&str>,
        what: &'static str,
    ) -> Result<(), FrameError> {
        match s {
            None => self.u8(0),
            Some(s) => {
                self.u8(1);
                self.str16(s, what)?;
            }
        }
        Ok(())
    }

    /// A byte string of at most 4 GiB − 1, after its u32 length.
    pub(crate) fn blob32(&mut self, b: &[u8], what: &'static str) -> Result<(), FrameError> {
        self.u32(u32::try_from(b.len()).map_err(|_| FrameError::TooLong(what))?);
        self.raw(b);
        Ok(())
    }

    pub(crate) fn qname(&mut self, name: &QName) -> Result<(), FrameError> {
        self.str16(name.namespace(), "namespace name")?;
        self.str16(name.local(), "local name")
    }

    pub(crate) fn finish(self) -> Bytes {
        self.out.freeze()
    }
}

/// Reads frame fields from received bytes. Every length is checked against what is left
/// before anything is sliced or allocated, so no input makes it allocate more than its
/// own size, and none makes it panic.
#[derive(Debug)]
pub(crate) struct Reader {
    buf: Bytes,
    pos: usize,
}

impl Reader {
    pub(crate) fn new(buf: Bytes) -> Self {
        Reader { buf, pos: 0 }
    }

    pub(crate) fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// The next `n` bytes, borrowed: fixed-size fields and strings are read from here
    /// without touching the buffer's reference count.
    fn next(&mut self, n: usize, what: &'static str) -> Result<&[u8], FrameError> {
        let start = self.pos;
        let end = start
            .checked_add(n)
            .filter(|&end| end <= self.buf.len())
            .ok_or(FrameError::Truncated(what))?;
        self.pos = end;
        Ok(&self.buf[start..end])
    }

    /// The next `n` bytes as a slice of the frame that shares its buffer (no copy).
    fn take(&mut self, n: usize, what: &'static str) -> Result<Bytes, FrameError> {
        let start = self.pos;
        self.next(n, what)?;
        Ok(self.buf.slice(start..self.pos))
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], FrameError> {
        let mut out = [0; N];
        out.copy_from_slice(self.next(N, what)?);
        Ok(out)
    }

    pub(crate) fn u8(&mut self, what: &'static str) -> Result<u8, FrameError> {
        Ok(self.array::<1>(what)?[0])
    }

    pub(crate) fn u16(&mut self, what: &'static str) -> Result<u16, FrameError> {
        Ok(u16::from_be_bytes(self.array(what)?))
    }

    pub(crate) fn u32(&mut self, what: &'static str) -> Result<u32, FrameError> {
        Ok(u32::from_be_bytes(self.array(what)?))
    }

    pub(crate) fn u64(&mut self, what: &'static str) -> Result<u64, FrameError> {
        Ok(u64::from_be_bytes(self.array(what)?))
    }

    pub(crate) fn u128(&mut self, what: &'static str) -> Result<u128, FrameError> {
        Ok(u128::from_be_bytes(self.array(what)?))
    }

    /// The next `n` bytes, borrowed.
    pub(crate) fn raw(&mut self, n: usize, what: &'static str) -> Result<&[u8], FrameError> {
        self.next(n, what)
    }

    /// A count of items each at least `min_item` bytes long: refused if the rest of the
    /// frame could not hold that many, so a vector sized by it is bounded by the input.
    pub(crate) fn count(
        &mut self,
        min_item: usize,
        what: &'static str,
    ) -> Result<usize, FrameError> {
        let n = usize::from(self.u16(what)?);
        if n.saturating_mul(min_item.max(1)) > self.remaining() {
            return Err(FrameError::Truncated(what));
        }
        Ok(n)
    }

    pub(crate) fn str16(&mut self, what: &'static str) -> Result<String, FrameError> {
        let n = usize::from(self.u16(what)?);
        let bytes = self.next(n, what)?;
        std::str::from_utf8(bytes)
            .map(str::to_owned)
            .map_err(|_| FrameError::NotUtf8(what))
    }

    pub(crate) fn opt_str16(&mut self, what: &'static str) -> Result<Option<String>, FrameError> {
        match self.u8(what)? {
            0 => Ok(None),
            1 => self.str16(what).map(Some),
            _ => Err(FrameError::BadValue(what)),
        }
    }

    pub(crate) fn blob32(&mut self, what: &'static str) -> Result<Bytes, FrameError> {
        let n = usize::try_from(self.u32(what)?).map_err(|_| FrameError::Truncated(what))?;
        self.take(n, what)
    }

    pub(crate) fn qname(&mut self) -> Result<QName, FrameError> {
        let ns = self.str16("namespace name")?;
        let local = self.str16("local name")?;
        if local.is_empty() {
            return Err(FrameError::BadValue("local name"));
        }
        Ok(QName::new(ns, local))
    }

    /// Fails unless every byte was read.
    pub(crate) fn end(&self) -> Result<(), FrameError> {
        if self.remaining() == 0 {
            Ok(())
        } else {
            Err(FrameError::TrailingBytes(self.remaining()))
        }
    }
}
