//! `docs/faults.md` lists every catalogue row exactly as the code defines it.

use lather_envelope::{FaultCode, FaultKind};

#[test]
fn the_fault_document_matches_the_catalogue() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/faults.md"))
        .unwrap();
    let rows = doc
        .lines()
        .filter(|l| l.starts_with("| ") && l.as_bytes()[2].is_ascii_digit())
        .count();
    assert_eq!(rows, FaultKind::ALL.len(), "docs/faults.md has {rows} rows");
    for kind in FaultKind::ALL {
        let s = kind.spec();
        let soap11 = match s.code {
            FaultCode::Sender | FaultCode::DataEncodingUnknown => "Client",
            FaultCode::Receiver => "Server",
            other => other.soap12_local(),
        };
        let (_, prefix, local) = kind.subcode();
        let subcode = match (s.has_subcode, kind.subsubcode()) {
            (false, _) => "—".into(),
            (true, None) => format!("{prefix}:{local}"),
            (true, Some((_, p2, l2))) => format!("{prefix}:{local} / {p2}:{l2}"),
        };
        let soap11 = if kind.has_foreign_subcode() {
            format!("{prefix}:{local}")
        } else {
            format!("soap:{soap11}")
        };
        let status11 = if s.http_status == 400 {
            500
        } else {
            s.http_status
        };
        let row = format!(
            "| {} | {} | env:{} | {} | {} | {} | {} | {} |",
            s.id,
            s.name,
            s.code.soap12_local(),
            subcode,
            soap11,
            s.http_status,
            status11,
            s.reason
        );
        assert!(doc.contains(&row), "missing or different row:\n{row}");
    }
}
