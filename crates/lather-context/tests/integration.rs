//! lather-context's integration tests, built as one test binary (one link instead of one per
//! file). Each module is a file beside this one; `cargo test -p lather-context --test integration
//! <module>::` runs one of them.

mod stream_codec;
mod stream_link;
mod stream_vectors;
