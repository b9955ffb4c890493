//! One request, start to finish: admin endpoints, routing, negotiation, body, envelope,
//! service, metrics. Every failure becomes a Fault response.

use crate::arriving::Arriving;
use crate::body::{decode, read_limited};
use crate::flows::{self, Admitted};
use crate::metrics::NO_SERVICE;
use crate::negotiate::{SoapHeaders, guess_version, negotiate};
use crate::own_headers::PRIORITY_HEADER;
use crate::peer::Peer;
use crate::respond::{self, HttpResponse};
use crate::service::Service;
use crate::state::State;
use crate::timing::{Phase, Timeline};
use bytes::Bytes;
use futures_util::FutureExt;
use http::request::Parts;
use http::{Method, StatusCode};
use hyper::body::Body;
use lather_config::ServerTiming;
use lather_envelope::{Envelope, Fault, FaultKind, SoapVersion};
use lather_pipeline::{
    Context, Direction, Location, Priority, Reply, RequestCacheControl, ServiceRequest,
    check_must_understand,
};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Instant;
use tracing::Instrument;

type Outcome = Result<HttpResponse, (Fault, SoapVersion)>;

/// Answers one request on the CPU pool's scope; a panic anywhere below becomes an
/// `Internal` fault in the request's (guessed) SOAP version, and the caller lives on.
/// The request is boxed: see `listening::answer`.
pub(crate) async fn handle_guarded<B>(state: Arc<State>, req: Box<Arriving<B>>) -> HttpResponse
where
    B: Body<Data = Bytes>,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let version = guess_version(req.request.headers());
    let pool = state.cpu_pool.clone();
    AssertUnwindSafe(pool.scope(handle(state, req, version)))
        .catch_unwind()
        .await
        .unwrap_or_else(|_| {
            let fault = Fault::with_reason(
                FaultKind::Internal,
                "the request handler failed unexpectedly",
            );
            crate::fault_log::log(NO_SERVICE, &fault);
            respond::fault(&fault, version)
        })
}

/// Answers one request; `guess` is the SOAP version its faults go out in until its
/// headers are negotiated ([`guess_version`], read once per request).
pub(crate) async fn handle<B>(
    state: Arc<State>,
    req: Box<Arriving<B>>,
    guess: SoapVersion,
) -> HttpResponse
where
    B: Body<Data = Bytes>,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let started = Instant::now();
    let _in_flight = state.metrics.in_flight();
    if let Some(why) = crate::host::problem(&req.request) {
        return bad_host(&state, &req, why, started, guess);
    }
    if let Some(response) = admin(&state, &req) {
        return response;
    }
    let span = crate::request_span::start(&req);
    if span.is_none() {
        return answer_soap(&state, req, started, span, guess).await;
    }
    answer_soap(&state, req, started, span.clone(), guess)
        .instrument(span)
        .await
}

/// Answers one SOAP request (not an admin endpoint) in `span`, its exported span
/// ([`tracing::Span::none`] when traces are not exported).
async fn answer_soap<B>(
    state: &State,
    req: Box<Arriving<B>>,
    started: Instant,
    span: tracing::Span,
    guess: SoapVersion,
) -> HttpResponse
where
    B: Body<Data = Bytes>,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let access = state
        .access_log
        .then(|| crate::access::AccessEntry::of(&req));
    let timed = wants_timing(state, &req);
    let timeline = if timed || state.phases.is_some() {
        Timeline::new(started)
    } else {
        Timeline::disabled(started)
    };
    let answer = Answering {
        timeline,
        gzip: crate::compress::accepts_gzip(req.request.headers()),
        timed,
        bytes_in: 0,
        access,
        operation: None,
        span,
    };
    let Some(service) = state.route(req.request.uri().path()).cloned() else {
        let fault = Fault::with_reason(
            FaultKind::NoSuchService,
            format!("no service at {}", req.request.uri().path()),
        );
        return finish(state, NO_SERVICE, Err((fault, guess)), answer);
    };
    let mut answer = answer;
    let outcome = serve(state, &service, req, &mut answer, guess).await;
    if let Some(latency) = service.offers.as_ref().and_then(|o| o.latency()) {
        latency.record(started.elapsed());
    }
    finish(state, &service.name, outcome, answer)
}

