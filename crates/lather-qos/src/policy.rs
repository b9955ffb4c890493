//! What a server gives each request by its QoS requirements (its header, or the first
//! `[[qos.client]]` rule that says): load-adaptive compression (the seed's dynamic
//! approach: `server-decides` — and a request that only sends `Accept-Encoding` — is
//! compressed only while the [`CpuGauge`] reads below `[qos] compress_below_cpu`), and the
//! DiffServ code point of its traffic class.

use crate::CpuGauge;
use lather_config::{ClassRule, ClientRule, CompressionPreference, QosConfig};
use lather_pipeline::Priority;
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;

/// What is done with one response's compression.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Compressed.
    Compress,
    /// Sent as it is: the client did not ask, or said `none`.
    Plain,
    /// Sent as it is because the server is busy (the client left it to the server).
    PlainForLoad,
}

/// Who sent a request, as `[[qos.client]]` rules match it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Requester<'a> {
    /// The service path asked for.
    pub path: &'a str,
    /// The client's address, if known.
    pub address: Option<IpAddr>,
    /// The identity a handler authenticated (e.g. `wsse-username`), once known.
    pub identity: Option<&'a str>,
}

/// A server's QoS rules and the gauge they read.
#[derive(Debug)]
pub struct QosPolicy {
    below: u32,
    rules: Vec<ClientRule>,
    classes: BTreeMap<String, ClassRule>,
    gauge: Arc<CpuGauge>,
}

impl QosPolicy {
    /// The policy of `qos` (defaults without it), reading `gauge`.
    pub fn new(qos: Option<&QosConfig>, gauge: Arc<CpuGauge>) -> Self {
        QosPolicy {
            below: qos.map_or(lather_config::DEFAULT_COMPRESS_BELOW_CPU, |q| {
                q.compress_below_cpu()
            }),
            rules: qos.map(QosConfig::client_rules).unwrap_or_default(),
            classes: qos.map(QosConfig::class_rules).unwrap_or_default(),
            gauge,
        }
    }

    /// The gauge read.
    pub fn gauge(&self) -> &Arc<CpuGauge> {
        &self.gauge
    }

    /// The preference that holds for a request: the one it `stated` in its QoS header,
    /// else that of the first `[[qos.client]]` rule matching its `path` and `client`
    /// address that gives one, else none.
    pub fn preference(
        &self,
        stated: Option<CompressionPreference>,
        who: &Requester<'_>,
    ) -> Option<CompressionPreference> {
        stated.or_else(|| self.matching(who).find_map(|rule| rule.compression))
    }

    /// A request's traffic class: the one it `stated` in its QoS header when that class is
    /// configured and its `allow` lets the client state it, else that of the first
    /// matching rule that gives a class; `None` without either.
    pub fn class(&self, stated: Option<&str>, who: &Requester<'_>) -> Option<&ClassRule> {
        let allowed = |rule: &&ClassRule| {
            rule.allow.is_empty()
                || who
                    .address
                    .is_some_and(|ip| rule.allow.iter().any(|net| net.contains(ip)))
        };
        if let Some(rule) = stated.and_then(|c| self.classes.get(c)).filter(allowed) {
            return Some(rule);
        }
        self.matching(who)
            .find_map(|rule| rule.class.as_deref())
            .and_then(|class| self.classes.get(class))
    }

    /// The DSCP of a request's answer: its [class](Self::class)'s; `None` (the connection
    /// left as it is) when it has none.
    pub fn dscp(&self, stated: Option<&str>, who: &Requester<'_>) -> Option<u8> {
        self.class(stated, who).and_then(|c| c.dscp)
    }

    /// The admission priority of a request: its [class](Self::class)'s, if it sets one.
    pub fn priority(&self, stated: Option<&str>, who: &Requester<'_>) -> Option<Priority> {
        self.class(stated, who)
            .and_then(|c| c.priority.as_deref())
            .and_then(Priority::parse)
    }

    /// Whether any traffic class marks its answers (no marking work otherwise).
    pub fn marks(&self) -> bool {
        self.classes.values().any(|c| c.dscp.is_some())
    }

    /// Whether any traffic class sets an admission priority.
    pub fn ranks(&self) -> bool {
        self.classes.values().any(|c| c.priority.is_some())
    }

