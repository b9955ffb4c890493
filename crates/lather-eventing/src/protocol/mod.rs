//! The eventing protocol without I/O: versions, requests, replies, faults, filters,
//! expiry and subscription records. Nothing here touches a socket, a file or a runtime;
//! the layers above ([`crate::delivery`], [`crate::store`], [`crate::source`]) do.

pub(crate) mod action_filter;
pub(crate) mod address;
pub(crate) mod compression;
pub(crate) mod event;
pub(crate) mod expires;
pub(crate) mod filter;
pub(crate) mod format;
pub(crate) mod problem;
pub(crate) mod reply;
pub(crate) mod request;
pub(crate) mod subscription;
pub(crate) mod version;
pub(crate) mod wsn;
pub mod xpath;
