//! lather-config
