//! What lather's tests share across crates. Not published; a dev-dependency only.
//!
//! - [`nats`]: a real `nats-server` started on a free loopback port with its own temporary
//!   directory, stopped by its PID when dropped.
//! - [`free_port`]: a loopback port nobody listens on at the time of the call.
//! - [`http`]: a loopback HTTP server handing every request to one function.
//! - [`log`]: what code logs through `tracing`, captured as text.
//! - [`ScratchDir`]: a test's own directory under the system's temporary directory, removed
//!   when it is dropped.

pub mod http;
pub mod log;
pub mod nats;
mod scratch;

pub use scratch::ScratchDir;

use std::net::TcpListener;

/// A loopback port nobody listens on right now (another process may take it before the
/// caller binds it: callers that start a server retry on a fresh port).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .expect("bind a loopback port")
        .local_addr()
        .expect("the bound port")
        .port()
}
