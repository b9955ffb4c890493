//! The configuration's shape, as read from TOML.

use crate::HandlerConfig;
use crate::error::line_of;
use crate::{ConfigError, Flow};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use toml::Spanned;

/// The whole configuration file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Listener and limits.
    #[serde(default)]
    pub server: ServerConfig,
    /// The services, each at its own path (`[[service]]`).
    #[serde(default, rename = "service")]
    pub services: Vec<ServiceConfig>,
    /// Handler instances by name (`[handlers.NAME]`), used in the services' flows.
    #[serde(default)]
    pub handlers: BTreeMap<String, HandlerConfig>,
    /// The NATS server remote handlers go through (`[nats]`); without it every handler
    /// runs in process.
    pub nats: Option<crate::NatsConfig>,
    /// Where negotiated message streams are accepted (`[stream]`); without it every
    /// `OpenStream` is refused.
    pub stream: Option<crate::StreamConfig>,
    /// The WS-QoS settings (`[qos]`); without it their defaults.
    pub qos: Option<crate::QosConfig>,
    /// OpenTelemetry trace export (`[telemetry]`); without it no span is created.
    pub telemetry: Option<crate::TelemetryConfig>,
    /// Where the text came from and the text itself, to place later errors.
    #[serde(skip)]
    pub(crate) source: (String, String),
}

