//! The SOAP processing model's mustUnderstand rule.

use lather_envelope::{Envelope, Fault, QName, SoapVersion};

/// The role URI of SOAP 1.2's "none" (blocks no node processes).
const ROLE_NONE: &str = "http://www.w3.org/2003/05/soap-envelope/role/none";
/// The role URI of SOAP 1.2's ultimate receiver.
const ROLE_ULTIMATE: &str = "http://www.w3.org/2003/05/soap-envelope/role/ultimateReceiver";

/// Checks the envelope's mustUnderstand header blocks aimed at this node against
/// `understands` (true for a name this node processes), and faults with the blocks it
/// does not understand.
///
/// A block is aimed at this node when its role (actor in SOAP 1.1) is `next`, or — when this
/// node is the ultimate receiver (it answers the message itself rather than forwarding it) —
/// when it has no role or the ultimate-receiver role. Blocks for other roles, and SOAP 1.2's
/// `none`, are left alone.
///
/// The fault stays small whatever the message holds: it lists the first blocks only and
/// counts the rest ([`Fault::must_understand`]); no name is copied beyond those it lists.
pub fn check_must_understand(
    envelope: &Envelope,
    understands: impl Fn(&QName) -> bool,
    ultimate_receiver: bool,
) -> Result<(), Fault> {
    let version = envelope.version();
    let mut missing = envelope
        .headers()
        .iter()
        .filter(|block| block.must_understand())
        .filter(|block| aimed_here(version, block.role(), ultimate_receiver))
        .map(|block| block.name())
        .filter(|name| !understands(name))
        .peekable();
    if missing.peek().is_none() {
        return Ok(());
    }
    Err(Fault::must_understand(missing))
}

fn aimed_here(version: SoapVersion, role: Option<&str>, ultimate_receiver: bool) -> bool {
    match role {
        None | Some("") => ultimate_receiver,
        Some(r) if r == version.next_role() => true,
        Some(ROLE_ULTIMATE) => ultimate_receiver && version == SoapVersion::V12,
        Some(ROLE_NONE) => false,
        Some(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lather_envelope::{FaultKind, Limits, SOAP11_NS, SOAP12_NS};

    fn env(version: SoapVersion, header: &str) -> Envelope {
        let (ns, p) = match version {
            SoapVersion::V11 => (SOAP11_NS, "s"),
            SoapVersion::V12 => (SOAP12_NS, "s"),
        };
        let text = format!(
            r#"<{p}:Envelope xmlns:{p}="{ns}"><{p}:Header>{header}</{p}:Header><{p}:Body/></{p}:Envelope>"#
        );
        Envelope::parse(text.into(), &Limits::default()).unwrap()
    }

    fn t() -> QName {
        QName::new("urn:t", "T")
    }

    #[test]
    fn unknown_mandatory_blocks_fault_and_known_ones_pass() {
        for (v, yes) in [(SoapVersion::V11, "1"), (SoapVersion::V12, "true")] {
            let e = env(
                v,
                &format!(r#"<t:T xmlns:t="urn:t" s:mustUnderstand="{yes}"/>"#),
            );
            let fault = check_must_understand(&e, |_| false, true).unwrap_err();
            assert_eq!(fault.kind(), FaultKind::MustUnderstand);
            assert!(fault.reason().contains("{urn:t}T"));
            check_must_understand(&e, |n| *n == t(), true).unwrap();
            // An intermediary forwards blocks meant for the ultimate receiver.
            check_must_understand(&e, |_| false, false).unwrap();
        }
    }

    #[test]
    fn roles_decide_who_must_understand() {
        let next = env(
            SoapVersion::V12,
            &format!(
                r#"<t:T xmlns:t="urn:t" s:mustUnderstand="1" s:role="{}"/>"#,
                SoapVersion::V12.next_role()
            ),
        );
        assert!(check_must_understand(&next, |_| false, false).is_err());
        let none = env(
            SoapVersion::V12,
            &format!(r#"<t:T xmlns:t="urn:t" s:mustUnderstand="1" s:role="{ROLE_NONE}"/>"#),
        );
        check_must_understand(&none, |_| false, true).unwrap();
        let other = env(
            SoapVersion::V11,
            r#"<t:T xmlns:t="urn:t" s:mustUnderstand="1" s:actor="urn:someone-else"/>"#,
        );
        check_must_understand(&other, |_| false, true).unwrap();
        let optional = env(
            SoapVersion::V12,
            r#"<t:T xmlns:t="urn:t" s:mustUnderstand="false"/>"#,
        );
        check_must_understand(&optional, |_| false, true).unwrap();
    }
}
