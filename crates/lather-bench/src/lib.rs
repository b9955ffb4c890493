//! lather-bench
