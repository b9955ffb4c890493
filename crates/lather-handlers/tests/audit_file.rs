//! `audit-file` appends one record per message, in order and whole (small and large
//! alike), under every fsync policy.

use lather_envelope::{Envelope, EnvelopeBuilder, Limits, SoapVersion};
use lather_handlers::{AuditFile, Fsync};
use lather_pipeline::{Context, Handler, Message, Verdict};
use lather_test_util::ScratchDir;
use std::time::Duration;

fn message(id: u128, text: &str) -> Message {
    let bytes = EnvelopeBuilder::new(SoapVersion::V11)
        .body(format!("<m:note xmlns:m=\"urn:m\">{text}</m:note>").into())
        .build();
    Message::new(
        Envelope::parse(bytes, &Limits::default()).unwrap(),
        Context {
            id,
            service: "svc".into(),
            action: None,
            client: None,
            ..Default::default()
        },
    )
}

#[tokio::test]
async fn appends_one_record_per_message_under_every_policy() {
    for (name, fsync) in [
        ("always.log", Fsync::Always),
        ("never.log", Fsync::Never),
        ("every.log", Fsync::Every(Duration::from_millis(5))),
    ] {
        let dir = ScratchDir::new("audit");
        let path = dir.join(name);
        let audit = AuditFile::open(&path, fsync).unwrap();
        // The second is larger than the writer's buffer, so its envelope goes to the file
        // past the buffer, between its buffered head line and the next record.
        let messages: Vec<Message> = (1..=3)
            .map(|i| match i {
                2 => message(i, &"large ".repeat(20_000)),
                _ => message(i, &format!("note {i} &amp; more")),
            })
            .collect();
        for m in &messages {
            assert!(matches!(audit.call(m).await, Verdict::Continue(_)));
        }
        // The handler returned only after its record was written: read it now.
        let text = std::fs::read_to_string(&path).unwrap();
        let mut rest = text.as_str();
        for m in &messages {
            let (head, after) = rest.split_once('\n').unwrap();
            let fields: Vec<&str> = head.split(' ').collect();
            assert_eq!(fields[0], "lather-audit");
            assert_eq!(fields[1], format!("{:032x}", m.context().id));
            assert_eq!(fields[2], "svc");
            let len: usize = fields[4].parse().unwrap();
            let envelope = m.envelope().as_bytes();
            assert_eq!(len, envelope.len());
            assert_eq!(&after.as_bytes()[..len], &envelope[..]);
            rest = &after[len + 1..];
        }
        assert!(rest.is_empty(), "{name}: trailing bytes {rest:?}");
    }
}

#[tokio::test]
async fn an_existing_file_is_appended_to() {
    let dir = ScratchDir::new("audit");
    let path = dir.join("append.log");
    std::fs::write(&path, "earlier\n").unwrap();
    let audit = AuditFile::open(&path, Fsync::Always).unwrap();
    audit.call(&message(9, "x")).await;
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.starts_with("earlier\nlather-audit "), "{text}");
}

#[test]
fn fsync_policies_parse() {
    assert_eq!(Fsync::parse("always"), Some(Fsync::Always));
    assert_eq!(Fsync::parse("never"), Some(Fsync::Never));
    assert_eq!(
        Fsync::parse("250ms"),
        Some(Fsync::Every(Duration::from_millis(250)))
    );
    assert_eq!(Fsync::parse("sometimes"), None);
    assert_eq!(Fsync::parse("250"), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_messages_at_once_are_each_recorded_once_and_whole() {
    let dir = ScratchDir::new("audit");
    let path = dir.join("concurrent.log");
    let audit = std::sync::Arc::new(AuditFile::open(&path, Fsync::Always).unwrap());
    let tasks: Vec<_> = (1..=200u128)
        .map(|id| {
            let audit = audit.clone();
            tokio::spawn(async move {
                let m = message(id, &format!("message {id}"));
                matches!(audit.call(&m).await, Verdict::Continue(_))
            })
        })
        .collect();
    for task in tasks {
        assert!(task.await.unwrap(), "a record was not written");
    }
    // Every handler returned after its (group-)synced write: all 200 records are whole.
    let text = std::fs::read_to_string(&path).unwrap();
    let mut ids = Vec::new();
    let mut rest = text.as_str();
    while let Some((head, after)) = rest.split_once('\n') {
        let fields: Vec<&str> = head.split(' ').collect();
        assert_eq!(fields[0], "lather-audit", "{head}");
        ids.push(u128::from_str_radix(fields[1], 16).unwrap());
        let len: usize = fields[4].parse().unwrap();
        assert!(after[..len].contains("message "), "a record was cut");
        rest = &after[len + 1..];
    }
    ids.sort_unstable();
    assert_eq!(ids, (1..=200).collect::<Vec<u128>>());
}