/// `[server]`: where to listen and what to accept.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    /// Address to listen on, e.g. `127.0.0.1:8080` (port 0 picks a free port).
    pub listen: SocketAddr,
    /// Largest request accepted, in bytes, before and after decompression.
    pub max_message_bytes: usize,
    /// Deepest element nesting accepted.
    pub max_depth: usize,
    /// Most attributes on one element.
    pub max_attributes: usize,
    /// How long a graceful shutdown waits for requests in flight, in milliseconds.
    pub shutdown_grace_ms: u64,
    /// Tokio worker threads; 0 means one per core.
    pub workers: usize,
    /// How those threads share the connections: `"per-core"` (a runtime per thread, the
    /// default) or `"work-stealing"` (one runtime).
    pub threading: crate::Threading,
    /// With `"per-core"` threading and one I/O thread per CPU the process may use (the
    /// default `workers = 0`): each I/O thread runs on one CPU only and serves the
    /// connections whose packets that CPU receives (default true).
    pub pin_io_threads: bool,
    /// With pinned I/O threads: whether a plain HTTP/1.1 connection moves, between two
    /// requests, to the thread of the CPU its packets arrive on, and off a saturated CPU
    /// (default true). False: each stays on the thread it was placed on at accept.
    pub roam_connections: bool,
    /// A CPU idle at least this share of its time (percent, over the last 100 ms or more)
    /// takes the connections whose packets arrive on it and those shed off a saturated
    /// CPU (default 30).
    pub roam_spare_idle_percent: u32,
    /// A CPU idle less than this share of its time (percent) is saturated: its thread sheds
    /// connections to a CPU with spare time, or beyond the count bound to the thread
    /// serving the fewest (default 5; not above `roam_spare_idle_percent`; 0 never sheds).
    pub roam_saturated_idle_percent: u32,
    /// Messages that may wait for a slot, per service; beyond it requests are refused at
    /// once with 503 `Server busy`.
    pub queue_capacity: usize,
    /// Messages in flight per service: a number, or `"auto"` to adapt to latency.
    pub max_in_flight: MaxInFlight,
    /// The floor of an `"auto"` in-flight limit (default 4): neither jitter nor an outage
    /// brings it lower, so a service is never starved. Ignored for a fixed limit.
    pub min_in_flight: usize,
    /// How long a request's body may take to arrive in all, in milliseconds (default
    /// 30 000), counted from the end of its headers.
    pub body_timeout_ms: u64,
    /// The slowest average rate a request body may arrive at, in bytes per second, after a
    /// 1 s grace (default 1024; 0 turns the rate rule off). A slower body is answered with
    /// `RequestTooSlow` (408) and its connection closed.
    pub min_body_bytes_per_s: u64,
    /// A connection that sends nothing for this long — from accept, or between
    /// keep-alive requests — while no request of it is being handled is closed, in
    /// milliseconds.
    pub idle_timeout_ms: u64,
    /// Time allowed for a request's head (request line and headers) once it has begun,
    /// in milliseconds; past it the connection is closed.
    pub header_timeout_ms: u64,
    /// Connections open at once, all clients together; beyond it a new connection is
    /// accepted and closed at once. Lowered at start when the process's descriptor limit
    /// (`RLIMIT_NOFILE`) cannot hold it.
    pub max_connections: usize,
    /// Connections open at once from one client IP address; beyond it a new connection is
    /// accepted and closed at once.
    pub max_connections_per_client: usize,
    /// Who may read `/health`, `/ready` and `/metrics`: IP addresses or CIDR blocks. Empty
    /// (the default): everyone; others get 403.
    pub admin_allow: Vec<crate::IpNet>,
    /// The proxies in front of lather whose `Forwarded` and `X-Forwarded-*` headers are
    /// believed: IP addresses or CIDR blocks (default empty: such headers are dropped from
    /// every request and written anew by a gateway).
    pub trusted_proxies: Vec<crate::IpNet>,
    /// The URL clients reach this server at, e.g. `https://ws.example.com` (default: none).
    /// When set, each service's WSDL address is this URL followed by the service's path,
    /// instead of one built from the request's `Host` header.
    pub public_url: Option<String>,
    /// Threads of the pool CPU-bound handlers run on; 0 (the default) means one per core.
    pub cpu_threads: usize,
    /// CPU-bound handlers whose calls take less than this many microseconds on average run
    /// on the message's task instead of the CPU pool (default 50; 0 sends every CPU-bound
    /// call to the pool).
    pub cpu_inline_micros: u64,
    /// Whether answers are gzip-compressed for clients whose `Accept-Encoding` takes gzip
    /// (default true).
    pub compress_responses: bool,
    /// Answers smaller than this many bytes go uncompressed (default 1024).
    pub compress_min_bytes: usize,
    /// Whether each request's phases (receive, queue, decode, stages, call, encode) are
    /// counted in `lather_phase_seconds` histograms (default true).
    pub phase_metrics: bool,
    /// When answers carry a `Server-Timing` header of the request's phases (default
    /// `"on-request"`).
    pub server_timing: crate::ServerTiming,
    /// The most operations one batch (`lb:Batch`) may carry (default 100); a longer batch
    /// is refused whole.
    pub max_batch_items: usize,
    /// Whether each request's answer is logged, one line on target `lather::access` at
    /// info (default true). `/health`, `/ready` and `/metrics` are never logged.
    pub access_log: bool,
    /// The most operation names one service's request metrics label separately (default
    /// 50); requests for further operations are counted as `operation="other"`, so clients
    /// cannot grow `/metrics` without bound. 0 counts every operation as `other`.
    pub metrics_max_operations: usize,
    /// TLS on the listener (`[server.tls]`); without it the listener speaks plain HTTP.
    pub tls: Option<crate::TlsConfig>,
    /// A PEM bundle of CA certificates trusted, beside the system's, by every `https://`
    /// call lather makes on its own: event deliveries, `notify` handlers, asynchronous
    /// replies, the QoS broker (default: none, the system's CAs only).
    pub outbound_ca_file: Option<Spanned<String>>,
}

/// `max_in_flight`: a fixed number or `"auto"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum MaxInFlight {
    /// Exactly this many.
    Fixed(usize),
    /// Adapted to measured latency.
    Auto(Auto),
}

