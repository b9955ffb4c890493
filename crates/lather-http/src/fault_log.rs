//! Faults lather answers with, logged by kind on target `lather::fault`: client faults
//! (SOAP code `Sender`, `VersionMismatch`, `MustUnderstand`: malformed XML, unknown
//! operation, too large, …; 4xx) at info, server faults (`Receiver`: busy, internal,
//! shutting down, …; 5xx) at warn. The side is read from the SOAP code, not the status:
//! SOAP answers `VersionMismatch` and `MustUnderstand` with 500 though the client is at
//! fault.
//!
//! A gateway's upstream faults (`UpstreamUnavailable`, `UpstreamFailed`,
//! `UpstreamTimeout`) are logged at info: the gateway has already warned about each
//! backend that failed, with its URL (which the fault does not name), and a gateway with
//! no backend shows on `/ready`.

use lather_envelope::{Fault, FaultCode, FaultKind};

/// The target fault events are emitted on.
pub(crate) const TARGET: &str = "lather::fault";

/// Logs `fault`, which `service` answers with.
pub(crate) fn log(service: &str, fault: &Fault) {
    let kind = fault.kind();
    let code = kind.spec().name;
    let reason = fault.reason();
    let server_side = fault.code() == FaultCode::Receiver;
    match (server_side, warned_already(kind)) {
        (false, _) => tracing::info!(target: TARGET, service, fault = code, reason, "client fault"),
        (true, true) => {
            tracing::info!(target: TARGET, service, fault = code, reason, "server fault")
        }
        (true, false) => {
            tracing::warn!(target: TARGET, service, fault = code, reason, "server fault")
        }
    }
}

/// Faults whose cause was logged at warn where it happened.
fn warned_already(kind: FaultKind) -> bool {
    matches!(
        kind,
        FaultKind::UpstreamUnavailable | FaultKind::UpstreamFailed | FaultKind::UpstreamTimeout
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use lather_test_util::log::logged_at;

    fn line_of<'a>(text: &'a str, code: &str) -> &'a str {
        let needle = format!("fault=\"{code}\" ");
        text.lines()
            .find(|l| l.contains(&needle))
            .unwrap_or_else(|| panic!("no line for {code}: {text}"))
    }

    #[test]
    fn client_faults_at_info_server_faults_at_warn_upstream_ones_at_info() {
        let text = logged_at(tracing::Level::INFO, || {
            for kind in [
                FaultKind::MalformedXml,
                FaultKind::VersionMismatch,
                FaultKind::UnknownOperation,
                FaultKind::MessageTooLarge,
                FaultKind::ServerBusy,
                FaultKind::Internal,
                FaultKind::UpstreamUnavailable,
                FaultKind::UpstreamTimeout,
            ] {
                log("quotes", &Fault::with_reason(kind, "why"));
            }
        });
        for code in [
            "MalformedXml",
            "VersionMismatch",
            "UnknownOperation",
            "MessageTooLarge",
        ] {
            let line = line_of(&text, code);
            assert!(line.contains(" INFO lather::fault: client fault"), "{line}");
            assert!(line.contains("service=\"quotes\""), "{line}");
            assert!(line.contains("reason=\"why\""), "{line}");
        }
        for code in ["ServerBusy", "Internal"] {
            let line = line_of(&text, code);
            assert!(line.contains(" WARN lather::fault: server fault"), "{line}");
        }
        for code in ["UpstreamUnavailable", "UpstreamTimeout"] {
            let line = line_of(&text, code);
            assert!(line.contains(" INFO lather::fault: server fault"), "{line}");
        }
    }
}
