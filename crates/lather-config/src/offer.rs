//! `[[service.offer]]`: the QoS offers a service makes (seed 004) — what a client gets if
//! it chooses the offer, and for a load-adaptive offer how its price follows the load.

use crate::ConfigError;
use crate::qos::CompressionPreference;
use serde::Deserialize;
use toml::Spanned;

/// The smallest price step: prices are kept to four decimal places.
pub const MIN_PRICE_STEP: f64 = 0.0001;
/// The longest lease a `registry` or `qos-broker` may grant (`max_lease_s`): 30 days.
pub const MAX_LEASE_S: u64 = 2_592_000;
/// Default of an adaptive offer's `window_s`: the seed's 30 seconds.
pub const DEFAULT_ADAPT_WINDOW_S: u64 = 30;
/// Default of an adaptive offer's `raise_above`: the seed's 80 (% CPU).
pub const DEFAULT_RAISE_ABOVE: f64 = 80.0;
/// Default of an adaptive offer's `lower_below`: the seed's 70 (% CPU).
pub const DEFAULT_LOWER_BELOW: f64 = 70.0;

/// What an adaptive offer's price follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LoadMetric {
    /// lather's CPU time as a share of the CPUs it may use, in percent (the seed's).
    Cpu,
    /// Requests waiting in the service's admission queue.
    Queue,
    /// The service's 99th-percentile response time over the last second, in milliseconds.
    P99Ms,
}

impl LoadMetric {
    /// The configuration spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            LoadMetric::Cpu => "cpu",
            LoadMetric::Queue => "queue",
            LoadMetric::P99Ms => "p99-ms",
        }
    }
}

/// One `[[service.offer]]`.
///
/// ```toml
/// [[service.offer]]
/// name = "gold"
/// response_time_ms = 50     # the response time promised
/// throughput = 2000         # requests per second the client may send
/// price = 10.0              # what a request costs, in the operator's unit
/// compression = "none"      # what the client's answers get (optional)
/// class = "gold"            # the traffic class its requests are in (optional)
/// [service.offer.adaptive]  # the price follows the load (optional)
/// metric = "cpu"            # cpu | queue | p99-ms
/// window_s = 30             # averaged over this many 1-second samples
/// raise_above = 80          # average above: price + step
/// lower_below = 70          # average below: price - step (never under the offer's price)
/// step = 1.0                # default: a tenth of the price
/// max_price = 20.0          # default: the price + 10 steps
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OfferConfig {
    /// The offer's name, unique in its service.
    pub name: Spanned<String>,
    /// The response time promised, in milliseconds.
    pub response_time_ms: Spanned<u64>,
    /// The request rate allowed, per second.
    pub throughput: Spanned<f64>,
    /// The price per request (the base price of an adaptive offer).
    pub price: Spanned<f64>,
    /// The compression of the answers.
    pub compression: Option<Spanned<CompressionPreference>>,
    /// The traffic class (`[qos.class.NAME]`) of its requests.
    pub class: Option<Spanned<String>>,
    /// How the price follows the load.
    pub adaptive: Option<AdaptiveConfig>,
}

/// `[service.offer.adaptive]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdaptiveConfig {
    /// The load figure followed (default `cpu`).
    pub metric: Option<Spanned<LoadMetric>>,
    /// The window averaged, in 1-second samples (default 30, at most 3 600).
    pub window_s: Option<Spanned<u64>>,
    /// A window average above this raises the price a step (default 80).
    pub raise_above: Option<Spanned<f64>>,
    /// A window average below this lowers it a step (default 70).
    pub lower_below: Option<Spanned<f64>>,
    /// The step (default a tenth of the offer's price).
    pub step: Option<Spanned<f64>>,
    /// The highest price (default the price plus ten steps).
    pub max_price: Option<Spanned<f64>>,
}

/// An adaptive rule with its defaults filled in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdaptiveRule {
    /// The figure followed.
    pub metric: LoadMetric,
    /// Samples averaged (one a second).
    pub window: u64,
    /// Above: raise.
    pub raise_above: f64,
    /// Below: lower.
    pub lower_below: f64,
    /// How much.
    pub step: f64,
    /// The lowest price: the offer's own.
    pub min_price: f64,
    /// The highest price.
    pub max_price: f64,
}