/// What the answer to a request needs besides the outcome: how its time went, whether
/// the client takes gzip and asked for `Server-Timing`, the request's size, its access-log
/// entry (when the log is on) and, once its envelope is read, its operation as the metrics
/// label it.
struct Answering {
    timeline: Timeline,
    gzip: bool,
    timed: bool,
    bytes_in: u64,
    access: Option<crate::access::AccessEntry>,
    operation: Option<crate::op_metrics::Operation>,
    /// The request's exported span ([`tracing::Span::none`] when traces are not exported).
    span: tracing::Span,
}

fn finish(state: &State, service: &str, outcome: Outcome, mut answer: Answering) -> HttpResponse {
    let response = outcome.unwrap_or_else(|(fault, version)| {
        let operation = answer.operation.as_ref();
        state
            .metrics
            .fault(service, operation, fault.kind().spec().name);
        crate::fault_log::log(service, &fault);
        respond::fault(&fault, version)
    });
    let mut response = state.compression.apply(response, answer.gzip);
    let timeline = &mut answer.timeline;
    timeline.mark(Phase::Encode);
    if let Some(phases) = &state.phases {
        phases.record(service, timeline);
    }
    if answer.timed
        && let Ok(value) = http::HeaderValue::from_str(&timeline.server_timing())
    {
        response.headers_mut().insert("server-timing", value);
    }
    let bytes_out = hyper::body::Body::size_hint(response.body())
        .exact()
        .unwrap_or(0);
    let elapsed = std::time::Duration::from_nanos(timeline.total_nanos());
    state.metrics.answered(
        service,
        answer.operation.as_ref(),
        response.status().as_u16(),
        elapsed,
        answer.bytes_in,
        bytes_out,
    );
    crate::request_span::finish(&answer.span, service, &response);
    if let Some(access) = &answer.access {
        access.emit(&crate::access::Answered {
            service,
            status: response.status().as_u16(),
            fault: response.extensions().get::<respond::Faulted>().map(|f| f.0),
            bytes_in: answer.bytes_in,
            bytes_out,
            elapsed,
            upstream: response
                .extensions()
                .get::<crate::access::UpstreamUsed>()
                .map(|u| u.0.as_str()),
        });
    }
    response
}

/// Whether the answer carries `Server-Timing`: always, never, or when the request asks
/// with `Lather-Timing` from an address that may read `/metrics`.
fn wants_timing<B>(state: &State, req: &Arriving<B>) -> bool {
    match state.server_timing {
        ServerTiming::Off => false,
        ServerTiming::Always => true,
        ServerTiming::OnRequest => {
            req.request
                .headers()
                .contains_key(&crate::timing::ASK_HEADER)
                && admin_allowed(state, &req.peer)
        }
    }
}

/// Whether `[server] admin_allow` lets the request's client (`peer`) read `/metrics`.
fn admin_allowed(state: &State, peer: &Peer) -> bool {
    state.admin_allow.is_empty()
        || state
            .admin_allow
            .iter()
            .any(|net| net.contains(peer.addr.ip()))
}

/// A request whose `Host` is missing, repeated or invalid: 400 (in both SOAP versions, as
/// RFC 9112 §3.2 requires) and the connection closed.
fn bad_host<B>(
    state: &State,
    req: &Arriving<B>,
    why: String,
    started: Instant,
    guess: SoapVersion,
) -> HttpResponse {
    let fault = Fault::with_reason(FaultKind::BadHost, why);
    state
        .metrics
        .fault(NO_SERVICE, None, fault.kind().spec().name);
    let mut response = respond::fault(&fault, guess);
    *response.status_mut() = StatusCode::BAD_REQUEST;
    response.headers_mut().insert(
        http::header::CONNECTION,
        http::HeaderValue::from_static("close"),
    );
    let bytes_out = Body::size_hint(response.body()).exact().unwrap_or(0);
    let elapsed = started.elapsed();
    state
        .metrics
        .answered(NO_SERVICE, None, 400, elapsed, 0, bytes_out);
    crate::fault_log::log(NO_SERVICE, &fault);
    if state.access_log {
        crate::access::AccessEntry::of(req).emit(&crate::access::Answered {
            service: NO_SERVICE,
            status: 400,
            fault: Some(fault.kind()),
            bytes_in: 0,
            bytes_out,
            elapsed,
            upstream: None,
        });
    }
    response
}

