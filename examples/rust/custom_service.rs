//! A SOAP service written in Rust, served with `Server::builder()`.
//!
//! `Calculator` serves one operation, `c:add`, answers `c:addResponse`, describes itself in
//! WSDL and raises its own fault (`c:Overflow`, with the operands in the detail) without an
//! entry in lather's fault catalogue. The program serves it, calls it with lather's client in
//! both SOAP versions and prints what came back.
//!
//! ```text
//! cargo run -p lather-examples --bin custom-service
//! ```

use lather_client::{Call, Client, ClientError};
use lather_envelope::{Element, EnvelopeBuilder, Fault, FaultCode, Limits, QName, SoapVersion};
use lather_http::Server;
use lather_pipeline::{Reply, ServiceFuture, ServiceRequest, SoapService};

const CALC_NS: &str = "urn:example:calculator";

/// Adds two 32-bit integers; an overflow is the service's own fault.
struct Calculator;

impl Calculator {
    fn add(request: &ServiceRequest<'_>) -> Result<Reply, Fault> {
        let body = request.envelope.body();
        let element = Element::parse(body.trim_ascii(), &Limits::default())?;
        let operand = |name: &str| -> Result<i32, Fault> {
            let text = element
                .child(&QName::new(CALC_NS, name))
                .map(|e| e.text())
                .unwrap_or_default();
            text.trim().parse().map_err(|_| {
                Fault::application(
                    FaultCode::Sender,
                    [QName::new(CALC_NS, "BadOperand")],
                    format!("c:{name} must be a 32-bit integer, not {text:?}"),
                )
            })
        };
        let (a, b) = (operand("a")?, operand("b")?);
        let Some(sum) = a.checked_add(b) else {
            return Err(Fault::application(
                FaultCode::Sender,
                [QName::new(CALC_NS, "Overflow")],
                "the sum does not fit in 32 bits",
            )
            .with_detail(format!(
                r#"<c:operands xmlns:c="{CALC_NS}"><c:a>{a}</c:a><c:b>{b}</c:b></c:operands>"#
            )));
        };
        let version = request.envelope.version();
        let answer = format!(r#"<c:addResponse xmlns:c="{CALC_NS}">{sum}</c:addResponse>"#);
        let bytes = EnvelopeBuilder::new(version)
            .body(lather_envelope::Bytes::from(answer))
            .build();
        Ok(Reply::Written(version, bytes))
    }
}

impl SoapService for Calculator {
    fn call<'a>(&'a self, request: ServiceRequest<'a>) -> ServiceFuture<'a> {
        Box::pin(async move { Calculator::add(&request) })
    }

    fn wsdl<'a>(&'a self, location: &'a str) -> ServiceFuture<'a> {
        let document = format!(
            r#"<?xml version="1.0" encoding="UTF-8"?>
<wsdl:definitions name="Calculator" targetNamespace="{CALC_NS}" xmlns:wsdl="http://schemas.xmlsoap.org/wsdl/" xmlns:soap12="http://schemas.xmlsoap.org/wsdl/soap12/">
  <wsdl:service name="CalculatorService"><wsdl:port name="CalculatorPort" binding="c:CalculatorSoap12" xmlns:c="{CALC_NS}"><soap12:address location="{}"/></wsdl:port></wsdl:service>
</wsdl:definitions>
"#,
            lather_envelope::escape::escape_attribute(location)
        );
        Box::pin(async move { Ok(Reply::document("text/xml; charset=utf-8", document)) })
    }

    fn operations(&self) -> Vec<QName> {
        vec![QName::new(CALC_NS, "add")]
    }
}

fn add(a: &str, b: &str, version: SoapVersion) -> Call {
    Call::new(format!(
        r#"<c:add xmlns:c="{CALC_NS}"><c:a>{a}</c:a><c:b>{b}</c:b></c:add>"#
    ))
    .version(version)
    .action(format!("{CALC_NS}#add"))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = Server::builder()
        .listen("127.0.0.1:0".parse()?)
        .service("/calculator", Calculator)
        .bind()
        .await?;
    let url = format!("http://{}/calculator", server.local_addr());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(server.serve(async {
        let _ = stopped.await;
    }));

    let client = Client::new();
    for version in [SoapVersion::V11, SoapVersion::V12] {
        let answer = client.call(&url, &add("40", "2", version)).await?;
        let sum = String::from_utf8_lossy(&answer.body()).into_owned();
        println!("{version}: 40 + 2 -> {sum}");
    }
    match client
        .call(&url, &add("2147483647", "1", SoapVersion::V12))
        .await
    {
        Err(ClientError::Fault { fault, .. }) => {
            let last = fault.subcodes().last().map(|q| q.local().to_owned());
            println!(
                "overflow fault: code {} subcode {} reason {:?}",
                fault.code().local(),
                last.unwrap_or_default(),
                fault.reason()
            );
        }
        other => return Err(format!("expected the Overflow fault, got {other:?}").into()),
    }
    let other = Call::new(format!(r#"<c:divide xmlns:c="{CALC_NS}"/>"#)).version(SoapVersion::V12);
    if let Err(ClientError::Fault { fault, .. }) = client.call(&url, &other).await {
        let last = fault.subcodes().last().map(|q| q.local().to_owned());
        println!("unknown operation fault: {}", last.unwrap_or_default());
    }

    let _ = stop.send(());
    serving.await??;
    Ok(())
}
