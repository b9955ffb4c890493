//! lather-envelope's integration tests, built as one test binary (one link instead of one per
//! file). Each module is a file beside this one; `cargo test -p lather-envelope --test integration
//! <module>::` runs one of them.

mod support;

mod application_faults;
mod catalogue_doc;
mod edited;
mod edits;
mod fault_bounds;
mod faults;
mod fuzz_corpus;
mod parse;
mod properties;
mod refusals;