/// `GET /health`, `GET /ready` and `GET /metrics` (and `HEAD`, answered alike without the
/// body), for the clients `[server] admin_allow` lets in; others get 403. Not in the
/// access log.
fn admin<B>(state: &State, arriving: &Arriving<B>) -> Option<HttpResponse> {
    let req = &arriving.request;
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return None;
    }
    let path = req.uri().path();
    if path != "/health" && path != "/ready" && path != "/metrics" {
        return None;
    }
    if !admin_allowed(state, &arriving.peer) {
        return Some(respond::with_type(
            StatusCode::FORBIDDEN,
            "text/plain; charset=utf-8",
            Bytes::from_static(b"forbidden: this address is not in [server] admin_allow\n"),
        ));
    }
    if path == "/health" || path == "/ready" {
        let (ok, text) = if path == "/health" {
            state.health.report()
        } else {
            state.readiness.report()
        };
        let status = if ok {
            StatusCode::OK
        } else {
            StatusCode::SERVICE_UNAVAILABLE
        };
        return Some(respond::with_type(
            status,
            "text/plain; charset=utf-8",
            Bytes::from(text),
        ));
    }
    Some(respond::with_type(
        StatusCode::OK,
        "application/openmetrics-text; version=1.0.0; charset=utf-8",
        Bytes::from(state.metrics.render()),
    ))
}

async fn serve<B>(
    state: &State,
    service: &Service,
    req: Box<Arriving<B>>,
    answer: &mut Answering,
    guess: SoapVersion,
) -> Outcome
where
    B: Body<Data = Bytes>,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let Arriving { request, peer } = *req;
    let (parts, body) = request.into_parts();
    if parts.method == Method::GET
        && let Some(replies) = &service.async_replies
        && let Some(id) = reply_query(parts.uri.query())
    {
        return Ok(Box::pin(replies.poll(&id)).await);
    }
    if parts.method == Method::GET && crate::offers_doc::is_qos_query(parts.uri.query()) {
        return Ok(crate::offers_doc::document(service));
    }
    let asks_document = service.gateway.is_some()
        && crate::gateway::requested_document(parts.uri.query()).is_some();
    if parts.method == Method::GET && (is_wsdl_query(parts.uri.query()) || asks_document) {
        return Box::pin(wsdl(state, service, &parts, guess))
            .await
            .map_err(|f| (f, guess));
    }
    if parts.method != Method::POST {
        let fault = Fault::with_reason(
            FaultKind::MethodNotAllowed,
            format!(
                "{} is not allowed: POST a SOAP message, or GET {}?wsdl (or ?qos)",
                parts.method, service.path
            ),
        );
        return Err((fault, guess));
    }
    let soap = match negotiate(&parts.headers) {
        Ok(soap) => soap,
        Err(fault) => return Err((fault, guess)),
    };
    // The body is read before admission, bounded in size and pace: a slow sender holds no
    // admission slot and teaches the adaptive limit nothing.
    let version = soap.version;
    let limit = state.limits.max_message_bytes;
    let raw = match read_limited(&parts.headers, body, limit, &state.body).await {
        Ok(raw) => raw,
        Err(fault) if fault.kind() == FaultKind::RequestTooSlow => {
            return Ok(too_slow(state, service, &parts, &fault, version));
        }
        Err(fault) => return Err((fault, version)),
    };
    answer.bytes_in = raw.len() as u64;
    answer.timeline.mark(Phase::Receive);
    let stated = crate::qos::early(state, &parts, &raw).map_err(|f| (f, version))?;
    let priority = admission_class(state, service, &soap, &parts, &peer, &stated);
    let bound = match &stated {
        crate::qos::Stated::Read { requirements, .. } => requirements.response_time,
        crate::qos::Stated::Unread => None,
    };
    // The permit is held until the answer is built (not while it is written): its latency,
    // admission to answer, is what the adaptive limit learns from. A request that states a
    // response time waits for admission no longer than that: a late answer is no answer.
    let entered = match bound {
        None => service.gate.enter(priority).await,
        Some(bound) => match tokio::time::timeout(bound, service.gate.enter(priority)).await {
            Ok(entered) => entered,
            Err(_) => {
                let fault = Fault::with_reason(
                    FaultKind::ResponseTimeUnattainable,
                    format!(
                        "the stated response time (q:ResponseTimeMs {}) passed while the request waited for admission",
                        bound.as_millis()
                    ),
                );
                return Err((fault, version));
            }
        },
    };
    let _permit = match entered {
        Ok(permit) => permit,
        Err(busy) => {
            let fault = Fault::with_reason(
                FaultKind::ServerBusy,
                format!(
                    "server busy: {} in flight and {} waiting; retry later",
                    busy.in_flight, busy.queued
                ),
            );
            return Err((fault, version));
        }
    };
    answer.timeline.mark(Phase::Queue);
    let arrived = Arrived { raw, stated, peer };
    process(state, service, &parts, soap, arrived, answer)
        .await
        .map_err(|f| (f, version))
}

