//! A WS-Eventing subscriber: Subscribe, Renew, GetStatus and Unsubscribe against a remote
//! event source over HTTP (2004/08 or 2011), and a [`Sink`] that receives the
//! notifications and SubscriptionEnd. `lather subscribe` is built on it.
//!
//! ```no_run
//! # async fn run() -> Result<(), lather_eventing::client::EventingClientError> {
//! use lather_eventing::client::{EventingClient, Filter, Sink, SinkMessage, SubscribeOptions};
//! use lather_eventing::{Endpoint, Version};
//! let mut sink = Sink::bind("127.0.0.1:0".parse().unwrap()).await?;
//! let client = EventingClient::default();
//! let mut options = SubscribeOptions::new(Version::Submission04Wsa10, sink.notify_url());
//! options.end_to = Some(Endpoint { address: sink.end_url(), params: Vec::new() });
//! options.expires = Some("PT10M".into());
//! options.filter = Some(Filter::topics(["alarms"]));
//! let subscription = client.subscribe("http://127.0.0.1:8080/events", &options).await?;
//! if let Some(SinkMessage::Notification(n)) = sink.next().await {
//!     println!("{}", n.body);
//! }
//! client.unsubscribe(&subscription).await?;
//! # Ok(()) }
//! ```

mod error;
mod message;
mod response;
mod sink;
mod stream_sink;
mod transport;

pub use error::EventingClientError;
pub use sink::{Notification, Sink, SinkMessage, SubscriptionEnded};

use crate::{Endpoint, TOPIC_DIALECT, Version};
use lather_envelope::SoapVersion;
use std::time::Duration;

/// A Subscribe's filter: its dialect, its text and the namespace prefixes the text uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    /// The `Filter@Dialect` URI.
    pub dialect: String,
    /// The filter's text content.
    pub text: String,
    /// `(prefix, namespace)` declared on the Filter element.
    pub namespaces: Vec<(String, String)>,
}

impl Filter {
    /// lather's topic dialect: `topics` are plain strings or Clark names `{ns}local`.
    pub fn topics<I: IntoIterator<Item = S>, S: Into<String>>(topics: I) -> Filter {
        Filter {
            dialect: TOPIC_DIALECT.to_owned(),
            text: join(topics),
            namespaces: Vec::new(),
        }
    }

    /// The DPWS action dialect (IEEE 11073 SDC sources): the notification actions wanted.
    pub fn actions<I: IntoIterator<Item = S>, S: Into<String>>(actions: I) -> Filter {
        Filter {
            dialect: crate::DPWS_ACTION_DIALECT.to_owned(),
            text: join(actions),
            namespaces: Vec::new(),
        }
    }
}

fn join<I: IntoIterator<Item = S>, S: Into<String>>(items: I) -> String {
    items
        .into_iter()
        .map(Into::into)
        .collect::<Vec<String>>()
        .join(" ")
}

/// What a Subscribe asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubscribeOptions {
    /// The eventing (and addressing) version spoken.
    pub version: Version,
    /// The SOAP version of the requests (and so of the notifications).
    pub soap: SoapVersion,
    /// Where notifications go.
    pub notify_to: Endpoint,
    /// Where SubscriptionEnd goes, if anywhere.
    pub end_to: Option<Endpoint>,
    /// The expiration asked for (`xs:duration` or `xs:dateTime`); `None` leaves it to the
    /// source.
    pub expires: Option<String>,
    /// 2011: let the source grant another expiration than asked (`BestEffort`).
    pub best_effort: bool,
    /// The filter, if any.
    pub filter: Option<Filter>,
    /// 2011: ask for the Wrap format (each event inside `wse:Notify@actionURI`; the
    /// [`Sink`] hands the event out unwrapped). 2004/08 has no formats: the option is not
    /// sent there.
    pub wrap: bool,
    /// Ask for gzip-compressed notifications (`lev:Compression`, a lather extension; the
    /// [`Sink`] inflates them). A source that does not know it may refuse the Subscribe.
    pub gzip: bool,
}

