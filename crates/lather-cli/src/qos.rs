//! `lather qos`: ask a QoS broker (`builtin = "qos-broker"`) for the best offer that meets
//! a client's requirements, or list the offers it holds.

use anyhow::Context;
use clap::{Args, Subcommand, ValueEnum};
use lather_config::CompressionPreference;
use lather_qos::Offer;
use lather_qos::broker::{BrokerClient, Selection};
use std::time::Duration;

/// `lather qos …`.
#[derive(Debug, Subcommand)]
pub(crate) enum QosCommand {
    /// Print the best offer for the requirements (the cheapest that fits, then the
    /// fastest); fails naming what each candidate lacked when none fits.
    Select(SelectArgs),
    /// Print the offers the broker holds.
    List(ListArgs),
}

/// A compression requirement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Compression {
    /// Answers never compressed.
    None,
    /// Answers always compressed.
    Required,
    /// Answers compressed while the server has CPU to spare.
    ServerDecides,
}

/// Where the broker is.
#[derive(Debug, Args)]
pub(crate) struct BrokerArgs {
    /// The broker's URL, e.g. http://127.0.0.1:8080/qos.
    #[arg(long, value_name = "URL")]
    broker: String,
    /// How long to wait for the broker's answer, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 5000)]
    timeout_ms: u64,
}

/// `lather qos select` arguments.
#[derive(Debug, Args)]
pub(crate) struct SelectArgs {
    #[command(flatten)]
    broker: BrokerArgs,
    /// The service wanted.
    #[arg(long)]
    service: String,
    /// The slowest response time acceptable.
    #[arg(long, value_name = "MS")]
    max_response_time_ms: Option<u64>,
    /// The least request rate needed, per second.
    #[arg(long, value_name = "PER_S")]
    min_throughput: Option<f64>,
    /// The most paid per request.
    #[arg(long, value_name = "PRICE")]
    max_price: Option<f64>,
    /// The compression wanted.
    #[arg(long, value_enum)]
    compression: Option<Compression>,
    /// The traffic class wanted.
    #[arg(long)]
    class: Option<String>,
}

/// `lather qos list` arguments.
#[derive(Debug, Args)]
pub(crate) struct ListArgs {
    #[command(flatten)]
    broker: BrokerArgs,
    /// Only this service's offers.
    #[arg(long)]
    service: Option<String>,
}

/// Runs `lather qos …`.
pub(crate) fn run(command: &QosCommand) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    runtime.block_on(async {
        match command {
            QosCommand::Select(args) => {
                let client = client(&args.broker)?;
                let want = Selection {
                    service: args.service.clone(),
                    max_response_time_ms: args.max_response_time_ms,
                    min_throughput: args.min_throughput,
                    max_price: args.max_price,
                    compression: args.compression.map(|c| match c {
                        Compression::None => CompressionPreference::None,
                        Compression::Required => CompressionPreference::Required,
                        Compression::ServerDecides => CompressionPreference::ServerDecides,
                    }),
                    class: args.class.clone(),
                };
                let offer = client
                    .select(&want)
                    .await
                    .with_context(|| format!("no offer from {}", args.broker.broker))?;
                println!("{}", line(&offer));
            }
            QosCommand::List(args) => {
                let client = client(&args.broker)?;
                let offers = client
                    .list(args.service.as_deref())
                    .await
                    .with_context(|| format!("listing the offers of {}", args.broker.broker))?;
                for offer in &offers {
                    println!("{}", line(offer));
                }
            }
        }
        Ok(())
    })
}

fn client(args: &BrokerArgs) -> anyhow::Result<BrokerClient> {
    BrokerClient::new(args.broker.clone(), Duration::from_millis(args.timeout_ms))
        .with_context(|| format!("the broker URL {}", args.broker))
}

/// One offer on one line: service, offer, endpoint, then its figures.
fn line(offer: &Offer) -> String {
    let mut out = format!(
        "{} {} {} response_time_ms={} throughput={} price={}",
        offer.service,
        offer.name,
        offer.endpoint,
        offer.response_time_ms,
        offer.throughput,
        offer.price
    );
    if let Some(c) = offer.compression {
        out.push_str(&format!(" compression={}", c.as_str()));
    }
    if let Some(c) = &offer.class {
        out.push_str(&format!(" class={c}"));
    }
    if let Some(a) = &offer.adapts_to {
        out.push_str(&format!(" adapts_to={a}"));
    }
    out
}
