//! lather's HTTP host: SOAP services on hyper, HTTP/1.1 keep-alive and h2c.
//!
//! Each configured service answers at its path: the built-in `echo`, or a gateway that
//! forwards to upstream backends. Every failure at this edge is a well-formed SOAP Fault in
//! the request's version, with the status from the fault catalogue; nothing panics and no
//! connection is dropped without an answer. `GET /health`, `GET /ready` and `GET /metrics`
//! (Prometheus text) are always there. Each answer is logged on target `lather::access`
//! (`[server] access_log`), and each fault lather raises on `lather::fault`.

mod accept;
mod access;
mod arrival;
mod arriving;
mod ascii;
mod async_nats_share;
mod async_reply;
mod async_worker;
mod authority;
mod batch;
mod body;
mod build_info;
mod builder;
mod client_address;
mod collect;
mod collect_eventing;
mod collect_offers;
mod collect_streams;
mod collect_upstreams;
mod compress;
mod configured;
mod conn_cap;
mod context_nats;
mod counted;
mod cpu_idle;
mod current;
mod dispatch;
mod drain;
mod echo;
mod error;
mod event_sink;
mod eventing;
mod eventing_nats;
mod exposure;
mod fault_log;
mod fd_limit;
mod flows;
mod gateway;
mod health;
mod homed;
mod host;
pub mod huge_pages;
mod idle;
mod io_thread;
mod lanes;
mod listening;
mod marking;
mod metrics;
mod negotiate;
mod offer_broker;
mod offers_doc;
mod offers_task;
mod op_metrics;
mod outbound_tls;
mod own_headers;
mod peer;
mod placement;
mod qos;
mod qos_nats;
mod ready;
mod reload;
mod request_span;
mod respond;
mod roam;
mod scheme;
mod server;
mod service;
mod shared_nats;
mod state;
mod stream_accept;
mod stream_acceptor;
mod stream_grant;
mod timing;
mod tls;
mod watched;
mod weighted_round;
mod when_woken;
mod wsdl_rotation;

pub use access::UpstreamUsed;
pub use builder::{Mount, ServerBuilder};
pub use echo::Echo;
pub use error::ServeError;
pub use eventing::EventSourceService;
pub use reload::{ReloadError, Reloaded, Reloader};
pub use server::Server;
pub use service::{context_store_limits, register_allow, registry_limits};
pub use tls::{ClientCertificate, TlsError};
