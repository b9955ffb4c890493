//! The tuning keys of a service: `wsdl_addresses` (any service), and for gateways
//! `wsdl_cache_ms`, `compress_requests` and `compress_requests_min_bytes`.

use crate::ConfigError;
use crate::model::{ServiceConfig, ServiceKind};
use crate::weighted_url::{MAX_WEIGHT, WeightedUrl};
use std::time::Duration;

/// The default of `wsdl_cache_ms`: a backend's WSDL is asked for once a minute at most.
pub const DEFAULT_WSDL_CACHE_MS: u64 = 60_000;
/// The default of `upstream_connections` with `upstream_protocol = "http1"`.
pub const DEFAULT_H1_UPSTREAM_CONNECTIONS: u64 = 1024;
/// The default of `upstream_connections` with `upstream_protocol = "h2"`.
pub const DEFAULT_H2_UPSTREAM_CONNECTIONS: u64 = 4;
/// The default of `batch_max_items`.
pub const DEFAULT_BATCH_MAX_ITEMS: u64 = 10;
/// The default of `batch_wait_ms`.
pub const DEFAULT_BATCH_WAIT_MS: u64 = 2;
/// The default of `wsdl_cache_documents`.
pub const DEFAULT_WSDL_CACHE_DOCUMENTS: u64 = 64;
/// The largest `wsdl_cache_documents`.
const MAX_WSDL_CACHE_DOCUMENTS: u64 = 10_000;
/// The largest `batch_max_items`.
const MAX_BATCH_ITEMS: u64 = 1000;
/// The largest `upstream_connections`.
const MAX_UPSTREAM_CONNECTIONS: u64 = 65_536;
/// The default of `compress_requests_min_bytes`, as for answers.
pub const DEFAULT_COMPRESS_REQUESTS_MIN_BYTES: u64 = 1024;
impl ServiceConfig {
    /// How long a gateway keeps a backend's WSDL (`None`: not at all).
    pub fn wsdl_cache(&self) -> Option<Duration> {
        let ms = self
            .wsdl_cache_ms
            .as_ref()
            .map_or(DEFAULT_WSDL_CACHE_MS, |v| *v.get_ref());
        (ms > 0).then(|| Duration::from_millis(ms))
    }

    /// Most backend documents a gateway's WSDL cache holds at once.
    pub fn wsdl_cache_documents(&self) -> usize {
        let n = self
            .wsdl_cache_documents
            .as_ref()
            .map_or(DEFAULT_WSDL_CACHE_DOCUMENTS, |v| *v.get_ref());
        usize::try_from(n).unwrap_or(usize::MAX)
    }

    /// From how many bytes on a gateway compresses its requests to the upstreams (`None`:
    /// it does not).
    pub fn compress_requests_from(&self) -> Option<usize> {
        let on = self
            .compress_requests
            .as_ref()
            .is_some_and(|v| *v.get_ref());
        on.then(|| {
            let min = self
                .compress_requests_min_bytes
                .as_ref()
                .map_or(DEFAULT_COMPRESS_REQUESTS_MIN_BYTES, |v| *v.get_ref());
            usize::try_from(min).unwrap_or(usize::MAX)
        })
    }

    /// The HTTP version towards the upstreams (default HTTP/1.1).
    pub fn upstream_protocol(&self) -> crate::UpstreamProtocol {
        self.upstream_protocol
            .as_ref()
            .map_or_else(Default::default, |p| *p.get_ref())
    }

    /// The most connections to each upstream.
    pub fn upstream_connections(&self) -> usize {
        let default = match self.upstream_protocol() {
            crate::UpstreamProtocol::Http1 => DEFAULT_H1_UPSTREAM_CONNECTIONS,
            crate::UpstreamProtocol::H2 => DEFAULT_H2_UPSTREAM_CONNECTIONS,
        };
        let n = self
            .upstream_connections
            .as_ref()
            .map_or(default, |v| *v.get_ref());
        usize::try_from(n).unwrap_or(usize::MAX)
    }

