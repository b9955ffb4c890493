//! The context store's messages: lather's `SetContext`, `GetContext` and `RemoveContext`
//! in the namespace [`NS`], answering with the OASIS WS-Context 1.0 `wsctx:context`
//! element ([`WSCTX_NS`]) that names the context by reference. `docs/context.md` has the
//! exchange with examples.

pub(crate) mod fault;
mod reference;
mod request;
mod response;

pub use fault::{FaultName, context_fault};
pub use reference::ContextReference;
pub use request::{ContextRequest, parse_request};
pub use response::{get_response, remove_response, set_response};

use lather_envelope::QName;

/// lather's context store namespace.
pub const NS: &str = "urn:lather:context";
/// OASIS WS-Context 1.0.
pub const WSCTX_NS: &str = "http://docs.oasis-open.org/ws-caf/2005/10/wsctx";

/// The operations, as the Body's first child.
pub fn operations() -> Vec<QName> {
    ["SetContext", "GetContext", "RemoveContext"]
        .into_iter()
        .map(|local| QName::new(NS, local))
        .collect()
}