/// The admission class of a request whose body has been read: a route's priority (the
/// operator's policy for the action), else its QoS traffic class's (stated in its header
/// or given by a `[[qos.client]]` rule), else the client's `lather-priority` header — whose
/// `high` counts as normal once any class sets a priority.
fn admission_class(
    state: &State,
    service: &Service,
    soap: &SoapHeaders,
    parts: &Parts,
    peer: &Peer,
    stated: &crate::qos::Stated,
) -> Priority {
    service
        .plans
        .priority_for_action(soap.action.as_deref())
        .or_else(|| crate::qos::priority(state, parts, stated, Some(peer.addr.ip())))
        .or_else(|| {
            let asked = parts
                .headers
                .get(&PRIORITY_HEADER)
                .and_then(|v| v.to_str().ok())
                .and_then(Priority::parse)?;
            // Where classes rank requests, only a class (and its `allow`) raises one: the
            // header may still lower a request, not lift it past the classes.
            if asked == Priority::High && state.compression.policy.ranks() {
                return Some(Priority::Normal);
            }
            Some(asked)
        })
        .unwrap_or_default()
}

/// The answer to a body that came too slowly: the fault, and the connection closed after
/// it (HTTP/1; an HTTP/2 stream ends with its answer), so the rest is never read.
fn too_slow(
    state: &State,
    service: &Service,
    parts: &Parts,
    fault: &Fault,
    version: SoapVersion,
) -> HttpResponse {
    state
        .metrics
        .fault(&service.name, None, fault.kind().spec().name);
    crate::fault_log::log(&service.name, fault);
    let mut response = respond::fault(fault, version);
    if parts.version < http::Version::HTTP_2 {
        response.headers_mut().insert(
            http::header::CONNECTION,
            http::HeaderValue::from_static("close"),
        );
    }
    response
}

