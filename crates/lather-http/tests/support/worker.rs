//! An in-process `lather worker` for remote-stage tests: it hosts handlers of a
//! configuration on its own NATS connection until stopped.

use lather_config::Config;
use lather_envelope::Limits;
use lather_remote::Link;
use lather_remote::worker::Hosted;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A worker running in this process.
pub struct InProcessWorker {
    stop: oneshot::Sender<()>,
    task: JoinHandle<Result<(), lather_remote::LinkError>>,
}

impl InProcessWorker {
    /// Hosts the handler `name` of `config` (its `[nats]` link connected first).
    pub async fn start(config: &Config, name: &str) -> InProcessWorker {
        let link = Link::new(config.nats.as_ref().expect("[nats]"));
        link.connect().await.unwrap();
        let (handler, options) =
            lather_compose::build_handler(name, &config.handlers[name], config).unwrap();
        let hosted = vec![Hosted {
            name: name.into(),
            handler,
            options,
        }];
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let shutdown = async {
                let _ = stopped.await;
            };
            lather_remote::worker::serve(&link, hosted, Limits::default(), shutdown).await
        });
        InProcessWorker { stop, task }
    }

    /// Stops it and waits until it has drained.
    pub async fn stop(self) {
        let _ = self.stop.send(());
        self.task.await.unwrap().unwrap();
    }
}
