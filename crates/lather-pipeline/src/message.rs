//! The message as handlers see it: the envelope plus its context.

use crate::Properties;
use lather_envelope::Envelope;
use std::sync::Arc;

/// One message travelling through a service's stages.
///
/// Handlers get a shared reference; they never change it in place but return a
/// [`Patch`](crate::Patch). Between stages the engine applies the stage's patches and hands
/// the next stage a new `Message` with the same context.
#[derive(Debug, Clone)]
pub struct Message {
    envelope: Envelope,
    context: Arc<Context>,
}

/// What the engine knows about a message besides its envelope.
#[derive(Debug, Clone, Default)]
pub struct Context {
    /// A 128-bit identifier, unique per message.
    pub id: u128,
    /// The service the message was sent to.
    pub service: String,
    /// The SOAP action (`SOAPAction` or the `action` parameter), if any.
    pub action: Option<String>,
    /// The client's address (the connection's peer IP), when known.
    pub client: Option<std::net::IpAddr>,
    /// Which flow the message is in.
    pub direction: Direction,
    /// In the response and fault flows: the request as the service received it (after the
    /// request flow), so a handler can relate its answer (e.g. `wsa:RelatesTo`).
    pub request: Option<Envelope>,
    /// Typed values handlers set through their patches ([`Patch::set_property`](crate::Patch::set_property)),
    /// e.g. the authenticated [`Identity`](crate::Identity).
    pub properties: Properties,
}

/// The flow a message travels.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Direction {
    /// From the requester towards the service.
    #[default]
    Request,
    /// The service's answer on its way back.
    Response,
    /// A fault on its way back to the requester.
    Fault,
}

impl Message {
    /// A message with `envelope` and `context`.
    pub fn new(envelope: Envelope, context: Context) -> Self {
        Message {
            envelope,
            context: Arc::new(context),
        }
    }

    /// The envelope as it stands at this stage.
    pub fn envelope(&self) -> &Envelope {
        &self.envelope
    }

    /// The message's context.
    pub fn context(&self) -> &Context {
        &self.context
    }

    /// This message's context with another envelope (the next stage's snapshot).
    pub(crate) fn with_envelope(&self, envelope: Envelope) -> Self {
        Message {
            envelope,
            context: self.context.clone(),
        }
    }

    /// This message with `properties` set in its context (a later stage's view).
    pub(crate) fn with_properties<'p>(
        mut self,
        properties: impl IntoIterator<Item = &'p crate::Property>,
    ) -> Self {
        let mut properties = properties.into_iter().peekable();
        if properties.peek().is_some() {
            let context = Arc::make_mut(&mut self.context);
            for p in properties {
                context.properties.set(p.clone());
            }
        }
        self
    }

    /// Takes the envelope and the context out.
    pub fn into_parts(self) -> (Envelope, Context) {
        (self.envelope, Arc::unwrap_or_clone(self.context))
    }

    /// Takes the envelope out.
    pub fn into_envelope(self) -> Envelope {
        self.envelope
    }
}
