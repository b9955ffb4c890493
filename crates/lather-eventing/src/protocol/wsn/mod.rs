//! WS-BaseNotification 1.3 (OASIS) beside WS-Eventing: Subscribe, Renew and Unsubscribe
//! answered by the same event source and subscription manager, `wsnt:Notify` accepted as a
//! publish, notifications wrapped in `wsnt:Notify` or raw (`wsnt:UseRaw`). Subscriptions
//! share the source's store, expiry and delivery queues.
//!
//! Dispatch is on the Body's namespace ([`WSN_NS`]); addressing is WS-Addressing 1.0.

pub(crate) mod content;
pub(crate) mod fault;
pub(crate) mod reply;
pub(crate) mod request;
pub(crate) mod terms;
pub(crate) mod topic;

pub(crate) use reply::outgoing;
pub use terms::{MessageContent, TopicDialect, TopicFilter, WsnTerms};

use lather_envelope::Envelope;

/// The WS-BaseNotification 1.3 schema namespace (`wsnt`).
pub const WSN_NS: &str = lather_envelope::WSN_B_NS;

/// The `wsa:Action` of WS-BaseNotification faults.
pub const WSN_FAULT_ACTION: &str = "http://docs.oasis-open.org/wsn/fault";

/// The WS-Topics Simple dialect: a root topic's QName.
pub const SIMPLE_DIALECT: &str = "http://docs.oasis-open.org/wsn/t-1/TopicExpression/Simple";

/// The WS-Topics Concrete dialect: a path of topic names below a qualified root.
pub const CONCRETE_DIALECT: &str = "http://docs.oasis-open.org/wsn/t-1/TopicExpression/Concrete";

/// The WSDL namespace the actions are built from (`{bw-2}/{port type}/{message}`).
const ACTIONS: &str = "http://docs.oasis-open.org/wsn/bw-2";

/// The action `{bw-2}/{port_type}/{message}`.
pub(crate) fn action(port_type: &str, message: &str) -> String {
    format!("{ACTIONS}/{port_type}/{message}")
}

/// The action of a wrapped notification (`wsnt:Notify`).
pub(crate) fn notify_action() -> String {
    action("NotificationConsumer", "Notify")
}

/// Whether `envelope`'s Body is a WS-BaseNotification message.
pub(crate) fn speaks(envelope: &Envelope) -> bool {
    envelope
        .operation()
        .is_some_and(|op| op.namespace() == WSN_NS)
}
