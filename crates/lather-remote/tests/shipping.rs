//! Partial shipping: a request frame holds only what the handler reads, and the worker's
//! rebuilt message gives the handler the same view of those parts.

use bytes::Bytes;
use lather_envelope::{Envelope, Limits, QName};
use lather_pipeline::{Access, Context, Direction, Message, Parts};
use lather_remote::frame::{CallRequest, Payload};
use lather_remote::{rebuild_message, request_for, trace_id};

const SEC: &str = "urn:example:sec";

/// A SOAP 1.1 message of about 16 KB: a small security header, a trace header and a large
/// Body whose prefix is declared on the Envelope.
fn big_message() -> Message {
    let items: String = (0..380)
        .map(|i| format!("<q:Item n=\"{i}\">quote-{i:05}-IBM-MSFT</q:Item>"))
        .collect();
    let text = format!(
        r#"<?xml version="1.0"?><s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/" xmlns:q="urn:quotes" xmlns:x="{SEC}"><s:Header><x:Token s:mustUnderstand="1">secret-token</x:Token><t:Trace xmlns:t="urn:trace">42</t:Trace></s:Header><s:Body><q:GetQuotes>{items}</q:GetQuotes></s:Body></s:Envelope>"#
    );
    let envelope = Envelope::parse(Bytes::from(text), &Limits::default()).unwrap();
    let context = Context {
        id: 99,
        service: "quotes".into(),
        action: Some("urn:get".into()),
        client: Some(std::net::Ipv4Addr::new(10, 1, 2, 3).into()),
        direction: Direction::Request,
        request: None,
        properties: Default::default(),
    };
    Message::new(envelope, context)
}

#[test]
fn a_handler_reading_one_header_ships_at_most_a_tenth_of_a_16_kb_message() {
    let message = big_message();
    let size = message.envelope().as_bytes().len();
    assert!((16_000..20_000).contains(&size), "message is {size} bytes");
    let access = Access::read_only(Parts::none().header(QName::new(SEC, "Token")));
    let frame = request_for("auth", &access, &message, 0, 1)
        .encode()
        .unwrap();
    assert!(
        frame.len() * 10 <= size,
        "frame {} bytes for a {size}-byte message",
        frame.len()
    );
    let request = CallRequest::decode(frame).unwrap();
    let Payload::Parts { headers, body } = &request.payload else {
        panic!("expected parts")
    };
    assert_eq!(body, &None);
    assert_eq!(headers.len(), 1);
    // The block stands alone: it carries the prefixes declared on the Envelope.
    let block = std::str::from_utf8(&headers[0]).unwrap();
    assert!(block.contains(&format!("xmlns:x=\"{SEC}\"")), "{block}");
    assert!(block.contains("xmlns:s="), "{block}");

    let rebuilt = rebuild_message(&request, &Limits::default()).unwrap();
    let env = rebuilt.envelope();
    let token = env.header(&QName::new(SEC, "Token")).unwrap();
    assert!(token.must_understand());
    assert_eq!(env.header_text(token).as_deref(), Some("secret-token"));
    assert!(env.header(&QName::new("urn:trace", "Trace")).is_none());
    assert_eq!(env.body_child_count(), 0);
    let ctx = rebuilt.context();
    assert_eq!((ctx.id, ctx.service.as_str()), (99, "quotes"));
    assert_eq!(ctx.action.as_deref(), Some("urn:get"));
    assert_eq!(
        ctx.client,
        Some(std::net::Ipv4Addr::new(10, 1, 2, 3).into())
    );
}

#[test]
fn a_body_reader_gets_the_same_body_bytes_and_namespaces() {
    let message = big_message();
    let access = Access::read_only(Parts::none().body());
    let request = request_for("log", &access, &message, 3, 1);
    assert_eq!(request.attempt, 3);
    // The trace context names the message (id 99) as the trace, so both sides' logs match.
    let trace = request.trace.as_deref().expect("a traceparent");
    assert_eq!(trace_id(trace), Some("00000000000000000000000000000063"));
    assert!(
        request
            .namespaces
            .contains(&("q".to_owned(), "urn:quotes".to_owned()))
    );
    let frame = request.encode().unwrap();
    let rebuilt =
        rebuild_message(&CallRequest::decode(frame).unwrap(), &Limits::default()).unwrap();
    let (a, b) = (message.envelope(), rebuilt.envelope());
    assert!(a.body() == b.body(), "bodies differ");
    assert_eq!(a.operation(), b.operation());
    assert!(
        a.extract_payload() == b.extract_payload(),
        "payloads differ"
    );
    assert!(
        a.extract_body() == b.extract_body(),
        "standalone bodies differ"
    );
    assert!(b.headers().is_empty(), "no header is shipped");
}

#[test]
fn a_handler_reading_everything_gets_the_envelope_as_received() {
    let message = big_message();
    let request = request_for(
        "digest",
        &Access::read_only(Parts::everything()),
        &message,
        0,
        1,
    );
    assert!(matches!(&request.payload, Payload::Whole(b) if b == message.envelope().as_bytes()));
    let rebuilt = rebuild_message(&request, &Limits::default()).unwrap();
    assert_eq!(rebuilt.envelope().as_bytes(), message.envelope().as_bytes());
}

#[test]
fn shipped_parts_that_make_no_envelope_are_a_handler_fault() {
    let mut request = request_for(
        "auth",
        &Access::read_only(Parts::none().body()),
        &big_message(),
        0,
        1,
    );
    request.payload = Payload::Parts {
        headers: vec![Bytes::from_static(b"<unclosed>")],
        body: None,
    };
    let fault = rebuild_message(&request, &Limits::default()).unwrap_err();
    assert_eq!(fault.kind(), lather_envelope::FaultKind::HandlerFailed);
    assert!(fault.reason().contains("auth"), "{}", fault.reason());
}
