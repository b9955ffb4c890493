//! A request as it arrived, with the connection it came on.

use crate::peer::Peer;
use http::Request;

/// A request and the connection it came on, boxed together by the host and taken apart
/// where the request is (`dispatch::serve`). The peer travels beside the request, not in
/// its extensions, whose first entry costs a map, its table and a boxed value per request.
#[derive(Debug)]
pub(crate) struct Arriving<B> {
    /// The request.
    pub(crate) request: Request<B>,
    /// The connection it came on.
    pub(crate) peer: Peer,
}
