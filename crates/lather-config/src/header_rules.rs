//! Checks of a gateway's request header rules (`request_headers_remove`, `_set`, `_add`)
//! and of `response_headers_add`.

use crate::{ConfigError, ServiceConfig, ServiceKind};
use std::collections::BTreeMap;
use std::ops::Range;
use toml::Spanned;

/// Request headers a rule may not name: the hop-by-hop ones (RFC 9110 §7.6.1), which
/// never reach a backend, and those lather writes itself for the body and the backend's
/// authority.
const MANAGED_REQUEST: [&str; 13] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "host",
    "content-length",
    "content-type",
    "content-encoding",
    "expect",
];

/// Response headers `response_headers_add` may not name (as `response_headers_set`).
const MANAGED_RESPONSE: [&str; 10] = [
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

/// Checks the request header rules and `response_headers_add` of service `i`: only a
/// gateway takes them; names are valid and not managed by lather, nor the
/// `identity_header`; values are valid header values.
pub(crate) fn check_service(
    svc: &ServiceConfig,
    i: usize,
    at: &impl Fn(Range<usize>, String) -> ConfigError,
) -> Result<(), ConfigError> {
    let gateway = matches!(
        svc.kind(),
        ServiceKind::Gateway(_) | ServiceKind::RegistryGateway(_)
    );
    let identity = svc.identity_header.as_ref().map(|h| h.get_ref().as_str());
    let only = |span: Range<usize>, key: &str| {
        at(
            span,
            format!("service[{i}].{key}: only a gateway (upstream) service forwards headers"),
        )
    };
    if let Some(names) = &svc.request_headers_remove {
        if !gateway {
            return Err(only(names.span(), "request_headers_remove"));
        }
        for name in names.get_ref() {
            check_name(name.get_ref(), &MANAGED_REQUEST, identity).map_err(|why| {
                at(
                    name.span(),
                    format!("service[{i}].request_headers_remove: {why}"),
                )
            })?;
        }
    }
    let tables = [
        (
            "request_headers_set",
            &svc.request_headers_set,
            &MANAGED_REQUEST[..],
        ),
        (
            "request_headers_add",
            &svc.request_headers_add,
            &MANAGED_REQUEST[..],
        ),
        (
            "response_headers_add",
            &svc.response_headers_add,
            &MANAGED_RESPONSE[..],
        ),
    ];
    for (key, table, managed) in tables {
        if let Some(table) = table {
            if !gateway {
                return Err(only(table.span(), key));
            }
            check_table(table, managed, identity)
                .map_err(|(span, why)| at(span, format!("service[{i}].{key}: {why}")))?;
        }
    }
    Ok(())
}

/// Every name of `table` a header name lather does not manage, every value a header value.
fn check_table(
    table: &Spanned<BTreeMap<String, Spanned<String>>>,
    managed: &[&str],
    identity: Option<&str>,
) -> Result<(), (Range<usize>, String)> {
    for (name, value) in table.get_ref() {
        check_name(name, managed, identity).map_err(|why| (value.span(), why))?;
        if http::HeaderValue::from_str(value.get_ref()).is_err() {
            return Err((
                value.span(),
                format!("{name}: {:?} is not a valid header value", value.get_ref()),
            ));
        }
    }
    Ok(())
}

/// A header name a rule may use: valid, not one lather manages, not the identity header.
fn check_name(name: &str, managed: &[&str], identity: Option<&str>) -> Result<(), String> {
    if http::HeaderName::from_bytes(name.as_bytes()).is_err() {
        return Err(format!("{name:?} is not a valid header name"));
    }
    if managed.iter().any(|m| name.eq_ignore_ascii_case(m)) {
        return Err(format!(
            "{name:?} is managed by lather (hop-by-hop, framing or the backend's authority) and cannot be changed"
        ));
    }
    if identity.is_some_and(|id| name.eq_ignore_ascii_case(id)) {
        return Err(format!(
            "{name:?} is the identity_header: lather alone sets it, from the authenticated identity"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::Config;

    const GATEWAY: &str =
        "[[service]]\nname = \"g\"\npath = \"/g\"\nupstream = [\"http://127.0.0.1:1/x\"]\n";

    fn error_of(text: &str) -> crate::ConfigError {
        Config::from_toml(text, "t.toml").unwrap_err()
    }

    #[test]
    fn rules_are_read_in_order_and_names_lowered_for_removal() {
        let cfg = Config::from_toml(
            &format!(
                "{GATEWAY}request_headers_remove = [\"Cookie\", \"X-Forwarded-For\"]\nrequest_headers_set = {{ \"X-Env\" = \"prod\" }}\nrequest_headers_add = {{ \"X-Tag\" = \"gw\" }}\nresponse_headers_add = {{ \"Cache-Control\" = \"no-transform\" }}\n"
            ),
            "t.toml",
        )
        .unwrap();
        let svc = &cfg.services[0];
        assert_eq!(svc.request_headers_remove(), ["cookie", "x-forwarded-for"]);
        assert_eq!(
            svc.request_headers_set(),
            [("X-Env".to_owned(), "prod".to_owned())]
        );
        assert_eq!(
            svc.request_headers_add(),
            [("X-Tag".to_owned(), "gw".to_owned())]
        );
        assert_eq!(
            svc.response_headers_add(),
            [("Cache-Control".to_owned(), "no-transform".to_owned())]
        );
    }

    #[test]
    fn managed_invalid_and_misplaced_rules_name_key_and_line() {
        for (rule, words) in [
            (
                "request_headers_set = { Host = \"x\" }",
                "managed by lather",
            ),
            (
                "request_headers_add = { Connection = \"close\" }",
                "managed",
            ),
            (
                "request_headers_set = { \"Content-Length\" = \"1\" }",
                "managed",
            ),
            (
                "request_headers_remove = [\"Transfer-Encoding\"]",
                "managed",
            ),
            (
                "request_headers_add = { \"Bad Name\" = \"x\" }",
                "not a valid header name",
            ),
            (
                "request_headers_set = { \"X-A\" = \"a\\nb\" }",
                "not a valid header value",
            ),
            ("response_headers_add = { Upgrade = \"h2c\" }", "managed"),
        ] {
            let e = error_of(&format!("{GATEWAY}{rule}\n"));
            let key = rule.split(' ').next().unwrap();
            assert_eq!(e.line(), Some(5), "{rule}: {e}");
            assert!(
                e.message().contains(key) && e.message().contains(words),
                "{rule}: {e}"
            );
        }
        let e = error_of(&format!(
            "{GATEWAY}identity_header = \"X-User\"\nrequest_headers_set = {{ \"x-user\" = \"root\" }}\n"
        ));
        assert!(e.message().contains("identity_header"), "{e}");
        let e = error_of(
            "[[service]]\nname = \"e\"\npath = \"/e\"\nbuiltin = \"echo\"\nrequest_headers_add = { \"X-A\" = \"1\" }\n",
        );
        assert!(e.message().contains("only a gateway"), "{e}");
    }
}
