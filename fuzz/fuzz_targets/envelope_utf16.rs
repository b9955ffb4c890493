//! Arbitrary bytes as a UTF-16 message into `Envelope::parse`: the first byte chooses the
//! byte order and whether a byte order mark is put in front. No panic; an accepted message
//! is UTF-8 inside, fits the limit, and is the same envelope as its UTF-8 form parsed
//! directly; a refused one renders a bounded fault that parses back.

#![no_main]

use bytes::Bytes;
use lather_envelope::{Envelope, Limits, SoapVersion};
use libfuzzer_sys::fuzz_target;

const LIMITS: Limits = Limits {
    max_message_bytes: 64 * 1024,
    max_depth: 16,
    max_attributes: 16,
};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let big_endian = mode & 1 == 1;
    let mut message = match (mode & 2 == 2, big_endian) {
        (true, false) => vec![0xFF, 0xFE],
        (true, true) => vec![0xFE, 0xFF],
        (false, _) => Vec::new(),
    };
    message.extend_from_slice(rest);
    match Envelope::parse(Bytes::from(message), &LIMITS) {
        Ok(env) => {
            let utf8 = env.as_bytes();
            assert!(utf8.len() <= LIMITS.max_message_bytes);
            assert!(std::str::from_utf8(utf8).is_ok());
            // Its UTF-8 form is accepted as it stands and is the same envelope.
            let again = Envelope::parse(utf8.clone(), &LIMITS).expect("the UTF-8 form parses");
            assert_eq!(again.as_bytes(), utf8);
            assert_eq!(again.version(), env.version());
            assert_eq!(again.headers(), env.headers());
            assert_eq!(again.operation(), env.operation());
        }
        Err(fault) => {
            for version in [SoapVersion::V11, SoapVersion::V12] {
                let out = fault.to_envelope(version);
                assert!(out.len() < 64 * 1024);
                let back = Envelope::parse(out, &Limits::default()).expect("a fault parses");
                assert!(back.is_fault());
            }
        }
    }
});
