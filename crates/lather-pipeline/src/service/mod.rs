//! SOAP services: what answers a message once the request stages have run.
//!
//! A [`SoapService`] answers an [`Envelope`] with a [`Reply`] or a [`Fault`], may serve a
//! WSDL, says which header blocks it processes (for the mustUnderstand check) and which
//! operations it serves. lather's echo, gateway and event source are implementations; so is
//! any service a program registers with the server's builder. [`service_fn`] makes one from
//! an async closure.
//!
//! A service raises its own faults with [`Fault::application`](lather_envelope::Fault::application):
//! its own subcodes and detail, without an entry in lather's catalogue.

mod closure;
mod ready;
mod reply;

pub use closure::{ServiceFn, service_fn};
pub use ready::Ready;
pub use reply::Reply;

use crate::Context;
use lather_envelope::{Envelope, Fault, FaultKind, QName};
use std::future::Future;
use std::pin::Pin;

/// The future a service returns.
pub type ServiceFuture<'a> = Pin<Box<dyn Future<Output = Result<Reply, Fault>> + Send + 'a>>;

/// One request as a service sees it, after the request stages.
#[derive(Debug)]
pub struct ServiceRequest<'a> {
    /// The envelope as the request stages left it.
    pub envelope: Envelope,
    /// The message's context: id, action, client, the properties handlers set (e.g. the
    /// authenticated [`Identity`](crate::Identity)).
    pub context: &'a Context,
    /// `None` at the service's own path; at one of its [`SoapService::subpaths`] below
    /// it, that suffix (e.g. `Some("/publish")`).
    pub subpath: Option<&'a str>,
    /// The HTTP request's headers.
    pub headers: &'a http::HeaderMap,
    /// The service's URL as clients reach it (the `public_url`, else from the request's
    /// `Host`), for addresses the service hands out; computed when asked.
    pub location: Location<'a>,
}

/// The URL a service is reached at, computed only by the services that ask for it.
#[derive(Clone, Copy)]
pub struct Location<'a>(&'a (dyn Fn() -> String + Sync));

impl<'a> Location<'a> {
    /// A location `compute` works out.
    pub fn new(compute: &'a (dyn Fn() -> String + Sync)) -> Self {
        Location(compute)
    }

    /// The URL.
    pub fn get(&self) -> String {
        (self.0)()
    }
}

impl std::fmt::Debug for Location<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Location").field(&self.get()).finish()
    }
}

/// A SOAP service.
///
/// # Contract
///
/// [`SoapService::call`] answers one request. It runs on the I/O threads: a service that
/// computes for long should move that work elsewhere (e.g.
/// [`run_cpu_bound`](crate::run_cpu_bound)). Many calls run at once (`&self`). Admission
/// control is the host's: a service does not queue requests itself.
///
/// # Example
///
/// ```
/// use lather_envelope::{EnvelopeBuilder, Fault, FaultCode, QName};
/// use lather_pipeline::{Reply, ServiceFuture, ServiceRequest, SoapService};
///
/// /// Answers `<m:ping/>` with `<m:pong/>`; anything else is its own fault.
/// struct Ping;
///
/// impl SoapService for Ping {
///     fn call<'a>(&'a self, request: ServiceRequest<'a>) -> ServiceFuture<'a> {
///         Box::pin(async move {
///             if request.envelope.operation() != Some(&QName::new("urn:m", "ping")) {
///                 return Err(Fault::application(
///                     FaultCode::Sender,
///                     [QName::new("urn:m", "NotAPing")],
///                     "only ping is served",
///                 ));
///             }
///             let body = r#"<m:pong xmlns:m="urn:m"/>"#;
///             let bytes = EnvelopeBuilder::new(request.envelope.version()).body(lather_envelope::Bytes::from_static(body.as_bytes())).build();
///             Ok(Reply::Written(request.envelope.version(), bytes))
///         })
///     }
///
///     fn operations(&self) -> Vec<QName> {
///         vec![QName::new("urn:m", "ping")]
///     }
/// }
/// ```
pub trait SoapService: Send + Sync + 'static {
    /// Answers one request.
    fn call<'a>(&'a self, request: ServiceRequest<'a>) -> ServiceFuture<'a>;

    /// The service's WSDL with its address set to `location` (`GET path?wsdl`). Default: a
    /// `MethodNotAllowed` fault saying the service has none.
    fn wsdl<'a>(&'a self, location: &'a str) -> ServiceFuture<'a> {
        let _ = location;
        Box::pin(async {
            Err(Fault::with_reason(
                FaultKind::MethodNotAllowed,
                "this service serves no WSDL: POST SOAP messages to it",
            ))
        })
    }

    /// Header blocks the service processes itself; a mandatory block neither it nor a
    /// handler of the message's plan processes is a MustUnderstand fault. Default: none.
    fn understood(&self) -> Vec<QName> {
        Vec::new()
    }

    /// The operations (the Body's first child) it serves; a request for another one is an
    /// `UnknownOperation` fault before any handler runs. Empty (the default): any.
    fn operations(&self) -> Vec<QName> {
        Vec::new()
    }

    /// Whether it answers messages itself (the ultimate SOAP receiver) rather than passing
    /// them on (a gateway): mandatory blocks for the ultimate receiver are checked only for
    /// the former. Default: true.
    fn is_ultimate_receiver(&self) -> bool {
        true
    }

    /// Paths below its own it also answers at, as suffixes (e.g. `"/publish"`): a request
    /// there reaches this service with [`ServiceRequest::subpath`] telling which. Default: none.
    fn subpaths(&self) -> Vec<String> {
        Vec::new()
    }

    /// Whether requests sent now could be answered (the host's `GET /ready`). Called often
    /// and on the I/O threads: read state at hand, never wait. Default: [`Ready::Yes`].
    fn ready(&self) -> Ready {
        Ready::Yes
    }
}

/// Services are shared between the host's threads as `Arc<dyn SoapService>`.
impl<S: SoapService + ?Sized> SoapService for std::sync::Arc<S> {
    fn call<'a>(&'a self, request: ServiceRequest<'a>) -> ServiceFuture<'a> {
        (**self).call(request)
    }
    fn wsdl<'a>(&'a self, location: &'a str) -> ServiceFuture<'a> {
        (**self).wsdl(location)
    }
    fn understood(&self) -> Vec<QName> {
        (**self).understood()
    }
    fn operations(&self) -> Vec<QName> {
        (**self).operations()
    }
    fn is_ultimate_receiver(&self) -> bool {
        (**self).is_ultimate_receiver()
    }
    fn subpaths(&self) -> Vec<String> {
        (**self).subpaths()
    }
    fn ready(&self) -> Ready {
        (**self).ready()
    }
}
