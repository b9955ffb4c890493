//! `Envelope::edited`: the edited envelope without a second parse. Each case is compared with
//! `Envelope::parse` of what `Envelope::write` gives: the same skeleton when accepted, the
//! same fault kind when refused (a limit, an unbound prefix, a block without a namespace, a
//! bad `mustUnderstand`).

use crate::support;

use lather_envelope::{Bytes, Edit, EditError, Envelope, FaultKind, Limits};
use support::{NS11, NS12, envelope, parse};

fn b(text: &str) -> Bytes {
    Bytes::copy_from_slice(text.as_bytes())
}

/// `edited` and parse-after-write agree; returns the edited envelope or the fault kind.
fn both(env: &Envelope, edits: &[Edit], limits: &Limits) -> Result<Envelope, FaultKind> {
    let written = env.write(edits).expect("the edits apply");
    let reparsed = Envelope::parse(written, limits);
    let edited = env.edited(edits, limits);
    match (reparsed, edited) {
        (Ok(again), Ok(edited)) => {
            assert_eq!(format!("{edited:?}"), format!("{again:?}"));
            Ok(edited)
        }
        (Err(fault), Err(EditError::Invalid(refusal))) => {
            assert_eq!(refusal.kind(), fault.kind(), "{refusal} vs {fault}");
            Err(fault.kind())
        }
        (reparsed, edited) => panic!("parse says {reparsed:?}, edited says {edited:?}"),
    }
}

/// A SOAP 1.2 envelope declaring `e:` on the Envelope, `h:` on the Header, `d:` on the Body.
fn scoped() -> Envelope {
    parse(format!(
        concat!(
            r#"<s:Envelope xmlns:s="{}" xmlns:e="urn:e">"#,
            r#"<s:Header xmlns:h="urn:h"><h:One>1</h:One><e:Two s:mustUnderstand="true"/></s:Header>"#,
            r#"<s:Body xmlns:d="urn:d"><d:op><d:x/></d:op></s:Body></s:Envelope>"#
        ),
        NS12
    ))
}

#[test]
fn new_parts_resolve_prefixes_declared_on_the_envelope_header_and_body() {
    let env = scoped();
    let edits = [
        Edit::replace_header(0, b(r#"<e:Replaced s:role="urn:r">x</e:Replaced>"#)).unwrap(),
        Edit::add_header(b(r#"<h:Added s:mustUnderstand="1" s:relay="true"/>"#)).unwrap(),
        Edit::replace_body(b("<d:other/><d:more/>")).unwrap(),
    ];
    let edited = both(&env, &edits, &Limits::default()).unwrap();
    let names: Vec<String> = edited
        .headers()
        .iter()
        .map(|h| h.name().to_string())
        .collect();
    assert_eq!(names, ["{urn:e}Replaced", "{urn:e}Two", "{urn:h}Added"]);
    assert_eq!(edited.headers()[0].role(), Some("urn:r"));
    assert!(edited.headers()[2].must_understand() && edited.headers()[2].relay());
    assert_eq!(edited.operation().unwrap().to_string(), "{urn:d}other");
    assert_eq!(edited.body_child_count(), 2);
}

#[test]
fn a_header_is_made_where_there_was_none_and_a_self_closing_one_is_opened() {
    for headers in [None, Some("")] {
        let mut xml = envelope(NS11, headers, r#"<m:op xmlns:m="urn:m"/>"#);
        if headers.is_some() {
            xml = xml.replace("<p:Header></p:Header>", "<p:Header/>");
        }
        let env = parse(xml);
        let edits = [
            Edit::add_header(b(r#"<a:A xmlns:a="urn:a" p:actor="urn:x"/>"#)).unwrap(),
            Edit::add_header(b(r#"<a:B xmlns:a="urn:a"/>"#)).unwrap(),
            Edit::replace_body(b(r#"<m:new xmlns:m="urn:m">v</m:new>"#)).unwrap(),
        ];
        let edited = both(&env, &edits, &Limits::default()).unwrap();
        assert_eq!(edited.headers().len(), 2);
        assert_eq!(edited.headers()[0].role(), Some("urn:x"));
        assert_eq!(edited.operation().unwrap().local(), "new");
    }
}

#[test]
fn an_emptied_body_and_removed_blocks_keep_the_rest_in_place() {
    let env = scoped();
    let edits = [Edit::remove_header(0), Edit::replace_body(b("  ")).unwrap()];
    let edited = both(&env, &edits, &Limits::default()).unwrap();
    assert_eq!(edited.headers().len(), 1);
    assert_eq!(edited.operation(), None);
    assert_eq!(edited.body_child_count(), 0);
    assert_eq!(
        &edited.header_bytes(&edited.headers()[0])[..],
        br#"<e:Two s:mustUnderstand="true"/>"#
    );
}

#[test]
fn new_parts_are_refused_for_what_a_parse_refuses() {
    let env = scoped();
    let cases = [
        (r#"<u:Unbound/>"#, "an unbound prefix"),
        (r#"<NoNamespace/>"#, "a block without a namespace"),
        (
            r#"<e:Bad s:mustUnderstand="maybe"/>"#,
            "mustUnderstand not a boolean",
        ),
        (r#"<e:Bad s:relay="often"/>"#, "relay not a boolean"),
    ];
    for (block, what) in cases {
        for edit in [
            Edit::add_header(b(block)).unwrap(),
            Edit::replace_header(1, b(block)).unwrap(),
        ] {
            let refused = both(&env, &[edit], &Limits::default());
            assert!(refused.is_err(), "{what} was accepted");
        }
    }
    let body = Edit::replace_body(b("<u:op/>")).unwrap();
    assert!(both(&env, &[body], &Limits::default()).is_err());
}

#[test]
fn new_parts_keep_to_the_limits() {
    let env = scoped();
    let deep = Edit::replace_body(b("<d:a><d:b><d:c/></d:b></d:a>")).unwrap();
    let tight = Limits {
        max_depth: 4,
        ..Limits::default()
    };
    assert_eq!(
        both(&env, std::slice::from_ref(&deep), &tight).err(),
        Some(FaultKind::TooDeep)
    );
    let roomy = Limits {
        max_depth: 5,
        ..Limits::default()
    };
    assert!(both(&env, &[deep], &roomy).is_ok());

    let attributes = Edit::add_header(b(r#"<e:A a="1" b="2" c="3"/>"#)).unwrap();
    let two = Limits {
        max_attributes: 2,
        ..Limits::default()
    };
    assert_eq!(
        both(&env, &[attributes], &two).err(),
        Some(FaultKind::TooManyAttributes)
    );

    let large = Edit::replace_body(b(&format!("<d:op>{}</d:op>", "x".repeat(1000)))).unwrap();
    let small = Limits {
        max_message_bytes: env.as_bytes().len() + 100,
        ..Limits::default()
    };
    assert_eq!(
        both(&env, &[large], &small).err(),
        Some(FaultKind::MessageTooLarge)
    );
}

#[test]
fn conflicting_edits_are_refused_as_write_refuses_them() {
    let env = scoped();
    let twice = [Edit::remove_header(0), Edit::remove_header(0)];
    assert!(matches!(
        env.edited(&twice, &Limits::default()),
        Err(EditError::Conflict(_))
    ));
    assert_eq!(
        env.edited(&[Edit::remove_header(7)], &Limits::default())
            .err(),
        Some(EditError::NoSuchHeader(7))
    );
}

#[test]
fn no_edits_give_the_same_envelope() {
    let env = scoped();
    let same = env.edited(&[], &Limits::default()).unwrap();
    assert_eq!(format!("{same:?}"), format!("{env:?}"));
}
