//! lather-remote's integration tests, built as one test binary (one link instead of one per
//! file). Each module is a file beside this one; `cargo test -p lather-remote --test integration
//! <module>::` runs one of them.

mod frame_roundtrip;
mod frame_vectors;
mod nats_security;
mod properties;
mod shipping;
mod worker_progress;
