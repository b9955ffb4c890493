//! The registry's messages: `Register`, `Renew`, `Deregister` and `Query` in [`NS`], and
//! their answers; faults with a subcode in [`NS`].

use super::NS;
use super::book::{Query, RegisterRequest, Registration, RegistryError};
use lather_envelope::escape::{escape_attribute, escape_text};
use lather_envelope::{Element, Envelope, Fault, FaultCode, Limits, Node, QName};
use lather_eventing::xpath::XPathFilter;
use std::time::Duration;

/// One request to the registry.
#[derive(Debug)]
pub(super) enum Request {
    Register(RegisterRequest),
    Renew { id: String, lease: Option<Duration> },
    Deregister { id: String },
    Query(Query),
}

/// A parsed request and the token it presents.
pub(super) fn parse(
    envelope: &Envelope,
    limits: &Limits,
) -> Result<(Request, Option<String>), Fault> {
    let payload = envelope
        .extract_payload()
        .ok_or_else(|| invalid("the Body is empty: send Register, Renew, Deregister or Query"))?;
    let element = Element::parse(&payload, limits)?;
    let token = text(&element, "Token");
    let request = match element.name().local() {
        "Register" => Request::Register(RegisterRequest {
            name: text(&element, "Name").unwrap_or_default(),
            endpoint: text(&element, "Endpoint").unwrap_or_default(),
            version: text(&element, "Version"),
            properties: properties(&element)?,
            documents: documents(&element, &payload)?,
            lease: lease(&element)?,
        }),
        "Renew" => Request::Renew {
            id: required(&element, "Id")?,
            lease: lease(&element)?,
        },
        "Deregister" => Request::Deregister {
            id: required(&element, "Id")?,
        },
        "Query" => Request::Query(Query {
            name: text(&element, "Name"),
            properties: properties(&element)?,
            xpath: match children(&element, "XPath").next() {
                None => None,
                Some(x) => Some(
                    XPathFilter::compile(&x.text(), x.namespaces()).map_err(|e| {
                        Fault::application(
                            FaultCode::Sender,
                            [QName::new(NS, "InvalidXPath")],
                            format!("lr:XPath: {e}"),
                        )
                    })?,
                ),
            },
        }),
        other => return Err(invalid(format!("{other} is not a registry operation"))),
    };
    Ok((request, token))
}

/// The operations.
pub(super) fn operations() -> Vec<QName> {
    ["Register", "Renew", "Deregister", "Query"]
        .into_iter()
        .map(|l| QName::new(NS, l))
        .collect()
}

fn children<'e>(element: &'e Element, local: &'static str) -> impl Iterator<Item = &'e Element> {
    element
        .elements()
        .filter(move |e| e.name().namespace() == NS && e.name().local() == local)
}

fn text(element: &Element, local: &'static str) -> Option<String> {
    children(element, local)
        .next()
        .map(|e| e.text().trim().to_owned())
        .filter(|t| !t.is_empty())
}

fn required(element: &Element, local: &'static str) -> Result<String, Fault> {
    text(element, local)
        .ok_or_else(|| invalid(format!("{} needs lr:{local}", element.name().local())))
}

fn lease(element: &Element) -> Result<Option<Duration>, Fault> {
    text(element, "LeaseSeconds")
        .map(|t| {
            t.parse::<u64>()
                .ok()
                .filter(|s| *s > 0)
                .map(Duration::from_secs)
                .ok_or_else(|| {
                    invalid(format!(
                        "lr:LeaseSeconds must be a whole number above 0, got '{t}'"
                    ))
                })
        })
        .transpose()
}

fn properties(element: &Element) -> Result<Vec<(String, String)>, Fault> {
    children(element, "Property")
        .map(|p| {
            let name = p
                .attribute(&QName::new("", "name"))
                .filter(|n| !n.is_empty())
                .ok_or_else(|| invalid("lr:Property needs a name attribute"))?;
            Ok((name.to_owned(), p.text().trim().to_owned()))
        })
        .collect()
}

