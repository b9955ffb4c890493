//! The JetStream work-queue stream oneway remote handlers go through: its configuration,
//! created idempotently by whichever side (serving process or worker) comes first.

use crate::Link;
use async_nats::jetstream::{self, stream};
use std::time::Duration;

/// How long JetStream remembers a `Nats-Msg-Id`: a second publish of the same id within
/// this window is acknowledged as a duplicate and not stored again.
pub const DUPLICATE_WINDOW: Duration = Duration::from_secs(120);

/// The `Nats-Msg-Id` of handler `name`'s oneway message `id`: `{id as 32 hex digits}.{name}`
/// (the same id for every publish of one message to one handler, so JetStream stores it once).
pub fn oneway_message_id(id: u128, name: &str) -> String {
    format!("{id:032x}.{name}")
}

/// The stream's configuration for `link`: `{PREFIX}_ONEWAY` over `{prefix}.oneway.>`,
/// work-queue retention (a message is removed once a worker acknowledges it), file
/// storage, bounded by `[nats] oneway_max_bytes` / `oneway_max_messages` with
/// discard-new (a publish to a full stream is refused, never an old message dropped).
pub fn stream_config(link: &Link) -> stream::Config {
    let limits = link.oneway_limits();
    stream::Config {
        name: link.oneway_stream(),
        description: Some("lather oneway remote handler messages".to_owned()),
        subjects: vec![link.oneway_subjects()],
        retention: stream::RetentionPolicy::WorkQueue,
        storage: stream::StorageType::File,
        max_bytes: i64::try_from(limits.max_bytes).unwrap_or(i64::MAX),
        max_messages: i64::try_from(limits.max_messages).unwrap_or(i64::MAX),
        discard: stream::DiscardPolicy::New,
        duplicate_window: DUPLICATE_WINDOW,
        num_replicas: 1,
        ..Default::default()
    }
}

/// Opens the stream through `js`, creating it with [`stream_config`] when absent (another
/// process creating it at the same time is fine: the stream is then opened).
pub async fn ensure_stream(
    link: &Link,
    js: &jetstream::Context,
) -> Result<stream::Stream, StreamUnavailable> {
    let config = stream_config(link);
    match js.get_or_create_stream(config.clone()).await {
        Ok(stream) => Ok(stream),
        Err(first) => js
            .get_stream(&config.name)
            .await
            .map_err(|_| StreamUnavailable {
                stream: config.name.clone(),
                reason: first.to_string(),
            }),
    }
}

/// The oneway work-queue stream could neither be created nor opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamUnavailable {
    /// The stream's name.
    pub stream: String,
    /// What JetStream said.
    pub reason: String,
}

impl std::fmt::Display for StreamUnavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "JetStream stream {}: {}", self.stream, self.reason)
    }
}

impl std::error::Error for StreamUnavailable {}

#[cfg(test)]
mod tests {
    use super::*;
    use lather_config::Config;

    fn link(extra: &str) -> Link {
        let config = Config::from_toml(
            &format!("[nats]\nurl = \"nats://127.0.0.1:4222\"\n{extra}"),
            "t",
        )
        .unwrap();
        Link::new(config.nats.as_ref().unwrap())
    }

    #[test]
    fn the_stream_is_a_bounded_file_work_queue_named_after_the_prefix() {
        let config = stream_config(&link(
            "subject_prefix = \"edge.eu\"\noneway_max_bytes = 1000\noneway_max_messages = 7\n",
        ));
        assert_eq!(config.name, "EDGE_EU_ONEWAY");
        assert_eq!(config.subjects, vec!["edge.eu.oneway.>".to_owned()]);
        assert_eq!(config.retention, stream::RetentionPolicy::WorkQueue);
        assert_eq!(config.storage, stream::StorageType::File);
        assert_eq!(config.discard, stream::DiscardPolicy::New);
        assert_eq!((config.max_bytes, config.max_messages), (1000, 7));
        let default = stream_config(&link(""));
        assert_eq!(default.name, "LATHER_ONEWAY");
        assert_eq!(default.max_bytes, 256 * 1024 * 1024);
        assert_eq!(default.max_messages, 100_000);
    }

    #[test]
    fn the_message_id_is_the_hex_id_and_the_handler() {
        assert_eq!(
            oneway_message_id(0xabc, "audit"),
            "00000000000000000000000000000abc.audit"
        );
    }
}
