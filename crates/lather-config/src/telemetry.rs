//! `[telemetry]`: OpenTelemetry traces exported over OTLP/HTTP (protobuf).

use serde::Deserialize;
use toml::Spanned;

/// Default `service_name`: the `service.name` resource attribute of every exported span.
pub const DEFAULT_SERVICE_NAME: &str = "lather";
/// Default `export_timeout_ms`: how long one export to the collector may take.
pub const DEFAULT_EXPORT_TIMEOUT_MS: u64 = 10_000;

/// `[telemetry]`: where traces go. Without the table no span is created at all.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelemetryConfig {
    /// The collector's OTLP/HTTP base URL, e.g. `http://collector:4318` (`https://`:
    /// verified against the system's CAs and `[server] outbound_ca_file`); spans are posted to `<otlp_endpoint>/v1/traces` (a URL
    /// already ending in `/v1/traces` is used as is).
    pub otlp_endpoint: Spanned<String>,
    /// The `service.name` of the exported spans (default `lather`).
    #[serde(default = "default_service_name")]
    pub service_name: String,
    /// The share of new traces recorded, from 0.0 to 1.0 (default 1.0). A request that
    /// arrives with a `traceparent` follows its caller's sampled flag instead.
    #[serde(default = "default_sample_ratio")]
    pub sample_ratio: f64,
    /// How long one export may take before it is given up, in milliseconds (default
    /// 10 000).
    #[serde(default = "default_export_timeout_ms")]
    pub export_timeout_ms: u64,
}

fn default_service_name() -> String {
    DEFAULT_SERVICE_NAME.to_owned()
}

fn default_sample_ratio() -> f64 {
    1.0
}

fn default_export_timeout_ms() -> u64 {
    DEFAULT_EXPORT_TIMEOUT_MS
}

impl TelemetryConfig {
    /// The URL spans are posted to: `otlp_endpoint` with `/v1/traces` appended unless it
    /// already ends with it.
    pub fn traces_url(&self) -> String {
        let base = self.otlp_endpoint.get_ref().trim_end_matches('/');
        if base.ends_with("/v1/traces") {
            base.to_owned()
        } else {
            format!("{base}/v1/traces")
        }
    }
}
