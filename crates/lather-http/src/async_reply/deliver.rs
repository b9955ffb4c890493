//! Delivering an answer to its `ReplyTo`: an HTTP POST (over TLS for `https://`) through
//! the delivery policy (every address the host resolves to checked, this server's own port
//! refused; the certificate verified against the server's outbound trust).

use bytes::Bytes;
use lather_envelope::SoapVersion;
use lather_eventing::{DeliveryError, DeliveryPolicy};
use std::time::Duration;

/// POSTs `body` (an envelope in `version`) to the `http://` or `https://` URL `to` within
/// `timeout`; any 2xx answer is success.
pub(crate) async fn post(
    policy: &DeliveryPolicy,
    to: &str,
    version: SoapVersion,
    action: Option<&str>,
    body: Bytes,
    timeout: Duration,
) -> Result<(), DeliveryError> {
    let headers = lather_client::soap_headers(version, action).map_err(|_| {
        DeliveryError::Refused(format!(
            "ReplyTo {to:?}: its action cannot be an HTTP header"
        ))
    })?;
    lather_eventing::post_once(policy, to, headers, body, timeout).await
}
