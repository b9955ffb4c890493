//! lather-handlers's integration tests, built as one test binary (one link instead of one per
//! file). Each module is a file beside this one; `cargo test -p lather-handlers --test integration
//! <module>::` runs one of them.

mod audit_file;
mod compression;
mod format_convert;
mod monitor;
mod notify;
mod wsa;
mod wsrf_resource;
mod wsse;
mod xmlenc;
