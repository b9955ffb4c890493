//! Fuzzes `Envelope::parse` with small limits. Whatever it accepts must hold together:
//! every accessor works and agrees with the bytes, extracted header blocks and payloads are
//! well-formed on their own and mean the same in another envelope, and writing with edits
//! gives an envelope that parses again with exactly the expected header blocks and Body.

#![no_main]

use lather_envelope::{
    Bytes, Edit, EditError, Envelope, EnvelopeBuilder, FaultKind, Limits, SoapVersion,
};
use libfuzzer_sys::fuzz_target;

/// Small limits, so deep or wide input is refused early and extracted parts stay within the
/// default limits the re-parses use.
const LIMITS: Limits = Limits {
    max_message_bytes: 64 * 1024,
    max_depth: 16,
    max_attributes: 16,
};

const ADDED: &[u8] = br#"<fz:Added xmlns:fz="urn:fuzz" fz:a="1">added &amp; text</fz:Added>"#;
const REPLACED: &[u8] = br#"<fz:Replaced xmlns:fz="urn:fuzz"/>"#;
const BODY: &[u8] = br#"<fz:Op xmlns:fz="urn:fuzz"><fz:Arg>1</fz:Arg></fz:Op>"#;

fn reparse(bytes: Bytes, what: &str) -> Envelope {
    match Envelope::parse(bytes.clone(), &Limits::default()) {
        Ok(env) => env,
        Err(fault) => panic!(
            "{what} refused ({fault}):\n{}",
            String::from_utf8_lossy(&bytes)
        ),
    }
}

/// An empty envelope of `version`, to move extracted parts into.
fn fixed(version: SoapVersion) -> Envelope {
    let xml = format!(
        r#"<fz-env:Envelope xmlns:fz-env="{}"><fz-env:Body/></fz-env:Envelope>"#,
        version.namespace()
    );
    Envelope::parse(xml.into(), &Limits::default()).expect("fixed envelope")
}

fuzz_target!(|data: &[u8]| {
    let bytes = Bytes::copy_from_slice(data);
    let env = match Envelope::parse(bytes.clone(), &LIMITS) {
        Ok(env) => env,
        Err(fault) => {
            // Every refusal renders as a fault envelope that parses back as a fault.
            let _ = (fault.reason(), fault.to_string());
            if data.len() % 7 == 0 {
                for version in [SoapVersion::V11, SoapVersion::V12] {
                    let msg = reparse(fault.to_envelope(version), "fault envelope");
                    assert!(msg.is_fault());
                    let _ = fault.http_status(version);
                }
            }
            return;
        }
    };
    let version = env.version();
    assert_eq!(env.as_bytes(), &bytes);
    assert_eq!(env.write(&[]).unwrap(), bytes);

    // ===== header blocks =====
    for (i, block) in env.headers().iter().enumerate() {
        let range = block.range();
        let content = block.content_range();
        assert!(range.end <= bytes.len());
        assert!(range.start <= content.start && content.end <= range.end);
        assert_eq!(env.header_bytes(block), bytes.slice(range.clone()));
        assert_eq!(bytes[range.start], b'<');
        assert_eq!(bytes[range.end - 1], b'>');
        assert!(!block.name().namespace().is_empty());
        let first = env.header_index(block.name()).unwrap();
        assert!(first <= i);
        assert_eq!(env.header(block.name()), Some(&env.headers()[first]));
        if let Some(text) = env.header_text(block) {
            assert!(!text.starts_with([' ', '\t', '\r', '\n']));
        }
        let _ = (block.role(), block.relay(), block.must_understand());

        // Extracted, the block is one well-formed element that means the same elsewhere.
        let extracted = env.extract_header(block);
        let edit = Edit::add_header(extracted.clone()).unwrap_or_else(|f| {
            panic!(
                "extracted block refused ({f}):\n{}",
                String::from_utf8_lossy(&extracted)
            )
        });
        let moved = reparse(fixed(version).write(&[edit]).unwrap(), "moved header block");
        let [copy] = moved.headers() else {
            panic!("one block expected")
        };
        assert_eq!(copy.name(), block.name());
        assert_eq!(copy.must_understand(), block.must_understand());
        assert_eq!(copy.role(), block.role());
        assert_eq!(copy.relay(), block.relay());
        assert_eq!(moved.header_text(copy), env.header_text(block));
    }
    if !env.has_header_element() {
        assert!(env.headers().is_empty());
    }

    // ===== body =====
    let body = env.body();
    assert_eq!(body, bytes.slice(env.body_range()));
    assert_eq!(env.operation().is_some(), env.body_child_count() > 0);
    let _ = env.is_fault();
    match env.extract_payload() {
        None => assert!(env.operation().is_none()),
        Some(payload) => {
            let edit = Edit::replace_body(payload.clone()).unwrap_or_else(|f| {
                panic!(
                    "extracted payload refused ({f}):\n{}",
                    String::from_utf8_lossy(&payload)
                )
            });
            let moved = reparse(fixed(version).write(&[edit]).unwrap(), "moved payload");
            assert_eq!(moved.operation(), env.operation());
            assert_eq!(moved.body_child_count(), 1);
        }
    }
    // The Body's content, with the namespaces in scope, moves to a new envelope intact.
    let rebuilt = EnvelopeBuilder::new(version)
        .body_namespaces(env.body_namespaces())
        .body(body.clone())
        .build();
    let rebuilt = reparse(rebuilt, "rebuilt body");
    assert_eq!(rebuilt.operation(), env.operation());
    assert_eq!(rebuilt.body_child_count(), env.body_child_count());
    assert_eq!(rebuilt.body(), body);

    // ===== edits =====
    let n = env.headers().len();
    let mut edits = vec![
        Edit::add_header(Bytes::from_static(ADDED)).unwrap(),
        Edit::replace_body(Bytes::from_static(BODY)).unwrap(),
    ];
    let mut expected: Vec<Bytes> = env.headers().iter().map(|h| env.header_bytes(h)).collect();
    if n >= 2 {
        edits.push(Edit::replace_header(n - 1, Bytes::from_static(REPLACED)).unwrap());
        expected[n - 1] = Bytes::from_static(REPLACED);
    }
    if n >= 1 {
        edits.push(Edit::remove_header(0));
        expected.remove(0);
    }
    expected.push(Bytes::from_static(ADDED));
    let out = env.write(&edits).unwrap();
    let again = match Envelope::parse(out.clone(), &LIMITS) {
        Ok(again) => again,
        Err(fault) => panic!(
            "edited envelope refused ({fault}):\n{}\nfrom:\n{}",
            String::from_utf8_lossy(&out),
            String::from_utf8_lossy(&bytes)
        ),
    };
    assert_eq!(again.version(), version);
    let got: Vec<Bytes> = again
        .headers()
        .iter()
        .map(|h| again.header_bytes(h))
        .collect();
    assert_eq!(got, expected);
    assert_eq!(again.body(), Bytes::from_static(BODY));
    assert!(again.has_header_element());

    // Conflicts and bad indexes are refused, not applied.
    let body_twice = [
        Edit::replace_body(Bytes::new()).unwrap(),
        Edit::replace_body(Bytes::new()).unwrap(),
    ];
    assert!(matches!(
        env.write(&body_twice),
        Err(EditError::Conflict(_))
    ));
    assert_eq!(
        env.write(&[Edit::remove_header(n)]),
        Err(EditError::NoSuchHeader(n))
    );
    let _ = FaultKind::ALL;
});