/// The keyword `"auto"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Auto {
    /// `"auto"`.
    Auto,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            max_message_bytes: 4 * 1024 * 1024,
            max_depth: 64,
            max_attributes: 64,
            shutdown_grace_ms: 30_000,
            workers: 0,
            threading: crate::Threading::default(),
            pin_io_threads: true,
            roam_connections: true,
            roam_spare_idle_percent: 30,
            roam_saturated_idle_percent: 5,
            queue_capacity: 1024,
            max_in_flight: MaxInFlight::Auto(Auto::Auto),
            min_in_flight: 4,
            body_timeout_ms: 30_000,
            min_body_bytes_per_s: 1024,
            idle_timeout_ms: 30_000,
            header_timeout_ms: 10_000,
            max_connections: 10_000,
            max_connections_per_client: 256,
            admin_allow: Vec::new(),
            trusted_proxies: Vec::new(),
            public_url: None,
            cpu_threads: 0,
            cpu_inline_micros: 50,
            compress_responses: true,
            compress_min_bytes: 1024,
            phase_metrics: true,
            server_timing: crate::ServerTiming::OnRequest,
            max_batch_items: 100,
            access_log: true,
            metrics_max_operations: 50,
            tls: None,
            outbound_ca_file: None,
        }
    }
}

/// Built-in service implementations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Builtin {
    /// Answers with the request's Body content; serves its own WSDL.
    Echo,
    /// A WS-Eventing event source and subscription manager at the path; events are
    /// published to `{path}/publish` (see docs/eventing.md).
    EventSource,
    /// A WS-Context store: contexts set, read and removed by URI (see docs/context.md).
    ContextStore,
    /// An information service: services register under a lease, clients query (see
    /// docs/context.md).
    Registry,
    /// A WS-QoS broker: services register their offers, clients ask for the best one that
    /// meets their requirements; offers kept in SQLite (see docs/qos.md).
    QosBroker,
}

