//! lather-http
