//! lather-compose's integration tests, built as one test binary (one link instead of one per
//! file). Each module is a file beside this one; `cargo test -p lather-compose --test integration
//! <module>::` runs one of them.

mod outside_kind;
mod registry;
mod wsse;
mod xmlenc;
