//! lather-bench's integration tests, built as one test binary (one link instead of one per
//! file). Each module is a file beside this one; `cargo test -p lather-bench --test integration
//! <module>::` runs one of them.

mod abuse;
mod cli;
mod http_bench;
mod server_usage;
mod timing;
