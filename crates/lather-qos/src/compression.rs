//! Load-adaptive compression (the seed's dynamic approach): a client says `none`,
//! `required` or `server-decides` (in its QoS header, or through a `[[qos.client]]` rule);
//! `server-decides` — and a request that only sends `Accept-Encoding` — is compressed only
//! while the [`CpuGauge`] reads below `[qos] compress_below_cpu`.

use crate::CpuGauge;
use lather_config::{ClientRule, CompressionPreference, QosConfig};
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

/// The compression rules of a server and the gauge they read.
#[derive(Debug)]
pub struct CompressionPolicy {
    below: u32,
    rules: Vec<ClientRule>,
    gauge: Arc<CpuGauge>,
}

impl CompressionPolicy {
    /// The policy of `qos` (defaults without it), reading `gauge`.
    pub fn new(qos: Option<&QosConfig>, gauge: Arc<CpuGauge>) -> Self {
        CompressionPolicy {
            below: qos.map_or(lather_config::DEFAULT_COMPRESS_BELOW_CPU, |q| {
                q.compress_below_cpu()
            }),
            rules: qos.map(QosConfig::client_rules).unwrap_or_default(),
            gauge,
        }
    }

    /// The gauge read.
    pub fn gauge(&self) -> &Arc<CpuGauge> {
        &self.gauge
    }

    /// The preference that holds for a request: the one it `stated` in its QoS header,
    /// else that of the first `[[qos.client]]` rule matching its `path` and `client`
    /// address, else none.
    pub fn preference(
        &self,
        stated: Option<CompressionPreference>,
        path: &str,
        client: Option<IpAddr>,
    ) -> Option<CompressionPreference> {
        stated.or_else(|| {
            self.rules
                .iter()
                .find(|rule| {
                    rule.path.as_deref().is_none_or(|p| p == path)
                        && rule
                            .network
                            .as_ref()
                            .is_none_or(|net| client.is_some_and(|ip| net.contains(ip)))
                })
                .map(|rule| rule.compression)
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
                if self.gauge.percent() < self.below {
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

    fn policy(qos: &str, cpu: u32) -> CompressionPolicy {
        let config = Config::from_toml(qos, "q.toml").unwrap();
        CompressionPolicy::new(config.qos.as_ref(), CpuGauge::manual(cpu))
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
            p.preference(Some(ServerDecides), "/a", Some(ten)),
            Some(ServerDecides)
        );
        assert_eq!(p.preference(None, "/a", Some(ten)), Some(Never));
        assert_eq!(p.preference(None, "/c", Some(ten)), Some(Required));
        assert_eq!(p.preference(None, "/b", Some(other)), Some(ServerDecides));
        assert_eq!(p.preference(None, "/c", Some(other)), None);
        assert_eq!(p.preference(None, "/c", None), None);
    }
}