/// One `[[service]]` entry.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceConfig {
    /// Name used in logs and metrics.
    pub name: Spanned<String>,
    /// URL path the service answers at, e.g. `/quotes`; a gateway's path may end in `/*`
    /// (`/api/*`) to answer every path under the prefix (see [`ServiceConfig::path_prefix`]).
    pub path: Spanned<String>,
    /// A built-in implementation (exclusive with `upstream`).
    pub builtin: Option<Spanned<Builtin>>,
    /// Backends to forward to, round-robin (exclusive with `builtin`): a list of URLs, or
    /// `{ registry = "URL", name = "…" }` for the endpoints a registry lists under a name.
    pub upstream: Option<Spanned<UpstreamSpec>>,
    /// How long to wait for a backend's answer, in milliseconds (default 30 000).
    pub timeout_ms: Option<Spanned<u64>>,
    /// Stages run on each request before the service: `[["a", "b"], ["c"]]`.
    pub request: Option<Flow>,
    /// Stages run on each response the service produces.
    pub response: Option<Flow>,
    /// Stages run on each fault before it goes back to the requester: faults raised by the
    /// request or response flow, by lather itself, or answered by the service.
    pub fault: Option<Flow>,
    /// Routes that pick other stages for some messages (`[[service.route]]`).
    #[serde(default, rename = "route")]
    pub routes: Vec<crate::RouteConfig>,
    /// Overrides `[server] queue_capacity` for this service.
    pub queue_capacity: Option<usize>,
    /// Overrides `[server] max_in_flight` for this service.
    pub max_in_flight: Option<MaxInFlight>,
    /// `event-source` and `context-store`: the redb file subscriptions or contexts are
    /// kept in; `qos-broker`: the SQLite file offers are kept in (none: memory only).
    pub store: Option<Spanned<String>>,
    /// `context-store` only: where contexts live, `"nats"` (a JetStream KV bucket shared by
    /// every node, the default when `[nats]` exists) or `"local"`.
    pub contexts: Option<Spanned<crate::SubscriptionsMode>>,
    /// `registry` and `qos-broker` only: most registrations at once (default 10 000; for
    /// the broker, offers).
    pub max_registrations: Option<Spanned<u64>>,
    /// `qos-broker` only: the addresses or networks that may register and remove offers
    /// over HTTP (default `["127.0.0.0/8", "::1"]`: this host only); selections and
    /// listings are open to every client.
    pub register_allow: Option<Spanned<Vec<Spanned<String>>>>,
    /// `qos-broker` only: most offers one registrant (address) may hold (default 100).
    pub max_offers_per_owner: Option<Spanned<u64>>,
    /// The QoS offers the service makes (`[[service.offer]]`, see docs/qos.md).
    #[serde(default, rename = "offer")]
    pub offers: Vec<crate::OfferConfig>,
    /// `registry` and `qos-broker` only: the longest lease granted, in seconds, also the
    /// lease when a registration asks for none (default 3 600).
    pub max_lease_s: Option<Spanned<u64>>,
    /// `context-store` only: most bytes of one context's contents (default 65 536).
    pub max_context_bytes: Option<Spanned<u64>>,
    /// `context-store` only: most contexts stored at once (default 100 000).
    pub max_contexts: Option<Spanned<u64>>,
    /// `context-store` only: a context's lifetime in seconds when its writer names none
    /// (default 3 600).
    pub context_ttl_s: Option<Spanned<u64>>,
    /// `context-store` only: the longest lifetime granted, in seconds (default 86 400).
    pub max_context_ttl_s: Option<Spanned<u64>>,
    /// `event-source` only: the longest subscription granted, in seconds (default 3600).
    pub max_expires_s: Option<Spanned<u64>>,
    /// `event-source` only: the notifications' `wsa:Action` when the publish request
    /// names none (default `urn:lather:eventing:Event`).
    pub event_action: Option<Spanned<String>>,
    /// `event-source` only: notifications to subscribers that asked for gzip are
    /// compressed from this many bytes on (default 1024).
    pub compress_min_bytes: Option<Spanned<u64>>,
    /// `event-source` only: where subscriptions live, `"nats"` (JetStream KV, the default
    /// when `[nats]` exists) or `"local"`.
    pub subscriptions: Option<Spanned<crate::SubscriptionsMode>>,
    /// `event-source` with subscriptions in NATS only: the subject events are taken from
    /// (default `{subject_prefix}.events.{name}`).
    pub event_subject: Option<Spanned<String>>,
    /// `event-source` only: delivery addresses allowed beyond the default policy (which
    /// refuses loopback, link-local, unspecified, multicast and the server's own port):
    /// host names, IP addresses or CIDRs, each with an optional `:port` (IPv6 in brackets
    /// with a port). Default none.
    pub notify_allow: Option<Spanned<Vec<Spanned<String>>>>,
    /// `event-source` only: the delivery bindings allowed, of `"http"`, `"soap.tcp"`,
    /// `"lather.bin"` (default all three).
    pub notify_schemes: Option<Spanned<Vec<Spanned<String>>>>,
    /// `event-source` only: most subscriptions one subscriber identity (the client's
    /// address for now) may hold at once (default 100).
    pub max_subscriptions_per_identity: Option<Spanned<u64>>,
    /// `event-source` only: most node visits one XPath filter evaluation may make; an
    /// event that needs more is not taken, and a filter that needs more on the worst-case
    /// event checked at Subscribe is refused (default 100 000).
    pub filter_budget: Option<Spanned<u64>>,
    /// Gateway only: response headers of the backend not passed to the client, by name
    /// (case-insensitive). Default `["Server", "X-Powered-By"]`; `[]` passes them all.
    /// Hop-by-hop headers (RFC 9110 §7.6.1) and those the backend's `Connection` names
    /// are never passed.
    pub response_headers_remove: Option<Spanned<Vec<Spanned<String>>>>,
    /// Gateway only: headers set on every response, replacing the backend's, e.g.
    /// `{ "X-Frame-Options" = "DENY" }` (default: none).
    pub response_headers_set: Option<Spanned<BTreeMap<String, Spanned<String>>>>,
    /// Gateway only: headers added to every response beside any the backend sent of that
    /// name, e.g. `{ "Cache-Control" = "no-transform" }` (default: none).
    pub response_headers_add: Option<Spanned<BTreeMap<String, Spanned<String>>>>,
    /// Gateway only: request headers of the client not forwarded to the backend, by name
    /// (case-insensitive), also those lather adds (`Forwarded`, `X-Forwarded-For`, …)
    /// (default: none).
    pub request_headers_remove: Option<Spanned<Vec<Spanned<String>>>>,
    /// Gateway only: headers set on every request to the backend, replacing the client's,
    /// e.g. `{ "Authorization" = "Basic …" }` (default: none).
    pub request_headers_set: Option<Spanned<BTreeMap<String, Spanned<String>>>>,
    /// Gateway only: headers added to every request to the backend beside any the client
    /// sent of that name (default: none).
    pub request_headers_add: Option<Spanned<BTreeMap<String, Spanned<String>>>>,
    /// The URL clients reach this service at, e.g. `https://ws.example.com/quotes`: the
    /// address its WSDL names (default: `[server] public_url` followed by `path`, else one
    /// built from a valid `Host` header, else the listen address).
    pub public_url: Option<Spanned<String>>,
    #[serde(skip)]
    pub(crate) kind: Option<ServiceKind>,
    /// `event-source` only: most bytes of notifications one subscriber's sink holds
    /// (queued or being delivered); beyond it events are dropped for that sink alone
    /// (default 8 MiB).
    pub sink_queue_bytes: Option<Spanned<u64>>,
    /// `event-source` only: most bytes of events held for all sinks together, each event
    /// counted once; a publish beyond it is refused with `PublishQueueFull` (default
    /// 256 MiB).
    pub queue_bytes_total: Option<Spanned<u64>>,
    /// `event-source` only: the longest wait for one write to a sink, a connection or an
    /// answer, in milliseconds (default 10 000); 4 failed connections in a row end the
    /// subscription with DeliveryFailure.
    pub sink_write_timeout_ms: Option<Spanned<u64>>,
    /// `event-source` only: the shortest time between two writes to one sink, in
    /// milliseconds (default 0: each batch at once; at most 1 000). Notifications taken
    /// sooner after a write wait until then and go out together (a batch of 64 at once):
    /// less CPU per notification at high event rates, for up to this much more latency.
    pub delivery_wait_ms: Option<Spanned<u64>>,
    /// Gateway only: the HTTP request header that carries the message's authenticated
    /// identity (set by a handler such as `wsse-username`) to the backend, e.g.
    /// `"X-Authenticated-User"` (default: none, the identity is not passed on). A client's
    /// own header of that name is never forwarded.
    pub identity_header: Option<Spanned<String>>,
    /// Whether senders may open negotiated message streams to this service (default
    /// false; needs `[stream]`). Each message on a stream runs through the service's
    /// handlers as any SOAP message.
    pub accept_streams: Option<Spanned<bool>>,
    /// Gateway only: `"tcp"` to negotiate a message stream to each upstream, per
    /// operation, or `"off"` (the default) for SOAP/HTTP only.
    pub stream: Option<Spanned<crate::StreamMode>>,
    /// Gateway only: a request written to a stream that is lost before its answer gets
    /// `"fault"` (`UpstreamFailed`, the default) or is sent again over SOAP/HTTP
    /// (`"resend"`, for idempotent operations).
    pub stream_on_error: Option<Spanned<crate::StreamOnError>>,
    /// Gateway only: seconds after a refused or failed negotiation before the next is
    /// tried (default 60).
    pub stream_retry_s: Option<Spanned<u64>>,
    /// Gateway only: how long a backend's WSDL (and each document it imports, at most 64
    /// kept) is kept and served again without asking the backend, in milliseconds
    /// (default 60 000; 0 asks every time).
    pub wsdl_cache_ms: Option<Spanned<u64>>,
    /// Gateway only: most backend documents (WSDLs and the schemas they import) kept in
    /// the WSDL cache at once, the oldest dropped first (default 64; 1 to 10 000).
    pub wsdl_cache_documents: Option<Spanned<u64>>,
    /// Gateway only: requests to the upstreams are gzip-compressed (`Content-Encoding:
    /// gzip`) from `compress_requests_min_bytes` on (default false: the upstream must
    /// accept compressed requests, as lather does).
    pub compress_requests: Option<Spanned<bool>>,
    /// Gateway only: the smallest request compressed when `compress_requests` is on, in
    /// bytes (default 1024).
    pub compress_requests_min_bytes: Option<Spanned<u64>>,
    /// Gateway only: `"http1"` (the default) or `"h2"` (HTTP/2, many requests on each
    /// connection: with prior knowledge over `http://`, negotiated by ALPN over
    /// `https://`; `"h2c"` is the older spelling) towards the upstreams.
    pub upstream_protocol: Option<Spanned<crate::UpstreamProtocol>>,
    /// Gateway only: most connections to each upstream (default 1024 with `http1`, where
    /// each carries one request at a time and further requests wait for one within the
    /// timeout; 4 with `h2`, the requests spread over them).
    pub upstream_connections: Option<Spanned<u64>>,
    /// Gateway only: the CAs `https://` upstreams' certificates are verified against, a PEM
    /// bundle (default: the system's trusted roots).
    pub upstream_ca_file: Option<Spanned<String>>,
    /// Gateway only: the client certificate (PEM, chain allowed) presented to `https://`
    /// upstreams that ask for one; needs `upstream_client_key_file`.
    pub upstream_client_cert_file: Option<Spanned<String>>,
    /// Gateway only: the private key of `upstream_client_cert_file` (PEM).
    pub upstream_client_key_file: Option<Spanned<String>>,
    /// Gateway only: the name sent in SNI to `https://` upstreams and their certificates
    /// are verified for (default: each upstream URL's host).
    pub upstream_server_name: Option<Spanned<String>>,
    /// Gateway only: requests arriving together are sent to the upstream as one `lb:Batch`
    /// (the upstream must speak lather's batch format; one that does not is sent each
    /// request alone for a minute) (default false).
    pub batch_upstream: Option<Spanned<bool>>,
    /// With `batch_upstream`: the size cut-off, the most requests in one batch (default 10).
    pub batch_max_items: Option<Spanned<u64>>,
    /// With `batch_upstream`: the time cut-off, how long after its first request a batch
    /// is sent at the latest, in milliseconds (default 2).
    pub batch_wait_ms: Option<Spanned<u64>>,
    /// Requests whose WS-Addressing `ReplyTo` is not anonymous are accepted with `202` and
    /// answered later by a POST to that address (default false: answered on the
    /// connection, whatever `ReplyTo` says).
    pub async_replies: Option<Spanned<bool>>,
    /// With `async_replies`: the redb file pending requests and answers are kept in, so a
    /// restart loses none (default none: memory only).
    pub async_store: Option<Spanned<String>>,
    /// With `async_replies`: most requests accepted and not yet answered and delivered; a
    /// request beyond gets `ServerBusy` (503, `Retry-After`) (default 1000).
    pub async_max_pending: Option<Spanned<u64>>,
    /// With `async_replies`: delivery attempts of one answer, 0.5 s apart and doubling
    /// (default 6).
    pub reply_attempts: Option<Spanned<u64>>,
    /// With `async_replies`: how long an answer kept for polling (`ReplyTo`
    /// `urn:lather:async:poll`) waits to be fetched, in seconds (default 300).
    pub reply_keep_s: Option<Spanned<u64>>,
    /// With `async_replies`: `ReplyTo` addresses allowed beyond the default policy (which
    /// refuses loopback, link-local, unspecified, multicast and the server's own port), as
    /// `notify_allow` (default none).
    pub reply_allow: Option<Spanned<Vec<Spanned<String>>>>,
    /// The endpoint addresses the served WSDL names, handed out in turn (each as often as
    /// its weight) so that clients calling the service directly spread over them:
    /// `["http://a/ws", { url = "http://b/ws", weight = 2 }]` (default: the service's own
    /// address).
    pub wsdl_addresses: Option<Spanned<Vec<Spanned<crate::WeightedUrl>>>>,
    /// Gateway only: how long a connection to a backend may take to open, in milliseconds
    /// (default 2 000; at most `timeout_ms`). A backend that does not accept in time is
    /// skipped for the next one: the request was not sent.
    pub connect_timeout_ms: Option<Spanned<u64>>,
    /// Gateway only: how long one backend may take to answer a request that may be sent
    /// twice (`idempotent_operations`) before it goes to the next backend, in milliseconds
    /// (default: `timeout_ms`, one try).
    pub try_timeout_ms: Option<Spanned<u64>>,
    /// Gateway only: the operations (local names of the Body's first element) that may be
    /// sent to another backend after one failed or did not answer in time, or `["*"]` for
    /// all (default none: only requests not yet sent go to another backend).
    pub idempotent_operations: Option<Spanned<Vec<Spanned<String>>>>,
    /// Gateway only: most backends one request is tried on (default 3).
    pub max_attempts: Option<Spanned<u64>>,
    /// Gateway only: how a backend is picked, `"round-robin"` (weighted by each
    /// upstream's `weight`, the default) or `"least-outstanding"` (the fewest requests in
    /// flight per unit of weight).
    pub balance: Option<Spanned<crate::Balance>>,
    /// Gateway only: consecutive failures (refused or timed-out connections, failed or
    /// unanswered requests) after which a backend is ejected (default 3; 0 never ejects).
    pub eject_after_failures: Option<Spanned<u64>>,
    /// Gateway only: how long an ejected backend gets no requests, in milliseconds
    /// (default 10 000), doubling with each ejection in a row up to 8 times as long.
    /// Then one request tries it: an answer brings it back, a failure ejects it again.
    pub eject_ms: Option<Spanned<u64>>,
    /// Gateway only: whether faults sent to clients name the backend and its error
    /// (default false: they say what went wrong without naming it; logs always name it).
    pub expose_backend_errors: Option<Spanned<bool>>,
    /// Gateway only: active health checks of each backend (`[service.health_check]`).
    pub health_check: Option<Spanned<crate::HealthCheckConfig>>,
}

