//! Checks of the `[server]` keys that bound connections.

use crate::{ConfigError, ServerConfig};

/// Every connection bound is at least 1 (`text` places the key's line).
pub(crate) fn check(server: &ServerConfig, text: &str, origin: &str) -> Result<(), ConfigError> {
    for (key, value) in [
        ("idle_timeout_ms", server.idle_timeout_ms),
        ("header_timeout_ms", server.header_timeout_ms),
        ("max_connections", server.max_connections as u64),
        (
            "max_connections_per_client",
            server.max_connections_per_client as u64,
        ),
    ] {
        if value == 0 {
            return Err(ConfigError::new(
                origin,
                crate::error::line_of_key(text, "server", key),
                format!("server.{key} must be at least 1"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::Config;

    fn error_of(text: &str) -> (Option<usize>, String) {
        let e = Config::from_toml(text, "t.toml").unwrap_err();
        (e.line(), e.to_string())
    }

    #[test]
    fn connection_keys_have_defaults_and_bounds() {
        let server = Config::from_toml("", "t").unwrap().server;
        assert_eq!(server.idle_timeout_ms, 30_000);
        assert_eq!(server.header_timeout_ms, 10_000);
        assert_eq!(server.max_connections, 10_000);
        assert_eq!(server.max_connections_per_client, 256);
        assert!(server.admin_allow.is_empty());
        let server = Config::from_toml(
            "[server]\nidle_timeout_ms = 300\nmax_connections_per_client = 50\nadmin_allow = [\"127.0.0.1\", \"10.0.0.0/8\"]\n",
            "t",
        )
        .unwrap()
        .server;
        assert_eq!(server.idle_timeout_ms, 300);
        assert_eq!(server.max_connections_per_client, 50);
        assert_eq!(server.admin_allow.len(), 2);
        let (_, msg) = error_of("[server]\nmax_connections = 0\n");
        assert!(
            msg.contains("server.max_connections must be at least 1"),
            "{msg}"
        );
        let (_, msg) = error_of("[server]\nidle_timeout_ms = 0\n");
        assert!(msg.contains("server.idle_timeout_ms"), "{msg}");
        let (line, msg) =
            error_of("[server]\nlisten = \"127.0.0.1:0\"\nadmin_allow = [\"10.0.0.0/40\"]\n");
        assert_eq!(line, Some(3), "{msg}");
        assert!(msg.contains("not an IP address or CIDR block"), "{msg}");
    }

    #[test]
    fn names_and_paths_are_bounded_with_their_line() {
        let svc = |name: &str, path: &str| {
            format!("[[service]]\nname = \"{name}\"\npath = \"{path}\"\nbuiltin = \"echo\"\n")
        };
        let (line, msg) = error_of(&svc(&"n".repeat(129), "/a"));
        assert_eq!(line, Some(2), "{msg}");
        assert!(
            msg.contains("service[0].name: is 129 characters long"),
            "{msg}"
        );
        let (line, msg) = error_of(&svc("a b", "/a"));
        assert_eq!(line, Some(2), "{msg}");
        assert!(msg.contains("only letters, digits"), "{msg}");
        let (line, msg) = error_of(&svc("a", &format!("/{}", "p".repeat(1024))));
        assert_eq!(line, Some(3), "{msg}");
        assert!(msg.contains("service[0].path: is 1025 bytes long"), "{msg}");
        let (line, msg) = error_of("[handlers.\"x y\"]\nkind = \"logging\"\n");
        assert_eq!(line, Some(2), "{msg}");
        assert!(msg.contains("handler name"), "{msg}");
        Config::from_toml(&svc(&"n".repeat(128), "/a"), "t").unwrap();
    }
}
