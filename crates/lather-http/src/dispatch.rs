//! One request, start to finish: admin endpoints, routing, negotiation, body, envelope,
//! service, metrics. Every failure becomes a Fault response.

use crate::body::{decode, read_limited};
use crate::echo;
use crate::flows::{self, Admitted};
use crate::metrics::NO_SERVICE;
use crate::negotiate::{SoapHeaders, guess_version, negotiate};
use crate::respond::{self, HttpResponse};
use crate::server::Peer;
use crate::service::{Behaviour, Service};
use crate::state::State;
use bytes::Bytes;
use http::request::Parts;
use http::{Method, Request, StatusCode};
use hyper::body::Body;
use lather_envelope::{Envelope, Fault, FaultKind, SoapVersion};
use lather_pipeline::{Context, Direction, Priority, check_must_understand};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The request header naming the priority class: `high`, `normal` (default) or `low`.
pub(crate) const PRIORITY_HEADER: &str = "lather-priority";

/// How long a client may take to send its body.
const BODY_TIMEOUT: Duration = Duration::from_secs(30);

type Outcome = Result<HttpResponse, (Fault, SoapVersion)>;

/// Answers one request.
pub(crate) async fn handle<B>(state: Arc<State>, req: Request<B>) -> HttpResponse
where
    B: Body<Data = Bytes>,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let started = Instant::now();
    let _in_flight = state.metrics.in_flight();
    if let Some(response) = admin(&state, &req) {
        return response;
    }
    let Some(service) = state.services.get(req.uri().path()).cloned() else {
        let fault = Fault::with_reason(
            FaultKind::NoSuchService,
            format!("no service at {}", req.uri().path()),
        );
        let version = guess_version(req.headers());
        return finish(&state, NO_SERVICE, Err((fault, version)), started, 0);
    };
    let (outcome, bytes_in) = serve(&state, &service, req).await;
    finish(&state, &service.name, outcome, started, bytes_in)
}

fn finish(
    state: &State,
    service: &str,
    outcome: Outcome,
    started: Instant,
    bytes_in: u64,
) -> HttpResponse {
    let response = outcome.unwrap_or_else(|(fault, version)| {
        state.metrics.fault(service, fault.kind().spec().name);
        tracing::debug!(service, %fault, "fault");
        respond::fault(&fault, version)
    });
    let bytes_out = hyper::body::Body::size_hint(response.body())
        .exact()
        .unwrap_or(0);
    state.metrics.answered(
        service,
        response.status().as_u16(),
        started.elapsed(),
        bytes_in,
        bytes_out,
    );
    response
}

/// `GET /health` and `GET /metrics`.
fn admin<B>(state: &State, req: &Request<B>) -> Option<HttpResponse> {
    if req.method() != Method::GET {
        return None;
    }
    match req.uri().path() {
        "/health" => Some(respond::with_type(
            StatusCode::OK,
            "text/plain; charset=utf-8",
            Bytes::from_static(b"ok\n"),
        )),
        "/metrics" => Some(respond::with_type(
            StatusCode::OK,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Bytes::from(state.metrics.render()),
        )),
        _ => None,
    }
}

async fn serve<B>(state: &State, service: &Service, req: Request<B>) -> (Outcome, u64)
where
    B: Body<Data = Bytes>,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let (parts, body) = req.into_parts();
    let guess = guess_version(&parts.headers);
    if parts.method == Method::GET && is_wsdl_query(parts.uri.query()) {
        return (
            wsdl(state, service, &parts).await.map_err(|f| (f, guess)),
            0,
        );
    }
    if parts.method != Method::POST {
        let fault = Fault::with_reason(
            FaultKind::MethodNotAllowed,
            format!(
                "{} is not allowed: POST a SOAP message, or GET {}?wsdl",
                parts.method, service.path
            ),
        );
        return (Err((fault, guess)), 0);
    }
    let soap = match negotiate(&parts.headers) {
        Ok(soap) => soap,
        Err(fault) => return (Err((fault, guess)), 0),
    };
    // Admission before the body is read: a refused request costs almost nothing, and a
    // waiting one leaves its body in the socket buffers.
    // A route's priority is the operator's policy and wins over the client's header.
    let priority = service
        .plans
        .priority_for_action(soap.action.as_deref())
        .or_else(|| {
            parts
                .headers
                .get(PRIORITY_HEADER)
                .and_then(|v| v.to_str().ok())
                .and_then(Priority::parse)
        })
        .unwrap_or_default();
    let _permit = match service.gate.enter(priority).await {
        Ok(permit) => permit,
        Err(busy) => {
            let fault = Fault::with_reason(
                FaultKind::ServerBusy,
                format!(
                    "server busy: {} in flight and {} waiting; retry later",
                    busy.in_flight, busy.queued
                ),
            );
            return (Err((fault, soap.version)), 0);
        }
    };
    let version = soap.version;
    let limit = state.limits.max_message_bytes;
    let raw =
        match tokio::time::timeout(BODY_TIMEOUT, read_limited(&parts.headers, body, limit)).await {
            Ok(Ok(raw)) => raw,
            Ok(Err(fault)) => return (Err((fault, version)), 0),
            Err(_) => {
                let fault = Fault::with_reason(
                    FaultKind::BadRequestBody,
                    "the request body did not arrive within 30 s",
                );
                return (Err((fault, version)), 0);
            }
        };
    let bytes_in = raw.len() as u64;
    let outcome = process(state, service, &parts, soap, raw)
        .await
        .map_err(|f| (f, version));
    (outcome, bytes_in)
}

