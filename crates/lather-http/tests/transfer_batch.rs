//! Transfer batching towards the upstream: requests arriving together reach a lather
//! upstream as few `lb:Batch` requests (the size and time cut-offs), each client getting
//! its own answer; an upstream that does not speak the batch format gets them alone.

use crate::support;

use lather_envelope::SoapVersion;
use std::net::SocketAddr;
use support::*;

fn payload(text: &str) -> String {
    envelope(
        SoapVersion::V12,
        "",
        &format!(r#"<ns:echo xmlns:ns="urn:lather:echo"><text>{text}</text></ns:echo>"#),
    )
}

async fn burst(addr: SocketAddr, n: usize) {
    let calls: Vec<_> = (0..n)
        .map(|i| {
            tokio::spawn(async move {
                let text = format!("call-{i}");
                let answer = post(addr, "/g", SoapVersion::V12, payload(&text)).await;
                (text, answer)
            })
        })
        .collect();
    for call in calls {
        let (text, answer) = call.await.unwrap();
        assert_eq!(answer.status, 200, "{}", answer.text());
        assert!(
            answer.text().contains(&format!("<text>{text}</text>")),
            "{text} got {}",
            answer.text()
        );
    }
}

async fn upstream_requests(upstream: &TestServer) -> f64 {
    let metrics = get(upstream.addr, "/metrics").await;
    metric(
        metrics.text(),
        r#"lather_requests_total{service="echo",code="200"}"#,
    )
    .unwrap_or(0.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_arriving_together_reach_the_upstream_as_few_batches() {
    let upstream = TestServer::echo().await;
    let server = TestServer::start(&format!(
        "[[service]]\nname = \"g\"\npath = \"/g\"\nupstream = [\"http://{}/echo\"]\n\
         batch_upstream = true\nbatch_max_items = 5\nbatch_wait_ms = 50\n",
        upstream.addr
    ))
    .await;
    burst(server.addr, 20).await;
    let requests = upstream_requests(&upstream).await;
    assert!(
        (4.0..=10.0).contains(&requests),
        "20 calls reached the upstream as {requests} requests"
    );
    // One call alone is sent at the time cut-off.
    burst(server.addr, 1).await;
    assert_eq!(upstream_requests(&upstream).await, requests + 1.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_without_the_batch_format_gets_each_request_alone() {
    // A backend answering every request with the same envelope: no batch answer.
    let fixed = fixed_backend(
        200,
        "application/soap+xml; charset=utf-8",
        r#"<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope"><s:Body><ns:echo xmlns:ns="urn:lather:echo"><text>fixed</text></ns:echo></s:Body></s:Envelope>"#,
        0,
    )
    .await;
    let server = TestServer::start(&format!(
        "[[service]]\nname = \"g\"\npath = \"/g\"\nupstream = [\"http://{fixed}/ws\"]\n\
         batch_upstream = true\nbatch_max_items = 4\nbatch_wait_ms = 20\n"
    ))
    .await;
    for _ in 0..2 {
        let calls: Vec<_> = (0..6)
            .map(|i| {
                let addr = server.addr;
                tokio::spawn(async move {
                    post(addr, "/g", SoapVersion::V12, payload(&i.to_string())).await
                })
            })
            .collect();
        for call in calls {
            let answer = call.await.unwrap();
            assert_eq!(answer.status, 200, "{}", answer.text());
            assert!(
                answer.text().contains("<text>fixed</text>"),
                "{}",
                answer.text()
            );
        }
    }
}
