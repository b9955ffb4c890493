//! Services made from closures.

use super::{Reply, ServiceFuture, ServiceRequest, SoapService};
use crate::Context;
use lather_envelope::{Envelope, Fault};
use std::fmt;
use std::future::Future;

/// A service made by [`service_fn`].
pub struct ServiceFn<F> {
    f: F,
}

/// A service that answers each request with `f(envelope, context)`: for small services that
/// need no WSDL and no header blocks of their own.
///
/// ```
/// use lather_pipeline::{Reply, service_fn};
/// let echo = service_fn(|envelope, _context| async move { Ok(Reply::Envelope(envelope)) });
/// # let _ = echo;
/// ```
pub fn service_fn<F, Fut>(f: F) -> ServiceFn<F>
where
    F: Fn(Envelope, Context) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Reply, Fault>> + Send + 'static,
{
    ServiceFn { f }
}

impl<F, Fut> SoapService for ServiceFn<F>
where
    F: Fn(Envelope, Context) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Reply, Fault>> + Send + 'static,
{
    fn call<'a>(&'a self, request: ServiceRequest<'a>) -> ServiceFuture<'a> {
        Box::pin((self.f)(request.envelope, request.context.clone()))
    }
}

impl<F> fmt::Debug for ServiceFn<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ServiceFn")
    }
}
