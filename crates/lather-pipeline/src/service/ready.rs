//! Whether a service can answer requests now, for the host's readiness endpoint.

use std::borrow::Cow;

/// A service's readiness: [`SoapService::ready`](super::SoapService::ready) says whether
/// requests sent now could be answered, not only refused with a fault (a gateway with no
/// backend to forward to is not ready).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ready {
    /// Requests can be answered.
    Yes,
    /// They cannot, and why, in a few words (e.g. `"no backend"`): the host reports it as
    /// `service: why`.
    No(Cow<'static, str>),
}

impl Ready {
    /// Whether it is [`Ready::Yes`].
    pub fn is_ready(&self) -> bool {
        matches!(self, Ready::Yes)
    }
}