impl OfferConfig {
    /// The adaptive rule, defaults filled in, if the offer has one.
    pub fn adaptive_rule(&self) -> Option<AdaptiveRule> {
        let a = self.adaptive.as_ref()?;
        let price = *self.price.get_ref();
        let step = a.step.as_ref().map_or(price / 10.0, |s| *s.get_ref());
        Some(AdaptiveRule {
            metric: a.metric.as_ref().map_or(LoadMetric::Cpu, |m| *m.get_ref()),
            window: a
                .window_s
                .as_ref()
                .map_or(DEFAULT_ADAPT_WINDOW_S, |w| *w.get_ref()),
            raise_above: a
                .raise_above
                .as_ref()
                .map_or(DEFAULT_RAISE_ABOVE, |v| *v.get_ref()),
            lower_below: a
                .lower_below
                .as_ref()
                .map_or(DEFAULT_LOWER_BELOW, |v| *v.get_ref()),
            step,
            min_price: price,
            max_price: a
                .max_price
                .as_ref()
                .map_or(price + 10.0 * step, |v| *v.get_ref()),
        })
    }
}

/// Checks a service's offers: names unique and not empty, figures finite and positive,
/// classes configured, adaptive thresholds ordered.
pub(crate) fn check(
    service: usize,
    offers: &[OfferConfig],
    classes: Option<&std::collections::BTreeMap<String, crate::QosClass>>,
    at: &impl Fn(std::ops::Range<usize>, String) -> ConfigError,
) -> Result<(), ConfigError> {
    let mut seen = std::collections::BTreeSet::new();
    for (j, offer) in offers.iter().enumerate() {
        let key = format!("service[{service}].offer[{j}]");
        let name = offer.name.get_ref();
        if name.trim().is_empty() || !seen.insert(name.clone()) {
            return Err(at(
                offer.name.span(),
                format!("{key}.name: {name:?} is empty or named twice in the service"),
            ));
        }
        for (field, value) in [("throughput", &offer.throughput), ("price", &offer.price)] {
            if !value.get_ref().is_finite() || *value.get_ref() < 0.0 {
                return Err(at(
                    value.span(),
                    format!("{key}.{field}: must be a number of 0 or more"),
                ));
            }
        }
        if let Some(class) = &offer.class
            && !classes.is_some_and(|c| c.contains_key(class.get_ref()))
        {
            return Err(at(
                class.span(),
                format!(
                    "{key}.class: no [qos.class.{}] is configured",
                    class.get_ref()
                ),
            ));
        }
        let Some(adaptive) = &offer.adaptive else {
            continue;
        };
        if let Some(w) = &adaptive.window_s
            && !(1..=3600).contains(w.get_ref())
        {
            return Err(at(
                w.span(),
                format!("{key}.adaptive.window_s: between 1 and 3600 seconds"),
            ));
        }
        for (field, value) in [
            ("raise_above", &adaptive.raise_above),
            ("lower_below", &adaptive.lower_below),
            ("step", &adaptive.step),
            ("max_price", &adaptive.max_price),
        ] {
            if let Some(v) = value
                && (!v.get_ref().is_finite() || *v.get_ref() < 0.0)
            {
                return Err(at(
                    v.span(),
                    format!("{key}.adaptive.{field}: must be a number of 0 or more"),
                ));
            }
        }
        let rule = offer.adaptive_rule().unwrap_or_else(|| unreachable!());
        let span = adaptive
            .lower_below
            .as_ref()
            .or(adaptive.raise_above.as_ref())
            .map_or_else(|| offer.name.span(), Spanned::span);
        if rule.lower_below >= rule.raise_above {
            return Err(at(
                span,
                format!(
                    "{key}.adaptive: lower_below ({}) must be under raise_above ({})",
                    rule.lower_below, rule.raise_above
                ),
            ));
        }
        if rule.step < MIN_PRICE_STEP {
            return Err(at(
                span,
                format!(
                    "{key}.adaptive.step: the price moves by {MIN_PRICE_STEP} or more (give a step)"
                ),
            ));
        }
        if rule.max_price < rule.min_price {
            return Err(at(
                span,
                format!("{key}.adaptive.max_price: not under the offer's price"),
            ));
        }
    }
    Ok(())
}
