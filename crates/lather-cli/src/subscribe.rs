//! `lather subscribe`: subscribe to a remote WS-Eventing source, print what arrives,
//! unsubscribe after N notifications, on Ctrl-C or at the timeout.

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use lather_envelope::SoapVersion;
use lather_eventing::client::{
    EventingClient, Filter, Notification, Sink, SinkMessage, SubscribeOptions,
};
use lather_eventing::{Endpoint, Version};
use std::net::SocketAddr;
use std::time::Duration;

/// The eventing version to speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum EventingVersion {
    /// WS-Eventing 2004/08 with WS-Addressing 1.0 (DPWS, IEEE 11073 SDC).
    #[value(name = "2004")]
    V2004,
    /// WS-Eventing W3C Recommendation 2011.
    #[value(name = "2011")]
    V2011,
}

/// The SOAP version of the requests (and so of the notifications the source sends back).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Soap {
    /// SOAP 1.1 (`text/xml`; e.g. JAX-WS endpoints such as Apache CXF's by default).
    #[value(name = "1.1")]
    V11,
    /// SOAP 1.2 (`application/soap+xml`).
    #[value(name = "1.2")]
    V12,
}

/// `lather subscribe` arguments.
#[derive(Debug, Args)]
pub(crate) struct SubscribeArgs {
    /// The event source's URL (http://).
    #[arg(long, value_name = "URL")]
    source: String,
    /// The WS-Eventing version.
    #[arg(long, value_enum, default_value = "2004")]
    version: EventingVersion,
    /// The SOAP version spoken.
    #[arg(long, value_enum, default_value = "1.2")]
    soap: Soap,
    /// Where the notification sink listens (port 0 = any free port).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// The expiration asked for (xs:duration or xs:dateTime).
    #[arg(long, value_name = "EXPIRES", default_value = "PT10M")]
    expires: String,
    /// Only events with this topic (lather's topic dialect); repeatable.
    #[arg(long, value_name = "TOPIC", conflicts_with = "filter_action")]
    filter_topic: Vec<String>,
    /// Only notifications with this wsa:Action (DPWS action dialect, e.g. SDC); repeatable.
    #[arg(long, value_name = "ACTION")]
    filter_action: Vec<String>,
    /// Unsubscribe after this many notifications.
    #[arg(long, value_name = "N")]
    count: Option<u64>,
    /// Unsubscribe after this many seconds.
    #[arg(long, value_name = "S")]
    timeout_s: Option<f64>,
    /// Print each notification as a JSON object (action, body, reference_parameters).
    #[arg(long)]
    json: bool,
    /// Ask for the Wrap format (2011 only): each event inside wse:Notify, printed
    /// unwrapped with the action it names.
    #[arg(long)]
    wrap: bool,
    /// Ask for gzip-compressed notifications (lather's lev:Compression extension).
    #[arg(long)]
    gzip: bool,
}

/// Runs `lather subscribe`.
pub(crate) fn run(args: &SubscribeArgs) -> anyhow::Result<()> {
    if args.wrap && matches!(args.version, EventingVersion::V2004) {
        return Err(crate::exit::Refusal::Usage(
            "--wrap needs --version 2011: WS-Eventing 2004/08 has no delivery formats".to_owned(),
        )
        .into());
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    runtime.block_on(subscribe(args))
}

fn options(args: &SubscribeArgs, sink: &Sink) -> SubscribeOptions {
    let version = match args.version {
        EventingVersion::V2004 => Version::Submission04Wsa10,
        EventingVersion::V2011 => Version::Rec2011,
    };
    let mut options = SubscribeOptions::new(version, sink.notify_url());
    options.soap = match args.soap {
        Soap::V11 => SoapVersion::V11,
        Soap::V12 => SoapVersion::V12,
    };
    options.end_to = Some(Endpoint {
        address: sink.end_url(),
        params: Vec::new(),
    });
    options.expires = Some(args.expires.clone());
    options.wrap = args.wrap;
    options.gzip = args.gzip;
    options.filter = if !args.filter_topic.is_empty() {
        Some(Filter::topics(args.filter_topic.iter().cloned()))
    } else if !args.filter_action.is_empty() {
        Some(Filter::actions(args.filter_action.iter().cloned()))
    } else {
        None
    };
    options
}

fn print(notification: &Notification, json: bool) {
    if json {
        let line = serde_json::json!({
            "action": notification.action,
            "body": notification.body,
            "reference_parameters": notification.reference_parameters,
        });
        println!("{line}");
    } else {
        let one_line: String = notification
            .body
            .chars()
            .map(|c| if c == '\n' || c == '\r' { ' ' } else { c })
            .collect();
        println!("{one_line}");
    }
}

/// Why the receive loop stopped.
enum Stop {
    Count,
    Interrupted,
    Timeout,
    Ended(String),
    SinkClosed,
}

async fn subscribe(args: &SubscribeArgs) -> anyhow::Result<()> {
    let mut sink = Sink::bind(args.listen).await?;
    let client = EventingClient::default();
    let subscription = client
        .subscribe(&args.source, &options(args, &sink))
        .await
        .with_context(|| format!("subscribing at {}", args.source))?;
    eprintln!(
        "subscribed at {} (manager {}, expires {}); notifications to {}",
        args.source,
        subscription.manager.address,
        subscription
            .expires
            .as_deref()
            .unwrap_or("as the source decides"),
        sink.notify_url()
    );
    let deadline = args
        .timeout_s
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(|s| tokio::time::Instant::now() + Duration::from_secs_f64(s));
    let mut received = 0u64;
    let stop = loop {
        if args.count.is_some_and(|n| received >= n) {
            break Stop::Count;
        }
        let timeout = async {
            match deadline {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            message = sink.next() => match message {
                Some(SinkMessage::Notification(n)) => {
                    print(&n, args.json);
                    received += 1;
                }
                Some(SinkMessage::End(end)) => {
                    break Stop::Ended(format!("{} {}", end.status, end.reason));
                }
                None => break Stop::SinkClosed,
            },
            _ = tokio::signal::ctrl_c() => break Stop::Interrupted,
            () = timeout => break Stop::Timeout,
        }
    };
    if let Stop::Ended(why) = &stop {
        bail!("the source ended the subscription after {received} notification(s): {why}");
    }
    client
        .unsubscribe(&subscription)
        .await
        .with_context(|| format!("unsubscribing at {}", subscription.manager.address))?;
    eprintln!("unsubscribed after {received} notification(s)");
    match stop {
        Stop::SinkClosed => bail!("the notification sink stopped"),
        Stop::Timeout if args.count.is_some_and(|n| received < n) => bail!(
            "received {received} of {} notifications before the timeout",
            args.count.unwrap_or(0)
        ),
        _ => Ok(()),
    }
}