async fn process(
    state: &State,
    service: &Service,
    parts: &Parts,
    soap: SoapHeaders,
    raw: Bytes,
) -> Result<HttpResponse, Fault> {
    let version = soap.version;
    let mut context = Context {
        id: flows::next_message_id(),
        service: service.name.clone(),
        action: soap.action,
        client: parts.extensions.get::<Peer>().map(|p| p.0.ip().to_string()),
        ..Context::default()
    };
    match exchange(state, service, parts, version, raw, &mut context).await {
        Err(fault) if !service.plans.fault.is_empty() => {
            let response = respond::fault(&fault, version);
            let context = Context {
                direction: Direction::Fault,
                ..context
            };
            Ok(flows::fault(&service.plans.fault, response, &context, &state.limits).await)
        }
        result => result,
    }
}

/// The message's way through: parse, route, mustUnderstand, request flow, service,
/// response (or fault) flow. Leaves the request in `context` once it is known, for the
/// fault flow.
async fn exchange(
    state: &State,
    service: &Service,
    parts: &Parts,
    version: SoapVersion,
    raw: Bytes,
    context: &mut Context,
) -> Result<HttpResponse, Fault> {
    let bytes = decode(&parts.headers, raw, state.limits.max_message_bytes)?;
    let envelope = Envelope::parse(bytes, &state.limits)?;
    if envelope.version() != version {
        return Err(Fault::with_reason(
            FaultKind::VersionMismatch,
            format!(
                "a {} envelope was sent as {}",
                envelope.version(),
                version.media_type()
            ),
        ));
    }
    let plans = &service.plans;
    if !plans.fault.is_empty() {
        context.request = Some(envelope.clone());
    }
    let (request_plan, response_plan) = plans.for_message(&envelope, context.action.as_deref());
    let understands = |name: &_| {
        service.understood.contains(name) || request_plan.understood_headers().contains(name)
    };
    check_must_understand(
        &envelope,
        understands,
        service.behaviour.is_ultimate_receiver(),
    )?;
    let envelope = match flows::request(request_plan, envelope, context, &state.limits).await? {
        Admitted::Forward(envelope) => envelope,
        Admitted::Answered(response) => return Ok(response),
    };
    let response = match &service.behaviour {
        Behaviour::Echo => respond::soap(StatusCode::OK, version, echo::respond(&envelope)),
        Behaviour::Gateway(gateway) => {
            gateway
                .forward(&parts.headers, envelope.as_bytes().clone())
                .await?
        }
        Behaviour::EventSource(source) => {
            crate::eventing::respond(state, source, service, parts, &envelope, context).await?
        }
    };
    // A fault comes back with a 4xx/5xx status: a success needs no look for the fault flow.
    if response_plan.is_empty() && (plans.fault.is_empty() || response.status().is_success()) {
        return Ok(response);
    }
    let context = Context {
        direction: Direction::Response,
        request: Some(envelope),
        ..context.clone()
    };
    flows::response(
        response_plan,
        &plans.fault,
        response,
        &context,
        &state.limits,
    )
    .await
}

async fn wsdl(state: &State, service: &Service, parts: &Parts) -> Result<HttpResponse, Fault> {
    let location = service_location(state, service, parts);
    match &service.behaviour {
        Behaviour::Echo => Ok(respond::with_type(
            StatusCode::OK,
            "text/xml; charset=utf-8",
            echo::wsdl(&location),
        )),
        Behaviour::Gateway(gateway) => gateway.wsdl(&location).await,
        Behaviour::EventSource(_) => Err(Fault::with_reason(
            FaultKind::MethodNotAllowed,
            "an event source serves no WSDL: POST WS-Eventing requests",
        )),
    }
}

fn is_wsdl_query(query: Option<&str>) -> bool {
    query.is_some_and(|q| q.split('&').any(|p| p.eq_ignore_ascii_case("wsdl")))
}

/// The service's URL as handed out (WSDL address, subscription manager): the configured
/// `public_url` when set; else `http://{authority}{path}` with the request's absolute-form
/// authority or `Host` when that is a valid `host[:port]`; else the listen address. A
/// hostile `Host` never reaches the address.
pub(crate) fn service_location(state: &State, service: &Service, parts: &Parts) -> String {
    if let Some(url) = &service.public_url {
        return url.clone();
    }
    let host = parts
        .uri
        .authority()
        .map(|a| a.as_str().to_owned())
        .or_else(|| {
            parts
                .headers
                .get(http::header::HOST)
                .and_then(|h| h.to_str().ok())
                .map(str::to_owned)
        })
        .filter(|h| crate::authority::is_valid(h))
        .unwrap_or_else(|| state.listen.to_string());
    format!("http://{host}{}", service.path)
}