    /// Transfer batching towards the upstreams, when `batch_upstream = true`: the size and
    /// time cut-offs.
    pub fn upstream_batching(&self) -> Option<(usize, Duration)> {
        if !self.batch_upstream.as_ref().is_some_and(|v| *v.get_ref()) {
            return None;
        }
        let items = self
            .batch_max_items
            .as_ref()
            .map_or(DEFAULT_BATCH_MAX_ITEMS, |v| *v.get_ref());
        let wait = self
            .batch_wait_ms
            .as_ref()
            .map_or(DEFAULT_BATCH_WAIT_MS, |v| *v.get_ref());
        Some((
            usize::try_from(items).unwrap_or(usize::MAX),
            Duration::from_millis(wait),
        ))
    }

    /// The addresses the served WSDL names in turn (empty: the service's own).
    pub fn wsdl_addresses(&self) -> Vec<WeightedUrl> {
        self.wsdl_addresses.as_ref().map_or_else(Vec::new, |list| {
            list.get_ref().iter().map(|a| a.get_ref().clone()).collect()
        })
    }
}

/// The tuning keys of service `i`: the gateway ones only on gateways; every
/// `wsdl_addresses` entry an absolute http(s) URL with a weight from 1 to 1000.
pub(crate) fn check_service(
    svc: &ServiceConfig,
    i: usize,
    at: &impl Fn(std::ops::Range<usize>, String) -> ConfigError,
) -> Result<(), ConfigError> {
    let is_gateway = matches!(
        svc.kind(),
        ServiceKind::Gateway(_) | ServiceKind::RegistryGateway(_)
    );
    let gateway_keys = [
        (
            "wsdl_cache_ms",
            svc.wsdl_cache_ms.as_ref().map(|v| v.span()),
        ),
        (
            "wsdl_cache_documents",
            svc.wsdl_cache_documents.as_ref().map(|v| v.span()),
        ),
        (
            "compress_requests",
            svc.compress_requests.as_ref().map(|v| v.span()),
        ),
        (
            "compress_requests_min_bytes",
            svc.compress_requests_min_bytes.as_ref().map(|v| v.span()),
        ),
        (
            "upstream_protocol",
            svc.upstream_protocol.as_ref().map(|v| v.span()),
        ),
        (
            "upstream_connections",
            svc.upstream_connections.as_ref().map(|v| v.span()),
        ),
        (
            "batch_upstream",
            svc.batch_upstream.as_ref().map(|v| v.span()),
        ),
    ];
    for (key, span) in gateway_keys {
        if let Some(span) = span
            && !is_gateway
        {
            return Err(at(
                span,
                format!("service[{i}].{key}: only a gateway (upstream = …) has upstreams to tune"),
            ));
        }
    }
    check_batching(svc, i, at)?;
    if let Some(n) = &svc.wsdl_cache_documents
        && !(1..=MAX_WSDL_CACHE_DOCUMENTS).contains(n.get_ref())
    {
        return Err(at(
            n.span(),
            format!(
                "service[{i}].wsdl_cache_documents: must be from 1 to {MAX_WSDL_CACHE_DOCUMENTS}"
            ),
        ));
    }
    if let Some(n) = &svc.upstream_connections
        && !(1..=MAX_UPSTREAM_CONNECTIONS).contains(n.get_ref())
    {
        return Err(at(
            n.span(),
            format!(
                "service[{i}].upstream_connections: must be from 1 to {MAX_UPSTREAM_CONNECTIONS}"
            ),
        ));
    }
    let Some(list) = &svc.wsdl_addresses else {
        return Ok(());
    };
    if list.get_ref().is_empty() {
        return Err(at(
            list.span(),
            format!(
                "service[{i}].wsdl_addresses: lists no address; leave it out to name the service's own"
            ),
        ));
    }
    for entry in list.get_ref() {
        let address = entry.get_ref();
        let scheme_ok = address.url.parse::<http::Uri>().is_ok_and(|uri| {
            matches!(uri.scheme_str(), Some("http" | "https")) && uri.authority().is_some()
        });
        if !scheme_ok {
            return Err(at(
                entry.span(),
                format!(
                    "service[{i}].wsdl_addresses: {:?} is not an absolute http:// or https:// URL",
                    address.url
                ),
            ));
        }
        if !(1..=MAX_WEIGHT).contains(&address.weight) {
            return Err(at(
                entry.span(),
                format!(
                    "service[{i}].wsdl_addresses: weight {} of {:?} is not between 1 and {MAX_WEIGHT}",
                    address.weight, address.url
                ),
            ));
        }
    }
    Ok(())
}

