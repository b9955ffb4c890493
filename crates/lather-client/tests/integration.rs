//! lather-client's integration tests, built as one test binary (one link instead of one per
//! file). Each module is a file beside this one; `cargo test -p lather-client --test integration
//! <module>::` runs one of them.

mod support;

mod gsoap;
mod lather_echo;
mod wire;
