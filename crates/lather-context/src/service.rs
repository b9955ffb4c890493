//! The store as a SOAP service (`builtin = "context-store"`).

use crate::protocol::{self, ContextRequest};
use crate::{Contexts, Written};
use lather_envelope::{Bytes, EnvelopeBuilder, Fault, Limits, QName};
use lather_pipeline::{Identity, Reply, ServiceFuture, ServiceRequest, SoapService};

/// A WS-Context store answering `SetContext`, `GetContext` and `RemoveContext`. The
/// authenticated [`Identity`] of the message (a `wsse-username` handler before it), when
/// there is one, owns what it creates; otherwise the creator gets a token.
#[derive(Debug, Clone)]
pub struct ContextStoreService {
    contexts: Contexts,
    limits: Limits,
}

impl ContextStoreService {
    /// The service over `contexts`; request bodies are read within `limits`.
    pub fn new(contexts: Contexts, limits: Limits) -> ContextStoreService {
        ContextStoreService { contexts, limits }
    }

    /// The rules it serves.
    pub fn contexts(&self) -> &Contexts {
        &self.contexts
    }
}

impl SoapService for ContextStoreService {
    fn call<'a>(&'a self, request: ServiceRequest<'a>) -> ServiceFuture<'a> {
        Box::pin(async move {
            let version = request.envelope.version();
            let parsed = protocol::parse_request(&request.envelope, &self.limits)?;
            let identity = request
                .context
                .properties
                .get::<Identity>()
                .map(|i| i.name().to_owned());
            let who = parsed.credentials(identity);
            let fault = |e| protocol::context_fault(&e);
            let body = match parsed {
                ContextRequest::Set { context, .. } => {
                    let Written { context, token } =
                        self.contexts.set(context, &who).await.map_err(fault)?;
                    protocol::set_response(&context, token.as_deref(), &request.location.get())
                }
                ContextRequest::Get { uri, .. } => {
                    let context = self.contexts.get(&uri, &who).await.map_err(fault)?;
                    protocol::get_response(&context, &request.location.get())
                }
                ContextRequest::Remove { uri, .. } => {
                    self.contexts.remove(&uri, &who).await.map_err(fault)?;
                    protocol::remove_response(&uri)
                }
            };
            let bytes = EnvelopeBuilder::new(version)
                .body(Bytes::from(body))
                .build();
            Ok::<_, Fault>(Reply::Written(version, bytes))
        })
    }

    fn operations(&self) -> Vec<QName> {
        protocol::operations()
    }
}
