//! `notify`: a WS-Eventing-style notification per message, POSTed to a sink.

use bytes::Bytes;
use http::header::{CONTENT_TYPE, HeaderValue};
use http::{Method, Request, Uri};
use http_body_util::{BodyExt, Full, Limited};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use lather_client::OutboundTls;
use lather_envelope::escape::{escape_attribute, escape_text};
use lather_envelope::{EnvelopeBuilder, Fault, FaultKind, SoapVersion};
use lather_pipeline::{
    Access, BuildEnv, Direction, Handler, HandlerFuture, HandlerKind, Message, Parts,
    SettingsError, Verdict,
};
use serde::Deserialize;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The notification's namespace and its `wsa:Action`.
pub const NOTIFY_NS: &str = "urn:lather:notify";
/// WS-Addressing 1.0.
const WSA_NS: &str = "http://www.w3.org/2005/08/addressing";
/// The notification's media type: SOAP 1.2 with its action.
const CONTENT_TYPE_VALUE: &str =
    "application/soap+xml; charset=utf-8; action=\"urn:lather:notify\"";
/// Most bytes of a sink's answer read (to keep its connection reusable); the rest is
/// dropped with the connection.
const MAX_ANSWER_BYTES: usize = 64 * 1024;
/// Why a `sink` cannot be POSTed to (the text completes "the sink … ").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SinkUrlError(String);

impl std::fmt::Display for SinkUrlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SinkUrlError {}

/// Sends, for each message, one SOAP 1.2 notification to an HTTP sink and waits for its
/// 2xx answer, so the cost is a real network round trip:
///
/// ```xml
/// <env:Envelope xmlns:env="http://www.w3.org/2003/05/soap-envelope">
///   <env:Header>
///     <wsa:Action xmlns:wsa="http://www.w3.org/2005/08/addressing">urn:lather:notify</wsa:Action>
///     <wsa:To xmlns:wsa="http://www.w3.org/2005/08/addressing">http://sink/path</wsa:To>
///   </env:Header>
///   <env:Body>
///     <n:Notify xmlns:n="urn:lather:notify">
///       <n:MessageId>32 hex digits</n:MessageId>
///       <n:Service>orders</n:Service>
///       <n:Flow>request</n:Flow>
///       <n:Operation xmlns:op="urn:shop">op:Buy</n:Operation>
///       <n:Time>2026-11-22T10:00:00.123Z</n:Time>
///     </n:Notify>
///   </env:Body>
/// </env:Envelope>
/// ```
///
/// `Operation` is an `xs:QName` (absent when the Body is empty). Connections are pooled
/// and kept alive. A non-2xx answer or a failed connection is the handler's failure
/// (`HandlerFailed`); the handler's timeout bounds the whole round trip.
#[derive(Debug)]
pub struct Notify {
    sink: Uri,
    url: String,
    client: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
}

impl Notify {
    /// A notifier POSTing to `sink` (`http://host[:port]/path`, or `https://…` verified
    /// against the system's trusted CAs), its connections given up after `timeout`. Fails,
    /// saying why, if `sink` is not such a URL.
    pub fn new(sink: &str, timeout: Duration) -> Result<Notify, SinkUrlError> {
        Notify::with_tls(sink, timeout, &OutboundTls::system())
    }

