//! How a gateway spreads requests over its backends and steps around failed ones: the
//! balancing policy, retries, passive ejection and active health checks.

use serde::Deserialize;
use std::time::Duration;

/// The default of `connect_timeout_ms`.
pub const DEFAULT_CONNECT_TIMEOUT_MS: u64 = 2_000;
/// The default of `max_attempts`.
pub const DEFAULT_MAX_ATTEMPTS: u64 = 3;
/// The largest `max_attempts`.
pub const MAX_ATTEMPTS: u64 = 16;
/// The default of `eject_after_failures`.
pub const DEFAULT_EJECT_AFTER_FAILURES: u64 = 3;
/// The default of `eject_ms`.
pub const DEFAULT_EJECT_MS: u64 = 10_000;
/// How many times `eject_ms` an ejection in a row lasts at most.
pub const MAX_EJECT_FACTOR: u32 = 8;
/// The default of `health_check.interval_ms`.
pub const DEFAULT_HEALTH_INTERVAL_MS: u64 = 5_000;
/// The default of `health_check.timeout_ms`.
pub const DEFAULT_HEALTH_TIMEOUT_MS: u64 = 2_000;
/// The default of `health_check.unhealthy_after` and `healthy_after`.
pub const DEFAULT_HEALTH_THRESHOLD: u64 = 2;

/// `balance`: how a gateway picks the backend for a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Balance {
    /// In turn, each backend as often as its weight (smooth weighted round-robin).
    #[default]
    RoundRobin,
    /// The backend with the fewest requests in flight per unit of weight; ties in turn.
    LeastOutstanding,
}

/// `[service.health_check]` as written.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HealthCheckConfig {
    /// Time between two checks of a backend, in milliseconds (default 5 000).
    pub interval_ms: Option<u64>,
    /// How long a check may take, in milliseconds (default 2 000).
    pub timeout_ms: Option<u64>,
    /// Failed checks in a row that take a backend out (default 2).
    pub unhealthy_after: Option<u64>,
    /// Passed checks in a row that bring it back (default 2).
    pub healthy_after: Option<u64>,
    /// A SOAP envelope POSTed to the backend as the check; it passes on a 2xx answer
    /// (default: `GET ?wsdl`, passing on 200).
    pub body: Option<String>,
    /// The `SOAPAction` sent with `body` (default none).
    pub soap_action: Option<String>,
}

/// A gateway's failover settings, defaults applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failover {
    /// Bound on opening a connection to a backend.
    pub connect_timeout: Duration,
    /// Bound on one backend's answer to a request that may be sent again.
    pub try_timeout: Option<Duration>,
    /// Which requests may be sent to another backend once sent to one.
    pub idempotent: Idempotent,
    /// Most backends one request is tried on.
    pub max_attempts: usize,
    /// How the backend is picked.
    pub balance: Balance,
    /// Consecutive failures that eject a backend (0: never).
    pub eject_after: u32,
    /// How long a first ejection lasts.
    pub eject_for: Duration,
    /// Whether client-facing faults name the backend and its error.
    pub expose_backend_errors: bool,
    /// Active health checks, when configured.
    pub health_check: Option<HealthCheck>,
}

/// Which operations may be sent again to another backend.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Idempotent {
    /// None: only requests not yet sent go elsewhere.
    #[default]
    None,
    /// Every operation (`["*"]`).
    All,
    /// These operations, by local name.
    Operations(Vec<String>),
}

impl Idempotent {
    /// Whether `operation` (a local name, if the request has one) may be sent again.
    pub fn allows(&self, operation: Option<&str>) -> bool {
        match self {
            Idempotent::None => false,
            Idempotent::All => true,
            Idempotent::Operations(names) => {
                operation.is_some_and(|op| names.iter().any(|n| n == op))
            }
        }
    }
}

/// Active health checks, defaults applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HealthCheck {
    /// Time between two checks of a backend.
    pub interval: Duration,
    /// Bound on one check.
    pub timeout: Duration,
    /// Failed checks in a row that take a backend out.
    pub unhealthy_after: u32,
    /// Passed checks in a row that bring it back.
    pub healthy_after: u32,
    /// What is sent.
    pub probe: Probe,
}

/// The request a health check sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    /// `GET {upstream}?wsdl`, passing on 200.
    Wsdl,
    /// A POST of this envelope, passing on 2xx.
    Soap {
        /// The envelope.
        body: String,
        /// The `SOAPAction`, if any.
        action: Option<String>,
    },
}

impl HealthCheckConfig {
    /// The checks with defaults applied.
    pub fn resolve(&self) -> HealthCheck {
        let threshold = |v: Option<u64>| {
            u32::try_from(v.unwrap_or(DEFAULT_HEALTH_THRESHOLD).max(1)).unwrap_or(u32::MAX)
        };
        HealthCheck {
            interval: Duration::from_millis(self.interval_ms.unwrap_or(DEFAULT_HEALTH_INTERVAL_MS)),
            timeout: Duration::from_millis(self.timeout_ms.unwrap_or(DEFAULT_HEALTH_TIMEOUT_MS)),
            unhealthy_after: threshold(self.unhealthy_after),
            healthy_after: threshold(self.healthy_after),
            probe: match &self.body {
                Some(body) => Probe::Soap {
                    body: body.clone(),
                    action: self.soap_action.clone(),
                },
                None => Probe::Wsdl,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Idempotent;

    #[test]
    fn only_listed_operations_are_sent_again() {
        let some = Idempotent::Operations(vec!["GetQuote".into()]);
        assert!(some.allows(Some("GetQuote")));
        assert!(!some.allows(Some("Buy")));
        assert!(!some.allows(None));
        assert!(Idempotent::All.allows(None));
        assert!(!Idempotent::None.allows(Some("GetQuote")));
    }
}
