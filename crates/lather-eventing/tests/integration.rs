//! lather-eventing's integration tests, built as one test binary (one link instead of one per
//! file). Each module is a file beside this one; `cargo test -p lather-eventing --test integration
//! <module>::` runs one of them.

mod support;

mod binary_frame;
mod bindings;
mod delivery_bounds;
mod delivery_wait;
mod frame_vectors;
mod limits;
mod store_trait;
mod subscription_caps;
mod subscription_end;
mod tcp_gzip;
mod tcp_subscription_end;
mod wrap_format;
mod xpath_properties;
