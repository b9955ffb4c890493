//! lather-config's integration tests, built as one test binary (one link instead of one per
//! file). Each module is a file beside this one; `cargo test -p lather-config --test integration
//! <module>::` runs one of them.

mod handler_settings;
mod nats_security;
mod qos;
mod telemetry;
mod threading;
mod tls;
