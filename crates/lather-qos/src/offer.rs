//! A QoS offer: what a client gets from a service if it chooses the offer — and its XML
//! form, the same in a service's offer document, a registration with the broker and the
//! broker's answer:
//!
//! ```xml
//! <q:Offer xmlns:q="urn:lather:qos">
//!   <q:Service>quotes</q:Service>
//!   <q:Endpoint>http://10.0.0.5:8080/quotes</q:Endpoint>
//!   <q:Name>gold</q:Name>
//!   <q:ResponseTimeMs>50</q:ResponseTimeMs>
//!   <q:Throughput>2000</q:Throughput>        <!-- requests per second -->
//!   <q:Price>10.5</q:Price>
//!   <q:Compression>none</q:Compression>      <!-- optional -->
//!   <q:TrafficClass>gold</q:TrafficClass>    <!-- optional -->
//!   <q:AdaptsTo>cpu</q:AdaptsTo>             <!-- optional: the price follows this load -->
//! </q:Offer>
//! ```

use crate::QOS_NS;
use lather_config::CompressionPreference;
use lather_envelope::escape::escape_text;
use lather_envelope::{Element, Fault, FaultKind};
use std::fmt::Write as _;

/// Most bytes of a name, service name, class or endpoint in an offer.
pub const MAX_OFFER_TEXT: usize = 512;

/// One offer of one service.
#[derive(Debug, Clone, PartialEq)]
pub struct Offer {
    /// The service's name.
    pub service: String,
    /// The URL clients call for it.
    pub endpoint: String,
    /// The offer's name, unique in its service.
    pub name: String,
    /// The response time promised, in milliseconds.
    pub response_time_ms: u64,
    /// The request rate allowed, per second.
    pub throughput: f64,
    /// The price per request now.
    pub price: f64,
    /// The compression its answers get, if the offer says.
    pub compression: Option<CompressionPreference>,
    /// The traffic class its requests are in, if the offer says.
    pub class: Option<String>,
    /// What its price follows (`cpu`, `queue`, `p99-ms`), if it adapts.
    pub adapts_to: Option<String>,
}

impl Offer {
    /// Appends the offer as a `q:Offer` element (the `q` prefix bound by an ancestor).
    pub fn write_xml(&self, out: &mut String) {
        let _ = write!(
            out,
            "<q:Offer><q:Service>{}</q:Service><q:Endpoint>{}</q:Endpoint><q:Name>{}</q:Name>\
             <q:ResponseTimeMs>{}</q:ResponseTimeMs><q:Throughput>{}</q:Throughput><q:Price>{}</q:Price>",
            escape_text(&self.service),
            escape_text(&self.endpoint),
            escape_text(&self.name),
            self.response_time_ms,
            self.throughput,
            self.price,
        );
        if let Some(c) = self.compression {
            let _ = write!(out, "<q:Compression>{}</q:Compression>", c.as_str());
        }
        if let Some(c) = &self.class {
            let _ = write!(out, "<q:TrafficClass>{}</q:TrafficClass>", escape_text(c));
        }
        if let Some(a) = &self.adapts_to {
            let _ = write!(out, "<q:AdaptsTo>{}</q:AdaptsTo>", escape_text(a));
        }
        out.push_str("</q:Offer>");
    }

