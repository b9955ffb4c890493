//! Edits applied by `Envelope::write`: adding, replacing and removing header blocks,
//! replacing the Body, several at once, conflicts, and the constructors' checks. After each
//! write the output is parsed again, and every byte outside the edited parts is compared.

use crate::support;

use lather_envelope::{Bytes, Edit, EditError, Envelope, FaultKind, QName};
use support::{NS11, NS12, canonical, document, envelope, parse, text};

const ADDED: &str = r#"<n:New xmlns:n="urn:new" n:x="1 &amp; 2">fresh</n:New>"#;
const OTHER: &str = r#"<n:Other xmlns:n="urn:new"/>"#;

fn add(block: &str) -> Edit {
    Edit::add_header(Bytes::copy_from_slice(block.as_bytes())).unwrap()
}

fn replace(i: usize, block: &str) -> Edit {
    Edit::replace_header(i, Bytes::copy_from_slice(block.as_bytes())).unwrap()
}

fn body(content: &str) -> Edit {
    Edit::replace_body(Bytes::copy_from_slice(content.as_bytes())).unwrap()
}

/// `original` with `range` replaced by `with`.
fn splice(original: &[u8], range: std::ops::Range<usize>, with: &str) -> Vec<u8> {
    [
        &original[..range.start],
        with.as_bytes(),
        &original[range.end..],
    ]
    .concat()
}

fn header_strings(env: &Envelope) -> Vec<String> {
    env.headers()
        .iter()
        .map(|h| text(&env.header_bytes(h)).to_owned())
        .collect()
}

/// Writes, checks the output equals `expected` byte for byte, and parses it again.
fn write_expecting(env: &Envelope, edits: &[Edit], expected: &[u8]) -> Envelope {
    let out = env.write(edits).unwrap();
    assert_eq!(
        text(&out),
        text(expected),
        "output differs from the expected splice"
    );
    let again = parse(out);
    assert_eq!(again.version(), env.version());
    again
}

#[test]
fn no_edits_returns_the_original_bytes_without_copying() {
    for file in [
        "soap11-request.xml",
        "soap12-request.xml",
        "soap11-trailer.xml",
    ] {
        let bytes = document(file);
        let env = parse(bytes.clone());
        let out = env.write(&[]).unwrap();
        assert_eq!(out, bytes);
        assert_eq!(out.as_ptr(), bytes.as_ptr());
    }
}

#[test]
fn add_header_without_a_header_element() {
    for ns in [NS11, NS12] {
        let original = envelope(ns, None, "<m:Op xmlns:m='urn:m'/>");
        let env = parse(original.clone());
        let at = original.find("<p:Body>").unwrap();
        let expected = splice(
            original.as_bytes(),
            at..at,
            &format!("<p:Header>{ADDED}</p:Header>"),
        );
        let again = write_expecting(&env, &[add(ADDED)], &expected);
        assert!(again.has_header_element());
        assert_eq!(header_strings(&again), [ADDED]);
        assert_eq!(again.headers()[0].name(), &QName::new("urn:new", "New"));
        assert_eq!(again.body(), env.body());
        assert_eq!(
            again.header_text(&again.headers()[0]).as_deref(),
            Some("fresh")
        );
    }
}