    fn matching<'r>(&'r self, who: &'r Requester<'_>) -> impl Iterator<Item = &'r ClientRule> {
        self.rules.iter().filter(move |rule| {
            rule.path.as_deref().is_none_or(|p| p == who.path)
                && rule
                    .network
                    .as_ref()
                    .is_none_or(|net| who.address.is_some_and(|ip| net.contains(ip)))
                && rule
                    .identity
                    .as_deref()
                    .is_none_or(|i| who.identity == Some(i))
        })
    }

    /// Whether a response goes compressed, for a request with `preference` whose client
    /// `accepts_gzip`: `required` always, `none` never, `server-decides` (or no preference
    /// and gzip accepted) while the CPU reads below the threshold — one atomic load.
    pub fn decide(
        &self,
        preference: Option<CompressionPreference>,
        accepts_gzip: bool,
    ) -> Decision {
        match preference {
            Some(CompressionPreference::Required) => Decision::Compress,
            Some(CompressionPreference::None) => Decision::Plain,
            None if !accepts_gzip => Decision::Plain,
            Some(CompressionPreference::ServerDecides) | None => {
                // 100 means whatever the load (the reading may pass 100 at saturation).
                if self.below >= 100 || self.gauge.percent() < self.below {
                    Decision::Compress
                } else {
                    Decision::PlainForLoad
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use CompressionPreference::{None as Never, Required, ServerDecides};
    use lather_config::Config;

    fn who(path: &str, address: Option<IpAddr>) -> Requester<'_> {
        Requester {
            path,
            address,
            identity: None,
        }
    }

    fn policy(qos: &str, cpu: u32) -> QosPolicy {
        let config = Config::from_toml(qos, "q.toml").unwrap();
        QosPolicy::new(config.qos.as_ref(), CpuGauge::manual(cpu))
    }

    #[test]
    fn each_preference_decides_as_the_seed_says() {
        let idle = policy("", 10);
        let busy = policy("", 85);
        for (pref, gzip, when_idle, when_busy) in [
            (
                Some(Required),
                false,
                Decision::Compress,
                Decision::Compress,
            ),
            (Some(Never), true, Decision::Plain, Decision::Plain),
            (
                Some(ServerDecides),
                false,
                Decision::Compress,
                Decision::PlainForLoad,
            ),
            (None, true, Decision::Compress, Decision::PlainForLoad),
            (None, false, Decision::Plain, Decision::Plain),
        ] {
            assert_eq!(idle.decide(pref, gzip), when_idle, "{pref:?} {gzip}");
            assert_eq!(busy.decide(pref, gzip), when_busy, "{pref:?} {gzip}");
        }
        // The threshold is configurable, and the reading moves the decision.
        let strict = policy("[qos]\ncompress_below_cpu = 30\n", 30);
        assert_eq!(strict.decide(None, true), Decision::PlainForLoad);
        strict.gauge().set(29);
        assert_eq!(strict.decide(None, true), Decision::Compress);
        let always = policy("[qos]\ncompress_below_cpu = 100\n", 130);
        assert_eq!(always.decide(None, true), Decision::Compress);
    }

    #[test]
    fn the_stated_class_wins_then_the_first_rule_giving_one() {
        let p = policy(
            "[qos.class.gold]\ndscp = 46\n[qos.class.bulk]\ndscp = 10\n\
             [[qos.client]]\npath = \"/a\"\ncompression = \"none\"\n\
             [[qos.client]]\npath = \"/a\"\nclass = \"bulk\"\n",
            0,
        );
        assert!(p.marks());
        assert_eq!(p.dscp(Some("gold"), &who("/a", None)), Some(46));
        // An unknown class stated falls back to the rules.
        assert_eq!(p.dscp(Some("silver"), &who("/a", None)), Some(10));
        assert_eq!(p.dscp(None, &who("/a", None)), Some(10));
        assert_eq!(p.dscp(None, &who("/b", None)), None);
        assert!(!policy("", 0).marks());
    }

    #[test]
    fn a_class_sets_the_priority_and_only_allowed_clients_may_state_it() {
        let p = policy(
            "[qos.class.gold]\npriority = \"high\"\nallow = [\"10.0.0.0/8\"]\n\
             [qos.class.bulk]\npriority = \"low\"\n\
             [[qos.client]]\npath = \"/a\"\nclass = \"bulk\"\n",
            0,
        );
        let ten: IpAddr = "10.1.2.3".parse().unwrap();
        let other: IpAddr = "192.0.2.1".parse().unwrap();
        assert!(p.ranks());
        assert!(!p.marks());
        assert_eq!(
            p.priority(Some("gold"), &who("/b", Some(ten))),
            Some(Priority::High)
        );
        // Not allowed to state gold: as if it stated nothing — the rule's class, or none.
        assert_eq!(
            p.priority(Some("gold"), &who("/a", Some(other))),
            Some(Priority::Low)
        );
        assert_eq!(p.priority(Some("gold"), &who("/b", Some(other))), None);
        assert_eq!(p.priority(Some("gold"), &who("/b", None)), None);
        assert_eq!(
            p.priority(Some("bulk"), &who("/b", Some(other))),
            Some(Priority::Low)
        );
        assert_eq!(p.dscp(Some("bulk"), &who("/b", None)), None);
    }

    #[test]
    fn the_stated_preference_wins_then_the_first_matching_rule() {
        let p = policy(
            "[qos]\n[[qos.client]]\naddress = \"10.0.0.0/8\"\npath = \"/a\"\ncompression = \"none\"\n\
             [[qos.client]]\naddress = \"10.0.0.0/8\"\ncompression = \"required\"\n\
             [[qos.client]]\npath = \"/b\"\ncompression = \"server-decides\"\n",
            0,
        );
        let ten: IpAddr = "10.1.2.3".parse().unwrap();
        let other: IpAddr = "192.0.2.1".parse().unwrap();
        assert_eq!(
            p.preference(Some(ServerDecides), &who("/a", Some(ten))),
            Some(ServerDecides)
        );
        assert_eq!(p.preference(None, &who("/a", Some(ten))), Some(Never));
        assert_eq!(p.preference(None, &who("/c", Some(ten))), Some(Required));
        assert_eq!(
            p.preference(None, &who("/b", Some(other))),
            Some(ServerDecides)
        );
        assert_eq!(p.preference(None, &who("/c", Some(other))), None);
        assert_eq!(p.preference(None, &who("/c", None)), None);
    }
}