async fn process(
    state: &State,
    service: &Service,
    parts: &Parts,
    soap: SoapHeaders,
    arrived: Arrived,
    answer: &mut Answering,
) -> Result<HttpResponse, Fault> {
    let version = soap.version;
    let mut context = Context {
        id: flows::next_message_id(),
        service: service.name.clone(),
        action: soap.action,
        client: Some(arrived.peer.addr.ip()),
        ..Context::default()
    };
    if let Some(asked) = RequestCacheControl::from_headers(&parts.headers) {
        context.properties.insert(asked);
    }
    if let Some(client) = parts.extensions.get::<crate::tls::ClientCertificate>() {
        context.properties.insert(client.clone());
    }
    if service.gateway.is_some() {
        let arrival = arrival(state, service, parts, &arrived.peer);
        if let Some(peer) = arrival.peer {
            tracing::debug!(
                service = %service.name,
                %peer,
                client = %crate::client_address::client_address(peer.ip(), &parts.headers, &state.trusted_proxies),
                "forwarding a request"
            );
        }
        context.properties.insert(arrival);
    }
    match exchange(
        state,
        service,
        parts,
        version,
        arrived,
        &mut context,
        answer,
    )
    .await
    {
        Err(fault) if !service.plans.fault.is_empty() => {
            crate::fault_log::log(&service.name, &fault);
            let response = respond::fault(&fault, version);
            let context = Context {
                direction: Direction::Fault,
                ..context
            };
            // Boxed, as every flow below: a flow's future is large and rarely needed, and
            // inline it would be copied with the whole request's future on every request.
            let answered = Box::pin(flows::fault(
                &service.plans.fault,
                response,
                &context,
                &state.limits,
            ))
            .await;
            answer.timeline.mark(Phase::ResponseStages);
            Ok(answered)
        }
        result => result,
    }
}

/// A request's body as read, its QoS header if it was read before admission, and the
/// connection it came on.
struct Arrived {
    raw: Bytes,
    stated: crate::qos::Stated,
    peer: Peer,
}

/// The message's way through: parse, route, mustUnderstand, request flow, service,
/// response (or fault) flow. Leaves the request in `context` once it is known, for the
/// fault flow.
async fn exchange(
    state: &State,
    service: &Service,
    parts: &Parts,
    version: SoapVersion,
    arrived: Arrived,
    context: &mut Context,
    answering: &mut Answering,
) -> Result<HttpResponse, Fault> {
    let Arrived { raw, stated, peer } = arrived;
    // A message whose QoS header was read before admission is parsed already.
    let (envelope, read) = match stated {
        crate::qos::Stated::Read {
            requirements,
            envelope,
        } => (*envelope, Some(requirements)),
        crate::qos::Stated::Unread => {
            let bytes = decode(&parts.headers, raw, state.limits.max_message_bytes)?;
            (Envelope::parse(bytes, &state.limits)?, None)
        }
    };
    if let Some(access) = &mut answering.access {
        access.operation = envelope.operation().map(|op| op.local().to_owned());
    }
    if let Some(op) = envelope.operation() {
        crate::request_span::operation(&answering.span, op.local());
    }
    answering.operation =
        state
            .metrics
            .operation(&service.name, &service.operations, envelope.operation());
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
    // What the client asked of its answer (its QoS header, else a [[qos.client]] rule,
    // which may match the identity the request flow authenticated): once the answer is
    // made, the connection takes the class's marking and the compression preference
    // travels on the answer to where it is compressed.
    let stated = crate::qos::requirements(state, &envelope, read)?;
    let timeline = &mut answering.timeline;
    let answer = route(state, service, parts, envelope, context, timeline).await?;
    let identity = context
        .properties
        .get::<lather_pipeline::Identity>()
        .map(lather_pipeline::Identity::name);
    let chosen = crate::qos::apply(state, parts, &peer, &stated, identity);
    Ok(crate::compress::with_preference(answer, chosen))
}

/// A parsed request's way on: accepted for an asynchronous answer, a stream opened, a
/// batch's items each handled, or the message handled.
async fn route(
    state: &State,
    service: &Service,
    parts: &Parts,
    envelope: Envelope,
    context: &mut Context,
    timeline: &mut Timeline,
) -> Result<HttpResponse, Fault> {
    let version = envelope.version();
    // Boxed, as every rare way below: inline, its future would be copied with the whole
    // request's future on every request.
    if let Some(replies) = &service.async_replies
        && let Some(accepted) =
            Box::pin(replies.intake(&envelope, context.action.as_deref())).await?
    {
        return Ok(accepted);
    }
    if envelope
        .operation()
        .is_some_and(crate::offers_doc::is_get_offers)
    {
        return Ok(crate::offers_doc::answer(service, version));
    }
    if envelope
        .operation()
        .is_some_and(crate::stream_grant::is_open_stream)
    {
        return crate::stream_grant::open_stream(state, service, &envelope, version);
    }
    if envelope
        .operation()
        .is_some_and(lather_envelope::batch::is_batch)
    {
        let base = Context {
            request: None,
            ..context.clone()
        };
        let each = |item: Envelope| {
            let mut context = Context {
                id: flows::next_message_id(),
                ..base.clone()
            };
            async move {
                let mut untimed = Timeline::disabled(Instant::now());
                Box::pin(handle_envelope(
                    state,
                    service,
                    parts,
                    item,
                    &mut context,
                    &mut untimed,
                ))
                .await
            }
        };
        let max = state.max_batch_items;
        return Box::pin(crate::batch::run(&envelope, &state.limits, max, each)).await;
    }
    handle_envelope(state, service, parts, envelope, context, timeline).await
}

