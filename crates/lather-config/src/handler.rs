//! `[handlers.NAME]`: a handler instance — its kind, the engine options, its parameters.

use serde::Deserialize;
use toml::Spanned;

/// One `[handlers.NAME]` table.
///
/// `kind` picks the implementation; the option keys apply to every kind; the parameter keys
/// belong to particular kinds, and a parameter the kind does not take is an error.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HandlerConfig {
    /// The implementation, e.g. `"logging"`, `"cpu-burn"`.
    pub kind: Spanned<String>,
    /// A failure halts the message (default true); false: logged and ignored.
    pub must_perform: Option<bool>,
    /// Fire and forget (default false).
    pub oneway: Option<bool>,
    /// Extra attempts after a timeout or panic (default 0).
    pub retries: Option<Spanned<u32>>,
    /// Wait before the first retry, in milliseconds (default 5; doubles).
    pub retry_backoff_ms: Option<u64>,
    /// Time allowed per attempt, in milliseconds (default 30 000).
    pub timeout_ms: Option<Spanned<u64>>,
    /// `"cpu"` (run on the CPU pool) or `"io"` (run inline on the message's task); the
    /// default is the kind's own.
    pub work: Option<Spanned<String>>,
    /// Reads the message as it entered its stage, so it may share a stage with handlers
    /// that write what it reads (default false).
    pub snapshot: Option<bool>,
    /// In an `auto` flow: handlers that must finish before this one starts.
    pub after: Option<Spanned<Vec<Spanned<String>>>>,
    /// `"local"` (default: in the serving process), `"remote"` (on a `lather worker`
    /// through `[nats]`) or `"auto"` (per call, where the message finishes sooner).
    pub placement: Option<Spanned<crate::Placement>>,
    /// A remote handler whose workers cannot be reached: `"fault"` (default) or `"local"`.
    pub fallback: Option<Spanned<crate::Fallback>>,
    /// `cpu-burn`: microseconds of CPU work per message.
    pub micros: Option<Spanned<u64>>,
    /// `sleep`: milliseconds to wait per message.
    pub millis: Option<Spanned<u64>>,
    /// `digest`: SHA-256 rounds over the whole request.
    pub rounds: Option<Spanned<u32>>,
    /// `compress`: `"gzip"` (default) or `"deflate"`; `encrypt`: `"aes256-gcm"` (default),
    /// `"aes128-gcm"`, `"aes256-cbc"` or `"aes128-cbc"`.
    pub algorithm: Option<Spanned<String>>,
    /// `compress`: Body content smaller than this (bytes) is left as it is (default 1024).
    pub min_bytes: Option<Spanned<u64>>,
    /// `decompress`: largest decompressed Body accepted, in bytes (default 4 MiB).
    pub max_bytes: Option<Spanned<u64>>,
    /// `monitor`: clients tracked one by one per operation (default 1000).
    pub max_clients: Option<Spanned<u64>>,
    /// `wsse-username`: the user table, one `name:password` per line.
    pub users_file: Option<Spanned<String>>,
    /// `wsse-username`: how old a `wsu:Created` may be, in seconds (default 300).
    pub window_s: Option<Spanned<u64>>,
    /// `encrypt`, `decrypt`: the AES key, 16 or 32 raw bytes or one line of hex.
    pub key_file: Option<Spanned<String>>,
    /// `encrypt`, `decrypt`: work on the header blocks of this name (Clark notation)
    /// instead of the Body, as WS-Security 1.1 `EncryptedHeader`s.
    pub header: Option<Spanned<String>>,
    /// `decrypt`: a Body that is not encrypted is refused; `wsa`: a request without
    /// WS-Addressing headers is refused (default false: both pass).
    pub required: Option<Spanned<bool>>,
    /// `audit-file`: the file messages are appended to; `wsrf-resource`: the redb store.
    pub path: Option<Spanned<String>>,
    /// `audit-file`: `"always"` (default), `"never"`, or an interval like `"100ms"`.
    pub fsync: Option<Spanned<String>>,
    /// `wsrf-resource`: most resources the store holds; new ones beyond are refused
    /// (default 100 000).
    pub max_resources: Option<Spanned<u64>>,
    /// `notify`: where notifications are POSTed, `http://host:port/path`.
    pub sink: Option<Spanned<String>>,
    /// `wsa`: the `wsa:Action` of responses (default: the request's action + `Response`).
    pub response_action: Option<Spanned<String>>,
    /// `format-convert`: the renaming rules, one per line (see docs/handlers.md).
    pub mapping_file: Option<Spanned<String>>,
    /// `format-convert`: apply the rules backwards, new names to old (default false).
    pub reverse: Option<Spanned<bool>>,
    /// `publish`: the `builtin = "event-source"` service (by name) events are published to.
    pub source: Option<Spanned<String>>,
    /// `publish`: the notifications' `wsa:Action` (default: the message's action, else the
    /// event source's `event_action`).
    pub action: Option<Spanned<String>>,
    /// `publish`: the topics the event carries beside its root element's name
    /// (space-separated, like a `lev:Topic` header).
    pub topic: Option<Spanned<String>>,
    /// `wsse-username`: longest `wsse:Nonce` accepted, in bytes once decoded (default 128).
    pub max_nonce_bytes: Option<Spanned<u64>>,
    /// `wsse-username`: most nonces the replay cache remembers at once (default 100 000);
    /// when it is full, tokens with new nonces are refused until entries expire.
    pub max_nonces: Option<Spanned<u64>>,
    /// `wsse-username`: every token must carry `wsse:Nonce` and `wsu:Created`, PasswordText
    /// ones too, so none can be replayed (default false).
    pub require_nonce: Option<Spanned<bool>>,
    /// `wsse-username`, `decrypt`: pass the processed `wsse:Security` header on to the
    /// service instead of removing it — `wsse-username` without its passwords and its
    /// `mustUnderstand`, `decrypt` as it came (default false: removed).
    pub forward_security: Option<Spanned<bool>>,
}

