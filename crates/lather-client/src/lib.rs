//! A SOAP 1.1 / 1.2 client for calling SOAP services from Rust — lather's own or anyone's.
//!
//! - [`Client`]: pooled keep-alive connections (cheap to clone), a connect and a request
//!   timeout, a bound on the answer's size; built with [`Client::builder`].
//! - [`Call`]: the operation payload, the SOAP version, the action, header blocks and
//!   WS-Addressing ([`Wsa`]: a fresh `wsa:MessageID`, `wsa:To`, `wsa:Action`, `wsa:ReplyTo`).
//! - Answers are [`Envelope`](lather_envelope::Envelope)s parsed within bounds; a fault is
//!   [`ClientError::Fault`] carrying a [`ReceivedFault`](lather_envelope::ReceivedFault)
//!   (code, subcodes, reason, detail); timeouts, refused connections, HTTP errors, oversize
//!   and malformed answers are their own [`ClientError`] variants.
//! - One-way operations: [`Client::call_oneway`] takes `202 Accepted` with no body.
//! - Envelopes built elsewhere go out with [`Client::send`] / [`Client::send_bytes`].
//!
//! - `http://` and `https://` URLs; TLS (rustls) verifies servers against the system's
//!   trusted CAs, plus any given with [`ClientBuilder::tls`] ([`OutboundTls`]).
//!
//! ```no_run
//! use lather_client::{Call, Client, ClientError, Wsa};
//! use lather_envelope::SoapVersion;
//!
//! # async fn run() -> Result<(), ClientError> {
//! let client = Client::new();
//! let call = Call::new(r#"<e:echo xmlns:e="urn:lather:echo"><text>hello</text></e:echo>"#)
//!     .version(SoapVersion::V12)
//!     .action("urn:lather:echo#echo")
//!     .addressing(Wsa::V10);
//! match client.call("http://127.0.0.1:8080/echo", &call).await {
//!     Ok(answer) => {
//!         println!("{}", String::from_utf8_lossy(&answer.body()));
//!         assert_eq!(Wsa::V10.relates_to(&answer).as_deref(), call.message_id());
//!     }
//!     Err(ClientError::Fault { fault, .. }) => eprintln!("fault: {fault}"),
//!     Err(e) if e.is_timeout() => eprintln!("no answer in time"),
//!     Err(e) => return Err(e),
//! }
//! # Ok(())
//! # }
//! ```

mod addressing;
mod batch;
mod builder;
mod call;
mod client;
mod connector;
mod error;
mod response;
pub mod tls;
mod transport;

pub use addressing::Wsa;
pub use builder::ClientBuilder;
pub use call::Call;
pub use client::Client;
pub use error::{BoxError, ClientError, STATUS_BODY_BYTES};
pub use lather_envelope::batch::BATCH_NS;
pub use response::SoapResponse;
pub use tls::{HandshakeError, OutboundTls, TrustError, system_roots};
pub use transport::soap_headers;
