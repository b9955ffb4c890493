//! `/metrics` for QoS offers: each offer's price now (an adaptive one's moves with the load).

use crate::service::Service;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::gauge::ConstGauge;
use std::sync::Arc;

/// Renders `lather_qos_offer_price{service, offer}`.
#[derive(Debug)]
pub(crate) struct OffersCollector(pub(crate) Vec<Arc<Service>>);

impl Collector for OffersCollector {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let mut metric = encoder.encode_descriptor(
            "qos_offer_price",
            "Each QoS offer's price per request now ([[service.offer]]; an adaptive offer's follows the load)",
            None,
            MetricType::Gauge,
        )?;
        for service in &self.0 {
            let Some(offers) = &service.offers else {
                continue;
            };
            for offer in offers.current() {
                ConstGauge::new(offer.price).encode(metric.encode_family(&[
                    ("service", service.name.as_str()),
                    ("offer", offer.name.as_str()),
                ])?)?;
            }
        }
        Ok(())
    }
}
