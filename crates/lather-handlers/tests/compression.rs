//! `compress` and `decompress` on real messages, with vectors made by Python's `gzip` and
//! `zlib` modules (`gzip.compress(content, mtime=0)`, `zlib.compress(content)`, base64).

use lather_envelope::{Envelope, EnvelopeBuilder, FaultKind, Limits, SoapVersion};
use lather_handlers::{Algorithm, COMPRESSION_NS, Compress, Decompress};
use lather_pipeline::{Context, Handler, Message, Options, Outcome, Plan, Step, run};
use std::sync::Arc;

/// The original Body content (96 bytes, with a non-ASCII character and an entity).
const CONTENT: &str = r#"<q:getQuote xmlns:q="urn:quotes"><symbol>LATH</symbol><note>café &amp; more</note></q:getQuote>"#;
const GZIP_B64: &str = "H4sIAAAAAAACA7MptEpPLQkszS9JVajIzckrtiq0VSotyrMqBAkVK9nZFFfmJuXn2Pk4hnjY6EM5NnlASbvkxLTDKxXUEnMLrBVy84tSbfTBwjb6CDPtAIhwSMtgAAAA";
const DEFLATE_B64: &str = "eJyzKbRKTy0JLM0vSVWoyM3JK7YqtFUqLcqzKgQJFSvZ2RRX5ibl59j5OIZ42OhDOTZ5QEm75MS0wysV1BJzC6wVcvOLUm30wcI2+ggz7QCnXiLz";

fn message(body: &str) -> Message {
    let bytes = EnvelopeBuilder::new(SoapVersion::V12)
        .body(body.to_owned().into())
        .build();
    let envelope = Envelope::parse(bytes, &Limits::default()).unwrap();
    Message::new(
        envelope,
        Context {
            id: 1,
            service: "s".into(),
            action: None,
            client: None,
            ..Default::default()
        },
    )
}

fn compressed(algorithm: &str, b64: &str) -> String {
    format!(
        r#"<lc:Compressed xmlns:lc="{COMPRESSION_NS}" algorithm="{algorithm}" length="96">{b64}</lc:Compressed>"#
    )
}

async fn through(handlers: Vec<Arc<dyn Handler>>, body: &str) -> Outcome {
    let stages = handlers
        .into_iter()
        .enumerate()
        .map(|(i, h)| vec![Arc::new(Step::new(format!("h{i}"), h, Options::default()))])
        .collect();
    run(
        &Plan::new(stages).unwrap(),
        message(body),
        &Limits::default(),
    )
    .await
}

fn body_of(outcome: Outcome) -> String {
    match outcome {
        Outcome::Continue(m) => String::from_utf8(m.envelope().body().to_vec()).unwrap(),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn decompresses_the_independent_vectors() {
    assert_eq!(CONTENT.len(), 96);
    for (algorithm, b64) in [("gzip", GZIP_B64), ("deflate", DEFLATE_B64)] {
        let out = through(
            vec![Arc::new(Decompress::new(1 << 20))],
            &compressed(algorithm, b64),
        )
        .await;
        assert_eq!(body_of(out), CONTENT, "{algorithm}");
    }
}

#[tokio::test]
async fn a_wrong_stated_length_or_base64_broken_by_whitespace_changes_nothing() {
    let broken = |b64: &str| {
        let mut out = String::new();
        for (i, c) in b64.chars().enumerate() {
            out.push(c);
            if i % 19 == 18 {
                out.push_str(if i % 2 == 0 { "\n  " } else { "\t\r\n" });
            }
        }
        out
    };
    for (algorithm, b64) in [("gzip", GZIP_B64), ("deflate", DEFLATE_B64)] {
        for length in ["0", "1", "95", "97", "100000000", "-5", "many"] {
            for text in [b64.to_owned(), broken(b64)] {
                let body = format!(
                    r#"<lc:Compressed xmlns:lc="{COMPRESSION_NS}" algorithm="{algorithm}" length="{length}">{text}</lc:Compressed>"#
                );
                let out = through(vec![Arc::new(Decompress::new(1 << 20))], &body).await;
                assert_eq!(body_of(out), CONTENT, "{algorithm}, length {length}");
            }
        }
    }
}

#[tokio::test]
async fn compress_then_decompress_gives_the_body_back() {
    for algorithm in [Algorithm::Gzip, Algorithm::Deflate] {
        let out = through(vec![Arc::new(Compress::new(algorithm, 10))], CONTENT).await;
        let squeezed = body_of(out);
        assert!(squeezed.starts_with("<lc:Compressed"), "{squeezed}");
        let out = through(
            vec![
                Arc::new(Compress::new(algorithm, 10)),
                Arc::new(Decompress::new(1 << 20)),
            ],
            CONTENT,
        )
        .await;
        assert_eq!(body_of(out), CONTENT);
    }
}

#[tokio::test]
async fn small_and_plain_bodies_pass_as_they_are() {
    assert_eq!(
        body_of(
            through(
                vec![Arc::new(Compress::new(Algorithm::Gzip, 1024))],
                CONTENT
            )
            .await
        ),
        CONTENT
    );
    assert_eq!(
        body_of(through(vec![Arc::new(Decompress::new(1 << 20))], CONTENT).await),
        CONTENT
    );
}

#[tokio::test]
async fn bombs_and_garbage_are_refused() {
    let fault = |outcome: Outcome| match outcome {
        Outcome::Fault(f) => f,
        other => panic!("{other:?}"),
    };
    let f = fault(
        through(
            vec![Arc::new(Decompress::new(50))],
            &compressed("gzip", GZIP_B64),
        )
        .await,
    );
    assert_eq!(f.kind(), FaultKind::DecodedTooLarge);
    let f = fault(
        through(
            vec![Arc::new(Decompress::new(1 << 20))],
            &compressed("gzip", "not base64!"),
        )
        .await,
    );
    assert_eq!(f.kind(), FaultKind::BadCompressedBody);
    let f = fault(
        through(
            vec![Arc::new(Decompress::new(1 << 20))],
            &compressed("gzip", DEFLATE_B64),
        )
        .await,
    );
    assert_eq!(f.kind(), FaultKind::BadCompressedBody);
    let f = fault(
        through(
            vec![Arc::new(Decompress::new(1 << 20))],
            &compressed("brotli", GZIP_B64),
        )
        .await,
    );
    assert!(f.reason().contains("unknown algorithm"), "{}", f.reason());
}
