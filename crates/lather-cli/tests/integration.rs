//! lather-cli's integration tests, built as one test binary (one link instead of one per
//! file). Each module is a file beside this one; `cargo test -p lather-cli --test integration
//! <module>::` runs one of them.

mod collector;
mod interop;
mod serving;
mod workers;

mod async_restart;
mod auto_placement;
mod check_nats;
mod check_publish;
mod check_streams;
mod check_tls;
mod check_tuning;
mod cli;
mod deploy;
mod fd_limit;
mod huge_pages;
mod interop_cxf;
mod interop_sdc;
mod oneway_nats;
mod operations;
mod otel;
mod otel_remote;
mod qos_broker;
mod qos_dscp_netns;
mod relay;
mod remote_faults;
mod remote_nats;
mod signals;
mod startup_warnings;
