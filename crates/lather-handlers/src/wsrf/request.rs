//! What a message asks of its resource, read from the Body's operation.

use super::store::invalid;
use super::{WSRL_NS, WSRP_NS};
use lather_envelope::{Element, Envelope, Fault, Limits, QName};

/// One message's request to its resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Request {
    /// `wsrp:GetResourceProperty`: the elements of one property.
    Get(QName),
    /// `wsrp:SetResourceProperties`: changes applied together.
    Set(Vec<Change>),
    /// `wsrl:Destroy`: remove the resource.
    Destroy,
    /// Any other operation (or none): the message goes on and is recorded on the resource.
    Other(Option<QName>),
}

/// One component of a `SetResourceProperties` request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Change {
    /// Replace every element of the property with `elements`.
    Update {
        /// The property.
        name: QName,
        /// Standalone elements, concatenated.
        elements: Vec<u8>,
    },
    /// Append `elements` to the property.
    Insert {
        /// The property.
        name: QName,
        /// Standalone elements, concatenated.
        elements: Vec<u8>,
    },
    /// Remove every element of the property.
    Delete {
        /// The property.
        name: QName,
    },
}

impl Change {
    /// The property changed.
    pub(crate) fn property(&self) -> &QName {
        match self {
            Change::Update { name, .. } | Change::Insert { name, .. } | Change::Delete { name } => {
                name
            }
        }
    }
}

impl Request {
    /// Whether this is a resource operation proper (it needs a resource id).
    pub(crate) fn is_resource_operation(&self) -> bool {
        !matches!(self, Request::Other(_))
    }

    /// The request `envelope` makes. Only the WS-RP and WS-RL operations read the Body
    /// beyond its first child's name.
    pub(crate) fn parse(envelope: &Envelope) -> Result<Request, Fault> {
        let Some(op) = envelope.operation() else {
            return Ok(Request::Other(None));
        };
        if op.is(WSRL_NS, "Destroy") {
            return Ok(Request::Destroy);
        }
        if op.namespace() != WSRP_NS {
            return Ok(Request::Other(Some(op.clone())));
        }
        match op.local() {
            "GetResourceProperty" => get(&payload(envelope)?),
            "SetResourceProperties" => {
                let bytes = envelope.extract_payload().unwrap_or_default();
                set(&parse_payload(&bytes)?, &bytes)
            }
            other => Err(invalid(format!(
                "wsrp:{other} is not supported; GetResourceProperty and SetResourceProperties are"
            ))),
        }
    }
}

/// The Body's first child as an element tree. The envelope passed the server's limits
/// already, so none are applied again.
fn payload(envelope: &Envelope) -> Result<Element, Fault> {
    parse_payload(&envelope.extract_payload().unwrap_or_default())
}

fn parse_payload(bytes: &[u8]) -> Result<Element, Fault> {
    let unlimited = Limits {
        max_message_bytes: usize::MAX,
        max_depth: usize::MAX,
        max_attributes: usize::MAX,
    };
    Element::parse(bytes, &unlimited)
}

/// `<wsrp:GetResourceProperty>tns:Name</wsrp:GetResourceProperty>`.
fn get(root: &Element) -> Result<Request, Fault> {
    if root.elements().next().is_some() {
        return Err(invalid(
            "wsrp:GetResourceProperty holds a property QName, not elements".into(),
        ));
    }
    let text = root.text();
    root.resolve_qname(&text).map(Request::Get).ok_or_else(|| {
        invalid(format!(
            "wsrp:GetResourceProperty: {:?} is not a QName whose prefix is declared",
            text.trim()
        ))
    })
}

/// `<wsrp:SetResourceProperties>` with one or more `Update`, `Insert` (elements of one
/// QName each) and `Delete ResourceProperty="QName"` components.
fn set(root: &Element, source: &[u8]) -> Result<Request, Fault> {
    let mut changes = Vec::new();
    for component in root.elements() {
        let name = component.name();
        if name.namespace() != WSRP_NS {
            return Err(invalid(format!(
                "wsrp:SetResourceProperties may not hold {name}"
            )));
        }
        let change = match name.local() {
            "Update" | "Insert" => {
                let (property, elements) = elements_of_one_name(component, source)?;
                if name.local() == "Update" {
                    Change::Update {
                        name: property,
                        elements,
                    }
                } else {
                    Change::Insert {
                        name: property,
                        elements,
                    }
                }
            }
            "Delete" => {
                let text = component
                    .attribute(&QName::new("", "ResourceProperty"))
                    .ok_or_else(|| {
                        invalid("wsrp:Delete needs a ResourceProperty attribute".into())
                    })?;
                let name = component.resolve_qname(text).ok_or_else(|| {
                    invalid(format!(
                        "wsrp:Delete: ResourceProperty {text:?} is not a QName whose prefix is declared"
                    ))
                })?;
                Change::Delete { name }
            }
            other => {
                return Err(invalid(format!(
                    "wsrp:SetResourceProperties may not hold wsrp:{other}"
                )));
            }
        };
        changes.push(change);
    }
    if changes.is_empty() {
        return Err(invalid(
            "wsrp:SetResourceProperties holds no Update, Insert or Delete".into(),
        ));
    }
    Ok(Request::Set(changes))
}

