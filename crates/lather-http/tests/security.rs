//! WS-Security UsernameToken at the edge: the wsse fault codes on the wire, and the
//! Security header counted as understood.

mod support;

use http::StatusCode;
use lather_envelope::{FaultKind, SoapVersion, WSSE_NS};
use support::*;

async fn server() -> TestServer {
    let dir = std::env::temp_dir().join(format!("lather-security-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let users = dir.join("users");
    std::fs::write(&users, "# name:password\nalice:s3cret\n").unwrap();
    TestServer::start(&format!(
        "[handlers.auth]\nkind = \"wsse-username\"\nusers_file = \"{}\"\n\
         [[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\nrequest = [[\"auth\"]]\n",
        users.display()
    ))
    .await
}

fn security(version: SoapVersion, password: &str) -> String {
    let mu = if version == SoapVersion::V11 {
        "1"
    } else {
        "true"
    };
    format!(
        r#"<wsse:Security xmlns:wsse="{WSSE_NS}" s:mustUnderstand="{mu}"><wsse:UsernameToken><wsse:Username>alice</wsse:Username><wsse:Password>{password}</wsse:Password></wsse:UsernameToken></wsse:Security>"#
    )
}

#[tokio::test]
async fn a_valid_token_passes_and_its_mandatory_header_is_understood() {
    let s = server().await;
    for version in [SoapVersion::V11, SoapVersion::V12] {
        let answer = post(
            s.addr,
            "/echo",
            version,
            envelope(version, &security(version, "s3cret"), ECHO_PAYLOAD),
        )
        .await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    }
}

#[tokio::test]
async fn failures_carry_the_ws_security_fault_codes() {
    let s = server().await;
    let wrong = post(
        s.addr,
        "/echo",
        SoapVersion::V12,
        envelope(
            SoapVersion::V12,
            &security(SoapVersion::V12, "guess"),
            ECHO_PAYLOAD,
        ),
    )
    .await;
    wrong.assert_fault(FaultKind::FailedAuthentication, SoapVersion::V12);
    assert!(
        wrong.text().contains(&format!(
            r#"<env:Value xmlns:wsse="{WSSE_NS}">wsse:FailedAuthentication</env:Value>"#
        )),
        "{}",
        wrong.text()
    );
    let missing = post(
        s.addr,
        "/echo",
        SoapVersion::V11,
        envelope(SoapVersion::V11, "", ECHO_PAYLOAD),
    )
    .await;
    missing.assert_fault(FaultKind::InvalidSecurity, SoapVersion::V11);
    assert!(
        missing.text().contains(&format!(
            r#"<faultcode xmlns:wsse="{WSSE_NS}">wsse:InvalidSecurity</faultcode>"#
        )),
        "{}",
        missing.text()
    );
}