/// A gateway's `upstream`.
#[derive(Debug, Clone)]
pub enum UpstreamSpec {
    /// Fixed backends: `["http://…", { url = "http://…", weight = 2 }, …]`.
    List(Vec<Spanned<crate::WeightedUrl>>),
    /// The backends a registry lists: `{ registry = "URL", name = "…" }`.
    Registry(RegistryUpstream),
}

impl<'de> Deserialize<'de> for UpstreamSpec {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Spec;
        impl<'de> serde::de::Visitor<'de> for Spec {
            type Value = UpstreamSpec;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(
                    "a list of backend URLs, or { registry = \"URL\", name = \"…\" } to follow a registry",
                )
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<UpstreamSpec, A::Error> {
                let mut list = Vec::new();
                while let Some(url) = seq.next_element::<Spanned<crate::WeightedUrl>>()? {
                    list.push(url);
                }
                Ok(UpstreamSpec::List(list))
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<UpstreamSpec, A::Error> {
                RegistryUpstream::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(UpstreamSpec::Registry)
            }
        }
        deserializer.deserialize_any(Spec)
    }
}

/// `upstream = { registry = "URL", name = "…", poll_ms = 5000 }`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegistryUpstream {
    /// The registry service's URL.
    pub registry: Spanned<String>,
    /// The name services register under.
    pub name: Spanned<String>,
    /// How often the registry is asked, in milliseconds (default 5 000).
    pub poll_ms: Option<Spanned<u64>>,
}