/// One envelope's way on from its parse: routing, mustUnderstand, request flow, service,
/// response (or fault) flow. A batch's items each come this way as messages of their own.
pub(crate) async fn handle_envelope(
    state: &State,
    service: &Service,
    parts: &Parts,
    envelope: Envelope,
    context: &mut Context,
    timeline: &mut Timeline,
) -> Result<HttpResponse, Fault> {
    let version = envelope.version();
    if !service.operations.is_empty()
        && !envelope
            .operation()
            .is_some_and(|op| service.operations.contains(op))
    {
        let named = envelope.operation().map_or_else(
            || "an empty Body".to_owned(),
            |op| format!("{{{}}}{}", op.namespace(), op.local()),
        );
        return Err(Fault::with_reason(
            FaultKind::UnknownOperation,
            format!("{} does not serve {named}", service.name),
        ));
    }
    let plans = &service.plans;
    if !plans.fault.is_empty() {
        context.request = Some(envelope.clone());
    }
    let (request_plan, response_plan) = plans.for_message(&envelope, context.action.as_deref());
    let qos = lather_qos::header_name();
    let understands = |name: &_| {
        name == qos
            || service.understood.contains(name)
            || request_plan.understood_headers().contains(name)
    };
    check_must_understand(&envelope, understands, service.ultimate)?;
    timeline.mark(Phase::Decode);
    let envelope = if request_plan.is_empty() {
        envelope
    } else {
        let admitted = Box::pin(flows::request(
            request_plan,
            envelope,
            context,
            &state.limits,
        ))
        .await;
        timeline.mark(Phase::RequestStages);
        match admitted? {
            Admitted::Forward(envelope) => envelope,
            Admitted::Answered(response) => return Ok(response),
        }
    };
    let location = || service_location(state, service, parts);
    let path = parts.uri.path();
    let runs_after = !response_plan.is_empty() || !plans.fault.is_empty();
    let request = runs_after.then(|| envelope.clone());
    let reply = service
        .soap
        .call(ServiceRequest {
            envelope,
            context,
            subpath: (path.len() > service.path.len()).then(|| &path[service.path.len()..]),
            headers: &parts.headers,
            location: Location::new(&location),
        })
        .await;
    timeline.mark(Phase::Call);
    let reply = reply?;
    // A fault comes back with a 4xx/5xx status: a success needs no look for the fault flow.
    let success = match &reply {
        Reply::Envelope(envelope) => !envelope.is_fault(),
        Reply::Http(response) => response.status().is_success(),
        Reply::Written(..) | Reply::Accepted => true,
    };
    if response_plan.is_empty() && (plans.fault.is_empty() || success) {
        return Ok(flows::reply_response(reply, version));
    }
    let context = Context {
        direction: Direction::Response,
        request,
        ..context.clone()
    };
    let answered = Box::pin(flows::response(
        response_plan,
        &plans.fault,
        reply,
        version,
        &context,
        &state.limits,
    ))
    .await;
    timeline.mark(Phase::ResponseStages);
    answered
}

