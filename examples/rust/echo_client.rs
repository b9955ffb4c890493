//! lather's client calling lather's echo.
//!
//! With a URL argument it calls that echo service (e.g. one started with
//! `lather serve --config examples/quickstart.toml`); without one it serves the built-in
//! echo itself on a free loopback port first. It sends the same payload in SOAP 1.1 and 1.2
//! with WS-Addressing and checks that each answer relates to its request.
//!
//! ```text
//! cargo run -p lather-examples --bin echo-client [-- http://127.0.0.1:8080/echo]
//! ```

use lather_client::{Call, Client, Wsa};
use lather_envelope::SoapVersion;
use lather_http::{Echo, Server};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut serving = None;
    let url = match std::env::args().nth(1) {
        Some(url) => url,
        None => {
            let server = Server::builder()
                .listen("127.0.0.1:0".parse()?)
                .service("/echo", Echo)
                .bind()
                .await?;
            let url = format!("http://{}/echo", server.local_addr());
            let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
            let task = tokio::spawn(server.serve(async {
                let _ = stopped.await;
            }));
            serving = Some((stop, task));
            url
        }
    };

    let client = Client::builder()
        .request_timeout(std::time::Duration::from_secs(5))
        .build()?;
    for (version, wsa) in [
        (SoapVersion::V11, Wsa::Submission04),
        (SoapVersion::V12, Wsa::V10),
    ] {
        let call = Call::new(r#"<e:echo xmlns:e="urn:lather:echo"><text>hello</text></e:echo>"#)
            .version(version)
            .action("urn:lather:echo#echo")
            .addressing(wsa);
        let answer = client.call(&url, &call).await?;
        let related = wsa.relates_to(&answer);
        if related.as_deref() != call.message_id() {
            return Err(format!("{version}: the answer relates to {related:?}").into());
        }
        println!(
            "{version}: {} (relates to {})",
            String::from_utf8_lossy(&answer.body()),
            related.unwrap_or_default()
        );
    }

    if let Some((stop, task)) = serving {
        let _ = stop.send(());
        task.await??;
    }
    Ok(())
}