/// Backends followed in a registry, once validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistryBackends {
    /// The registry's URL.
    pub registry: Upstream,
    /// The name services register under.
    pub name: String,
    /// How often the registry is asked.
    pub poll: std::time::Duration,
}

/// What a service does, once validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServiceKind {
    /// A built-in implementation.
    Builtin(Builtin),
    /// Gateway mode: forward to these backends.
    Gateway(Vec<Upstream>),
    /// Gateway mode, forwarding to the endpoints a registry lists under a name.
    RegistryGateway(RegistryBackends),
}

/// A validated upstream backend URL (`http://host:port/path` or `https://…`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upstream {
    /// The URL as configured.
    pub url: String,
    /// The parsed URI.
    pub uri: http::Uri,
    /// Its share of the requests under weighted round-robin (1 to 1000; 1 for backends
    /// from a registry).
    pub weight: u32,
}

/// The response header names a gateway removes when `response_headers_remove` is not set.
pub const DEFAULT_RESPONSE_HEADERS_REMOVE: [&str; 2] = ["Server", "X-Powered-By"];

impl ServiceConfig {
    /// The backend response headers this service does not pass on (lower case).
    pub fn response_headers_remove(&self) -> Vec<String> {
        match &self.response_headers_remove {
            Some(names) => names
                .get_ref()
                .iter()
                .map(|n| n.get_ref().to_ascii_lowercase())
                .collect(),
            None => DEFAULT_RESPONSE_HEADERS_REMOVE
                .iter()
                .map(|n| n.to_ascii_lowercase())
                .collect(),
        }
    }

