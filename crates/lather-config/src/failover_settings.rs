//! A gateway's failover keys: defaults applied ([`ServiceConfig::failover`]) and checked.

use crate::ConfigError;
use crate::failover::{
    DEFAULT_CONNECT_TIMEOUT_MS, DEFAULT_EJECT_AFTER_FAILURES, DEFAULT_EJECT_MS,
    DEFAULT_MAX_ATTEMPTS, Failover, Idempotent, MAX_ATTEMPTS,
};
use crate::model::{ServiceConfig, ServiceKind, UpstreamSpec};
use std::time::Duration;

/// The largest health-check threshold.
const MAX_HEALTH_THRESHOLD: u64 = 100;

impl ServiceConfig {
    /// The gateway's failover settings, defaults applied.
    pub fn failover(&self) -> Failover {
        let timeout = self.timeout();
        let ms = |v: &Option<toml::Spanned<u64>>| v.as_ref().map(|v| *v.get_ref());
        let connect = Duration::from_millis(
            ms(&self.connect_timeout_ms).unwrap_or(DEFAULT_CONNECT_TIMEOUT_MS),
        )
        .min(timeout);
        let idempotent = match &self.idempotent_operations {
            None => Idempotent::None,
            Some(list) if list.get_ref().iter().any(|n| n.get_ref() == "*") => Idempotent::All,
            Some(list) if list.get_ref().is_empty() => Idempotent::None,
            Some(list) => {
                Idempotent::Operations(list.get_ref().iter().map(|n| n.get_ref().clone()).collect())
            }
        };
        Failover {
            connect_timeout: connect,
            try_timeout: ms(&self.try_timeout_ms).map(Duration::from_millis),
            idempotent,
            max_attempts: usize::try_from(ms(&self.max_attempts).unwrap_or(DEFAULT_MAX_ATTEMPTS))
                .unwrap_or(1)
                .max(1),
            balance: self
                .balance
                .as_ref()
                .map(|b| *b.get_ref())
                .unwrap_or_default(),
            eject_after: u32::try_from(
                ms(&self.eject_after_failures).unwrap_or(DEFAULT_EJECT_AFTER_FAILURES),
            )
            .unwrap_or(u32::MAX),
            eject_for: Duration::from_millis(ms(&self.eject_ms).unwrap_or(DEFAULT_EJECT_MS)),
            expose_backend_errors: self
                .expose_backend_errors
                .as_ref()
                .is_some_and(|v| *v.get_ref()),
            health_check: self.health_check.as_ref().map(|h| h.get_ref().resolve()),
        }
    }
}

