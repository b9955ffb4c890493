//! Checks of what a service shows the outside: its public URL and the gateway's response
//! header policy.

use crate::{ConfigError, ServiceConfig, ServiceKind};
use std::ops::Range;

/// Headers a policy may neither remove (they are managed by lather) nor set: hop-by-hop
/// headers and the framing ones.
const MANAGED: [&str; 10] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "content-length",
    "content-type",
    "content-encoding",
];

/// Checks `[server] public_url`.
pub(crate) fn check_server_url(url: Option<&str>, origin: &str) -> Result<(), ConfigError> {
    match url {
        Some(url) => check_url(url, false)
            .map_err(|why| ConfigError::new(origin, None, format!("server.public_url: {why}"))),
        None => Ok(()),
    }
}

/// Checks a service's `public_url`, `response_headers_remove` and `response_headers_set`.
pub(crate) fn check_service(
    svc: &ServiceConfig,
    i: usize,
    at: &impl Fn(Range<usize>, String) -> ConfigError,
) -> Result<(), ConfigError> {
    if let Some(url) = &svc.public_url {
        check_url(url.get_ref(), true)
            .map_err(|why| at(url.span(), format!("service[{i}].public_url: {why}")))?;
    }
    let gateway = matches!(
        svc.kind(),
        ServiceKind::Gateway(_) | ServiceKind::RegistryGateway(_)
    );
    if let Some(names) = &svc.response_headers_remove {
        if !gateway {
            return Err(at(
                names.span(),
                format!(
                    "service[{i}].response_headers_remove: only a gateway (upstream) service forwards response headers"
                ),
            ));
        }
        for name in names.get_ref() {
            check_name(name.get_ref()).map_err(|why| {
                at(
                    name.span(),
                    format!("service[{i}].response_headers_remove: {why}"),
                )
            })?;
        }
    }
    if let Some(set) = &svc.response_headers_set {
        if !gateway {
            return Err(at(
                set.span(),
                format!(
                    "service[{i}].response_headers_set: only a gateway (upstream) service forwards response headers"
                ),
            ));
        }
        for (name, value) in set.get_ref() {
            check_name(name).map_err(|why| {
                at(
                    value.span(),
                    format!("service[{i}].response_headers_set: {why}"),
                )
            })?;
            if http::HeaderValue::from_str(value.get_ref()).is_err() {
                return Err(at(
                    value.span(),
                    format!(
                        "service[{i}].response_headers_set.{name}: {:?} is not a valid header value",
                        value.get_ref()
                    ),
                ));
            }
        }
    }
    if let Some(name) = &svc.identity_header {
        if !gateway {
            return Err(at(
                name.span(),
                format!(
                    "service[{i}].identity_header: only a gateway (upstream) service passes the identity on"
                ),
            ));
        }
        check_name(name.get_ref())
            .map_err(|why| at(name.span(), format!("service[{i}].identity_header: {why}")))?;
    }
    Ok(())
}

/// A header name a policy may use: valid, and not one lather manages itself.
fn check_name(name: &str) -> Result<(), String> {
    if http::HeaderName::from_bytes(name.as_bytes()).is_err() {
        return Err(format!("{name:?} is not a valid header name"));
    }
    if MANAGED.iter().any(|m| name.eq_ignore_ascii_case(m)) {
        return Err(format!(
            "{name:?} is managed by lather (hop-by-hop or framing) and cannot be changed"
        ));
    }
    Ok(())
}

