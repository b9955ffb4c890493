//! lather-pipeline's integration tests, built as one test binary (one link instead of one per
//! file). Each module is a file beside this one; `cargo test -p lather-pipeline --test integration
//! <module>::` runs one of them.

mod support;

mod executor;
mod gate;
mod gate_cancel;
mod plan;
mod single_step;
