//! lather's built-in handlers, one module each, each with its kind: a
//! [`HandlerKind`](lather_pipeline::HandlerKind) that reads the kind's settings from a
//! `[handlers.NAME]` table and makes the handler. [`builtin_kinds`] registers them all.
//!
//! | kind | what it does | work |
//! |---|---|---|
//! | `logging` | one structured log line per message: id, service, operation, size | I/O |
//! | `cache` | answers repeated requests of the listed `operations` from memory (key: Body, identity, `key_headers`); `ttl_ms`, `max_bytes` LRU, `invalidate_on` write operations | I/O |
//! | `monitor` | messages, bytes and clients per operation, at `/metrics` | I/O |
//! | `compress` | Body content ≥ `min_bytes` → one `lc:Compressed` element (`algorithm` gzip or deflate) | CPU |
//! | `decompress` | restores a compressed Body, output bounded by `max_bytes` | CPU |
//! | `encrypt` | Body content → one `xenc:EncryptedData` (AES-GCM or AES-CBC, key from `key_file`) | CPU |
//! | `decrypt` | restores a Body encrypted with XML Encryption; `required` refuses plain Bodies | CPU |
//! | `format-convert` | renames Body elements, attributes and namespaces by the rules in `mapping_file` (`reverse` for the way back) | CPU |
//! | `audit-file` | appends each message to `path`; `fsync` always, never, or every N ms | I/O |
//! | `wsa` | WS-Addressing 1.0 / 2004/08: validates requests, fills `MessageID`, `RelatesTo`, `Action`, `To` in answers | I/O |
//! | `wsse-username` | WS-Security UsernameToken (PasswordText / PasswordDigest), bounded nonce replay cache, Created window; removes the processed Security header | I/O |
//! | `cpu-burn` | `micros = N` of CPU work per message (a benchmark aid) | CPU |
//! | `wsrf-resource` | a WS-RF resource per `wsrf:ResourceId`: WS-RP Get/Set answered, other messages counted, in a redb file at `path` | I/O |
//! | `publish` | publishes the Body's event to the event source `source` of this process (`action`, `topic` optional) | I/O |
//! | `require-identity` | lets through only messages an earlier stage authenticated (the context's `Identity`), optionally only the users in `allow` | I/O |
//! | `notify` | POSTs a SOAP 1.2 notification of each message to `sink` and waits for its 2xx | I/O |
//! | `sleep` | waits `millis = N` per message (a benchmark aid) | I/O |
//! | `digest` | SHA-256 over the whole request, `rounds = N` times in a row (a benchmark aid) | CPU |
//!
//! The benchmark aids do work that is easy to write the same way in another engine, so
//! handler chains can be compared like for like.

mod audit_file;
mod base64_text;
mod builtin;
mod cache;
mod compress;
mod compressed_body;
mod convert;
mod cpu_burn;
mod decompress;
mod decrypt;
mod digest;
mod encrypt;
mod event_sink;
mod logging;
mod monitor;
mod notify;
mod publish;
mod require_identity;
mod sleep;
mod uuid;
pub(crate) mod wsa;
mod wsrf;
mod wsse;
mod xmlenc;

pub use audit_file::{AuditFile, AuditFileKind, AuditFileSettings, Fsync};
pub use builtin::builtin_kinds;
pub use cache::{
    Cache, CacheKind, CacheSettings, DEFAULT_MAX_BYTES as CACHE_DEFAULT_MAX_BYTES,
    DEFAULT_MAX_ENTRY_BYTES as CACHE_DEFAULT_MAX_ENTRY_BYTES,
    DEFAULT_TTL_MS as CACHE_DEFAULT_TTL_MS,
};
pub use compress::{Compress, CompressKind, CompressSettings};
pub use compressed_body::{Algorithm, COMPRESSION_NS};
pub use convert::{FormatConvert, FormatConvertKind, FormatConvertSettings, MappingError};
pub use cpu_burn::{CpuBurn, CpuBurnKind, CpuBurnSettings};
pub use decompress::{Decompress, DecompressKind, DecompressSettings};
pub use decrypt::{Decrypt, DecryptKind, DecryptSettings};
pub use digest::{Digest, DigestKind, DigestSettings};
pub use encrypt::{Encrypt, EncryptKind, EncryptSettings};
pub use event_sink::{EventSink, EventSinks};
pub use logging::{Logging, LoggingKind, LoggingSettings};
pub use monitor::{Monitor, MonitorKind, MonitorSettings};
pub use notify::{NOTIFY_NS, Notify, NotifyKind, NotifySettings, SinkUrlError};
pub use publish::{Publish, PublishKind, PublishSettings};
pub use require_identity::{RequireIdentity, RequireIdentityKind, RequireIdentitySettings};
pub use sleep::{Sleep, SleepKind, SleepSettings};
pub use wsa::{WsAddressing, WsaKind, WsaSettings};
pub use wsrf::{
    MAX_PROPERTIES, MAX_PROPERTY_BYTES, RESOURCE_ID, RESOURCE_NS, WSRL_NS, WSRP_NS, WsrfResource,
    WsrfResourceKind, WsrfResourceSettings,
};
pub use wsse::{
    UsersFileError, WsseSettings, WsseUsername, WsseUsernameKind, WsseUsernameSettings,
};
pub use xmlenc::{
    ENCRYPTED_HEADER, EncryptionAlgorithm, EncryptionKey, KeyError, WSSE11_NS, XENC_NS, XENC11_NS,
};
