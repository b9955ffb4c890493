//! Negotiated message streams: the `[stream]` table (where this server accepts streams and
//! their bounds) and the service keys `accept_streams` (any service) and `stream`,
//! `stream_on_error`, `stream_retry_s` (gateways sending to their upstreams).

use crate::{ConfigError, ServiceConfig, ServiceKind, StreamConfig, StreamMode};

impl StreamConfig {
    /// Whether stream connections speak TLS: `tls`, else whether the listener does.
    pub fn uses_tls(&self, listener_tls: bool) -> bool {
        self.tls.unwrap_or(listener_tls)
    }

    pub(crate) fn check(&self, origin: &str, listener_tls: bool) -> Result<(), ConfigError> {
        if self.tls == Some(true) && !listener_tls {
            return Err(ConfigError::new(
                origin,
                None,
                "stream.tls: stream connections take the listener's certificate; add a [server.tls] table with cert_file and key_file",
            ));
        }
        for (key, value) in [
            ("max_connections", self.max_connections as u64),
            ("max_in_flight", self.max_in_flight as u64),
            ("max_schemas", self.max_schemas as u64),
            ("frame_timeout_ms", self.frame_timeout_ms),
            ("idle_timeout_ms", self.idle_timeout_ms),
            ("token_lifetime_s", self.token_lifetime_s),
        ] {
            if value == 0 {
                return Err(ConfigError::new(
                    origin,
                    None,
                    format!("stream.{key} must be at least 1"),
                ));
            }
        }
        if self.max_schemas > 4096 {
            return Err(ConfigError::new(
                origin,
                None,
                "stream.max_schemas must be at most 4096",
            ));
        }
        Ok(())
    }
}

impl ServiceConfig {
    /// How this gateway sends to its upstreams (`Off` for every other service).
    pub fn stream_mode(&self) -> StreamMode {
        self.stream
            .as_ref()
            .map(|s| *s.get_ref())
            .unwrap_or_default()
    }
}

/// The stream keys of service `i`: `accept_streams` needs `[stream]`; the sending keys
/// are for gateways, `stream_retry_s` at least 1.
pub(crate) fn check_service(
    svc: &ServiceConfig,
    i: usize,
    has_stream_table: bool,
    at: &impl Fn(std::ops::Range<usize>, String) -> ConfigError,
) -> Result<(), ConfigError> {
    if let Some(accept) = &svc.accept_streams
        && *accept.get_ref()
        && !has_stream_table
    {
        return Err(at(
            accept.span(),
            format!(
                "service[{i}].accept_streams: needs a [stream] table (where stream connections are accepted)"
            ),
        ));
    }
    let is_gateway = matches!(
        svc.kind(),
        ServiceKind::Gateway(_) | ServiceKind::RegistryGateway(_)
    );
    let sending = [
        ("stream", svc.stream.as_ref().map(|v| v.span())),
        (
            "stream_on_error",
            svc.stream_on_error.as_ref().map(|v| v.span()),
        ),
        (
            "stream_retry_s",
            svc.stream_retry_s.as_ref().map(|v| v.span()),
        ),
    ];
    for (key, span) in sending {
        if let Some(span) = span
            && !is_gateway
        {
            return Err(at(
                span,
                format!("service[{i}].{key}: only a gateway (upstream = …) sends on streams"),
            ));
        }
    }
    if let Some(retry) = &svc.stream_retry_s
        && *retry.get_ref() == 0
    {
        return Err(at(
            retry.span(),
            format!("service[{i}].stream_retry_s: must be at least 1"),
        ));
    }
    Ok(())
}
