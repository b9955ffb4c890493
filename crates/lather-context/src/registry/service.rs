//! The registry as a SOAP service (`builtin = "registry"`).

use super::book::Registry;
use super::protocol::{self, Request};
use lather_envelope::{Bytes, EnvelopeBuilder, Fault, Limits, QName};
use lather_pipeline::{Identity, Reply, ServiceFuture, ServiceRequest, SoapService};
use std::sync::Arc;

/// Answers `Register`, `Renew`, `Deregister` and `Query`. The message's authenticated
/// [`Identity`], when there is one, owns what it registers; otherwise the registrant gets
/// a token.
#[derive(Debug, Clone)]
pub struct RegistryService {
    registry: Arc<Registry>,
    limits: Limits,
}

impl RegistryService {
    /// The service over `registry`; request bodies are read within `limits`.
    pub fn new(registry: Arc<Registry>, limits: Limits) -> RegistryService {
        RegistryService { registry, limits }
    }
}

impl SoapService for RegistryService {
    fn call<'a>(&'a self, request: ServiceRequest<'a>) -> ServiceFuture<'a> {
        Box::pin(async move {
            let version = request.envelope.version();
            let (parsed, token) = protocol::parse(&request.envelope, &self.limits)?;
            let identity = request
                .context
                .properties
                .get::<Identity>()
                .map(|i| i.name().to_owned());
            let (token, identity) = (token.as_deref(), identity.as_deref());
            let fault = |e| protocol::fault(&e);
            let body = match parsed {
                Request::Register(r) => {
                    let (registration, token) =
                        self.registry.register(r, identity).map_err(fault)?;
                    protocol::registered(&registration, token.as_deref())
                }
                Request::Renew { id, lease } => {
                    let end = self
                        .registry
                        .renew(&id, lease, token, identity)
                        .map_err(fault)?;
                    protocol::renewed(&id, end)
                }
                Request::Deregister { id } => {
                    self.registry
                        .deregister(&id, token, identity)
                        .map_err(fault)?;
                    protocol::deregistered(&id)
                }
                Request::Query(query) => protocol::found(&self.registry.query(&query)),
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