impl HandlerConfig {
    /// Where the handler runs (default local).
    pub fn placement(&self) -> crate::Placement {
        self.placement
            .as_ref()
            .map_or_else(Default::default, |p| *p.get_ref())
    }

    /// What a remote handler does when its workers cannot be reached (default fault).
    pub fn fallback(&self) -> crate::Fallback {
        self.fallback
            .as_ref()
            .map_or_else(Default::default, |f| *f.get_ref())
    }

    /// The parameters that were set, by key, with their spans: for kinds to refuse those
    /// they do not take.
    pub fn parameters(&self) -> Vec<(&'static str, std::ops::Range<usize>)> {
        let spans = [
            ("micros", self.micros.as_ref().map(Spanned::span)),
            ("millis", self.millis.as_ref().map(Spanned::span)),
            ("rounds", self.rounds.as_ref().map(Spanned::span)),
            ("algorithm", self.algorithm.as_ref().map(Spanned::span)),
            ("min_bytes", self.min_bytes.as_ref().map(Spanned::span)),
            ("max_bytes", self.max_bytes.as_ref().map(Spanned::span)),
            ("max_clients", self.max_clients.as_ref().map(Spanned::span)),
            ("users_file", self.users_file.as_ref().map(Spanned::span)),
            ("window_s", self.window_s.as_ref().map(Spanned::span)),
            ("key_file", self.key_file.as_ref().map(Spanned::span)),
            ("header", self.header.as_ref().map(Spanned::span)),
            ("required", self.required.as_ref().map(Spanned::span)),
            ("path", self.path.as_ref().map(Spanned::span)),
            ("fsync", self.fsync.as_ref().map(Spanned::span)),
            (
                "max_resources",
                self.max_resources.as_ref().map(Spanned::span),
            ),
            ("sink", self.sink.as_ref().map(Spanned::span)),
            (
                "response_action",
                self.response_action.as_ref().map(Spanned::span),
            ),
            (
                "mapping_file",
                self.mapping_file.as_ref().map(Spanned::span),
            ),
            ("reverse", self.reverse.as_ref().map(Spanned::span)),
            ("source", self.source.as_ref().map(Spanned::span)),
            ("action", self.action.as_ref().map(Spanned::span)),
            ("topic", self.topic.as_ref().map(Spanned::span)),
            (
                "max_nonce_bytes",
                self.max_nonce_bytes.as_ref().map(Spanned::span),
            ),
            ("max_nonces", self.max_nonces.as_ref().map(Spanned::span)),
            (
                "require_nonce",
                self.require_nonce.as_ref().map(Spanned::span),
            ),
            (
                "forward_security",
                self.forward_security.as_ref().map(Spanned::span),
            ),
        ];
        spans
            .into_iter()
            .filter_map(|(key, span)| span.map(|s| (key, s)))
            .collect()
    }
}
