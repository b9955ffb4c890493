//! An event publisher: an event source served from a configuration, a subscriber, and
//! events published to it.
//!
//! The program serves a WS-Eventing event source (`builtin = "event-source"`), subscribes a
//! notification sink on loopback with lather's eventing client (WS-Eventing 2011, filtered
//! to the `prices` topic), publishes events to `{path}/publish` with lather's SOAP client —
//! some on the `prices` topic, some not — and prints the notifications the sink receives.
//!
//! ```text
//! cargo run -p lather-examples --bin event-publisher
//! ```

use lather_client::{Call, Client};
use lather_envelope::SoapVersion;
use lather_eventing::Version;
use lather_eventing::client::{EventingClient, Filter, Sink, SinkMessage, SubscribeOptions};
use lather_http::Server;
use std::time::Duration;

const CONFIG: &str = r#"
[server]
listen = "127.0.0.1:0"

[[service]]
name = "events"
path = "/events"
builtin = "event-source"
# The sink of this example listens on loopback; sinks elsewhere need no allowance.
notify_allow = ["127.0.0.1"]
"#;

/// How many events go out on the `prices` topic (and as many on another topic).
const EVENTS: usize = 3;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let config = lather_config::Config::from_toml(CONFIG, "events.toml")?;
    let server = Server::from_config(&config).await?;
    let source = format!("http://{}/events", server.local_addr());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(server.serve(async {
        let _ = stopped.await;
    }));

    let mut sink = Sink::bind("127.0.0.1:0".parse()?).await?;
    let mut options = SubscribeOptions::new(Version::Rec2011, sink.notify_url());
    options.filter = Some(Filter::topics(["prices"]));
    let eventing = EventingClient::new(Duration::from_secs(5));
    let subscription = eventing.subscribe(&source, &options).await?;
    println!("subscribed; manager at {}", subscription.manager.address);

    let client = Client::new();
    let publish = format!("{source}/publish");
    for i in 0..EVENTS {
        for topic in ["prices", "weather"] {
            let topic_header = format!(
                r#"<lev:Topic xmlns:lev="{}">{topic}</lev:Topic>"#,
                lather_eventing::LATHER_EVENTING_NS
            );
            let event = Call::new(format!(
                r#"<p:tick xmlns:p="urn:example:prices"><p:seq>{i}</p:seq><p:topic>{topic}</p:topic></p:tick>"#
            ))
            .version(SoapVersion::V12)
            .action("urn:example:prices/tick")
            .header(topic_header.into_bytes());
            client.call(&publish, &event).await?;
        }
    }

    let mut received = 0;
    while received < EVENTS {
        let message = tokio::time::timeout(Duration::from_secs(10), sink.next())
            .await
            .map_err(|_| format!("only {received} of {EVENTS} notifications arrived"))?;
        match message {
            Some(SinkMessage::Notification(n)) => {
                received += 1;
                println!("notification {received}: {}", n.body);
            }
            Some(SinkMessage::End(end)) => return Err(format!("ended: {}", end.reason).into()),
            None => return Err("the sink stopped".into()),
        }
    }
    // Nothing on the other topic reaches this subscriber.
    if let Ok(Some(extra)) = tokio::time::timeout(Duration::from_millis(300), sink.next()).await {
        return Err(format!("a filtered-out event arrived: {extra:?}").into());
    }
    eventing.unsubscribe(&subscription).await?;
    println!("received {received} notifications on the prices topic");

    let _ = stop.send(());
    serving.await??;
    Ok(())
}
