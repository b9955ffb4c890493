//! The events of the experiment and its two extra processing elements (EPEs): an
//! authentication header (HMAC-SHA256 over the event, key shared by configuration) the
//! sink verifies, and a reference-data URL the sink fetches over HTTP.

use bytes::Bytes;
use lather_eventing::{Event, EventHeader};
use sha2::{Digest as _, Sha256};
use std::fmt::Write as _;

/// The namespace of the events and the EPE headers.
pub(crate) const NS: &str = "urn:lather:bench:quote";
/// The authentication header's local name (hex HMAC-SHA256 of the payload).
pub(crate) const AUTH: &str = "Auth";
/// The reference-data header's local name (an `http://` URL).
pub(crate) const REF: &str = "Ref";
/// The notifications' action.
pub(crate) const ACTION: &str = "urn:lather:bench:quote/Quote";

/// Which event shape (the delivery study's data models).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Shape {
    /// Only the fields that changed (three).
    Changed,
    /// The whole quote record (thirty fields).
    Full,
}

/// The full record's fields; the changed-fields event carries the first three.
const FIELDS: [&str; 30] = [
    "Last",
    "Size",
    "Time",
    "Bid",
    "BidSize",
    "Ask",
    "AskSize",
    "Open",
    "High",
    "Low",
    "Close",
    "Volume",
    "Vwap",
    "Trades",
    "Exchange",
    "Condition",
    "BidExchange",
    "AskExchange",
    "PrevClose",
    "Change",
    "ChangePct",
    "High52",
    "Low52",
    "Currency",
    "Isin",
    "Name",
    "Market",
    "Status",
    "Tick",
    "Sequence",
];

/// The event `n` in `shape`.
pub(crate) fn payload(shape: Shape, n: u64) -> Bytes {
    let count = match shape {
        Shape::Changed => 3,
        Shape::Full => FIELDS.len(),
    };
    let mut s = format!(r#"<q:Quote xmlns:q="{NS}" sym="LTHR">"#);
    for (i, field) in FIELDS.iter().take(count).enumerate() {
        let value = (n.wrapping_mul(31).wrapping_add(i as u64 * 7919)) % 100_000;
        let _ = write!(
            s,
            "<q:{field}>{}.{:02}</q:{field}>",
            value / 100,
            value % 100
        );
    }
    s.push_str("</q:Quote>");
    Bytes::from(s)
}

/// Event `n` with the chosen EPE headers; `reference` is the reference server's base URL.
pub(crate) fn event(shape: Shape, n: u64, key: Option<&[u8]>, reference: Option<&str>) -> Event {
    let payload = payload(shape, n);
    let mut headers = Vec::new();
    if let Some(key) = key {
        headers.push(header(AUTH, hex(&hmac_sha256(key, &payload))));
    }
    if let Some(base) = reference {
        headers.push(header(REF, format!("{base}/ref/{n}")));
    }
    Event {
        payload,
        action: Some(ACTION.to_owned()),
        topics: Vec::new(),
        headers,
    }
}

fn header(local: &str, text: String) -> EventHeader {
    EventHeader {
        namespace: NS.to_owned(),
        local: local.to_owned(),
        text,
    }
}

/// HMAC-SHA256 (RFC 2104) of `data` under `key`.
pub(crate) fn hmac_sha256(key: &[u8], data: &[u8]) -> [u8; 32] {
    let mut block = [0u8; 64];
    if key.len() > 64 {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let mut inner = Sha256::new();
    inner.update(block.map(|b| b ^ 0x36));
    inner.update(data);
    let mut outer = Sha256::new();
    outer.update(block.map(|b| b ^ 0x5c));
    outer.update(inner.finalize());
    outer.finalize().into()
}

/// Lower-case hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// Whether `header_hex` is the HMAC of `payload` under `key`.
pub(crate) fn verify(key: &[u8], payload: &[u8], header_hex: &str) -> bool {
    hex(&hmac_sha256(key, payload)) == header_hex.trim()
}

/// The reference document for `n`: 4 to 4096 bytes (the paper's random length, made
/// reproducible from `n`).
pub(crate) fn reference_document(n: u64) -> Bytes {
    let len = 4 + (n.wrapping_mul(2_654_435_761) % 4093) as usize;
    Bytes::from(vec![b'r'; len])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 4231 test cases 1 and 2; the third vector was made with
    /// `python3 -c "import hmac,hashlib;print(hmac.new(b'k'*100,b'lather',hashlib.sha256).hexdigest())"`
    /// (a key longer than the block).
    #[test]
    fn hmac_matches_independent_vectors() {
        assert_eq!(
            hex(&hmac_sha256(&[0x0b; 20], b"Hi There")),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        );
        assert_eq!(
            hex(&hmac_sha256(b"Jefe", b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        assert_eq!(hex(&hmac_sha256(&[b'k'; 100], b"lather")), LONG_KEY_VECTOR);
        assert!(verify(
            b"Jefe",
            b"what do ya want for nothing?",
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        ));
        assert!(!verify(
            b"Jeff",
            b"what do ya want for nothing?",
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        ));
    }

    const LONG_KEY_VECTOR: &str =
        "fa340aacd0b76c97be2e6eeb6a48d7359245358f9e38b577bd8c1ce102cd4457";

    #[test]
    fn shapes_and_references() {
        let changed = payload(Shape::Changed, 1);
        let full = payload(Shape::Full, 1);
        assert_eq!(changed.windows(3).filter(|w| w == b"<q:").count(), 4);
        assert_eq!(full.windows(3).filter(|w| w == b"<q:").count(), 31);
        for n in 0..1000 {
            let len = reference_document(n).len();
            assert!((4..=4096).contains(&len));
        }
    }
}
