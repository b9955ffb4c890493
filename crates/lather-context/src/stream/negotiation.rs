//! The `OpenStream` exchange, an ordinary SOAP request and answer in `urn:lather:stream`:
//! the sender offers representations, transports and an error policy for an operation;
//! the receiver grants one of each with a single-use token and the port to connect to, or
//! refuses with a `ls:StreamRefused` fault (and a peer that is not lather answers with
//! some other fault, or not at all: either way the sender stays on SOAP/HTTP).

use lather_envelope::escape::escape_text;
use lather_envelope::{Element, Envelope, Fault, FaultCode, Limits, QName};

/// The namespace of the exchange.
pub const NS: &str = "urn:lather:stream";

/// The `OpenStream` operation's name.
pub fn open_stream() -> QName {
    QName::new(NS, "OpenStream")
}

/// The action the sender puts on `OpenStream`.
pub const ACTION: &str = "urn:lather:stream:OpenStream";

/// The transport a stream runs on.
pub const TRANSPORT_TCP: &str = "tcp";

/// What the sender asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offer {
    /// Representations it can write, most wanted first.
    pub representations: Vec<String>,
    /// Transports it can use, most wanted first.
    pub transports: Vec<String>,
    /// What it does with a request that was sent and got no answer: `fault` or `resend`.
    pub on_error: String,
    /// The operation (`{namespace}local` of the Body's first child) the stream is for.
    pub operation: String,
}

impl Offer {
    /// The `ls:OpenStream` element.
    pub fn to_xml(&self) -> String {
        let mut xml = format!("<ls:OpenStream xmlns:ls=\"{NS}\">");
        for r in &self.representations {
            xml.push_str(&format!(
                "<ls:Representation>{}</ls:Representation>",
                escape_text(r)
            ));
        }
        for t in &self.transports {
            xml.push_str(&format!("<ls:Transport>{}</ls:Transport>", escape_text(t)));
        }
        xml.push_str(&format!(
            "<ls:OnError>{}</ls:OnError><ls:Operation>{}</ls:Operation></ls:OpenStream>",
            escape_text(&self.on_error),
            escape_text(&self.operation)
        ));
        xml
    }

    /// Reads an `ls:OpenStream` request from `envelope`'s Body.
    pub fn from_envelope(envelope: &Envelope, limits: &Limits) -> Result<Offer, Fault> {
        let element = body_element(envelope, limits)?;
        let texts = |local: &str| -> Vec<String> {
            element
                .elements()
                .filter(|e| e.name().namespace() == NS && e.name().local() == local)
                .map(|e| e.text().trim().to_owned())
                .collect()
        };
        let offer = Offer {
            representations: texts("Representation"),
            transports: texts("Transport"),
            on_error: texts("OnError").into_iter().next().unwrap_or_default(),
            operation: texts("Operation").into_iter().next().unwrap_or_default(),
        };
        if offer.representations.is_empty() || offer.transports.is_empty() {
            return Err(refused(
                "OpenStream names no ls:Representation or no ls:Transport",
            ));
        }
        Ok(offer)
    }
}

/// What the receiver grants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// The single-use token the connection presents in its preface.
    pub token: String,
    /// The representation chosen.
    pub representation: String,
    /// The transport chosen.
    pub transport: String,
    /// The port to connect to, on the host the offer was sent to.
    pub port: u16,
    /// Most schemas each direction may define.
    pub max_schemas: u32,
    /// Most requests awaiting an answer at once.
    pub max_in_flight: u32,
    /// Most bytes of one message.
    pub max_message_bytes: u32,
    /// Seconds the token stays good for before a connection presents it.
    pub token_lifetime_s: u32,
    /// Whether the stream port speaks TLS (`ls:Tls`, absent: false). A stream carried over
    /// HTTP/2 is on the URL's own connection and follows its scheme.
    pub tls: bool,
}

impl Grant {
    /// The `ls:OpenStreamResponse` element.
    pub fn to_xml(&self) -> String {
        format!(
            "<ls:OpenStreamResponse xmlns:ls=\"{NS}\"><ls:Stream>{}</ls:Stream><ls:Representation>{}</ls:Representation><ls:Transport>{}</ls:Transport><ls:Port>{}</ls:Port><ls:MaxSchemas>{}</ls:MaxSchemas><ls:MaxInFlight>{}</ls:MaxInFlight><ls:MaxMessageBytes>{}</ls:MaxMessageBytes><ls:TokenLifetimeSeconds>{}</ls:TokenLifetimeSeconds><ls:Tls>{}</ls:Tls></ls:OpenStreamResponse>",
            escape_text(&self.token),
            escape_text(&self.representation),
            escape_text(&self.transport),
            self.port,
            self.max_schemas,
            self.max_in_flight,
            self.max_message_bytes,
            self.token_lifetime_s,
            self.tls,
        )
    }

