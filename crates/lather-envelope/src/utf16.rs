//! UTF-16 messages (WS-I Basic Profile allows UTF-8 and UTF-16): recognised by their byte
//! order mark — or, without one, by a first `<` encoded in UTF-16 (XML 1.0 Appendix F) —
//! and transcoded to UTF-8 before parsing, so everything after the parser sees UTF-8 only.
//! The transcoded message counts against `max_message_bytes`.

use crate::FaultKind;
use crate::scan::ScanError;
use bytes::Bytes;
use memchr::memmem;

/// The byte order of a UTF-16 message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Order {
    Little,
    Big,
}

/// The UTF-16 byte order of `bytes` and the length of its byte order mark, if `bytes` is
/// UTF-16.
fn detect(bytes: &[u8]) -> Option<(Order, usize)> {
    match bytes {
        [0xFF, 0xFE, ..] => Some((Order::Little, 2)),
        [0xFE, 0xFF, ..] => Some((Order::Big, 2)),
        [b'<', 0, ..] => Some((Order::Little, 0)),
        [0, b'<', ..] => Some((Order::Big, 0)),
        _ => None,
    }
}

/// `bytes` in UTF-8 if they are UTF-16 (`None` if they are not): the byte order mark is
/// dropped and an XML declaration naming a UTF-16 encoding is rewritten to name UTF-8.
/// Refused: an odd length or an unpaired surrogate (`NotUtf8`), a UTF-8 form larger than
/// `max_bytes` (`MessageTooLarge`).
pub(crate) fn to_utf8(bytes: &[u8], max_bytes: usize) -> Option<Result<Bytes, ScanError>> {
    let (order, bom) = detect(bytes)?;
    Some(transcode(&bytes[bom..], order, max_bytes, bom))
}

fn transcode(
    body: &[u8],
    order: Order,
    max_bytes: usize,
    offset: usize,
) -> Result<Bytes, ScanError> {
    if !body.len().is_multiple_of(2) {
        return Err(ScanError::new(
            FaultKind::NotUtf8,
            "UTF-16 message of an odd number of bytes",
        ));
    }
    let units = body.chunks_exact(2).map(|pair| match order {
        Order::Little => u16::from_le_bytes([pair[0], pair[1]]),
        Order::Big => u16::from_be_bytes([pair[0], pair[1]]),
    });
    // UTF-8 takes at most 3 bytes per UTF-16 unit; start from the common 1:2 ratio.
    let mut out = String::with_capacity((body.len() / 2).min(max_bytes));
    let mut at = offset;
    for c in char::decode_utf16(units) {
        let Ok(c) = c else {
            return Err(ScanError::new(
                FaultKind::NotUtf8,
                format!("invalid UTF-16 (unpaired surrogate) at byte {at}"),
            ));
        };
        at += 2 * c.len_utf16();
        if out.len() + c.len_utf8() > max_bytes {
            return Err(ScanError::new(
                FaultKind::MessageTooLarge,
                format!("the message in UTF-8 exceeds the limit of {max_bytes} bytes"),
            ));
        }
        out.push(c);
    }
    Ok(Bytes::from(declare_utf8(out)))
}

/// `text` with the encoding of its XML declaration, if that names UTF-16, replaced by
/// `UTF-8`: the text is UTF-8 now. Any other declared encoding is left for the scanner to
/// refuse.
fn declare_utf8(mut text: String) -> String {
    if !text.starts_with("<?xml") {
        return text;
    }
    let Some(end) = text.find("?>") else {
        return text;
    };
    let Some(key) = memmem::find(&text.as_bytes()[..end], b"encoding") else {
        return text;
    };
    let rest = &text[key + 8..end];
    let Some(open) = rest.find(['"', '\'']) else {
        return text;
    };
    let quote = rest.as_bytes()[open];
    let start = key + 8 + open + 1;
    let Some(len) = text[start..end].find(quote as char) else {
        return text;
    };
    let value = &text[start..start + len];
    if ["utf-16", "utf-16le", "utf-16be", "utf16"]
        .iter()
        .any(|e| value.eq_ignore_ascii_case(e))
    {
        text.replace_range(start..start + len, "UTF-8");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn le(text: &str, bom: bool) -> Vec<u8> {
        let mut out = if bom { vec![0xFF, 0xFE] } else { Vec::new() };
        out.extend(text.encode_utf16().flat_map(u16::to_le_bytes));
        out
    }

    fn be(text: &str, bom: bool) -> Vec<u8> {
        let mut out = if bom { vec![0xFE, 0xFF] } else { Vec::new() };
        out.extend(text.encode_utf16().flat_map(u16::to_be_bytes));
        out
    }

    #[test]
    fn both_byte_orders_with_and_without_a_mark_become_utf8() {
        let text = "<?xml version='1.0' encoding='UTF-16'?><a>é 𝄞</a>";
        let want = "<?xml version='1.0' encoding='UTF-8'?><a>é 𝄞</a>";
        for bytes in [
            le(text, true),
            be(text, true),
            le(text, false),
            be(text, false),
        ] {
            let out = to_utf8(&bytes, 1 << 20).unwrap().unwrap();
            assert_eq!(std::str::from_utf8(&out).unwrap(), want);
        }
        assert!(to_utf8(b"<a/>", 100).is_none());
        assert!(to_utf8(b"\xEF\xBB\xBF<a/>", 100).is_none());
    }

    #[test]
    fn broken_or_oversized_utf16_is_refused() {
        let mut odd = le("<a/>", true);
        odd.push(0);
        assert_eq!(
            to_utf8(&odd, 100).unwrap().unwrap_err().kind,
            FaultKind::NotUtf8
        );
        let lone = [0xFF, 0xFE, b'<', 0, 0x00, 0xD8, b'>', 0];
        let e = to_utf8(&lone, 100).unwrap().unwrap_err();
        assert_eq!(e.kind, FaultKind::NotUtf8);
        assert!(e.message.contains("byte 4"), "{}", e.message);
        // 100 CJK characters are 200 bytes in UTF-16 but 300 in UTF-8.
        let wide = le(&format!("<a>{}</a>", "中".repeat(100)), true);
        assert!(wide.len() < 250);
        let e = to_utf8(&wide, 250).unwrap().unwrap_err();
        assert_eq!(e.kind, FaultKind::MessageTooLarge);
    }

    #[test]
    fn other_declared_encodings_are_left_alone() {
        let out = declare_utf8("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><a/>".into());
        assert!(out.contains("ISO-8859-1"));
        let out = declare_utf8("<?xml version=\"1.0\" encoding=\"utf-16le\"?><a/>".into());
        assert!(out.contains("encoding=\"UTF-8\""), "{out}");
    }
}
