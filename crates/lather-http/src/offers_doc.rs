//! A service's QoS offers served to clients: `GET {path}?qos` gives the `q:Offers`
//! document, and the SOAP operation `q:GetOffers` answers `q:GetOffersResponse` holding
//! it. A service that makes no offers answers an empty document.

use crate::respond::{self, HttpResponse};
use crate::service::Service;
use bytes::Bytes;
use http::StatusCode;
use lather_envelope::{EnvelopeBuilder, QName, SoapVersion};
use lather_qos::QOS_NS;

/// Whether the query string asks for the offers (`?qos`).
pub(crate) fn is_qos_query(query: Option<&str>) -> bool {
    query.is_some_and(|q| q.split('&').any(|p| p.eq_ignore_ascii_case("qos")))
}

/// Whether a Body's operation is `q:GetOffers`.
pub(crate) fn is_get_offers(operation: &QName) -> bool {
    operation.namespace() == QOS_NS && operation.local() == "GetOffers"
}

fn offers(service: &Service) -> String {
    service
        .offers
        .as_ref()
        .map_or_else(|| lather_qos::offers_document(&[]), |o| o.document())
}

/// The `q:Offers` document, as `application/xml`.
pub(crate) fn document(service: &Service) -> HttpResponse {
    respond::with_type(
        StatusCode::OK,
        "application/xml; charset=utf-8",
        Bytes::from(offers(service)),
    )
}

/// The answer to `q:GetOffers`.
pub(crate) fn answer(service: &Service, version: SoapVersion) -> HttpResponse {
    let body = format!(
        "<q:GetOffersResponse xmlns:q=\"{QOS_NS}\">{}</q:GetOffersResponse>",
        offers(service)
    );
    let bytes = EnvelopeBuilder::new(version)
        .body(Bytes::from(body))
        .build();
    respond::soap(StatusCode::OK, version, bytes)
}
