//! Which SOAP version a request speaks, from its `Content-Type` and action headers.

use crate::ascii::{split_at_byte, split_by_byte};
use http::header::CONTENT_TYPE;
use http::{HeaderMap, HeaderName, HeaderValue};
use lather_envelope::{Fault, FaultKind, SoapVersion};

/// SOAP 1.1's `SOAPAction` header.
pub(crate) const SOAP_ACTION: HeaderName = HeaderName::from_static("soapaction");

/// What the HTTP headers say about a SOAP request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SoapHeaders {
    /// The version the media type announces.
    pub(crate) version: SoapVersion,
    /// `SOAPAction` (1.1) or the `action` parameter (1.2), unquoted.
    pub(crate) action: Option<String>,
}

/// The version to answer a fault in when the request could not be negotiated.
pub(crate) fn guess_version(headers: &HeaderMap) -> SoapVersion {
    let is_12 = headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| starts_with_ignore_case(v.trim_ascii_start(), "application/soap+xml"));
    if is_12 {
        SoapVersion::V12
    } else {
        SoapVersion::V11
    }
}

/// Reads the media type and action. SOAP 1.1 is `text/xml` with a `SOAPAction` header;
/// SOAP 1.2 is `application/soap+xml` with an optional `action` parameter. The charset, when
/// given, must be UTF-8 or UTF-16 (WS-I Basic Profile; the envelope parser transcodes a
/// UTF-16 body, recognised by its byte order mark, to UTF-8).
pub(crate) fn negotiate(headers: &HeaderMap) -> Result<SoapHeaders, Fault> {
    let Some(raw) = headers.get(CONTENT_TYPE) else {
        return Err(Fault::with_reason(
            FaultKind::UnsupportedMediaType,
            "no Content-Type: send text/xml (SOAP 1.1) or application/soap+xml (SOAP 1.2)",
        ));
    };
    let raw = raw.to_str().map_err(|_| {
        Fault::with_reason(FaultKind::UnsupportedMediaType, "Content-Type is not ASCII")
    })?;
    // Split by byte: the value is ASCII, and this runs on every request.
    let mut parts = split_by_byte(raw, b';');
    let media = parts.next().unwrap_or_default().trim_ascii();
    let mut action = None;
    for param in parts {
        let (key, Some(value)) = split_at_byte(param, b'=') else {
            continue;
        };
        let value = unquote(value.trim_ascii());
        let key = key.trim_ascii();
        if key.eq_ignore_ascii_case("charset") && !is_supported_charset(value) {
            return Err(Fault::with_reason(
                FaultKind::UnsupportedMediaType,
                format!("charset {value:?} is not supported; send UTF-8 or UTF-16"),
            ));
        }
        if key.eq_ignore_ascii_case("action") {
            action = Some(value.to_owned());
        }
    }
    if media.eq_ignore_ascii_case("text/xml") {
        let soap_action = headers
            .get(&SOAP_ACTION)
            .ok_or_else(|| Fault::new(FaultKind::MissingSoapAction))?;
        let soap_action = soap_action.to_str().map_err(|_| {
            Fault::with_reason(FaultKind::MissingSoapAction, "SOAPAction is not ASCII")
        })?;
        return Ok(SoapHeaders {
            version: SoapVersion::V11,
            action: Some(unquote(soap_action.trim_ascii()).to_owned()).filter(|a| !a.is_empty()),
        });
    }
    if media.eq_ignore_ascii_case("application/soap+xml") {
        return Ok(SoapHeaders {
            version: SoapVersion::V12,
            action,
        });
    }
    Err(Fault::with_reason(
        FaultKind::UnsupportedMediaType,
        format!(
            "media type {media:?} is not SOAP: send text/xml (SOAP 1.1) or application/soap+xml (SOAP 1.2)"
        ),
    ))
}

/// The charsets a request may name: UTF-8, and UTF-16 in either byte order.
fn is_supported_charset(value: &str) -> bool {
    ["utf-8", "utf-16", "utf-16le", "utf-16be"]
        .iter()
        .any(|c| value.eq_ignore_ascii_case(c))
}

/// `content_type` with its charset parameter, if any, saying `utf-8`: what lather sends on
/// is always UTF-8, even when the client sent UTF-16.
pub(crate) fn utf8_content_type(content_type: &HeaderValue) -> HeaderValue {
    let bytes = content_type.as_bytes();
    // Most requests say UTF-8 or no charset: those are passed on without a copy. The
    // media type before the first `;` is no parameter.
    if !bytes
        .split(|&b| b == b';')
        .skip(1)
        .any(|part| other_charset(part).is_some())
    {
        return content_type.clone();
    }
    let mut out = Vec::with_capacity(bytes.len() + 8);
    for (i, part) in bytes.split(|&b| b == b';').enumerate() {
        if i > 0 {
            out.push(b';');
        }
        match other_charset(part) {
            Some(key) => {
                out.extend_from_slice(key);
                out.extend_from_slice(b"=utf-8");
            }
            None => out.extend_from_slice(part),
        }
    }
    HeaderValue::from_bytes(&out).unwrap_or_else(|_| content_type.clone())
}

