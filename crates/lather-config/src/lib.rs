//! lather's configuration: a TOML file with a `[server]` table and `[[service]]` entries.
//!
//! ```
//! let cfg = lather_config::Config::from_toml(r#"
//! [server]
//! listen = "127.0.0.1:0"
//! [[service]]
//! name = "echo"
//! path = "/echo"
//! builtin = "echo"
//! "#, "inline").unwrap();
//! assert_eq!(cfg.services[0].path.as_ref(), "/echo");
//! ```
//!
//! Unknown keys are errors; every error names the file, the line and the key. A
//! [`ConfigError`] lists every problem the checks found, not only the first.
//!
//! `${NAME}` (or `${NAME:-default}`) in a value is replaced by the environment variable's
//! text before the TOML is read; see [`Config::from_toml_with_env`].

mod async_replies;
mod connections;
mod error;
mod failover;
mod failover_settings;
mod flow;
mod handler;
mod header_rules;
mod ipnet;
mod load;
mod model;
mod names;
mod nats;
mod nats_security;
mod offer;
mod public;
mod qos;
mod read;
mod route;
mod secret;
mod server_timing;
mod stream;
mod stream_mode;
mod subscriptions;
mod subscriptions_mode;
mod substitute;
mod telemetry;
mod threading;
mod tls;
mod tuning;
mod upstream_protocol;
mod upstream_tls;
mod validate;
mod weighted_url;

pub use async_replies::{
    AsyncNames, AsyncReplies, DEFAULT_ASYNC_MAX_PENDING, DEFAULT_REPLY_ATTEMPTS,
    DEFAULT_REPLY_KEEP_S,
};
pub use error::{ConfigError, ConfigIssue};
pub use failover::{
    Balance, DEFAULT_CONNECT_TIMEOUT_MS, DEFAULT_EJECT_AFTER_FAILURES, DEFAULT_EJECT_MS,
    DEFAULT_HEALTH_INTERVAL_MS, DEFAULT_HEALTH_THRESHOLD, DEFAULT_HEALTH_TIMEOUT_MS,
    DEFAULT_MAX_ATTEMPTS, Failover, HealthCheck, HealthCheckConfig, Idempotent, MAX_ATTEMPTS,
    MAX_EJECT_FACTOR, Probe,
};
pub use flow::{Flow, FlowSpec};
pub use handler::{ENGINE_KEYS, HandlerConfig};
pub use ipnet::{IpNet, IpNetError};
pub use model::{
    Auto, Builtin, Config, DEFAULT_RESPONSE_HEADERS_REMOVE, MaxInFlight, RegistryBackends,
    RegistryUpstream, ServerConfig, ServiceConfig, ServiceKind, Upstream, UpstreamSpec,
};
pub use names::{MAX_NAME_CHARS, MAX_PATH_BYTES};
pub use nats::{
    DEFAULT_ACK_TIMEOUT_MS, DEFAULT_FRAME_BATCH_WAIT_MS, DEFAULT_HEARTBEAT_MS, Fallback,
    MAX_FRAME_BATCH, MAX_LIVENESS_MS, NatsConfig, Placement,
};
pub use nats_security::NatsAuth;
pub use offer::{
    AdaptiveConfig, AdaptiveRule, DEFAULT_ADAPT_WINDOW_S, DEFAULT_LOWER_BELOW, DEFAULT_RAISE_ABOVE,
    LoadMetric, MAX_LEASE_S, MIN_PRICE_STEP, OfferConfig,
};
pub use qos::{
    ClassRule, ClientRule, CompressionPreference, DEFAULT_BROKER_REFRESH_S,
    DEFAULT_COMPRESS_BELOW_CPU, QosClass, QosClient, QosConfig,
};
pub use read::MAX_CONFIG_BYTES;
pub use route::{RouteConfig, parse_clark};
pub use secret::Secret;
pub use server_timing::ServerTiming;
pub use stream_mode::{StreamConfig, StreamMode, StreamOnError};
pub use subscriptions_mode::SubscriptionsMode;
pub use telemetry::{DEFAULT_EXPORT_TIMEOUT_MS, DEFAULT_SERVICE_NAME, TelemetryConfig};
pub use threading::Threading;
pub use tls::{ClientAuth, DEFAULT_TLS_RELOAD_CHECK_MS, TlsConfig};
pub use tuning::{
    DEFAULT_BATCH_MAX_ITEMS, DEFAULT_BATCH_WAIT_MS, DEFAULT_COMPRESS_REQUESTS_MIN_BYTES,
    DEFAULT_H1_UPSTREAM_CONNECTIONS, DEFAULT_H2_UPSTREAM_CONNECTIONS, DEFAULT_WSDL_CACHE_DOCUMENTS,
    DEFAULT_WSDL_CACHE_MS,
};
pub use upstream_protocol::UpstreamProtocol;
pub use upstream_tls::UpstreamTls;
pub use weighted_url::{MAX_WEIGHT, WeightedUrl};
