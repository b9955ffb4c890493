//! gzip members (RFC 1952) compressed with one deflate state per thread and level, reset
//! for each input.
//!
//! A deflate state is some hundreds of KB to allocate and clear. Built afresh for each
//! message, it is many times the work of compressing a few-KB message; kept per thread and
//! reset, it is allocated once. Used for gzip answers, compressed notifications and the
//! `compress` handler's Bodies.
//!
//! ```
//! use lather_gzip::{Level, gzip};
//! let packed = gzip(b"<e>some text, some text, some text</e>", Level::Default).unwrap();
//! assert_eq!(&packed[..2], &[0x1f, 0x8b]);
//! ```

use flate2::{Compress, Compression, Crc, FlushCompress, Status};
use std::cell::RefCell;

/// How hard to compress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// zlib's level 1: for answers compressed on the way out, where time counts most.
    Fast,
    /// zlib's level 6.
    Default,
}

impl Level {
    fn compression(self) -> Compression {
        match self {
            Level::Fast => Compression::fast(),
            Level::Default => Compression::default(),
        }
    }

    /// The header's XFL byte (RFC 1952 §2.3.1): 4 for the fastest algorithm, else 0.
    fn extra_flags(self) -> u8 {
        match self {
            Level::Fast => 4,
            Level::Default => 0,
        }
    }

    fn index(self) -> usize {
        match self {
            Level::Fast => 0,
            Level::Default => 1,
        }
    }
}

/// `plain` as one gzip member at `level`: no name, no time, unknown OS. `None` only if the
/// deflate state fails, which it does not for input in memory.
pub fn gzip(plain: &[u8], level: Level) -> Option<Vec<u8>> {
    thread_local! {
        static STATES: RefCell<[Option<Compress>; 2]> = const { RefCell::new([None, None]) };
    }
    STATES.with_borrow_mut(|states| {
        let deflate = match &mut states[level.index()] {
            Some(state) => {
                state.reset();
                state
            }
            empty => empty.insert(Compress::new(level.compression(), false)),
        };
        let mut out = Vec::with_capacity(plain.len() / 4 + HEADER_LEN + TRAILER_LEN + 64);
        out.extend_from_slice(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, level.extra_flags(), 255]);
        loop {
            let read = usize::try_from(deflate.total_in()).ok()?;
            let status = deflate
                .compress_vec(&plain[read..], &mut out, FlushCompress::Finish)
                .ok()?;
            if status == Status::StreamEnd {
                break;
            }
            out.reserve(out.capacity().max(64));
        }
        let mut crc = Crc::new();
        crc.update(plain);
        out.extend_from_slice(&crc.sum().to_le_bytes());
        // ISIZE: the input's length modulo 2^32 (RFC 1952 §2.3.1).
        out.extend_from_slice(&(plain.len() as u32).to_le_bytes());
        Some(out)
    })
}

/// A member's header: magic, method, flags, time, XFL, OS.
const HEADER_LEN: usize = 10;
/// A member's trailer: CRC-32 and ISIZE.
const TRAILER_LEN: usize = 8;

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::read::GzDecoder;
    use flate2::write::GzEncoder;
    use std::io::{Read, Write};

    fn gunzip(packed: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        GzDecoder::new(packed).read_to_end(&mut out).unwrap();
        out
    }

    #[test]
    fn round_trips_one_after_another_on_one_thread_at_both_levels() {
        let text: Vec<u8> = "<n:e xmlns:n=\"urn:n\">quote 42</n:e>"
            .repeat(300)
            .into_bytes();
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let noise: Vec<u8> = (0..200_000)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed as u8
            })
            .collect();
        for level in [Level::Fast, Level::Default, Level::Fast] {
            for plain in [&b""[..], b"x", &text, &noise, &text] {
                let packed = gzip(plain, level).unwrap();
                assert_eq!(gunzip(&packed), plain, "{level:?}, {} bytes", plain.len());
                assert_eq!(packed[8], level.extra_flags());
            }
        }
        // Incompressible input outgrows the first guess at the output's size.
        assert!(gzip(&noise, Level::Default).unwrap().len() > noise.len());
        assert!(noise.len() / 4 + HEADER_LEN + TRAILER_LEN + 64 < noise.len());
    }

    #[test]
    fn a_reset_state_writes_what_a_fresh_encoder_writes() {
        let text: Vec<u8> = "<m>some text, some more text</m>".repeat(100).into_bytes();
        let _warm = gzip(b"something else first", Level::Default);
        let mut fresh = GzEncoder::new(Vec::new(), Compression::default());
        fresh.write_all(&text).unwrap();
        assert_eq!(
            gzip(&text, Level::Default).unwrap(),
            fresh.finish().unwrap()
        );
    }
}
