//! The QoS requirements a client states on a request: one optional SOAP header block,
//!
//! ```xml
//! <q:QoS xmlns:q="urn:lather:qos">
//!   <q:Compression>server-decides</q:Compression>   <!-- none | required | server-decides -->
//!   <q:TrafficClass>gold</q:TrafficClass>
//!   <q:ResponseTimeMs>200</q:ResponseTimeMs>
//! </q:QoS>
//! ```
//!
//! Every child is optional; unknown children are ignored (later versions may add some);
//! a known child with a value lather cannot read is an `InvalidQosRequirements` fault.

use lather_config::CompressionPreference;
use lather_envelope::{Element, Envelope, Fault, FaultKind, Limits, QName};
use std::time::Duration;

/// The namespace of the QoS header.
pub const QOS_NS: &str = "urn:lather:qos";

/// The header block's name, `{urn:lather:qos}QoS` (lather understands it: it may carry
/// `mustUnderstand`).
pub fn header_name() -> &'static QName {
    static NAME: std::sync::LazyLock<QName> =
        std::sync::LazyLock::new(|| QName::new(QOS_NS, "QoS"));
    &NAME
}

/// What a request asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Requirements {
    /// How its response is to be compressed.
    pub compression: Option<CompressionPreference>,
    /// The traffic class it belongs to.
    pub traffic_class: Option<String>,
    /// The response time it needs.
    pub response_time: Option<Duration>,
}

impl Requirements {
    /// The requirements in `envelope`'s QoS header, `None` without one.
    pub fn of(envelope: &Envelope, limits: &Limits) -> Result<Option<Requirements>, Fault> {
        let Some(block) = envelope.header(header_name()) else {
            return Ok(None);
        };
        let element = Element::parse(&envelope.extract_header(block), limits)?;
        Requirements::from_element(&element).map(Some)
    }

    /// The requirements a parsed `q:QoS` element states.
    pub fn from_element(element: &Element) -> Result<Requirements, Fault> {
        let invalid = |why: String| Fault::with_reason(FaultKind::InvalidQosRequirements, why);
        let mut out = Requirements::default();
        for child in element.elements() {
            if child.name().namespace() != QOS_NS {
                continue;
            }
            let text = child.text();
            let text = text.trim();
            match child.name().local() {
                "Compression" => {
                    out.compression =
                        Some(CompressionPreference::parse(text).ok_or_else(|| {
                            invalid(format!(
                                "q:Compression {text:?}: none, required or server-decides"
                            ))
                        })?);
                }
                "TrafficClass" => {
                    if text.is_empty() {
                        return Err(invalid("q:TrafficClass is empty".to_owned()));
                    }
                    out.traffic_class = Some(text.to_owned());
                }
                "ResponseTimeMs" => {
                    let ms: u64 = text.parse().map_err(|_| {
                        invalid(format!(
                            "q:ResponseTimeMs {text:?}: a whole number of milliseconds"
                        ))
                    })?;
                    out.response_time = Some(Duration::from_millis(ms));
                }
                _ => {}
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn envelope(header: &str) -> Envelope {
        Envelope::parse(
            Bytes::from(format!(
                r#"<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope"><s:Header>{header}</s:Header><s:Body><m:x xmlns:m="urn:m"/></s:Body></s:Envelope>"#
            )),
            &Limits::default(),
        )
        .unwrap()
    }

    fn read(header: &str) -> Result<Option<Requirements>, Fault> {
        Requirements::of(&envelope(header), &Limits::default())
    }

    #[test]
    fn the_header_is_read_and_bad_values_are_faults() {
        assert_eq!(read("").unwrap(), None);
        let all = read(
            r#"<q:QoS xmlns:q="urn:lather:qos" s:mustUnderstand="true"><q:Compression> server-decides </q:Compression><q:TrafficClass>gold</q:TrafficClass><q:ResponseTimeMs>250</q:ResponseTimeMs><q:Later>x</q:Later></q:QoS>"#,
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            all,
            Requirements {
                compression: Some(CompressionPreference::ServerDecides),
                traffic_class: Some("gold".into()),
                response_time: Some(Duration::from_millis(250)),
            }
        );
        let empty = read(r#"<q:QoS xmlns:q="urn:lather:qos"/>"#)
            .unwrap()
            .unwrap();
        assert_eq!(empty, Requirements::default());
        for bad in [
            "<q:Compression>sometimes</q:Compression>",
            "<q:ResponseTimeMs>soon</q:ResponseTimeMs>",
            "<q:TrafficClass/>",
        ] {
            let fault =
                read(&format!(r#"<q:QoS xmlns:q="urn:lather:qos">{bad}</q:QoS>"#)).unwrap_err();
            assert_eq!(fault.kind(), FaultKind::InvalidQosRequirements, "{bad}");
        }
    }
}
