//! `lather_build_info`: a gauge at 1 whose labels say which build is running.
//!
//! `version` is the crate version. `commit` and `rustc` are labels only when the build set
//! them: `LATHER_GIT_COMMIT` (e.g. `git rev-parse --short HEAD`) and `LATHER_RUSTC_VERSION`
//! (e.g. `rustc --version`) in the environment of `cargo build` (deploy/Dockerfile passes
//! both). Cargo rebuilds this crate when either changes.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::gauge::ConstGauge;

/// The version of this build.
pub(crate) const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The git commit this build was made from, if the build said.
pub(crate) const COMMIT: Option<&str> = option_env!("LATHER_GIT_COMMIT");
/// The compiler of this build, if the build said.
pub(crate) const RUSTC: Option<&str> = option_env!("LATHER_RUSTC_VERSION");

/// The labels of `lather_build_info`: `version`, then `rustc` and `commit` when known
/// (an empty value counts as unknown).
pub(crate) fn labels() -> Vec<(&'static str, &'static str)> {
    let mut labels = vec![("version", VERSION)];
    for (key, value) in [("rustc", RUSTC), ("commit", COMMIT)] {
        if let Some(value) = value.map(str::trim).filter(|v| !v.is_empty()) {
            labels.push((key, value));
        }
    }
    labels
}

/// Writes `lather_build_info` at every scrape.
#[derive(Debug)]
pub(crate) struct BuildInfo;

impl Collector for BuildInfo {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let mut metric = encoder.encode_descriptor(
            "build_info",
            "The running build: version, and the compiler and git commit when the build recorded them; always 1",
            None,
            MetricType::Gauge,
        )?;
        let labels = labels();
        ConstGauge::new(1i64).encode(metric.encode_family(&labels.as_slice())?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_label_is_the_crate_version() {
        let labels = labels();
        assert_eq!(labels[0], ("version", env!("CARGO_PKG_VERSION")));
        assert_eq!(
            labels.iter().any(|(k, _)| *k == "commit"),
            COMMIT.is_some_and(|c| !c.trim().is_empty())
        );
    }
}