#[test]
fn add_header_to_a_default_namespace_envelope_without_header() {
    let original =
        format!(r#"<Envelope xmlns="{NS12}"><Body><Op xmlns="urn:m"/></Body></Envelope>"#);
    let env = parse(original.clone());
    let at = original.find("<Body>").unwrap();
    let expected = splice(
        original.as_bytes(),
        at..at,
        &format!("<Header>{ADDED}</Header>"),
    );
    let again = write_expecting(&env, &[add(ADDED), add(OTHER)], &{
        let mut e = expected;
        let end = text(&e).find("</Header>").unwrap();
        e.splice(end..end, OTHER.bytes());
        e
    });
    assert_eq!(header_strings(&again), [ADDED, OTHER]);
}

#[test]
fn add_header_to_an_existing_header() {
    for file in ["soap11-request.xml", "soap12-request.xml"] {
        let bytes = document(file);
        let env = parse(bytes.clone());
        let before = header_strings(&env);
        let s = text(&bytes);
        let end = s
            .find(&format!("</{}:Header>", env.version().default_prefix()))
            .unwrap();
        let expected = splice(&bytes, end..end, &format!("{ADDED}{OTHER}"));
        let again = write_expecting(&env, &[add(ADDED), add(OTHER)], &expected);
        let mut want = before;
        want.push(ADDED.into());
        want.push(OTHER.into());
        assert_eq!(header_strings(&again), want);
        assert_eq!(again.body(), env.body());
    }
}

#[test]
fn add_header_to_a_self_closing_header() {
    for ns in [NS11, NS12] {
        for tag in ["<p:Header/>", "<p:Header />", r#"<p:Header a="1"/>"#] {
            let original = format!(r#"<p:Envelope xmlns:p="{ns}">{tag}<p:Body/></p:Envelope>"#);
            let env = parse(original.clone());
            let at = original.find(tag).unwrap();
            let open = tag.trim_end_matches("/>").to_owned() + ">";
            let expected = splice(
                original.as_bytes(),
                at..at + tag.len(),
                &format!("{open}{ADDED}</p:Header>"),
            );
            let again = write_expecting(&env, &[add(ADDED)], &expected);
            assert_eq!(header_strings(&again), [ADDED]);
        }
    }
}

#[test]
fn replace_header() {
    for file in ["soap11-request.xml", "soap12-request.xml"] {
        let bytes = document(file);
        let env = parse(bytes.clone());
        for i in 0..env.headers().len() {
            let range = env.headers()[i].range();
            let expected = splice(&bytes, range, ADDED);
            let again = write_expecting(&env, &[replace(i, ADDED)], &expected);
            let mut want = header_strings(&env);
            want[i] = ADDED.into();
            assert_eq!(header_strings(&again), want);
            assert_eq!(again.headers()[i].name(), &QName::new("urn:new", "New"));
            assert_eq!(again.body(), env.body());
        }
    }
}

#[test]
fn remove_header() {
    for file in ["soap11-request.xml", "soap12-request.xml"] {
        let bytes = document(file);
        let env = parse(bytes.clone());
        for i in 0..env.headers().len() {
            let expected = splice(&bytes, env.headers()[i].range(), "");
            let again = write_expecting(&env, &[Edit::remove_header(i)], &expected);
            let mut want = header_strings(&env);
            want.remove(i);
            assert_eq!(header_strings(&again), want);
        }
        // Removing all of them leaves an empty Header element.
        let all: Vec<Edit> = (0..env.headers().len()).map(Edit::remove_header).collect();
        let out = env.write(&all).unwrap();
        let again = parse(out);
        assert!(again.has_header_element());
        assert!(again.headers().is_empty());
        assert_eq!(again.body(), env.body());
    }
}

#[test]
fn replace_body() {
    for file in [
        "soap11-request.xml",
        "soap12-request.xml",
        "soap11-trailer.xml",
    ] {
        let bytes = document(file);
        let env = parse(bytes.clone());
        for content in [
            "<r:Response xmlns:r='urn:r'>ok &amp; done</r:Response>",
            "",
            "\n  <a:One xmlns:a='urn:a'/>\n  <a:Two xmlns:a='urn:a'/>\n",
        ] {
            let expected = splice(&bytes, env.body_range(), content);
            let again = write_expecting(&env, &[body(content)], &expected);
            assert_eq!(text(&again.body()), content);
            assert_eq!(header_strings(&again), header_strings(&env));
        }
    }
}

#[test]
fn replace_a_self_closing_body() {
    for ns in [NS11, NS12] {
        for tag in ["<p:Body/>", "<p:Body />", r#"<p:Body xmlns:r="urn:r"/>"#] {
            let original = format!(r#"<p:Envelope xmlns:p="{ns}"><p:Header/>{tag}</p:Envelope>"#);
            let env = parse(original.clone());
            let content = "<r:Response xmlns:r='urn:r'/>";
            let at = original.find(tag).unwrap();
            let open = tag.trim_end_matches("/>").to_owned() + ">";
            let expected = splice(
                original.as_bytes(),
                at..at + tag.len(),
                &format!("{open}{content}</p:Body>"),
            );
            let again = write_expecting(&env, &[body(content)], &expected);
            assert_eq!(text(&again.body()), content);
            assert_eq!(again.operation(), Some(&QName::new("urn:r", "Response")));

            // Together with a new header block in the self-closing Header.
            let out = env.write(&[body(content), add(ADDED)]).unwrap();
            let again = parse(out);
            assert_eq!(header_strings(&again), [ADDED]);
            assert_eq!(text(&again.body()), content);
        }
    }
}

#[test]
fn replace_a_self_closing_body_and_create_the_header() {
    let original = format!(r#"<Envelope xmlns="{NS11}"><Body/></Envelope>"#);
    let env = parse(original);
    let out = env
        .write(&[add(ADDED), body("<x:y xmlns:x='urn:x'/>")])
        .unwrap();
    assert_eq!(
        text(&out),
        format!(
            r#"<Envelope xmlns="{NS11}"><Header>{ADDED}</Header><Body><x:y xmlns:x='urn:x'/></Body></Envelope>"#
        )
    );
    parse(out);
}

#[test]
fn several_edits_at_once() {
    for file in ["soap11-request.xml", "soap12-request.xml"] {
        let bytes = document(file);
        let env = parse(bytes.clone());
        let n = env.headers().len();
        let content = "<r:Response xmlns:r='urn:r'/>";
        // Edits in any order name blocks by their original index.
        let edits = [
            body(content),
            add(OTHER),
            replace(n - 1, ADDED),
            Edit::remove_header(0),
            add(ADDED),
        ];
        let mut expected = bytes.to_vec();
        // Splice from the end backwards so earlier offsets stay valid.
        expected = splice(&expected, env.body_range(), content);
        let header_end = text(&bytes)
            .find(&format!("</{}:Header>", env.version().default_prefix()))
            .unwrap();
        expected = splice(
            &expected,
            header_end..header_end,
            &format!("{OTHER}{ADDED}"),
        );
        expected = splice(&expected, env.headers()[n - 1].range(), ADDED);
        expected = splice(&expected, env.headers()[0].range(), "");
        let again = write_expecting(&env, &edits, &expected);
        let mut want = header_strings(&env);
        want[n - 1] = ADDED.into();
        want.remove(0);
        want.push(OTHER.into());
        want.push(ADDED.into());
        assert_eq!(header_strings(&again), want);
        assert_eq!(text(&again.body()), content);
        // The processing attributes of the untouched blocks survive.
        for (old, new) in env.headers()[1..n - 1].iter().zip(again.headers()) {
            assert_eq!(old.name(), new.name());
            assert_eq!(old.must_understand(), new.must_understand());
            assert_eq!(old.role(), new.role());
            assert_eq!(old.relay(), new.relay());
        }
    }
}

#[test]
fn edits_keep_the_soap11_trailer_and_the_rest_of_the_infoset() {
    let bytes = document("soap11-trailer.xml");
    let env = parse(bytes.clone());
    let out = env.write(&[add(ADDED), body("<r/>")]).unwrap();
    let before = canonical(&bytes).unwrap();
    let after = canonical(&out).unwrap();
    assert_eq!(before.shallow(), after.shallow());
    assert_eq!(
        before.child("urn:example:trailer", "Trailer"),
        after.child("urn:example:trailer", "Trailer")
    );
    assert_eq!(after.elements().len(), 3);
}

#[test]
fn conflicting_edits() {
    let env = parse(document("soap12-request.xml"));
    let conflict = |edits: &[Edit]| match env.write(edits) {
        Err(EditError::Conflict(what)) => what,
        other => panic!("expected a conflict, got {other:?}"),
    };
    conflict(&[replace(1, ADDED), Edit::remove_header(1)]);
    conflict(&[replace(0, ADDED), replace(0, OTHER)]);
    conflict(&[Edit::remove_header(2), Edit::remove_header(2)]);
    let what = conflict(&[body("<a/>"), body("<b/>")]);
    assert!(what.contains("Body"), "{what}");
    // Different blocks do not conflict; adding never does.
    env.write(&[
        replace(0, ADDED),
        Edit::remove_header(1),
        add(ADDED),
        add(ADDED),
    ])
    .unwrap();
}

#[test]
fn edits_naming_a_missing_header_block() {
    let env = parse(document("soap11-request.xml"));
    let n = env.headers().len();
    assert_eq!(
        env.write(&[Edit::remove_header(n)]),
        Err(EditError::NoSuchHeader(n))
    );
    assert_eq!(
        env.write(&[add(ADDED), replace(99, ADDED)]),
        Err(EditError::NoSuchHeader(99))
    );
    let empty = parse(envelope(NS12, None, ""));
    assert_eq!(
        empty.write(&[Edit::remove_header(0)]),
        Err(EditError::NoSuchHeader(0))
    );
    assert_eq!(
        EditError::NoSuchHeader(3).to_string(),
        "no header block at index 3"
    );
}

#[test]
fn constructors_refuse_invalid_fragments() {
    let header = |s: &[u8]| {
        Edit::add_header(Bytes::copy_from_slice(s))
            .unwrap_err()
            .kind()
    };
    let replacing = |s: &[u8]| {
        Edit::replace_header(0, Bytes::copy_from_slice(s))
            .unwrap_err()
            .kind()
    };
    let content = |s: &[u8]| {
        Edit::replace_body(Bytes::copy_from_slice(s))
            .unwrap_err()
            .kind()
    };
    for check in [header, replacing] {
        assert_eq!(check(b""), FaultKind::InvalidEnvelope);
        assert_eq!(check(b"   "), FaultKind::InvalidEnvelope);
        assert_eq!(check(b"just text"), FaultKind::InvalidEnvelope);
        assert_eq!(check(b"<a/>text"), FaultKind::InvalidEnvelope);
        assert_eq!(check(b"<a/><b/>"), FaultKind::InvalidEnvelope);
        assert_eq!(check(b"<a>"), FaultKind::MalformedXml);
        assert_eq!(check(b"<a></b>"), FaultKind::MalformedXml);
        assert_eq!(check(b"</a>"), FaultKind::MalformedXml);
        assert_eq!(check(b"<a x=1/>"), FaultKind::MalformedXml);
        assert_eq!(check(b"<a>&nbsp;</a>"), FaultKind::MalformedXml);
        assert_eq!(check(b"<?xml version='1.0'?><a/>"), FaultKind::MalformedXml);
        assert_eq!(check(b"<a>\xe9</a>"), FaultKind::NotUtf8);
        assert_eq!(check(b"<!DOCTYPE a><a/>"), FaultKind::DoctypeForbidden);
        assert_eq!(check(b"<a>&#0;</a>"), FaultKind::MalformedXml);
    }
    assert_eq!(content(b"text"), FaultKind::InvalidEnvelope);
    assert_eq!(content(b"<a/> text"), FaultKind::InvalidEnvelope);
    assert_eq!(content(b"<a>"), FaultKind::MalformedXml);
    assert_eq!(content(b"</a>"), FaultKind::MalformedXml);
    assert_eq!(content(b"\xff"), FaultKind::NotUtf8);
    assert_eq!(content(b"<!DOCTYPE a>"), FaultKind::DoctypeForbidden);
    // Accepted: whitespace, several elements, comments, nothing.
    for ok in [
        &b""[..],
        b"  ",
        b"<a/><b>t</b>",
        b"<!-- c --> <a/>",
        b"<a><![CDATA[x]]></a>",
    ] {
        Edit::replace_body(Bytes::copy_from_slice(ok)).unwrap();
    }
    for ok in [&b"<a/>"[..], b"  <a>t</a>\n", b"<!-- c --><a/><!-- d -->"] {
        Edit::add_header(Bytes::copy_from_slice(ok)).unwrap();
    }
}

#[test]
fn conflict_and_missing_index_leave_nothing_written() {
    let bytes = document("soap12-request.xml");
    let env = parse(bytes.clone());
    assert!(env.write(&[body("<a/>"), Edit::remove_header(42)]).is_err());
    // The envelope itself is untouched and still writes its original bytes.
    assert_eq!(env.write(&[]).unwrap(), bytes);
}

#[test]
fn an_edit_tells_its_kind_its_bytes_and_its_block_name() {
    let added = add(ADDED);
    assert!(added.adds_header());
    assert_eq!(added.content().map(|b| &b[..]), Some(ADDED.as_bytes()));
    assert_eq!(added.header_name(), Some(QName::new("urn:new", "New")));
    let replacing = replace(0, r#"<Plain xmlns="urn:d"><x:In xmlns:x="urn:x"/></Plain>"#);
    assert!(!replacing.adds_header());
    assert_eq!(replacing.header_name(), Some(QName::new("urn:d", "Plain")));
    // Comments and whitespace around the element do not hide it.
    let around = add("<!-- c -->\n<n:C xmlns:n=\"urn:c\"/>");
    assert_eq!(around.header_name(), Some(QName::new("urn:c", "C")));
    // A prefix declared outside the block: a name cannot be told from the block alone.
    assert_eq!(add("<n:Out/>").header_name(), None);
    // No namespace at all is a name without one.
    assert_eq!(add("<Bare/>").header_name(), Some(QName::new("", "Bare")));
    let content = body("<a/><b/>");
    assert!(!content.adds_header());
    assert_eq!(content.header_name(), None);
    assert_eq!(content.content().map(|b| &b[..]), Some(&b"<a/><b/>"[..]));
    let removal = Edit::remove_header(0);
    assert!(!removal.adds_header());
    assert_eq!(removal.content(), None);
    assert_eq!(removal.header_name(), None);
}
