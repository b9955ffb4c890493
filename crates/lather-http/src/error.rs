//! Why a server could not start or stopped.

use std::io;
use std::net::SocketAddr;

/// Why [`ServerBuilder::bind`](crate::ServerBuilder::bind) or [`Server::serve`](crate::Server::serve)
/// failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The configuration is not valid: a handler, flow or setting (the message names the
    /// file, line and key).
    #[error(transparent)]
    Config(#[from] lather_config::ConfigError),
    /// Two services were given the same path.
    #[error("two services at {path}: {first} and {second}")]
    DuplicatePath {
        /// The path.
        path: String,
        /// The service that had it first.
        first: String,
        /// The one given it again.
        second: String,
    },
    /// The listen address could not be bound.
    #[error("cannot listen on {address}: {source}")]
    Listen {
        /// The address asked for.
        address: SocketAddr,
        /// What the system said.
        source: io::Error,
    },
    /// The NATS server the configuration names could not be reached (remote handlers or
    /// shared subscriptions need it at start).
    #[error("{0}")]
    NatsUnreachable(String),
    /// An event source could not start (its store, or its NATS bucket).
    #[error("event source {service}: {reason}")]
    EventSource {
        /// The service's name.
        service: String,
        /// Why.
        reason: String,
    },
    /// A context store could not open its NATS bucket.
    #[error("context store {service}: {reason}")]
    ContextStore {
        /// The service's name.
        service: String,
        /// Why.
        reason: String,
    },
    /// A service with asynchronous replies could not open its JetStream queue.
    #[error("asynchronous replies of {service}: {reason}")]
    AsyncQueue {
        /// The service's name.
        service: String,
        /// Why.
        reason: String,
    },
    /// A TLS certificate, key or CA file of the listener cannot be used (the error names
    /// the key and the file). From a configuration file this is a
    /// [`ServeError::Config`] naming the line instead.
    #[error(transparent)]
    Tls(#[from] crate::TlsError),
    /// The CPU pool could not be started.
    #[error("cannot start the CPU pool: {0}")]
    CpuPool(io::Error),
    /// Accepting or serving connections failed.
    #[error(transparent)]
    Io(#[from] io::Error),
}

impl ServeError {
    /// Whether the configuration is at fault (as opposed to the system or the network).
    pub fn is_config(&self) -> bool {
        matches!(
            self,
            ServeError::Config(_) | ServeError::DuplicatePath { .. } | ServeError::Tls(_)
        )
    }
}
