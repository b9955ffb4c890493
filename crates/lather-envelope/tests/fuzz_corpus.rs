//! Replays the fuzz seed corpus (`fuzz/corpus/envelope_parse/`) and this crate's sample
//! documents through the parser with the fuzz target's limits, so an input the fuzzer once
//! crashed on, once added to the corpus, stays covered by `cargo test`.

use lather_envelope::{Bytes, Edit, Envelope, Limits};
use std::path::PathBuf;

const LIMITS: Limits = Limits {
    max_message_bytes: 64 * 1024,
    max_depth: 16,
    max_attributes: 16,
};

fn inputs() -> Vec<(PathBuf, Bytes)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    for dir in ["../../fuzz/corpus/envelope_parse", "tests/documents"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_file() {
                let bytes = std::fs::read(&path).unwrap();
                out.push((path, Bytes::from(bytes)));
            }
        }
    }
    out
}

#[test]
fn corpus_inputs_parse_or_refuse_cleanly() {
    let inputs = inputs();
    assert!(inputs.len() >= 7, "the sample documents at least");
    let mut accepted = 0;
    for (path, bytes) in inputs {
        let Ok(env) = Envelope::parse(bytes.clone(), &LIMITS) else {
            continue;
        };
        accepted += 1;
        assert_eq!(env.write(&[]).unwrap(), bytes, "{}", path.display());
        for block in env.headers() {
            let extracted = env.extract_header(block);
            Edit::add_header(extracted).unwrap_or_else(|f| panic!("{}: {f}", path.display()));
        }
        if let Some(payload) = env.extract_payload() {
            Edit::replace_body(payload).unwrap_or_else(|f| panic!("{}: {f}", path.display()));
        }
        let edits = [
            Edit::add_header(Bytes::from_static(b"<n:A xmlns:n=\"urn:n\"/>")).unwrap(),
            Edit::replace_body(Bytes::from_static(b"<n:B xmlns:n=\"urn:n\"/>")).unwrap(),
        ];
        let out = env.write(&edits).unwrap();
        let again = Envelope::parse(out, &LIMITS)
            .unwrap_or_else(|f| panic!("{}: edited copy refused: {f}", path.display()));
        assert_eq!(again.headers().len(), env.headers().len() + 1);
    }
    assert!(accepted >= 5);
}
