//! The answer to `OpenStream`: a grant (token, transport, port, bounds) when the service
//! accepts message streams, else `ls:StreamRefused`.

use crate::respond::{self, HttpResponse};
use crate::service::Service;
use crate::state::State;
use bytes::Bytes;
use http::StatusCode;
use lather_context::stream::REPRESENTATION;
use lather_context::stream::duplex::TRANSPORT_H2;
use lather_context::stream::negotiation::{self, Grant, Offer, TRANSPORT_TCP};
use lather_envelope::{Envelope, EnvelopeBuilder, Fault, FaultKind, QName, SoapVersion};

/// Whether `operation` is the stream negotiation.
pub(crate) fn is_open_stream(operation: &QName) -> bool {
    operation.namespace() == negotiation::NS && operation.local() == "OpenStream"
}

/// Answers `OpenStream` for `service`: a grant when the service accepts streams and one
/// of the offered representations and transports is spoken here, else `StreamRefused`.
pub(crate) fn open_stream(
    state: &State,
    service: &Service,
    envelope: &Envelope,
    version: SoapVersion,
) -> Result<HttpResponse, Fault> {
    let acceptor = match &state.streams {
        Some(acceptor) if service.accept_streams => acceptor,
        _ => {
            return Err(negotiation::refused(format!(
                "{} does not accept message streams",
                service.name
            )));
        }
    };
    let offer = Offer::from_envelope(envelope, &state.limits)?;
    if !offer.representations.iter().any(|r| r == REPRESENTATION) {
        return Err(negotiation::refused(format!(
            "no representation offered is spoken here (only {REPRESENTATION})"
        )));
    }
    // TCP when offered (a connection of its own), else HTTP/2 (one request on this port).
    let transport = [TRANSPORT_TCP, TRANSPORT_H2]
        .into_iter()
        .find(|t| offer.transports.iter().any(|o| o == t))
        .ok_or_else(|| {
            negotiation::refused(format!(
                "no transport offered is spoken here (only {TRANSPORT_TCP} and {TRANSPORT_H2})"
            ))
        })?;
    let token = acceptor.tokens.grant(&service.path).ok_or_else(|| {
        Fault::with_reason(
            FaultKind::ServerBusy,
            "too many message streams are being opened; retry later",
        )
    })?;
    let limits = &acceptor.limits;
    let grant = Grant {
        token,
        representation: REPRESENTATION.to_owned(),
        transport: transport.to_owned(),
        port: if transport == TRANSPORT_TCP {
            acceptor.port()
        } else {
            state.listen.port()
        },
        max_schemas: limits.codec.max_schemas as u32,
        max_in_flight: limits.max_in_flight as u32,
        max_message_bytes: u32::try_from(limits.codec.max_message_bytes).unwrap_or(u32::MAX),
        token_lifetime_s: acceptor.tokens.lifetime().as_secs() as u32,
        tls: if transport == TRANSPORT_TCP {
            acceptor.tls.is_some()
        } else {
            state.scheme == crate::scheme::Scheme::Https
        },
    };
    tracing::debug!(service = %service.name, operation = %offer.operation, "message stream granted");
    let body = EnvelopeBuilder::new(version)
        .body(Bytes::from(grant.to_xml()))
        .build();
    Ok(respond::soap(StatusCode::OK, version, body))
}
