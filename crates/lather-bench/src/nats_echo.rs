//! A bare NATS responder in a process of its own (`lather-bench nats-echo`): it answers
//! every request on one subject (in a queue group, as workers subscribe) with the request's
//! payload, on a single-thread runtime, and nothing else. `lather-bench remote-call` starts
//! it to measure the floor under a remote call — NATS's request/reply between two
//! processes — with nothing of lather's in it — and answers the same way in its own
//! process (`echo_each`).

use crate::BenchError;
use futures_util::StreamExt as _;

/// Arguments of `lather-bench nats-echo`.
#[derive(Debug, Clone, clap::Args)]
pub struct NatsEchoArgs {
    /// The NATS server, `nats://HOST:PORT`
    #[arg(long, value_name = "URL")]
    pub nats: String,
    /// The subject to answer requests on
    #[arg(long)]
    pub subject: String,
}

/// Answers requests on `args.subject` until the connection ends or the process is stopped.
pub fn run(args: &NatsEchoArgs) -> Result<(), BenchError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| BenchError::Experiment(format!("cannot start a runtime: {e}")))?;
    runtime.block_on(async {
        let client = async_nats::connect(&args.nats)
            .await
            .map_err(|e| BenchError::Experiment(format!("NATS at {}: {e}", args.nats)))?;
        // In a queue group, as lather's workers take their requests.
        let group = format!("{}.group", args.subject);
        let requests = subscribe(&client, &args.subject, Some(group)).await?;
        echo_each(&client, requests).await
    })
}

/// Subscribes `client` to `subject` (in queue group `group`, if any) and waits until the
/// server has the subscription.
pub(crate) async fn subscribe(
    client: &async_nats::Client,
    subject: &str,
    group: Option<String>,
) -> Result<async_nats::Subscriber, BenchError> {
    let subscribing = match group {
        Some(group) => client.queue_subscribe(subject.to_owned(), group).await,
        None => client.subscribe(subject.to_owned()).await,
    };
    let requests =
        subscribing.map_err(|e| BenchError::Experiment(format!("cannot subscribe: {e}")))?;
    client
        .flush()
        .await
        .map_err(|e| BenchError::Experiment(format!("cannot subscribe: {e}")))?;
    Ok(requests)
}

/// Answers every request of `requests` with its own payload, until the subscription ends.
pub(crate) async fn echo_each(
    client: &async_nats::Client,
    mut requests: async_nats::Subscriber,
) -> Result<(), BenchError> {
    while let Some(request) = requests.next().await {
        if let Some(reply) = request.reply {
            client
                .publish(reply, request.payload)
                .await
                .map_err(|e| BenchError::Experiment(format!("cannot answer: {e}")))?;
        }
    }
    Ok(())
}