/// The key of a media type parameter `part` (as written, spaces kept) when it is a
/// charset other than UTF-8. Read as bytes: this runs for every forwarded request.
fn other_charset(part: &[u8]) -> Option<&[u8]> {
    let eq = part.iter().position(|&b| b == b'=')?;
    let (key, value) = (&part[..eq], part[eq + 1..].trim_ascii());
    let value = value
        .strip_prefix(b"\"")
        .and_then(|v| v.strip_suffix(b"\""))
        .unwrap_or(value);
    (key.trim_ascii().eq_ignore_ascii_case(b"charset") && !value.eq_ignore_ascii_case(b"utf-8"))
        .then_some(key)
}

/// Whether `text` starts with `prefix`, ignoring ASCII case, without allocating.
fn starts_with_ignore_case(text: &str, prefix: &str) -> bool {
    text.get(..prefix.len())
        .is_some_and(|head| head.eq_ignore_ascii_case(prefix))
}

fn unquote(s: &str) -> &str {
    s.strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn soap11_needs_soapaction() {
        let ok = negotiate(&headers(&[
            ("content-type", "text/xml; charset=UTF-8"),
            ("soapaction", "\"urn:a\""),
        ]))
        .unwrap();
        assert_eq!(
            ok,
            SoapHeaders {
                version: SoapVersion::V11,
                action: Some("urn:a".into())
            }
        );
        let empty = negotiate(&headers(&[
            ("content-type", "text/xml"),
            ("soapaction", "\"\""),
        ]))
        .unwrap();
        assert_eq!(empty.action, None);
        let missing = negotiate(&headers(&[("content-type", "text/xml")])).unwrap_err();
        assert_eq!(missing.kind(), FaultKind::MissingSoapAction);
    }

    #[test]
    fn soap12_reads_the_action_parameter() {
        let ok = negotiate(&headers(&[(
            "content-type",
            "application/soap+xml; charset=utf-8; action=\"urn:b\"",
        )]))
        .unwrap();
        assert_eq!(
            ok,
            SoapHeaders {
                version: SoapVersion::V12,
                action: Some("urn:b".into())
            }
        );
        // Parameters without a value and empty ones are passed over; spaces around `=`
        // and the media type do not matter.
        let ok = negotiate(&headers(&[(
            "content-type",
            " Application/SOAP+xml ;; flag; Action = \"urn:c\" ;",
        )]))
        .unwrap();
        assert_eq!(ok.version, SoapVersion::V12);
        assert_eq!(ok.action.as_deref(), Some("urn:c"));
    }

    #[test]
    fn other_media_types_and_charsets_are_refused() {
        for ct in [
            "application/json",
            "text/plain",
            "text/xml; charset=iso-8859-1",
            "multipart/related",
        ] {
            let err =
                negotiate(&headers(&[("content-type", ct), ("soapaction", "x")])).unwrap_err();
            assert_eq!(err.kind(), FaultKind::UnsupportedMediaType, "{ct}");
        }
        assert_eq!(
            negotiate(&HeaderMap::new()).unwrap_err().kind(),
            FaultKind::UnsupportedMediaType
        );
    }

    #[test]
    fn utf16_charsets_are_accepted_and_forwarded_as_utf8() {
        for ct in [
            "text/xml; charset=utf-16",
            "text/xml; charset=\"UTF-16LE\"",
            "text/xml;charset=utf-16be",
        ] {
            let ok = negotiate(&headers(&[("content-type", ct), ("soapaction", "x")])).unwrap();
            assert_eq!(ok.version, SoapVersion::V11, "{ct}");
            let out = utf8_content_type(&HeaderValue::from_str(ct).unwrap());
            assert!(out.to_str().unwrap().ends_with("charset=utf-8"), "{out:?}");
        }
        let plain = HeaderValue::from_static("application/soap+xml; charset=utf-8; action=\"a\"");
        assert_eq!(utf8_content_type(&plain), plain);
        let out = utf8_content_type(&HeaderValue::from_static(
            "application/soap+xml; charset=utf-16; action=\"a\"",
        ));
        assert_eq!(out, "application/soap+xml; charset=utf-8; action=\"a\"");
        for unchanged in [
            "text/xml",
            "text/xml; charset=\"UTF-8\"",
            "text/xml ; Charset = utf-8 ",
            "application/soap+xml; action=\"urn:charset=utf-16\"",
        ] {
            let value = HeaderValue::from_static(unchanged);
            assert_eq!(utf8_content_type(&value), value, "{unchanged}");
        }
        let spaced = HeaderValue::from_static("text/xml; CHARSET = \"iso-8859-1\"");
        assert_eq!(utf8_content_type(&spaced), "text/xml; CHARSET =utf-8");
    }
}
