//! lather-envelope
