//! The embeddable server: services written in Rust and served with `Server::builder()`,
//! application faults, handler stages given in code, message-context properties, an
//! injected CPU pool, and a configuration served beside code-built services.

use crate::support;

use bytes::Bytes;
use http::StatusCode;
use lather_envelope::{EnvelopeBuilder, Fault, FaultCode, FaultKind, QName, SoapVersion};
use lather_http::{Mount, ServeError, Server};
use lather_pipeline::{
    Access, CpuPool, Handler, HandlerFuture, Message, Options, Patch, Plan, Reply, ServiceFuture,
    ServiceRequest, SoapService, Step, Verdict, Work, service_fn,
};
use std::net::SocketAddr;
use std::sync::Arc;
use support::*;

const BANK: &str = "urn:example:bank";

/// A service with one operation and a fault of its own.
struct Bank;

impl SoapService for Bank {
    fn call<'a>(&'a self, request: ServiceRequest<'a>) -> ServiceFuture<'a> {
        Box::pin(async move {
            let version = request.envelope.version();
            let body = String::from_utf8_lossy(&request.envelope.body()).into_owned();
            if body.contains("-") {
                return Err(Fault::application(
                    FaultCode::Sender,
                    [
                        QName::new(BANK, "Refused"),
                        QName::new(BANK, "NegativeAmount"),
                    ],
                    "an amount must not be negative",
                )
                .with_detail(format!(
                    r#"<b:amount xmlns:b="{BANK}">{}</b:amount>"#,
                    body.len()
                )));
            }
            let answer = format!(r#"<b:deposited xmlns:b="{BANK}"/>"#);
            let bytes = EnvelopeBuilder::new(version)
                .body(Bytes::from(answer))
                .build();
            Ok(Reply::Written(version, bytes))
        })
    }

    fn operations(&self) -> Vec<QName> {
        vec![QName::new(BANK, "deposit")]
    }
}

async fn serve(server: Server) -> (SocketAddr, tokio::sync::oneshot::Sender<()>) {
    let addr = server.local_addr();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(server.serve(async {
        let _ = stopped.await;
    }));
    (addr, stop)
}

fn local() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

#[tokio::test]
async fn a_rust_service_answers_and_raises_its_own_faults() {
    let server = Server::builder()
        .listen(local())
        .service("/bank", Bank)
        .bind()
        .await
        .unwrap();
    let (addr, _stop) = serve(server).await;
    let deposit = |amount: &str| format!(r#"<b:deposit xmlns:b="{BANK}">{amount}</b:deposit>"#);

    let ok = post(
        addr,
        "/bank",
        SoapVersion::V12,
        envelope(SoapVersion::V12, "", &deposit("5")),
    )
    .await;
    assert_eq!(ok.status, StatusCode::OK, "{}", ok.text());
    assert_eq!(
        ok.envelope().operation(),
        Some(&QName::new(BANK, "deposited"))
    );

    let refused = post(
        addr,
        "/bank",
        SoapVersion::V12,
        envelope(SoapVersion::V12, "", &deposit("-5")),
    )
    .await;
    assert_eq!(
        refused.status,
        StatusCode::BAD_REQUEST,
        "{}",
        refused.text()
    );
    let text = refused.text();
    assert!(text.contains("<env:Value>env:Sender</env:Value>"), "{text}");
    assert!(
        text.contains(&format!(
            r#"<env:Value xmlns:a1="{BANK}">a1:NegativeAmount</env:Value>"#
        )),
        "{text}"
    );
    assert!(text.contains("<b:amount"), "{text}");
    assert!(
        !text.contains("lf:fault"),
        "no lather catalogue entry: {text}"
    );

    let v11 = post(
        addr,
        "/bank",
        SoapVersion::V11,
        envelope(SoapVersion::V11, "", &deposit("-1")),
    )
    .await;
    assert_eq!(v11.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert!(
        v11.text().contains(&format!(
            r#"<faultcode xmlns:a0="{BANK}">a0:NegativeAmount</faultcode>"#
        )),
        "{}",
        v11.text()
    );

    let other = format!(r#"<b:withdraw xmlns:b="{BANK}">1</b:withdraw>"#);
    let unknown = post(
        addr,
        "/bank",
        SoapVersion::V12,
        envelope(SoapVersion::V12, "", &other),
    )
    .await;
    unknown.assert_fault(FaultKind::UnknownOperation, SoapVersion::V12);
    assert!(unknown.text().contains("withdraw"), "{}", unknown.text());

    // No WSDL of its own: the default answer.
    let wsdl = get(addr, "/bank?wsdl").await;
    assert_eq!(wsdl.status, StatusCode::METHOD_NOT_ALLOWED);
}

/// The tenant a request belongs to: a property of the message's context.
#[derive(Debug, Clone, PartialEq)]
struct Tenant(String);

/// Reads `<t:Tenant>` and sets the [`Tenant`] property; records the thread it ran on.
struct TenantFromHeader {
    threads: Arc<std::sync::Mutex<Vec<String>>>,
}

impl Handler for TenantFromHeader {
    fn access(&self) -> Access {
        Access {
            reads: lather_pipeline::Parts::none().header(QName::new("urn:t", "Tenant")),
            writes: lather_pipeline::Parts::none(),
        }
    }

    fn call<'a>(&'a self, message: &'a Message) -> HandlerFuture<'a> {
        Box::pin(async move {
            let thread = std::thread::current().name().unwrap_or("").to_owned();
            self.threads.lock().unwrap().push(thread);
            let envelope = message.envelope();
            let tenant = envelope
                .header(&QName::new("urn:t", "Tenant"))
                .and_then(|b| envelope.header_text(b));
            match tenant {
                Some(t) => Verdict::Continue(Patch::new().set_property(Tenant(t))),
                None => Verdict::proceed(),
            }
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handler_stages_in_code_set_properties_the_service_reads_on_the_injected_pool() {
    let threads = Arc::new(std::sync::Mutex::new(Vec::new()));
    let handler = TenantFromHeader {
        threads: threads.clone(),
    };
    let options = Options {
        work: Work::Cpu,
        ..Options::default()
    };
    let plan = Plan::new(vec![vec![Arc::new(Step::new(
        "tenant",
        Arc::new(handler),
        options,
    ))]])
    .unwrap();
    let service = service_fn(
        |envelope: lather_envelope::Envelope, context: lather_pipeline::Context| async move {
            let tenant = context
                .properties
                .get::<Tenant>()
                .map_or("none".to_owned(), |t| t.0.clone());
            let body = format!(r#"<t:for xmlns:t="urn:t">{tenant}</t:for>"#);
            let version = envelope.version();
            Ok(Reply::Written(
                version,
                EnvelopeBuilder::new(version)
                    .body(Bytes::from(body))
                    .build(),
            ))
        },
    );
    let pool_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("injected-pool")
        .enable_time()
        .build()
        .unwrap();
    let server = Server::builder()
        .listen(local())
        .cpu_pool(
            CpuPool::from_handle(pool_runtime.handle().clone())
                .inline_below(std::time::Duration::ZERO),
        )
        .mount(Mount::new("/t", service).name("tenants").request(plan))
        .bind()
        .await
        .unwrap();
    let (addr, _stop) = serve(server).await;
    let header = r#"<t:Tenant xmlns:t="urn:t">acme</t:Tenant>"#;
    let answer = post(
        addr,
        "/t",
        SoapVersion::V11,
        envelope(SoapVersion::V11, header, "<x/>"),
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    assert!(answer.text().contains(">acme</t:for>"), "{}", answer.text());
    let answer = post(
        addr,
        "/t",
        SoapVersion::V11,
        envelope(SoapVersion::V11, "", "<x/>"),
    )
    .await;
    assert!(answer.text().contains(">none</t:for>"), "{}", answer.text());
    assert_eq!(
        threads.lock().unwrap().as_slice(),
        ["injected-pool", "injected-pool"],
        "the CPU-bound handler ran on the injected pool"
    );
    pool_runtime.shutdown_background();
}

#[tokio::test]
async fn a_configuration_and_code_built_services_are_served_together() {
    let text = "[server]\nlisten = \"127.0.0.1:0\"\n[[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\n";
    let config = lather_config::Config::from_toml(text, "t.toml").unwrap();
    let server = Server::builder()
        .config(&config)
        .service("/bank", Bank)
        .bind()
        .await
        .unwrap();
    let (addr, _stop) = serve(server).await;
    let echo = post(
        addr,
        "/echo",
        SoapVersion::V11,
        envelope(SoapVersion::V11, "", ECHO_PAYLOAD),
    )
    .await;
    assert_eq!(echo.status, StatusCode::OK);
    let bank = format!(r#"<b:deposit xmlns:b="{BANK}">1</b:deposit>"#);
    let bank = post(
        addr,
        "/bank",
        SoapVersion::V11,
        envelope(SoapVersion::V11, "", &bank),
    )
    .await;
    assert_eq!(bank.status, StatusCode::OK, "{}", bank.text());
    let metrics = get(addr, "/metrics").await;
    assert!(
        metrics.text().contains("service=\"bank\""),
        "named after its path"
    );

    let clash = Server::builder()
        .config(&config)
        .service("/echo", Bank)
        .bind()
        .await
        .unwrap_err();
    assert!(
        matches!(clash, ServeError::DuplicatePath { ref path, .. } if path == "/echo"),
        "{clash}"
    );
    assert!(clash.is_config());
}

#[tokio::test]
async fn a_bad_configuration_is_a_typed_error_naming_its_line() {
    let text = "[server]\nlisten = \"127.0.0.1:0\"\n[[service]]\nname = \"e\"\npath = \"/e\"\nbuiltin = \"echo\"\nrequest = [[\"h\"]]\n[handlers.h]\nkind = \"no-such-kind\"\n";
    let config = lather_config::Config::from_toml(text, "bad.toml").unwrap();
    let error = Server::from_config(&config).await.unwrap_err();
    let ServeError::Config(inner) = &error else {
        panic!("a configuration error, not {error:?}");
    };
    assert_eq!(inner.line(), Some(9), "{error}");
    assert!(error.to_string().starts_with("bad.toml:9:"), "{error}");
    let taken = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let error = Server::builder()
        .listen(taken.local_addr().unwrap())
        .bind()
        .await
        .unwrap_err();
    assert!(matches!(error, ServeError::Listen { .. }), "{error}");
    assert!(!error.is_config());
}