impl SubscribeOptions {
    /// Push delivery to `notify_to` (no reference parameters), SOAP 1.2, no EndTo, no
    /// expiration asked, no filter, the events unwrapped and uncompressed.
    pub fn new(version: Version, notify_to: impl Into<String>) -> SubscribeOptions {
        SubscribeOptions {
            version,
            soap: SoapVersion::V12,
            notify_to: Endpoint {
                address: notify_to.into(),
                params: Vec::new(),
            },
            end_to: None,
            expires: None,
            best_effort: true,
            filter: None,
            wrap: false,
            gzip: false,
        }
    }
}

/// A subscription held at a remote source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteSubscription {
    /// The version it was made in.
    pub version: Version,
    /// The SOAP version its requests use.
    pub soap: SoapVersion,
    /// The subscription manager's EPR; its reference parameters go with every request.
    pub manager: Endpoint,
    /// The expiration last granted, as the source wrote it (if it did).
    pub expires: Option<String>,
}

/// A client for remote event sources, on a [`lather_client::Client`]. Cheap to clone; keeps
/// connections alive.
#[derive(Debug, Clone)]
pub struct EventingClient {
    soap: lather_client::Client,
}

impl Default for EventingClient {
    fn default() -> Self {
        EventingClient::new(Duration::from_secs(10))
    }
}

impl EventingClient {
    /// A client waiting at most `timeout` for each answer.
    pub fn new(timeout: Duration) -> EventingClient {
        EventingClient {
            soap: transport::soap_client(timeout),
        }
    }

    async fn exchange(
        &self,
        url: &str,
        soap: SoapVersion,
        out: message::Outbound,
    ) -> Result<(u16, Option<lather_envelope::Envelope>), EventingClientError> {
        transport::post(&self.soap, url, soap, &out.action, out.envelope).await
    }

    /// Subscribes at the event source `source` (an `http://` URL).
    pub async fn subscribe(
        &self,
        source: &str,
        options: &SubscribeOptions,
    ) -> Result<RemoteSubscription, EventingClientError> {
        transport::checked_url(source)?;
        let out = message::subscribe(source, options);
        let (status, answer) = self.exchange(source, options.soap, out).await?;
        let (element, payload) =
            response::expect(status, answer, options.version, "SubscribeResponse", false)?
                .ok_or_else(|| EventingClientError::BadAnswer {
                    status,
                    why: "an empty Body instead of SubscribeResponse".into(),
                })?;
        let manager = response::manager(status, options.version, &element, &payload)?;
        transport::checked_url(&manager.address).map_err(|e| EventingClientError::BadAnswer {
            status,
            why: format!("the subscription manager's address: {e}"),
        })?;
        Ok(RemoteSubscription {
            version: options.version,
            soap: options.soap,
            manager,
            expires: response::granted(options.version, &element),
        })
    }

    async fn to_manager(
        &self,
        subscription: &RemoteSubscription,
        operation: &str,
        expires: Option<&str>,
    ) -> Result<Option<String>, EventingClientError> {
        let out = message::to_manager(
            subscription.version,
            subscription.soap,
            operation,
            &subscription.manager,
            expires,
        );
        let (status, answer) = self
            .exchange(&subscription.manager.address, subscription.soap, out)
            .await?;
        let empty_ok = operation == "Unsubscribe" && subscription.version.is_2004();
        let answer = response::expect(
            status,
            answer,
            subscription.version,
            &format!("{operation}Response"),
            empty_ok,
        )?;
        Ok(answer.and_then(|(element, _)| response::granted(subscription.version, &element)))
    }

    /// Renews `subscription`, asking for `expires` (or leaving it to the source); returns
    /// and records the granted expiration.
    pub async fn renew(
        &self,
        subscription: &mut RemoteSubscription,
        expires: Option<&str>,
    ) -> Result<Option<String>, EventingClientError> {
        let granted = self.to_manager(subscription, "Renew", expires).await?;
        subscription.expires.clone_from(&granted);
        Ok(granted)
    }

    /// The expiration the source states for `subscription`.
    pub async fn get_status(
        &self,
        subscription: &RemoteSubscription,
    ) -> Result<Option<String>, EventingClientError> {
        self.to_manager(subscription, "GetStatus", None).await
    }

    /// Ends `subscription`.
    pub async fn unsubscribe(
        &self,
        subscription: &RemoteSubscription,
    ) -> Result<(), EventingClientError> {
        self.to_manager(subscription, "Unsubscribe", None)
            .await
            .map(|_| ())
    }
}