    /// [`Notify::new`], verifying an `https://` sink's certificate against `tls`.
    pub fn with_tls(
        sink: &str,
        timeout: Duration,
        tls: &OutboundTls,
    ) -> Result<Notify, SinkUrlError> {
        let bad = |why: String| Err(SinkUrlError(why));
        let uri: Uri = match sink.parse() {
            Ok(uri) => uri,
            Err(e) => return bad(format!("is not a URL ({e})")),
        };
        match uri.scheme_str() {
            Some("http" | "https") => {}
            _ => return bad("must start with http:// or https://".into()),
        }
        let Some(authority) = uri.authority() else {
            return bad("has no host".into());
        };
        if authority.as_str().contains('@') {
            return bad("carries user information, which notify does not send".into());
        }
        if authority.host().is_empty() {
            return bad("has no host".into());
        }
        let mut tcp = HttpConnector::new();
        tcp.set_nodelay(true);
        tcp.set_connect_timeout(Some(timeout));
        tcp.enforce_http(false);
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config((*tls.client_config()).clone())
            .https_or_http()
            .enable_http1()
            .wrap_connector(tcp);
        let client = Client::builder(TokioExecutor::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(Duration::from_secs(90))
            .build(connector);
        Ok(Notify {
            sink: uri,
            url: sink.to_owned(),
            client,
        })
    }

    /// The notification envelope for `message`, sent at `millis` since the Unix epoch.
    fn notification(&self, message: &Message, millis: u64) -> Bytes {
        let ctx = message.context();
        let flow = match ctx.direction {
            Direction::Request => "request",
            Direction::Response => "response",
            Direction::Fault => "fault",
        };
        let operation = match message.envelope().operation() {
            None => String::new(),
            Some(op) if op.namespace().is_empty() => {
                format!("<n:Operation>{}</n:Operation>", escape_text(op.local()))
            }
            Some(op) => format!(
                r#"<n:Operation xmlns:op="{}">op:{}</n:Operation>"#,
                escape_attribute(op.namespace()),
                escape_text(op.local())
            ),
        };
        let body = format!(
            r#"<n:Notify xmlns:n="{NOTIFY_NS}"><n:MessageId>{:032x}</n:MessageId><n:Service>{}</n:Service><n:Flow>{flow}</n:Flow>{operation}<n:Time>{}</n:Time></n:Notify>"#,
            ctx.id,
            escape_text(&ctx.service),
            lather_envelope::datetime::format_utc_millis(millis)
        );
        EnvelopeBuilder::new(SoapVersion::V12)
            .header(EnvelopeBuilder::text_element(
                WSA_NS, "wsa", "Action", NOTIFY_NS,
            ))
            .header(EnvelopeBuilder::text_element(
                WSA_NS, "wsa", "To", &self.url,
            ))
            .body(body.into())
            .build()
    }

    fn failed(&self, why: impl std::fmt::Display) -> Verdict {
        Verdict::Fault(Fault::with_reason(
            FaultKind::HandlerFailed,
            format!("notify sink {}: {why}", self.url),
        ))
    }
}

impl Handler for Notify {
    fn access(&self) -> Access {
        Access::read_only(Parts::none().body())
    }

    fn call<'a>(&'a self, message: &'a Message) -> HandlerFuture<'a> {
        Box::pin(async move {
            let millis = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
            let request = Request::builder()
                .method(Method::POST)
                .uri(self.sink.clone())
                .header(CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE_VALUE))
                .body(Full::new(self.notification(message, millis)));
            let request = match request {
                Ok(r) => r,
                Err(e) => return self.failed(e),
            };
            let answer = match self.client.request(request).await {
                Ok(answer) => answer,
                Err(e) => {
                    let cause = std::error::Error::source(&e)
                        .map(|s| format!(": {s}"))
                        .unwrap_or_default();
                    return self.failed(format!("{e}{cause}"));
                }
            };
            let status = answer.status();
            // Read (a bounded part of) the answer so the connection can serve the next one.
            let _ = Limited::new(answer.into_body(), MAX_ANSWER_BYTES)
                .collect()
                .await;
            if status.is_success() {
                Verdict::proceed()
            } else {
                self.failed(format!("answered {status}"))
            }
        })
    }
}

/// The `notify` kind: its handlers send a notification per message, so they are not
/// idempotent. The handler's timeout bounds each round trip.
#[derive(Debug, Clone, Copy, Default)]
pub struct NotifyKind;

/// `[handlers.NAME]` settings of kind `notify`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotifySettings {
    /// Where notifications are POSTed, `http://host:port/path` or `https://…` (required).
    pub sink: String,
}

impl HandlerKind for NotifyKind {
    type Settings = NotifySettings;

    fn name(&self) -> &'static str {
        "notify"
    }

    fn idempotent(&self) -> bool {
        false
    }

    fn build(
        &self,
        settings: NotifySettings,
        env: &BuildEnv<'_>,
    ) -> Result<Arc<dyn Handler>, SettingsError> {
        // The server's outbound trust (`[server] outbound_ca_file`), if it gave one.
        let tls = env
            .resources
            .get::<OutboundTls>()
            .cloned()
            .unwrap_or_default();
        let notify = Notify::with_tls(&settings.sink, env.timeout, &tls)
            .map_err(|why| SettingsError::key("sink", format!("{:?} {why}", settings.sink)))?;
        Ok(Arc::new(notify))
    }
}