fn documents(element: &Element, source: &[u8]) -> Result<Vec<String>, Fault> {
    let mut out = Vec::new();
    for holder in children(element, "Document") {
        let mut roots = holder.children().iter().filter_map(|n| match n {
            Node::Element(e) => Some(e),
            Node::Text(_) => None,
        });
        let (Some(root), None) = (roots.next(), roots.next()) else {
            return Err(invalid("lr:Document holds exactly one element"));
        };
        let bytes = root
            .standalone_minimal(source)
            .ok_or_else(|| invalid("lr:Document could not be read"))?;
        out.push(String::from_utf8_lossy(&bytes).into_owned());
    }
    Ok(out)
}

fn invalid(why: impl Into<String>) -> Fault {
    Fault::application(
        FaultCode::Sender,
        [QName::new(NS, "InvalidRegistryRequest")],
        why.into(),
    )
}

/// The fault for `error`.
pub(super) fn fault(error: &RegistryError) -> Fault {
    let (local, status) = match error {
        RegistryError::Unknown { .. } => ("UnknownRegistration", 404),
        RegistryError::NotOwner { .. } => ("NotRegistrationOwner", 403),
        RegistryError::Full { .. } => ("RegistryFull", 503),
        RegistryError::TooLarge { .. } => ("RegistrationTooLarge", 413),
        RegistryError::Invalid(_) => ("InvalidRegistryRequest", 400),
    };
    let code = if status == 503 {
        FaultCode::Receiver
    } else {
        FaultCode::Sender
    };
    Fault::application(code, [QName::new(NS, local)], error.to_string()).with_status(status)
}

/// `RegisterResponse`.
pub(super) fn registered(r: &Registration, token: Option<&str>) -> String {
    let token = token.map_or_else(String::new, |t| {
        format!("<lr:Token>{}</lr:Token>", escape_text(t))
    });
    format!(
        "<lr:RegisterResponse xmlns:lr=\"{NS}\"><lr:Id>{}</lr:Id><lr:ExpiresAtMs>{}</lr:ExpiresAtMs>{token}</lr:RegisterResponse>",
        escape_text(&r.id),
        r.expires_at_ms
    )
}

/// `RenewResponse`.
pub(super) fn renewed(id: &str, expires_at_ms: u64) -> String {
    format!(
        "<lr:RenewResponse xmlns:lr=\"{NS}\"><lr:Id>{}</lr:Id><lr:ExpiresAtMs>{expires_at_ms}</lr:ExpiresAtMs></lr:RenewResponse>",
        escape_text(id)
    )
}

/// `DeregisterResponse`.
pub(super) fn deregistered(id: &str) -> String {
    format!(
        "<lr:DeregisterResponse xmlns:lr=\"{NS}\"><lr:Id>{}</lr:Id></lr:DeregisterResponse>",
        escape_text(id)
    )
}

/// `QueryResponse`: each registration found, with its metadata.
pub(super) fn found(registrations: &[Registration]) -> String {
    let mut out = format!("<lr:QueryResponse xmlns:lr=\"{NS}\">");
    for r in registrations {
        out.push_str(&format!(
            "<lr:Registration><lr:Id>{}</lr:Id><lr:Name>{}</lr:Name><lr:Endpoint>{}</lr:Endpoint>",
            escape_text(&r.id),
            escape_text(&r.name),
            escape_text(&r.endpoint)
        ));
        if let Some(v) = &r.version {
            out.push_str(&format!("<lr:Version>{}</lr:Version>", escape_text(v)));
        }
        for (k, v) in &r.properties {
            out.push_str(&format!(
                "<lr:Property name=\"{}\">{}</lr:Property>",
                escape_attribute(k),
                escape_text(v)
            ));
        }
        for d in &r.documents {
            out.push_str(&format!("<lr:Document>{d}</lr:Document>"));
        }
        out.push_str(&format!(
            "<lr:ExpiresAtMs>{}</lr:ExpiresAtMs></lr:Registration>",
            r.expires_at_ms
        ));
    }
    out.push_str("</lr:QueryResponse>");
    out
}
