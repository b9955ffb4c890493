//! lather's built-in handler kinds, registered the way a kind from another crate is.

use lather_pipeline::KindRegistry;

/// Every built-in kind, by name: `logging`, `monitor`, `cache`, `cpu-burn`, `sleep`, `digest`,
/// `compress`, `decompress`, `encrypt`, `decrypt`, `audit-file`, `wsse-username`,
/// `wsrf-resource`, `notify`, `wsa`, `format-convert`, `publish` and `require-identity`.
pub fn builtin_kinds() -> KindRegistry {
    let mut kinds = KindRegistry::new();
    kinds.register(crate::logging::LoggingKind);
    kinds.register(crate::monitor::MonitorKind);
    kinds.register(crate::cache::CacheKind);
    kinds.register(crate::cpu_burn::CpuBurnKind);
    kinds.register(crate::sleep::SleepKind);
    kinds.register(crate::digest::DigestKind);
    kinds.register(crate::compress::CompressKind);
    kinds.register(crate::decompress::DecompressKind);
    kinds.register(crate::encrypt::EncryptKind);
    kinds.register(crate::decrypt::DecryptKind);
    kinds.register(crate::audit_file::AuditFileKind);
    kinds.register(crate::wsse::WsseUsernameKind);
    kinds.register(crate::wsrf::WsrfResourceKind);
    kinds.register(crate::notify::NotifyKind);
    kinds.register(crate::wsa::WsaKind);
    kinds.register(crate::convert::FormatConvertKind);
    kinds.register(crate::publish::PublishKind);
    kinds.register(crate::require_identity::RequireIdentityKind);
    kinds
}
