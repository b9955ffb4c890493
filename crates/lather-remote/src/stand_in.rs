//! What a remote stand-in (request/reply or oneway) keeps of the handler it stands for, and
//! the fallback both take when the workers cannot be reached.

use crate::Link;
use lather_config::Fallback;
use lather_envelope::{Fault, FaultKind};
use lather_pipeline::{Access, Handler, Message, Verdict};
use std::sync::Arc;

/// The handler a remote stand-in replaces: its configured name, the local instance (for
/// `fallback = "local"`), its declared access, the link and subject it is reached through.
pub(crate) struct StandIn {
    pub(crate) name: String,
    pub(crate) local: Arc<dyn Handler>,
    pub(crate) access: Access,
    pub(crate) link: Arc<Link>,
    pub(crate) subject: String,
    pub(crate) fallback: Fallback,
}

impl std::fmt::Debug for StandIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StandIn")
            .field("name", &self.name)
            .field("subject", &self.subject)
            .field("fallback", &self.fallback)
            .finish_non_exhaustive()
    }
}

impl StandIn {
    /// Stands in for `local`, configured as `name`, reached on `subject` through `link`.
    pub(crate) fn new(
        name: &str,
        local: Arc<dyn Handler>,
        link: Arc<Link>,
        subject: String,
        fallback: Fallback,
    ) -> StandIn {
        StandIn {
            name: name.to_owned(),
            access: local.access(),
            local,
            link,
            subject,
            fallback,
        }
    }

    /// The workers cannot be reached (`why`): run the local instance, or answer
    /// `HandlerFailed` naming the stand-in (`what`, e.g. "remote handler"), the subject and
    /// the NATS URL.
    pub(crate) async fn fall_back(&self, message: &Message, what: &str, why: String) -> Verdict {
        match self.fallback {
            Fallback::Local => {
                tracing::debug!(handler = %self.name, %why, "{what}: running the handler locally");
                self.local.call(message).await
            }
            Fallback::Fault => Verdict::Fault(Fault::with_reason(
                FaultKind::HandlerFailed,
                format!(
                    "{what} {}: {why} (subject {} at {})",
                    self.name,
                    self.subject,
                    self.link.url()
                ),
            )),
        }
    }
}
