//! Start-time warnings about what the configuration exposes: a listener on every interface,
//! secret files other users can read.

use lather_config::Config;

/// Logs a warning for an unspecified listen address (`0.0.0.0`, `::`) and for every
/// handler's `key_file` or `users_file` that is world-readable.
pub(crate) fn warn(config: &Config) {
    let listen = config.server.listen;
    if listen.ip().is_unspecified() {
        tracing::warn!(
            %listen,
            "listening on every interface: the services, /health and /metrics are reachable from other hosts (see [server] admin_allow)"
        );
    }
    for (name, handler) in &config.handlers {
        for key in ["key_file", "users_file"] {
            let Some(path) = handler.settings.get(key).and_then(|v| v.get_ref().as_str()) else {
                continue;
            };
            if world_readable(path) {
                tracing::warn!(
                    handler = %name,
                    key,
                    path = %path,
                    "a secret file is readable by every user of this host; `chmod o-r` it"
                );
            }
        }
    }
}

/// Whether the file at `path` exists and others may read it.
pub(crate) fn world_readable(path: &str) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o004 != 0)
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        false
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::world_readable;
    use lather_test_util::ScratchDir;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_other_read_bit_decides() {
        let dir = ScratchDir::new("key");
        let path = dir.write("key", b"0123456789abcdef");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(world_readable(path.to_str().unwrap()));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        assert!(!world_readable(path.to_str().unwrap()));
        assert!(!world_readable("/nonexistent/lather.key"));
    }
}
