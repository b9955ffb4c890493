//! A bare NATS responder in a process of its own (`lather-bench nats-echo`): it answers
//! every request on one subject (in a queue group, as workers subscribe) with the request's
//! payload, on a single-thread runtime, and nothing else. `lather-bench remote-call` starts it to measure the floor under a remote
//! call — NATS's request/reply between two processes — with nothing of lather's in it.

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
        let mut requests = client
            .queue_subscribe(args.subject.clone(), format!("{}.group", args.subject))
            .await
            .map_err(|e| BenchError::Experiment(format!("cannot subscribe: {e}")))?;
        client
            .flush()
            .await
            .map_err(|e| BenchError::Experiment(format!("cannot subscribe: {e}")))?;
        while let Some(request) = requests.next().await {
            if let Some(reply) = request.reply {
                client
                    .publish(reply, request.payload)
                    .await
                    .map_err(|e| BenchError::Experiment(format!("cannot answer: {e}")))?;
            }
        }
        Ok(())
    })
}