/// `batch_max_items` and `batch_wait_ms` only with `batch_upstream = true`, the size from 1
/// to 1000; batching not with message streams or an `identity_header` (one batch carries
/// one set of HTTP headers).
fn check_batching(
    svc: &ServiceConfig,
    i: usize,
    at: &impl Fn(std::ops::Range<usize>, String) -> ConfigError,
) -> Result<(), ConfigError> {
    let on = svc.batch_upstream.as_ref().is_some_and(|v| *v.get_ref());
    for (key, span) in [
        (
            "batch_max_items",
            svc.batch_max_items.as_ref().map(|v| v.span()),
        ),
        (
            "batch_wait_ms",
            svc.batch_wait_ms.as_ref().map(|v| v.span()),
        ),
    ] {
        if let Some(span) = span
            && !on
        {
            return Err(at(
                span,
                format!("service[{i}].{key}: only with batch_upstream = true"),
            ));
        }
    }
    if let Some(n) = &svc.batch_max_items
        && !(1..=MAX_BATCH_ITEMS).contains(n.get_ref())
    {
        return Err(at(
            n.span(),
            format!("service[{i}].batch_max_items: must be from 1 to {MAX_BATCH_ITEMS}"),
        ));
    }
    if let Some(flag) = &svc.batch_upstream
        && on
    {
        if svc.stream_mode() != crate::StreamMode::Off {
            return Err(at(
                flag.span(),
                format!("service[{i}].batch_upstream: not with message streams (stream = …)"),
            ));
        }
        if svc.identity_header.is_some() {
            return Err(at(
                flag.span(),
                format!(
                    "service[{i}].batch_upstream: not with identity_header (a batch carries one set of HTTP headers)"
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::Config;

    const GATEWAY: &str =
        "[[service]]\nname = \"g\"\npath = \"/g\"\nupstream = [\"http://127.0.0.1:9/ws\"]\n";
    const ECHO: &str = "[[service]]\nname = \"e\"\npath = \"/e\"\nbuiltin = \"echo\"\n";

    fn load(text: &str) -> Result<Config, crate::ConfigError> {
        Config::from_toml(text, "t.toml")
    }

    #[test]
    fn gateway_keys_are_read_with_their_defaults() {
        let config = load(GATEWAY).unwrap();
        let svc = &config.services[0];
        assert_eq!(svc.wsdl_cache(), Some(std::time::Duration::from_secs(60)));
        assert_eq!(svc.compress_requests_from(), None);
        let config = load(&format!(
            "{GATEWAY}wsdl_cache_ms = 0\ncompress_requests = true\ncompress_requests_min_bytes = 10\n"
        ))
        .unwrap();
        let svc = &config.services[0];
        assert_eq!(svc.wsdl_cache(), None);
        assert_eq!(svc.compress_requests_from(), Some(10));
        assert_eq!(svc.upstream_connections(), 1024);
        assert_eq!(svc.upstream_batching(), None);
        let batching = load(&format!(
            "{GATEWAY}batch_upstream = true\nbatch_wait_ms = 5\n"
        ))
        .unwrap();
        assert_eq!(
            batching.services[0].upstream_batching(),
            Some((10, std::time::Duration::from_millis(5)))
        );
        for bad in [
            "batch_max_items = 4",
            "batch_upstream = true\nbatch_max_items = 0",
            "batch_upstream = true\nidentity_header = \"X-User\"",
            "batch_upstream = true\nstream = \"tcp\"",
        ] {
            let e = load(&format!("{GATEWAY}{bad}\n")).unwrap_err();
            assert!(e.message().contains("batch_"), "{bad}: {e}");
        }
        let h2 = load(&format!("{GATEWAY}upstream_protocol = \"h2c\"\n")).unwrap();
        assert_eq!(h2.services[0].upstream_connections(), 4);
        let h2 = load(&format!("{GATEWAY}upstream_protocol = \"h2\"\n")).unwrap();
        assert_eq!(
            h2.services[0].upstream_protocol(),
            crate::UpstreamProtocol::H2
        );
        for bad in ["upstream_connections = 0", "upstream_protocol = \"h3\""] {
            let e = load(&format!("{GATEWAY}{bad}\n")).unwrap_err();
            assert!(
                e.message().contains(bad.split(' ').next().unwrap()) || e.message().contains("h3"),
                "{e}"
            );
        }
    }

    #[test]
    fn gateway_keys_on_other_services_are_refused_by_name() {
        for key in [
            "upstream_protocol = \"h2c\"",
            "upstream_connections = 2",
            "wsdl_cache_ms = 5",
            "compress_requests = true",
            "compress_requests_min_bytes = 5",
        ] {
            let e = load(&format!("{ECHO}{key}\n")).unwrap_err();
            let name = key.split(' ').next().unwrap();
            assert!(e.message().contains(name), "{e}");
            assert!(e.message().contains("only a gateway"), "{e}");
        }
    }

    #[test]
    fn wsdl_addresses_take_urls_and_weights_and_refuse_the_rest() {
        let config = load(&format!(
            "{ECHO}wsdl_addresses = [\"http://a/ws\", {{ url = \"https://b/ws\", weight = 3 }}]\n"
        ))
        .unwrap();
        let list = config.services[0].wsdl_addresses();
        assert_eq!(list.len(), 2);
        assert_eq!((list[0].url.as_str(), list[0].weight), ("http://a/ws", 1));
        assert_eq!((list[1].url.as_str(), list[1].weight), ("https://b/ws", 3));
        for (bad, says) in [
            ("[]", "lists no address"),
            ("[\"/relative\"]", "not an absolute"),
            ("[\"ftp://a/ws\"]", "not an absolute"),
            ("[{ url = \"http://a/ws\", weight = 0 }]", "weight 0"),
            ("[{ url = \"http://a/ws\", weigth = 2 }]", "wsdl_addresses"),
        ] {
            let e = load(&format!("{ECHO}wsdl_addresses = {bad}\n")).unwrap_err();
            assert!(e.message().contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn wsdl_cache_documents_is_a_gateway_key_from_1_to_10000() {
        let gw =
            "[[service]]\nname = \"g\"\npath = \"/g\"\nupstream = [\"http://127.0.0.1:9/x\"]\n";
        let config = Config::from_toml(gw, "t.toml").unwrap();
        assert_eq!(config.services[0].wsdl_cache_documents(), 64);
        let config =
            Config::from_toml(&format!("{gw}wsdl_cache_documents = 5\n"), "t.toml").unwrap();
        assert_eq!(config.services[0].wsdl_cache_documents(), 5);
        for bad in [0, 10_001] {
            let e = Config::from_toml(&format!("{gw}wsdl_cache_documents = {bad}\n"), "t.toml")
                .unwrap_err();
            assert!(e.to_string().contains("must be from 1 to 10000"), "{e}");
        }
        let echo = "[[service]]\nname = \"e\"\npath = \"/e\"\nbuiltin = \"echo\"\nwsdl_cache_documents = 5\n";
        let e = Config::from_toml(echo, "t.toml").unwrap_err();
        assert!(e.to_string().contains("only a gateway"), "{e}");
    }
}