    /// The offer a `q:Offer` element states; an `InvalidOffer` fault names what is missing
    /// or out of range.
    pub fn from_element(element: &Element) -> Result<Offer, Fault> {
        let invalid = |why: String| Fault::with_reason(FaultKind::InvalidOffer, why);
        let text = |local: &str| -> Option<String> {
            element
                .elements()
                .find(|e| e.name().namespace() == QOS_NS && e.name().local() == local)
                .map(|e| e.text().trim().to_owned())
        };
        let required = |local: &str| -> Result<String, Fault> {
            let value = text(local)
                .filter(|t| !t.is_empty())
                .ok_or_else(|| invalid(format!("q:Offer needs q:{local}")))?;
            if value.len() > MAX_OFFER_TEXT {
                return Err(invalid(format!(
                    "q:{local} is longer than {MAX_OFFER_TEXT} bytes"
                )));
            }
            Ok(value)
        };
        let number = |local: &str| -> Result<f64, Fault> {
            let t = required(local)?;
            t.parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v >= 0.0)
                .ok_or_else(|| invalid(format!("q:{local} {t:?}: a number of 0 or more")))
        };
        let endpoint = required("Endpoint")?;
        if !(endpoint.starts_with("http://") || endpoint.starts_with("https://")) {
            return Err(invalid(format!(
                "q:Endpoint {endpoint:?}: an http:// or https:// URL"
            )));
        }
        let ms = required("ResponseTimeMs")?;
        let compression = match text("Compression").filter(|t| !t.is_empty()) {
            None => None,
            Some(t) => Some(CompressionPreference::parse(&t).ok_or_else(|| {
                invalid(format!(
                    "q:Compression {t:?}: none, required or server-decides"
                ))
            })?),
        };
        let optional = |local: &str| -> Result<Option<String>, Fault> {
            match text(local).filter(|t| !t.is_empty()) {
                Some(t) if t.len() > MAX_OFFER_TEXT => Err(invalid(format!(
                    "q:{local} is longer than {MAX_OFFER_TEXT} bytes"
                ))),
                other => Ok(other),
            }
        };
        Ok(Offer {
            service: required("Service")?,
            endpoint,
            name: required("Name")?,
            response_time_ms: ms
                .parse::<u64>()
                .ok()
                .filter(|v| i64::try_from(*v).is_ok())
                .ok_or_else(|| {
                    invalid(format!(
                        "q:ResponseTimeMs {ms:?}: a whole number of milliseconds"
                    ))
                })?,
            throughput: number("Throughput")?,
            price: number("Price")?,
            compression,
            class: optional("TrafficClass")?,
            adapts_to: optional("AdaptsTo")?,
        })
    }
}

/// The offers as a `q:Offers` document (the QoS namespace declared on it).
pub fn offers_document(offers: &[Offer]) -> String {
    let mut out = format!("<q:Offers xmlns:q=\"{QOS_NS}\">");
    for offer in offers {
        offer.write_xml(&mut out);
    }
    out.push_str("</q:Offers>");
    out
}

/// The offers of a `q:Offers` (or any) element's `q:Offer` children.
pub fn offers_of(element: &Element) -> Result<Vec<Offer>, Fault> {
    element
        .elements()
        .filter(|e| e.name().namespace() == QOS_NS && e.name().local() == "Offer")
        .map(Offer::from_element)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use lather_envelope::Limits;

    fn gold() -> Offer {
        Offer {
            service: "quotes".into(),
            endpoint: "http://127.0.0.1:8080/quotes".into(),
            name: "gold & co".into(),
            response_time_ms: 50,
            throughput: 2000.0,
            price: 10.5,
            compression: Some(CompressionPreference::None),
            class: Some("gold".into()),
            adapts_to: Some("cpu".into()),
        }
    }

    #[test]
    fn an_offer_reads_back_as_written() {
        let plain = Offer {
            compression: None,
            class: None,
            adapts_to: None,
            ..gold()
        };
        let doc = offers_document(&[gold(), plain.clone()]);
        let element = Element::parse(doc.as_bytes(), &Limits::default()).unwrap();
        assert_eq!(offers_of(&element).unwrap(), vec![gold(), plain]);
    }

    #[test]
    fn a_bad_offer_is_an_invalid_offer_fault_naming_the_field() {
        let good = {
            let mut s = String::new();
            gold().write_xml(&mut s);
            s
        };
        for (from, to, says) in [
            (
                "<q:Price>10.5</q:Price>",
                "<q:Price>-1</q:Price>",
                "q:Price",
            ),
            ("<q:Price>10.5</q:Price>", "", "needs q:Price"),
            (
                "<q:Throughput>2000</q:Throughput>",
                "<q:Throughput>NaN</q:Throughput>",
                "q:Throughput",
            ),
            (
                "<q:ResponseTimeMs>50</q:ResponseTimeMs>",
                "<q:ResponseTimeMs>5.5</q:ResponseTimeMs>",
                "q:ResponseTimeMs",
            ),
            (
                "http://127.0.0.1:8080/quotes",
                "file:///etc/passwd",
                "q:Endpoint",
            ),
            (
                "<q:Compression>none</q:Compression>",
                "<q:Compression>zip</q:Compression>",
                "q:Compression",
            ),
            ("<q:Service>quotes</q:Service>", "", "needs q:Service"),
        ] {
            let bad = good.replace(from, to);
            let doc = format!("<q:Offers xmlns:q=\"{QOS_NS}\">{bad}</q:Offers>");
            let element = Element::parse(doc.as_bytes(), &Limits::default()).unwrap();
            let fault = offers_of(&element).unwrap_err();
            assert_eq!(fault.kind(), FaultKind::InvalidOffer, "{to}");
            assert!(fault.reason().contains(says), "{to}: {}", fault.reason());
        }
    }
}