    /// Reads an `ls:OpenStreamResponse` from the answer's Body.
    pub fn from_envelope(envelope: &Envelope) -> Result<Grant, GrantError> {
        let limits = Limits::default();
        let element = body_element(envelope, &limits).map_err(|_| GrantError("is not XML"))?;
        if element.name().namespace() != NS || element.name().local() != "OpenStreamResponse" {
            return Err(GrantError("is not an ls:OpenStreamResponse"));
        }
        let text = |local: &'static str| {
            element
                .elements()
                .find(|e| e.name().namespace() == NS && e.name().local() == local)
                .map(|e| e.text().trim().to_owned())
                .ok_or(GrantError(local))
        };
        let number = |local: &'static str| -> Result<u32, GrantError> {
            text(local)?.parse().map_err(|_| GrantError(local))
        };
        let token = text("Stream")?;
        if token.is_empty() || token.len() > 128 {
            return Err(GrantError("Stream"));
        }
        Ok(Grant {
            token,
            representation: text("Representation")?,
            transport: text("Transport")?,
            port: text("Port")?.parse().map_err(|_| GrantError("Port"))?,
            max_schemas: number("MaxSchemas")?,
            max_in_flight: number("MaxInFlight")?,
            max_message_bytes: number("MaxMessageBytes")?,
            token_lifetime_s: number("TokenLifetimeSeconds")?,
            tls: match text("Tls") {
                Err(_) => false,
                Ok(value) => match value.as_str() {
                    "true" | "1" => true,
                    "false" | "0" => false,
                    _ => return Err(GrantError("Tls")),
                },
            },
        })
    }
}

/// An `OpenStreamResponse` that lacks a field or has a bad one (named).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the OpenStream answer has no valid {0}")]
pub struct GrantError(pub &'static str);

/// The `ls:StreamRefused` fault.
pub fn refused(why: impl Into<String>) -> Fault {
    Fault::application(
        FaultCode::Sender,
        [QName::new(NS, "StreamRefused")],
        why.into(),
    )
}

fn body_element(envelope: &Envelope, limits: &Limits) -> Result<Element, Fault> {
    let payload = envelope
        .extract_payload()
        .ok_or_else(|| refused("the Body is empty"))?;
    Element::parse(&payload, limits)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lather_envelope::SoapVersion;

    fn wrap(body: &str) -> Envelope {
        let xml = format!(
            "<S:Envelope xmlns:S=\"{}\"><S:Body>{body}</S:Body></S:Envelope>",
            SoapVersion::V12.namespace()
        );
        Envelope::parse(bytes::Bytes::from(xml), &Limits::default()).unwrap()
    }

    #[test]
    fn offers_and_grants_read_back_what_was_written() {
        let offer = Offer {
            representations: vec!["lather-stream/1".into()],
            transports: vec!["tcp".into()],
            on_error: "fault".into(),
            operation: "{urn:lather:echo}echo".into(),
        };
        assert_eq!(
            Offer::from_envelope(&wrap(&offer.to_xml()), &Limits::default()).unwrap(),
            offer
        );
        let grant = Grant {
            token: "abc".into(),
            representation: "lather-stream/1".into(),
            transport: "tcp".into(),
            port: 7001,
            max_schemas: 64,
            max_in_flight: 256,
            max_message_bytes: 4_194_304,
            token_lifetime_s: 30,
            tls: true,
        };
        assert_eq!(Grant::from_envelope(&wrap(&grant.to_xml())).unwrap(), grant);
        // A grant from a peer that does not speak of TLS: a plain stream port.
        let older = grant.to_xml().replace("<ls:Tls>true</ls:Tls>", "");
        assert!(!Grant::from_envelope(&wrap(&older)).unwrap().tls);
        let broken = grant.to_xml().replace("<ls:Tls>true", "<ls:Tls>yes");
        assert_eq!(Grant::from_envelope(&wrap(&broken)), Err(GrantError("Tls")));
        let broken = grant.to_xml().replace("<ls:Port>7001", "<ls:Port>x");
        assert_eq!(
            Grant::from_envelope(&wrap(&broken)),
            Err(GrantError("Port"))
        );
    }

    #[test]
    fn an_offer_without_representation_is_refused() {
        let e = Offer::from_envelope(
            &wrap("<ls:OpenStream xmlns:ls=\"urn:lather:stream\"/>"),
            &Limits::default(),
        )
        .unwrap_err();
        assert!(e.to_string().contains("Representation"), "{e}");
    }
}
