//! A handler kind written outside lather, used from a TOML configuration.
//!
//! The kind `tenant-tag` reads a `<t:Tenant>` header, refuses requests without one (unless
//! `required = false`), and tags the answer with `<t:ServedBy>` naming `node`. The program
//! registers the kind with the server's builder, serves the configuration below, calls it
//! with lather's client and prints what came back.
//!
//! ```text
//! cargo run -p lather-examples --bin custom-handler-kind
//! ```

use lather_client::{Call, Client};
use lather_envelope::{EnvelopeBuilder, Fault, FaultCode, QName, SoapVersion};
use lather_http::Server;
use lather_pipeline::{
    Access, BuildEnv, Handler, HandlerFuture, HandlerKind, Message, Parts, Patch, SettingsError,
    Verdict, Work,
};
use serde::Deserialize;
use std::sync::Arc;

const TENANT_NS: &str = "urn:example:tenant";

/// The configuration: an echo service whose requests and responses pass `tenant-tag`.
const CONFIG: &str = r#"
[server]
listen = "127.0.0.1:0"

[[service]]
name = "echo"
path = "/echo"
builtin = "echo"
request = [["tenant"]]
response = [["tag"]]

[handlers.tenant]
kind = "tenant-tag"
node = "node-7"

[handlers.tag]
kind = "tenant-tag"
node = "node-7"
required = false
"#;

/// `[handlers.NAME]` keys of `kind = "tenant-tag"`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TenantTagSettings {
    /// Names this node in `<t:ServedBy>`.
    node: String,
    /// Refuse requests without `<t:Tenant>` (default true).
    #[serde(default = "yes")]
    required: bool,
}

fn yes() -> bool {
    true
}

/// The kind: its name, settings, checks and handler.
struct TenantTagKind;

impl HandlerKind for TenantTagKind {
    type Settings = TenantTagSettings;

    fn name(&self) -> &'static str {
        "tenant-tag"
    }

    fn work(&self) -> Work {
        Work::Io
    }

    fn build(
        &self,
        settings: TenantTagSettings,
        _env: &BuildEnv<'_>,
    ) -> Result<Arc<dyn Handler>, SettingsError> {
        if settings.node.trim().is_empty() {
            return Err(SettingsError::key("node", "must name this node"));
        }
        Ok(Arc::new(TenantTag {
            node: settings.node,
            required: settings.required,
        }))
    }
}

/// The handler the kind makes.
struct TenantTag {
    node: String,
    required: bool,
}

impl Handler for TenantTag {
    fn access(&self) -> Access {
        Access {
            reads: Parts::none().header(QName::new(TENANT_NS, "Tenant")),
            writes: Parts::none().header(QName::new(TENANT_NS, "ServedBy")),
        }
    }

    fn call<'a>(&'a self, message: &'a Message) -> HandlerFuture<'a> {
        Box::pin(async move {
            let envelope = message.envelope();
            let tenant = envelope
                .header(&QName::new(TENANT_NS, "Tenant"))
                .and_then(|block| envelope.header_text(block));
            match tenant {
                None if self.required => Verdict::Fault(Fault::application(
                    FaultCode::Sender,
                    [QName::new(TENANT_NS, "NoTenant")],
                    "a t:Tenant header is required",
                )),
                _ => {
                    let block =
                        EnvelopeBuilder::text_element(TENANT_NS, "t", "ServedBy", &self.node);
                    Verdict::Continue(
                        Patch::new().replace_header(QName::new(TENANT_NS, "ServedBy"), block),
                    )
                }
            }
        })
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let config = lather_config::Config::from_toml(CONFIG, "tenant.toml")?;
    let server = Server::builder()
        .config(&config)
        .kind(TenantTagKind)
        .bind()
        .await?;
    let url = format!("http://{}/echo", server.local_addr());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(server.serve(async {
        let _ = stopped.await;
    }));

    let client = Client::new();
    let body = r#"<e:echo xmlns:e="urn:lather:echo">hello</e:echo>"#;
    let tenant = format!(r#"<t:Tenant xmlns:t="{TENANT_NS}">acme</t:Tenant>"#);
    let call = Call::new(body)
        .version(SoapVersion::V12)
        .header(tenant.into_bytes());
    let answer = client.call(&url, &call).await?;
    let served_by = answer
        .header(&QName::new(TENANT_NS, "ServedBy"))
        .and_then(|b| answer.header_text(b))
        .unwrap_or_default();
    println!("served by: {served_by}");

    let untagged = Call::new(body).version(SoapVersion::V12);
    match client.call(&url, &untagged).await {
        Err(lather_client::ClientError::Fault { fault, .. }) => {
            let subcodes: Vec<String> = fault
                .subcodes()
                .iter()
                .map(|q| format!("{{{}}}{}", q.namespace(), q.local()))
                .collect();
            println!("refused: {}", subcodes.join(" "));
        }
        other => return Err(format!("expected a fault, got {other:?}").into()),
    }

    // The kind's own settings are checked like lather's: an unknown key names its line.
    let typo = CONFIG.replace(
        "node = \"node-7\"\nrequired",
        "nodes = \"node-7\"\nrequired",
    );
    let typo = lather_config::Config::from_toml(&typo, "tenant.toml")?;
    match Server::builder()
        .config(&typo)
        .kind(TenantTagKind)
        .bind()
        .await
    {
        Err(e) => println!("configuration error: {e}"),
        Ok(_) => return Err("a misspelt key was accepted".into()),
    }

    let _ = stop.send(());
    serving.await??;
    Ok(())
}