    /// The headers this service sets on every response, `(name, value)`.
    pub fn response_headers_set(&self) -> Vec<(String, String)> {
        pairs(self.response_headers_set.as_ref())
    }

    /// The headers this service adds to every response, `(name, value)`.
    pub fn response_headers_add(&self) -> Vec<(String, String)> {
        pairs(self.response_headers_add.as_ref())
    }

    /// The client request headers this service does not forward (lower case).
    pub fn request_headers_remove(&self) -> Vec<String> {
        self.request_headers_remove
            .iter()
            .flat_map(|names| names.get_ref())
            .map(|n| n.get_ref().to_ascii_lowercase())
            .collect()
    }

    /// The headers this service sets on every request to its backends, `(name, value)`.
    pub fn request_headers_set(&self) -> Vec<(String, String)> {
        pairs(self.request_headers_set.as_ref())
    }

    /// The headers this service adds to every request to its backends, `(name, value)`.
    pub fn request_headers_add(&self) -> Vec<(String, String)> {
        pairs(self.request_headers_add.as_ref())
    }

    /// For a path ending in `/*` (`/api/*`): the prefix before it (`/api`; `""` for
    /// `/*`). Such a gateway answers at the prefix itself and at every path below it, and
    /// forwards to its upstream's path followed by the rest of the request's path.
    pub fn path_prefix(&self) -> Option<&str> {
        self.path.get_ref().strip_suffix("/*")
    }

