//! Arbitrary bytes into every remote frame decoder: no panic, and whatever decodes encodes
//! back to exactly the same bytes (the layout has one encoding per value).

#![no_main]

use bytes::Bytes;
use lather_remote::frame::{Answer, Progress, Reply, Request};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let bytes = Bytes::copy_from_slice(data);
    if let Ok(request) = Request::decode(bytes.clone()) {
        assert_eq!(request.encode().expect("a decoded request encodes"), bytes);
    }
    if let Ok(answer) = Answer::decode(bytes.clone()) {
        assert_eq!(answer.encode().expect("a decoded answer encodes"), bytes);
    }
    if let Ok(progress) = Progress::decode(bytes.clone()) {
        assert_eq!(progress.encode(), bytes);
    }
    let _ = Reply::decode(bytes);
});
