//! WS-Security at this node: the `wsse-username` handler (UsernameToken authentication) and
//! its kind, its replay cache, and the rules for finding and rewriting the `wsse:Security`
//! header block aimed at this node (shared with `decrypt`).

mod handler;
mod kind;
mod nonce_cache;
pub(crate) mod security_header;
mod token;

pub use handler::{UsersFileError, WsseSettings, WsseUsername};
pub use kind::{WsseUsernameKind, WsseUsernameSettings};