    /// The service's path without a trailing `/*`: where its own URL ends.
    pub fn base_path(&self) -> &str {
        self.path_prefix().unwrap_or(self.path.get_ref())
    }

    /// The URL clients reach this service at, if configured: its own `public_url`, else
    /// `[server] public_url` followed by the service's path.
    pub fn public_url(&self, server: &ServerConfig) -> Option<String> {
        if let Some(url) = &self.public_url {
            return Some(url.get_ref().clone());
        }
        let base = server.public_url.as_deref()?;
        Some(format!(
            "{}{}",
            base.trim_end_matches('/'),
            self.base_path()
        ))
    }

    /// What the service does.
    pub fn kind(&self) -> &ServiceKind {
        self.kind.as_ref().expect("validated by Config::from_toml")
    }

    /// The backend timeout.
    pub fn timeout(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.timeout_ms.as_ref().map_or(30_000, |t| *t.get_ref()))
    }
}

/// The `(name, value)` pairs of a header table.
fn pairs(table: Option<&Spanned<BTreeMap<String, Spanned<String>>>>) -> Vec<(String, String)> {
    table
        .iter()
        .flat_map(|m| m.get_ref().iter())
        .map(|(k, v)| (k.clone(), v.get_ref().clone()))
        .collect()
}

impl Config {
    /// The configuration's text as it was read (empty for a configuration not read by
    /// [`Config::from_toml`] or [`Config::load`]), so settings can be read again with their
    /// spans.
    pub fn text(&self) -> &str {
        &self.source.1
    }

    /// Where the text came from (usually the file path), as errors name it.
    pub fn origin(&self) -> &str {
        &self.source.0
    }

    /// An error about the value at `span` (from a [`Spanned`] field), naming its line.
    pub fn error_at(
        &self,
        span: std::ops::Range<usize>,
        message: impl Into<String>,
    ) -> ConfigError {
        let (origin, text) = &self.source;
        ConfigError::new(origin, Some(line_of(text, span.start)), message)
    }
}