/// How a request to a gateway arrived: its peer (and whether that is a trusted proxy),
/// scheme and host, and its path below the service's prefix.
fn arrival(
    state: &State,
    service: &Service,
    parts: &Parts,
    peer: &Peer,
) -> crate::arrival::Arrival {
    let ip = peer.addr.ip();
    crate::arrival::Arrival {
        peer: Some(peer.addr),
        peer_trusted: state.trusted_proxies.iter().any(|net| net.contains(ip)),
        scheme: state.scheme,
        host: request_host(parts),
        below_prefix: below_prefix(service, parts)
            .map(|rest| (rest.to_owned(), parts.uri.query().map(str::to_owned))),
    }
}

/// For a prefix service, the request's path below the prefix (empty or from a `/`).
fn below_prefix<'a>(service: &Service, parts: &'a Parts) -> Option<&'a str> {
    service
        .prefix
        .then(|| parts.uri.path().get(service.path.len()..))
        .flatten()
}

/// A WSDL (`?wsdl`), or for a gateway one of the documents its WSDL imports (`?wsdl=…`,
/// `?xsd=…`). Addresses in a gateway's documents name the request's own URL (the
/// service's, followed by the path below its prefix).
async fn wsdl(
    state: &State,
    service: &Service,
    parts: &Parts,
    version: SoapVersion,
) -> Result<HttpResponse, Fault> {
    let below = below_prefix(service, parts).unwrap_or("");
    let base = format!("{}{below}", service_location(state, service, parts));
    let endpoint = match &service.wsdl_rotation {
        Some(rotation) => rotation.next().to_owned(),
        None => base.clone(),
    };
    let Some(gateway) = &service.gateway else {
        let reply = service.soap.wsdl(&endpoint).await?;
        return Ok(flows::reply_response(reply, version));
    };
    let document = match crate::gateway::requested_document(parts.uri.query()) {
        None => crate::gateway::Document::Wsdl {
            below: service.prefix.then(|| below.to_owned()),
        },
        Some((_, Ok(path))) => crate::gateway::Document::Imported(path),
        Some((kind, Err(why))) => {
            let key = match kind {
                crate::gateway::Imported::Wsdl => "wsdl",
                crate::gateway::Imported::Xsd => "xsd",
            };
            return Err(Fault::with_reason(
                FaultKind::NoSuchService,
                format!("?{key}= names no document of the backend: the value {why}"),
            ));
        }
    };
    let answer = gateway.document(&document, &endpoint, &base).await?;
    Ok(flows::reply_response(Reply::Http(answer), version))
}

/// The MessageID a `?reply=ID` query asks for (percent-decoded).
fn reply_query(query: Option<&str>) -> Option<String> {
    let raw = query?.split('&').find_map(|p| p.strip_prefix("reply="))?;
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let (hi, lo) = (hex(bytes[i + 1])?, hex(bytes[i + 2])?);
                out.push(u8::try_from(hi * 16 + lo).ok()?);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok().filter(|id| !id.is_empty())
}

fn is_wsdl_query(query: Option<&str>) -> bool {
    query.is_some_and(|q| q.split('&').any(|p| p.eq_ignore_ascii_case("wsdl")))
}

/// The service's URL as handed out (WSDL address, subscription manager): the configured
/// `public_url` when set; else `{scheme}://{authority}{path}` with the request's
/// absolute-form authority or `Host` when that is a valid `host[:port]`; else the listen
/// address. A hostile `Host` never reaches the address.
pub(crate) fn service_location(state: &State, service: &Service, parts: &Parts) -> String {
    if let Some(url) = &service.public_url {
        return url.clone();
    }
    let host = request_host(parts);
    let host = host
        .as_ref()
        .and_then(|h| h.to_str().ok())
        .map_or_else(|| state.listen.to_string(), str::to_owned);
    format!("{}://{host}{}", state.scheme.as_str(), service.path)
}

/// The authority the request asked for (absolute-form, else `Host`), when it is a valid
/// `host[:port]`.
fn request_host(parts: &Parts) -> Option<http::HeaderValue> {
    let host = match parts.uri.authority() {
        Some(authority) => http::HeaderValue::from_str(authority.as_str()).ok()?,
        None => parts.headers.get(http::header::HOST)?.clone(),
    };
    host.to_str()
        .is_ok_and(crate::authority::is_valid)
        .then_some(host)
}
