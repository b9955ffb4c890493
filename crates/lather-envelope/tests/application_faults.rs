//! Application faults: a service's own codes, subcodes, detail and status.

use lather_envelope::{Envelope, Fault, FaultCode, FaultKind, Limits, QName, SoapVersion};

fn text(fault: &Fault, version: SoapVersion) -> String {
    let bytes = fault.to_envelope(version);
    Envelope::parse(bytes.clone(), &Limits::default()).expect("a well-formed envelope");
    String::from_utf8(bytes.to_vec()).unwrap()
}

#[test]
fn subcodes_nest_in_soap12_and_the_last_is_the_soap11_faultcode() {
    let fault = Fault::application(
        FaultCode::Receiver,
        [
            QName::new("urn:a", "Store"),
            QName::new("urn:b&c", "Locked"),
        ],
        "try later",
    )
    .with_detail(r#"<x:why xmlns:x="urn:x">lock</x:why>"#);
    let v12 = text(&fault, SoapVersion::V12);
    assert!(v12.contains(r#"<env:Code><env:Value>env:Receiver</env:Value><env:Subcode><env:Value xmlns:a0="urn:a">a0:Store</env:Value><env:Subcode><env:Value xmlns:a1="urn:b&amp;c">a1:Locked</env:Value></env:Subcode></env:Subcode></env:Code>"#), "{v12}");
    assert!(
        v12.contains(r#"<env:Detail><x:why xmlns:x="urn:x">lock</x:why></env:Detail>"#),
        "{v12}"
    );
    assert!(!v12.contains("lf:fault"), "{v12}");
    let v11 = text(&fault, SoapVersion::V11);
    assert!(
        v11.contains(r#"<faultcode xmlns:a0="urn:b&amp;c">a0:Locked</faultcode>"#),
        "{v11}"
    );
    assert_eq!(fault.http_status(SoapVersion::V11), 500);
    assert_eq!(fault.subcodes().len(), 2);
    assert_eq!(fault.code(), FaultCode::Receiver);
}

#[test]
fn sender_faults_are_400_in_soap12_and_the_status_can_be_set() {
    let fault = Fault::application(FaultCode::Sender, [], "bad input");
    assert_eq!(fault.http_status(SoapVersion::V12), 400);
    assert_eq!(fault.http_status(SoapVersion::V11), 500);
    assert!(text(&fault, SoapVersion::V11).contains("<faultcode>soap:Client</faultcode>"));
    let fault = fault.with_status(409);
    assert_eq!(fault.http_status(SoapVersion::V12), 409);
    assert_eq!(fault.http_status(SoapVersion::V11), 409);
    let catalogue = Fault::new(FaultKind::Internal).with_status(418);
    assert_eq!(catalogue.http_status(SoapVersion::V12), 500);
}