/// The failover keys of service `i`: only on gateways, each within its range.
pub(crate) fn check_service(
    svc: &ServiceConfig,
    i: usize,
    at: &impl Fn(std::ops::Range<usize>, String) -> ConfigError,
) -> Result<(), ConfigError> {
    let spans = [
        (
            "connect_timeout_ms",
            svc.connect_timeout_ms.as_ref().map(|v| v.span()),
        ),
        (
            "try_timeout_ms",
            svc.try_timeout_ms.as_ref().map(|v| v.span()),
        ),
        (
            "idempotent_operations",
            svc.idempotent_operations.as_ref().map(|v| v.span()),
        ),
        ("max_attempts", svc.max_attempts.as_ref().map(|v| v.span())),
        ("balance", svc.balance.as_ref().map(|v| v.span())),
        (
            "eject_after_failures",
            svc.eject_after_failures.as_ref().map(|v| v.span()),
        ),
        ("eject_ms", svc.eject_ms.as_ref().map(|v| v.span())),
        (
            "expose_backend_errors",
            svc.expose_backend_errors.as_ref().map(|v| v.span()),
        ),
        ("health_check", svc.health_check.as_ref().map(|v| v.span())),
    ];
    let is_gateway = matches!(
        svc.kind(),
        ServiceKind::Gateway(_) | ServiceKind::RegistryGateway(_)
    );
    for (key, span) in spans {
        if let Some(span) = span
            && !is_gateway
        {
            return Err(at(
                span,
                format!(
                    "service[{i}].{key}: only a gateway (upstream = …) has backends to fail over"
                ),
            ));
        }
    }
    let timeout_ms = u64::try_from(svc.timeout().as_millis()).unwrap_or(u64::MAX);
    for (key, value) in [
        ("connect_timeout_ms", &svc.connect_timeout_ms),
        ("try_timeout_ms", &svc.try_timeout_ms),
    ] {
        if let Some(v) = value
            && !(1..=timeout_ms).contains(v.get_ref())
        {
            return Err(at(
                v.span(),
                format!("service[{i}].{key}: must be from 1 to timeout_ms ({timeout_ms})"),
            ));
        }
    }
    if let Some(v) = &svc.try_timeout_ms
        && svc.idempotent_operations.is_none()
    {
        return Err(at(
            v.span(),
            format!(
                "service[{i}].try_timeout_ms: has no effect without idempotent_operations (only requests that may be sent twice go to another backend after a sent try)"
            ),
        ));
    }
    if let Some(list) = &svc.idempotent_operations {
        for name in list.get_ref() {
            let n = name.get_ref();
            if n.trim().is_empty() || n.contains(char::is_whitespace) {
                return Err(at(
                    name.span(),
                    format!(
                        "service[{i}].idempotent_operations: {n:?} is not an operation's local name"
                    ),
                ));
            }
            if n == "*" && list.get_ref().len() > 1 {
                return Err(at(
                    name.span(),
                    format!(
                        "service[{i}].idempotent_operations: \"*\" (every operation) stands alone"
                    ),
                ));
            }
        }
    }
    if let Some(v) = &svc.max_attempts
        && !(1..=MAX_ATTEMPTS).contains(v.get_ref())
    {
        return Err(at(
            v.span(),
            format!("service[{i}].max_attempts: must be from 1 to {MAX_ATTEMPTS}"),
        ));
    }
    if let Some(v) = &svc.eject_ms
        && *v.get_ref() == 0
    {
        return Err(at(
            v.span(),
            format!(
                "service[{i}].eject_ms: must be at least 1 (eject_after_failures = 0 turns ejection off)"
            ),
        ));
    }
    if let Some(h) = &svc.health_check {
        check_health(h, i, at)?;
    }
    if let Some(spec) = &svc.upstream
        && let UpstreamSpec::List(list) = spec.get_ref()
    {
        for entry in list {
            if !(1..=crate::MAX_WEIGHT).contains(&entry.get_ref().weight) {
                return Err(at(
                    entry.span(),
                    format!(
                        "service[{i}].upstream: weight {} of {:?} is not between 1 and {}",
                        entry.get_ref().weight,
                        entry.get_ref().url,
                        crate::MAX_WEIGHT
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// `[service.health_check]`: positive times, the timeout within the interval, thresholds
/// from 1 to 100, `soap_action` only with `body`.
fn check_health(
    h: &toml::Spanned<crate::HealthCheckConfig>,
    i: usize,
    at: &impl Fn(std::ops::Range<usize>, String) -> ConfigError,
) -> Result<(), ConfigError> {
    let c = h.get_ref();
    let bad = |why: String| Err(at(h.span(), format!("service[{i}].health_check: {why}")));
    let resolved = c.resolve();
    if resolved.interval.is_zero() || resolved.timeout.is_zero() {
        return bad("interval_ms and timeout_ms must be at least 1".to_owned());
    }
    if resolved.timeout > resolved.interval {
        return bad(format!(
            "timeout_ms ({}) must not be longer than interval_ms ({})",
            resolved.timeout.as_millis(),
            resolved.interval.as_millis()
        ));
    }
    for (key, v) in [
        ("unhealthy_after", c.unhealthy_after),
        ("healthy_after", c.healthy_after),
    ] {
        if let Some(v) = v
            && !(1..=MAX_HEALTH_THRESHOLD).contains(&v)
        {
            return bad(format!("{key} must be from 1 to {MAX_HEALTH_THRESHOLD}"));
        }
    }
    if c.soap_action.is_some() && c.body.is_none() {
        return bad("soap_action needs a body (the envelope to send)".to_owned());
    }
    if c.body.as_ref().is_some_and(|b| b.trim().is_empty()) {
        return bad("body is empty; leave it out to check with GET ?wsdl".to_owned());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::{Balance, Config, Idempotent, Probe};
    use std::time::Duration;

    fn gateway(extra: &str) -> String {
        format!(
            "[[service]]\nname = \"gw\"\npath = \"/gw\"\nupstream = [\"http://127.0.0.1:9/a\", {{ url = \"http://127.0.0.1:9/b\", weight = 3 }}]\ntimeout_ms = 5000\n{extra}"
        )
    }

    fn error(text: &str) -> String {
        Config::from_toml(text, "t.toml").unwrap_err().to_string()
    }

    #[test]
    fn defaults_and_settings_are_read() {
        let config = Config::from_toml(&gateway(""), "t.toml").unwrap();
        let f = config.services[0].failover();
        assert_eq!(f.connect_timeout, Duration::from_secs(2));
        assert_eq!(f.idempotent, Idempotent::None);
        assert_eq!((f.max_attempts, f.eject_after), (3, 3));
        assert_eq!(f.balance, Balance::RoundRobin);
        assert!(!f.expose_backend_errors && f.health_check.is_none());
        let config = Config::from_toml(
            &gateway(
                "connect_timeout_ms = 250\ntry_timeout_ms = 900\nidempotent_operations = [\"Get\"]\nbalance = \"least-outstanding\"\n[service.health_check]\nbody = \"<e/>\"\nsoap_action = \"urn:ping\"\n",
            ),
            "t.toml",
        )
        .unwrap();
        let f = config.services[0].failover();
        assert_eq!(f.connect_timeout, Duration::from_millis(250));
        assert_eq!(f.try_timeout, Some(Duration::from_millis(900)));
        assert_eq!(f.idempotent, Idempotent::Operations(vec!["Get".into()]));
        assert_eq!(f.balance, Balance::LeastOutstanding);
        let check = f.health_check.unwrap();
        assert_eq!(check.interval, Duration::from_secs(5));
        assert!(matches!(check.probe, Probe::Soap { action: Some(a), .. } if a == "urn:ping"));
        match config.services[0].kind() {
            crate::ServiceKind::Gateway(list) => {
                assert_eq!(list.iter().map(|u| u.weight).collect::<Vec<_>>(), [1, 3]);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn bad_failover_keys_are_refused_with_their_line() {
        let echo =
            "[[service]]\nname = \"e\"\npath = \"/e\"\nbuiltin = \"echo\"\nmax_attempts = 2\n";
        assert!(error(echo).contains("t.toml:5") && error(echo).contains("only a gateway"));
        for (extra, says) in [
            (
                "connect_timeout_ms = 6000\n",
                "connect_timeout_ms: must be from 1 to timeout_ms",
            ),
            (
                "try_timeout_ms = 100\n",
                "has no effect without idempotent_operations",
            ),
            ("idempotent_operations = [\"*\", \"Get\"]\n", "stands alone"),
            ("max_attempts = 0\n", "max_attempts: must be from 1"),
            ("eject_ms = 0\n", "eject_ms: must be at least 1"),
            ("balance = \"random\"\n", "unknown variant"),
            (
                "[service.health_check]\ninterval_ms = 100\ntimeout_ms = 200\n",
                "must not be longer than interval_ms",
            ),
            (
                "[service.health_check]\nsoap_action = \"x\"\n",
                "soap_action needs a body",
            ),
        ] {
            let e = error(&gateway(extra));
            assert!(e.contains(says), "{extra}: {e}");
        }
        let heavy = "[[service]]\nname = \"gw\"\npath = \"/gw\"\nupstream = [{ url = \"http://a/x\", weight = 0 }]\n";
        assert!(error(heavy).contains("weight 0"), "{}", error(heavy));
    }
}