/// The child elements of an `Update` or `Insert`: at least one, all of one name, each made
/// standalone (carrying the namespace declarations in scope) and concatenated.
fn elements_of_one_name(component: &Element, source: &[u8]) -> Result<(QName, Vec<u8>), Fault> {
    let local = component.name().local();
    let mut elements = component.elements();
    let Some(first) = elements.next() else {
        return Err(invalid(format!("wsrp:{local} holds no property element")));
    };
    let mut bytes = Vec::new();
    for element in std::iter::once(first).chain(elements) {
        if element.name() != first.name() {
            return Err(invalid(format!(
                "wsrp:{local} mixes {} and {}; one component changes one property",
                first.name(),
                element.name()
            )));
        }
        let alone = element
            .standalone(source)
            .ok_or_else(|| invalid(format!("wsrp:{local}: a property element is unreadable")))?;
        bytes.extend_from_slice(&alone);
    }
    Ok((first.name().clone(), bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use lather_envelope::{EnvelopeBuilder, FaultKind, SoapVersion};

    fn envelope(body: &str) -> Envelope {
        let bytes = EnvelopeBuilder::new(SoapVersion::V12)
            .body(body.to_owned().into())
            .build();
        Envelope::parse(bytes, &Limits::default()).unwrap()
    }

    fn refused(body: &str) -> String {
        let fault = Request::parse(&envelope(body)).unwrap_err();
        assert_eq!(fault.kind(), FaultKind::InvalidResourceRequest, "{body}");
        fault.reason().to_owned()
    }

    #[test]
    fn reads_each_kind_of_request() {
        let get = format!(
            r#"<wsrp:GetResourceProperty xmlns:wsrp="{WSRP_NS}" xmlns:t="urn:t"> t:Temp </wsrp:GetResourceProperty>"#
        );
        assert_eq!(
            Request::parse(&envelope(&get)).unwrap(),
            Request::Get(QName::new("urn:t", "Temp"))
        );
        let set = format!(
            r#"<wsrp:SetResourceProperties xmlns:wsrp="{WSRP_NS}" xmlns:t="urn:t"><wsrp:Update><t:Temp>1</t:Temp></wsrp:Update><wsrp:Insert><t:Log>a</t:Log><t:Log>b</t:Log></wsrp:Insert><wsrp:Delete ResourceProperty="t:Old"/></wsrp:SetResourceProperties>"#
        );
        // Each property element carries every declaration in scope where it stood: the
        // Envelope's, then the request element's.
        let carried = format!(
            r#"xmlns:env="http://www.w3.org/2003/05/soap-envelope" xmlns:wsrp="{WSRP_NS}" xmlns:t="urn:t""#
        );
        assert_eq!(
            Request::parse(&envelope(&set)).unwrap(),
            Request::Set(vec![
                Change::Update {
                    name: QName::new("urn:t", "Temp"),
                    elements: format!("<t:Temp {carried}>1</t:Temp>").into_bytes(),
                },
                Change::Insert {
                    name: QName::new("urn:t", "Log"),
                    elements: format!("<t:Log {carried}>a</t:Log><t:Log {carried}>b</t:Log>")
                        .into_bytes(),
                },
                Change::Delete {
                    name: QName::new("urn:t", "Old")
                },
            ])
        );
        let destroy = format!(r#"<wsrl:Destroy xmlns:wsrl="{WSRL_NS}"/>"#);
        assert_eq!(
            Request::parse(&envelope(&destroy)).unwrap(),
            Request::Destroy
        );
        assert_eq!(
            Request::parse(&envelope(r#"<m:Buy xmlns:m="urn:m"/>"#)).unwrap(),
            Request::Other(Some(QName::new("urn:m", "Buy")))
        );
        assert_eq!(Request::parse(&envelope("")).unwrap(), Request::Other(None));
    }

    #[test]
    fn refuses_malformed_requests() {
        let rp = |inner: &str| {
            format!(
                r#"<wsrp:SetResourceProperties xmlns:wsrp="{WSRP_NS}" xmlns:t="urn:t">{inner}</wsrp:SetResourceProperties>"#
            )
        };
        assert!(refused(&rp("")).contains("no Update"));
        assert!(refused(&rp("<wsrp:Update/>")).contains("no property element"));
        assert!(refused(&rp("<wsrp:Insert><t:A/><t:B/></wsrp:Insert>")).contains("mixes {urn:t}A"));
        assert!(refused(&rp("<wsrp:Delete/>")).contains("ResourceProperty attribute"));
        assert!(refused(&rp(r#"<wsrp:Delete ResourceProperty="u:X"/>"#)).contains("\"u:X\""));
        assert!(refused(&rp("<wsrp:Replace/>")).contains("wsrp:Replace"));
        assert!(refused(&rp("<t:Update/>")).contains("{urn:t}Update"));
        let get = |inner: &str| {
            format!(
                r#"<wsrp:GetResourceProperty xmlns:wsrp="{WSRP_NS}">{inner}</wsrp:GetResourceProperty>"#
            )
        };
        assert!(refused(&get("x:Temp")).contains("\"x:Temp\""));
        assert!(refused(&get("<a/>")).contains("not elements"));
        assert!(refused(&get("")).contains("is not a QName"));
        let other = format!(r#"<wsrp:QueryResourceProperties xmlns:wsrp="{WSRP_NS}"/>"#);
        assert!(refused(&other).contains("not supported"));
    }
}
