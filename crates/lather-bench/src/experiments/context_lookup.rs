//! What `context-expand` costs a message once its context is cached: the fixture of the
//! paper's Figure 5 (bench/context/wsa-echo.xml) compacted — its WS-Addressing blocks in a
//! context of an in-process context store, a reference header in their place — then the
//! expander called on it: once cold (a `GetContext` round trip over loopback), then many
//! times warm. Beside it, the same call on the message without a reference (nothing to
//! expand), so the lookup's own cost is the difference.

use crate::BenchError;
use lather_context::StoreClient;
use lather_context::compaction::{ExpandHandler, Reference, default_headers};
use lather_envelope::{Bytes, Envelope, Limits};
use lather_pipeline::{Context, Handler, Message};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Arguments of `lather-bench context-lookup`.
#[derive(Debug, Clone, clap::Args)]
pub struct ContextLookupArgs {
    /// The message whose WS-Addressing blocks are compacted
    #[arg(long, default_value = "bench/context/wsa-echo.xml")]
    pub body: PathBuf,
    /// Warm calls measured
    #[arg(long, default_value_t = 200_000)]
    pub calls: u32,
}

/// Runs the measurement and prints its table.
pub fn run(args: &ContextLookupArgs) -> Result<(), BenchError> {
    let text = std::fs::read_to_string(&args.body).map_err(|source| BenchError::ReadBody {
        path: args.body.clone(),
        source,
    })?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(BenchError::Runtime)?;
    runtime.block_on(measure(&text, args.calls.max(1)))
}

async fn measure(text: &str, calls: u32) -> Result<(), BenchError> {
    let failed =
        |what: &str, e: &dyn std::fmt::Display| BenchError::Experiment(format!("{what}: {e}"));
    // access_log off while measuring: a log line per lookup would cost more than it.
    let config = lather_config::Config::from_toml(
        "[server]\nlisten = \"127.0.0.1:0\"\naccess_log = false\n[[service]]\nname = \"ctx\"\npath = \"/ctx\"\nbuiltin = \"context-store\"\n",
        "context-lookup",
    )
    .map_err(|e| failed("config", &e))?;
    let server = lather_http::Server::bind(&config)
        .await
        .map_err(|e| failed("store", &e))?;
    let url = format!("http://{}/ctx", server.local_addr());
    tokio::spawn(server.serve(std::future::pending()));
    let store = StoreClient::new(&url, Duration::from_secs(5)).map_err(|e| failed("client", &e))?;

    // The fixture's compactable blocks, each on its own, as the compactor stores them.
    let envelope = parse(text)?;
    let names = default_headers();
    let mut contents = String::new();
    let mut kept = String::new();
    for block in envelope.headers() {
        let bytes = envelope.extract_header(block);
        let standalone = String::from_utf8_lossy(&bytes).into_owned();
        if names.contains(block.name()) {
            contents.push_str(&standalone);
        } else {
            kept.push_str(&standalone);
        }
    }
    let context = store
        .create(&contents, Duration::from_secs(3600))
        .await
        .map_err(|e| failed("SetContext", &e))?;
    let reference = Reference {
        uri: context.uri,
        digest: lather_context::contents_digest(contents.as_bytes()),
    };
    let payload = envelope.extract_payload().unwrap_or_default();
    let ns = envelope.version().namespace();
    let compacted = format!(
        "<S:Envelope xmlns:S=\"{ns}\"><S:Header>{kept}{}</S:Header><S:Body>{}</S:Body></S:Envelope>",
        reference.to_block(envelope.version()),
        String::from_utf8_lossy(&payload)
    );
    let plain = format!(
        "<S:Envelope xmlns:S=\"{ns}\"><S:Header>{kept}</S:Header><S:Body>{}</S:Body></S:Envelope>",
        String::from_utf8_lossy(&payload)
    );
    let expander = ExpandHandler::new(store, names, 1024);
    let with_reference = Message::new(parse(&compacted)?, Context::default());
    let without = Message::new(parse(&plain)?, Context::default());

    let started = Instant::now();
    let cold = expander.call(&with_reference).await;
    let cold_us = started.elapsed().as_secs_f64() * 1e6;
    if !matches!(cold, lather_pipeline::Verdict::Continue(_)) {
        return Err(BenchError::Experiment(format!(
            "the cold expansion failed: {cold:?}"
        )));
    }
    let time = |message: &Message| {
        let expander = &expander;
        let message = message.clone();
        async move {
            let started = Instant::now();
            for _ in 0..calls {
                std::hint::black_box(expander.call(&message).await);
            }
            started.elapsed().as_secs_f64() * 1e6 / f64::from(calls)
        }
    };
    let warm_us = time(&with_reference).await;
    let none_us = time(&without).await;
    println!(
        "| context-expand on the Figure 5 fixture ({} bytes) | µs per message |",
        text.len()
    );
    println!("|---|---:|");
    println!("| cold: the context fetched (GetContext over loopback) | {cold_us:.1} |");
    println!("| warm: from the cache ({calls} calls) | {warm_us:.2} |");
    println!("| no reference in the message | {none_us:.2} |");
    println!("| the warm lookup's own cost | {:.2} |", warm_us - none_us);
    Ok(())
}

fn parse(text: &str) -> Result<Envelope, BenchError> {
    Envelope::parse(Bytes::copy_from_slice(text.as_bytes()), &Limits::default())
        .map_err(|f| BenchError::Experiment(format!("the message does not parse: {f}")))
}
