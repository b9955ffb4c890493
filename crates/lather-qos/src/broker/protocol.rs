//! The broker's messages, in the QoS namespace:
//!
//! - `q:RegisterOffers` (`q:Offer`…, optional `q:LeaseSeconds`) → `q:RegisterOffersResponse`
//!   (`q:Registered` count, `q:LeaseSeconds` granted);
//! - `q:DeregisterOffers` (`q:Endpoint`) → `q:DeregisterOffersResponse` (`q:Removed`);
//! - `q:SelectOffer` (`q:Service`, optional `q:MaxResponseTimeMs`, `q:MinThroughput`,
//!   `q:MaxPrice`, `q:Compression`, `q:TrafficClass`) → `q:SelectOfferResponse` (`q:Offer`),
//!   or the `NoOfferFits` fault saying what each candidate lacked;
//! - `q:ListOffers` (optional `q:Service`) → `q:ListOffersResponse` (`q:Offer`…).

use super::book::Selection;
use crate::QOS_NS;
use crate::offer::{Offer, offers_of};
use lather_config::CompressionPreference;
use lather_envelope::{Element, Envelope, Fault, FaultKind, Limits, QName};
use std::fmt::Write as _;
use std::time::Duration;

/// One request to the broker.
#[derive(Debug)]
pub(crate) enum Request {
    Register {
        offers: Vec<Offer>,
        lease: Option<Duration>,
    },
    Deregister {
        endpoint: String,
    },
    Select(Selection),
    List {
        service: Option<String>,
    },
}

/// The broker's operations.
pub(crate) fn operations() -> Vec<QName> {
    [
        "RegisterOffers",
        "DeregisterOffers",
        "SelectOffer",
        "ListOffers",
    ]
    .into_iter()
    .map(|l| QName::new(QOS_NS, l))
    .collect()
}

fn text(element: &Element, local: &str) -> Option<String> {
    element
        .elements()
        .find(|e| e.name().namespace() == QOS_NS && e.name().local() == local)
        .map(|e| e.text().trim().to_owned())
        .filter(|t| !t.is_empty())
}

fn invalid(why: String) -> Fault {
    Fault::with_reason(FaultKind::InvalidOffer, why)
}

fn requirement(why: String) -> Fault {
    Fault::with_reason(FaultKind::InvalidQosRequirements, why)
}

fn number(element: &Element, local: &str) -> Result<Option<f64>, Fault> {
    text(element, local)
        .map(|t| {
            t.parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v >= 0.0)
                .ok_or_else(|| requirement(format!("q:{local} {t:?}: a number of 0 or more")))
        })
        .transpose()
}

/// The request in `envelope`'s Body.
pub(crate) fn parse(envelope: &Envelope, limits: &Limits) -> Result<Request, Fault> {
    let payload = envelope.extract_payload().ok_or_else(|| {
        invalid(
            "the Body is empty: send RegisterOffers, DeregisterOffers, SelectOffer or ListOffers"
                .into(),
        )
    })?;
    parse_element(&Element::parse(&payload, limits)?)
}

/// The request a broker operation's element states (a SOAP Body's, or a NATS message's).
pub(crate) fn parse_element(element: &Element) -> Result<Request, Fault> {
    if element.name().namespace() != QOS_NS {
        return Err(Fault::with_reason(
            FaultKind::UnknownOperation,
            format!(
                "{} is not in the QoS namespace {QOS_NS}",
                element.name().local()
            ),
        ));
    }
    Ok(match element.name().local() {
        "RegisterOffers" => Request::Register {
            offers: offers_of(element)?,
            lease: text(element, "LeaseSeconds")
                .map(|t| {
                    t.parse::<u64>()
                        .ok()
                        .filter(|s| *s > 0)
                        .map(Duration::from_secs)
                        .ok_or_else(|| {
                            invalid(format!("q:LeaseSeconds {t:?}: a whole number above 0"))
                        })
                })
                .transpose()?,
        },
        "DeregisterOffers" => Request::Deregister {
            endpoint: text(element, "Endpoint")
                .ok_or_else(|| invalid("q:DeregisterOffers needs q:Endpoint".into()))?,
        },
        "SelectOffer" => Request::Select(Selection {
            service: text(element, "Service")
                .ok_or_else(|| requirement("q:SelectOffer needs q:Service".into()))?,
            max_response_time_ms: text(element, "MaxResponseTimeMs")
                .map(|t| {
                    t.parse::<u64>().map_err(|_| {
                        requirement(format!(
                            "q:MaxResponseTimeMs {t:?}: a whole number of milliseconds"
                        ))
                    })
                })
                .transpose()?,
            min_throughput: number(element, "MinThroughput")?,
            max_price: number(element, "MaxPrice")?,
            compression: text(element, "Compression")
                .map(|t| {
                    CompressionPreference::parse(&t).ok_or_else(|| {
                        requirement(format!(
                            "q:Compression {t:?}: none, required or server-decides"
                        ))
                    })
                })
                .transpose()?,
            class: text(element, "TrafficClass"),
        }),
        "ListOffers" => Request::List {
            service: text(element, "Service"),
        },
        other => {
            return Err(Fault::with_reason(
                FaultKind::UnknownOperation,
                format!("{other} is not a QoS broker operation"),
            ));
        }
    })
}

/// A `q:RegisterOffers` of `offers` for `lease` (what a server sends a broker).
pub fn register_message(offers: &[Offer], lease: Duration) -> String {
    let mut body = format!("<q:RegisterOffers xmlns:q=\"{QOS_NS}\">");
    for o in offers {
        o.write_xml(&mut body);
    }
    let _ = write!(
        body,
        "<q:LeaseSeconds>{}</q:LeaseSeconds></q:RegisterOffers>",
        lease.as_secs().max(1)
    );
    body
}

/// A `q:DeregisterOffers` of `endpoint`'s offers.
pub fn deregister_message(endpoint: &str) -> String {
    format!(
        "<q:DeregisterOffers xmlns:q=\"{QOS_NS}\"><q:Endpoint>{}</q:Endpoint></q:DeregisterOffers>",
        lather_envelope::escape::escape_text(endpoint)
    )
}

/// A `q:{local}` answer holding `offers`.
pub(crate) fn offers_answer(local: &str, offers: &[Offer]) -> String {
    let mut out = format!("<q:{local} xmlns:q=\"{QOS_NS}\">");
    for o in offers {
        o.write_xml(&mut out);
    }
    let _ = write!(out, "</q:{local}>");
    out
}

/// The answer to a registration.
pub(crate) fn registered(count: usize, lease: Duration) -> String {
    format!(
        "<q:RegisterOffersResponse xmlns:q=\"{QOS_NS}\"><q:Registered>{count}</q:Registered><q:LeaseSeconds>{}</q:LeaseSeconds></q:RegisterOffersResponse>",
        lease.as_secs()
    )
}

/// The answer to a removal.
pub(crate) fn deregistered(removed: usize) -> String {
    format!(
        "<q:DeregisterOffersResponse xmlns:q=\"{QOS_NS}\"><q:Removed>{removed}</q:Removed></q:DeregisterOffersResponse>"
    )
}