/// An absolute `http`/`https` URL without query or fragment; with a path only if
/// `path_allowed` (the server's URL gets each service's path appended).
fn check_url(url: &str, path_allowed: bool) -> Result<(), String> {
    let uri: http::Uri = url
        .parse()
        .map_err(|e| format!("{url:?} is not a URL ({e})"))?;
    if !matches!(uri.scheme_str(), Some("http" | "https")) {
        return Err(format!("{url:?} must start with http:// or https://"));
    }
    let Some(authority) = uri.authority() else {
        return Err(format!("{url:?} has no host"));
    };
    if authority.host().is_empty() || authority.as_str().contains('@') {
        return Err(format!("{url:?} must name a host (and no user)"));
    }
    if uri.query().is_some() || url.contains('#') {
        return Err(format!("{url:?} must have no query or fragment"));
    }
    if !path_allowed && !matches!(uri.path(), "" | "/") {
        return Err(format!(
            "{url:?} must have no path: each service's path is appended to it"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn identity_header_is_a_gateway_header_name() {
        let gateway =
            "[[service]]\nname = \"g\"\npath = \"/g\"\nupstream = [\"http://127.0.0.1:9/\"]\n";
        let ok = format!("{gateway}identity_header = \"X-User\"\n");
        assert!(crate::Config::from_toml(&ok, "t.toml").is_ok());
        let bad = format!("{gateway}identity_header = \"X User\"\n");
        let e = crate::Config::from_toml(&bad, "t.toml").unwrap_err();
        assert_eq!(e.line(), Some(5), "{e}");
        assert!(e.message().contains("identity_header"), "{e}");
        let echo = "[[service]]\nname = \"e\"\npath = \"/e\"\nbuiltin = \"echo\"\nidentity_header = \"X-User\"\n";
        let e = crate::Config::from_toml(echo, "t.toml").unwrap_err();
        assert!(e.message().contains("only a gateway"), "{e}");
    }

    use crate::Config;

    fn error_of(text: &str) -> String {
        Config::from_toml(text, "t.toml").unwrap_err().to_string()
    }

    const GATEWAY: &str =
        "[[service]]\nname = \"g\"\npath = \"/g\"\nupstream = [\"http://127.0.0.1:1/x\"]\n";

    #[test]
    fn policies_and_public_urls_are_read() {
        let cfg = Config::from_toml(
            &format!(
                "[server]\npublic_url = \"https://ws.example.com/\"\n{GATEWAY}response_headers_remove = [\"Set-Cookie\"]\nresponse_headers_set = {{ \"X-Frame-Options\" = \"DENY\" }}\n"
            ),
            "t.toml",
        )
        .unwrap();
        let svc = &cfg.services[0];
        assert_eq!(svc.response_headers_remove(), ["set-cookie"]);
        assert_eq!(
            svc.response_headers_set(),
            [("X-Frame-Options".to_owned(), "DENY".to_owned())]
        );
        assert_eq!(
            svc.public_url(&cfg.server).as_deref(),
            Some("https://ws.example.com/g")
        );
        let cfg = Config::from_toml(
            &format!("{GATEWAY}public_url = \"http://gw.example:8080/svc\"\n"),
            "t.toml",
        )
        .unwrap();
        let svc = &cfg.services[0];
        assert_eq!(svc.response_headers_remove(), ["server", "x-powered-by"]);
        assert_eq!(
            svc.public_url(&cfg.server).as_deref(),
            Some("http://gw.example:8080/svc")
        );
    }

    #[test]
    fn bad_policies_and_urls_name_key_and_line() {
        let e = error_of(&format!(
            "{GATEWAY}response_headers_remove = [\"Transfer-Encoding\"]\n"
        ));
        assert!(
            e.contains(":5:") && e.contains("response_headers_remove"),
            "{e}"
        );
        let e = error_of(&format!(
            "{GATEWAY}response_headers_set = {{ \"Bad Name\" = \"x\" }}\n"
        ));
        assert!(
            e.contains("response_headers_set") && e.contains("Bad Name"),
            "{e}"
        );
        let e = error_of(&format!(
            "{GATEWAY}response_headers_set = {{ \"X-A\" = \"a\\nb\" }}\n"
        ));
        assert!(e.contains("not a valid header value"), "{e}");
        let e = error_of(
            "[[service]]\nname = \"e\"\npath = \"/e\"\nbuiltin = \"echo\"\nresponse_headers_set = { \"X-A\" = \"1\" }\n",
        );
        assert!(e.contains("only a gateway"), "{e}");
        for url in [
            "ftp://x/",
            "http://u@x/",
            "http://x/?q",
            "/relative",
            "http://x/#f",
        ] {
            let e = error_of(&format!("{GATEWAY}public_url = \"{url}\"\n"));
            assert!(e.contains("service[0].public_url"), "{url}: {e}");
        }
        let e = error_of("[server]\npublic_url = \"http://x/path\"\n");
        assert!(
            e.contains("server.public_url") && e.contains("no path"),
            "{e}"
        );
    }
}
