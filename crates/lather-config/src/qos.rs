//! `[qos]`: the WS-QoS settings — when responses are compressed for clients that leave it
//! to the server, and the preferences of clients that cannot send the QoS header.

use crate::ConfigError;
use crate::ipnet::IpNet;
use serde::Deserialize;
use toml::Spanned;

/// Default of `[qos] broker_refresh_s`: offers are sent to the broker again this often.
pub const DEFAULT_BROKER_REFRESH_S: u64 = 60;

/// Default of `[qos] compress_below_cpu`: the seed's threshold.
pub const DEFAULT_COMPRESS_BELOW_CPU: u32 = 80;

/// What a client wants done with its responses' compression.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CompressionPreference {
    /// Never compress (the client cannot afford to decompress, or pays by time).
    None,
    /// Always compress (the client pays by volume, or its link is slow).
    Required,
    /// Compress while the server has CPU to spare.
    ServerDecides,
}

impl CompressionPreference {
    /// The header and configuration spelling: `none`, `required`, `server-decides`.
    pub fn as_str(self) -> &'static str {
        match self {
            CompressionPreference::None => "none",
            CompressionPreference::Required => "required",
            CompressionPreference::ServerDecides => "server-decides",
        }
    }

    /// Reads a spelling of [`CompressionPreference::as_str`].
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "none" => Some(CompressionPreference::None),
            "required" => Some(CompressionPreference::Required),
            "server-decides" => Some(CompressionPreference::ServerDecides),
            _ => None,
        }
    }
}

/// A traffic class (`[qos.class.NAME]`): how its answers are marked and its requests
/// admitted.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QosClass {
    /// The DiffServ code point its answers carry (0–63): the top six bits of the IPv4 TOS
    /// byte or the IPv6 traffic class. None: answers are not marked.
    pub dscp: Option<Spanned<u64>>,
    /// The admission queue its requests wait in: `high`, `normal` or `low` (default: the
    /// `lather-priority` header's, else normal).
    pub priority: Option<Spanned<String>>,
    /// The client addresses or networks that may state this class in their QoS header
    /// (default: any); others are treated as if they had stated none.
    pub allow: Option<Spanned<Vec<Spanned<String>>>>,
}

/// A traffic class, checked and ready to apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassRule {
    /// The code point its answers carry, if any.
    pub dscp: Option<u8>,
    /// Its admission priority's name (`high`, `normal`, `low`), if it sets one.
    pub priority: Option<String>,
    /// Who may state it; empty: anyone.
    pub allow: Vec<IpNet>,
}

/// The `[qos]` table.
///
/// ```toml
/// [qos]
/// compress_below_cpu = 80        # percent of the CPUs lather may use (1–100)
///
/// [qos.class.gold]
/// dscp = 46                      # EF: answers of this class are marked so
/// priority = "high"              # and its requests admitted first
/// allow = ["10.20.0.0/16"]       # who may state it in the header (default: anyone)
///
/// [[qos.client]]                 # for clients that cannot send the QoS header
/// address = "10.20.0.0/16"       # an address or CIDR, and/or
/// path = "/quotes"               # a service path, and/or
/// identity = "alice"             # an authenticated identity (wsse-username)
/// compression = "required"       # none | required | server-decides, and/or
/// class = "gold"                 # a traffic class
/// ```
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QosConfig {
    /// Responses left to the server are compressed only while lather's CPU time over the
    /// last second is below this share of the CPUs it may use, in percent (default 80;
    /// 100: always).
    pub compress_below_cpu: Option<Spanned<u64>>,
    /// The QoS broker (`builtin = "qos-broker"`) this server's offers are registered
    /// with: its URL, e.g. `http://broker:8080/qos`, or `"nats"` to publish them on
    /// `{subject_prefix}.qos.offers` through `[nats]`, where every broker with `[nats]`
    /// takes them (default none).
    pub broker: Option<Spanned<String>>,
    /// Offers are registered again this often, in seconds, besides whenever an adaptive
    /// price moves (default 60).
    pub broker_refresh_s: Option<Spanned<u64>>,
    /// Preferences by client, first match wins; a request's own QoS header overrides.
    #[serde(default, rename = "client")]
    pub clients: Vec<QosClient>,
    /// The traffic classes by name.
    #[serde(default, rename = "class")]
    pub classes: std::collections::BTreeMap<String, QosClass>,
}

/// One `[[qos.client]]` rule.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QosClient {
    /// The client's address or network (`10.0.0.7`, `10.0.0.0/8`, `::1`).
    pub address: Option<Spanned<String>>,
    /// The service path the rule is for.
    pub path: Option<Spanned<String>>,
    /// The identity a handler authenticated (e.g. `wsse-username`'s user name): such a
    /// rule gives compression and marking, not admission priority (admission comes
    /// before the handlers).
    pub identity: Option<Spanned<String>>,
    /// The compression such clients get.
    pub compression: Option<Spanned<CompressionPreference>>,
    /// The traffic class such clients are in.
    pub class: Option<Spanned<String>>,
}

/// A `[[qos.client]]` rule, checked and ready to match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientRule {
    /// The network the client's address must be in, if any.
    pub network: Option<IpNet>,
    /// The service path the request must be for, if any.
    pub path: Option<String>,
    /// The authenticated identity the request must carry, if any.
    pub identity: Option<String>,
    /// The compression the matching clients get, if the rule says.
    pub compression: Option<CompressionPreference>,
    /// The traffic class they are in, if the rule says.
    pub class: Option<String>,
}

impl QosConfig {
    /// `compress_below_cpu`, default filled in.
    pub fn compress_below_cpu(&self) -> u32 {
        self.compress_below_cpu
            .as_ref()
            .map_or(DEFAULT_COMPRESS_BELOW_CPU, |v| {
                u32::try_from(*v.get_ref()).unwrap_or(100)
            })
    }

    /// The client rules, in order (valid once the configuration loaded).
    pub fn client_rules(&self) -> Vec<ClientRule> {
        self.clients
            .iter()
            .map(|c| ClientRule {
                network: c.address.as_ref().and_then(|a| a.get_ref().parse().ok()),
                path: c.path.as_ref().map(|p| p.get_ref().clone()),
                identity: c.identity.as_ref().map(|p| p.get_ref().clone()),
                compression: c.compression.as_ref().map(|p| *p.get_ref()),
                class: c.class.as_ref().map(|p| p.get_ref().clone()),
            })
            .collect()
    }

    /// The traffic classes by name (valid once the configuration loaded).
    pub fn class_rules(&self) -> std::collections::BTreeMap<String, ClassRule> {
        self.classes
            .iter()
            .map(|(name, class)| {
                let rule = ClassRule {
                    dscp: class
                        .dscp
                        .as_ref()
                        .map(|d| u8::try_from(*d.get_ref()).unwrap_or(0)),
                    priority: class
                        .priority
                        .as_ref()
                        .map(|p| p.get_ref().trim().to_ascii_lowercase()),
                    allow: class
                        .allow
                        .iter()
                        .flat_map(|a| a.get_ref())
                        .filter_map(|a| a.get_ref().parse().ok())
                        .collect(),
                };
                (name.clone(), rule)
            })
            .collect()
    }
}

/// Checks `[qos]`: the threshold between 1 and 100, each client rule naming an address or
/// a path, its address a valid address or CIDR.
pub(crate) fn check(
    qos: &QosConfig,
    at: &impl Fn(std::ops::Range<usize>, String) -> ConfigError,
) -> Result<(), ConfigError> {
    if let Some(url) = &qos.broker
        && url.get_ref() != "nats"
        && !(url.get_ref().starts_with("http://") || url.get_ref().starts_with("https://"))
    {
        return Err(at(
            url.span(),
            "qos.broker: the broker's URL, http:// or https://, or \"nats\"".to_owned(),
        ));
    }
    if let Some(v) = &qos.broker_refresh_s
        && !(1..=86_400).contains(v.get_ref())
    {
        return Err(at(
            v.span(),
            "qos.broker_refresh_s: between 1 and 86400 seconds".to_owned(),
        ));
    }
    if let Some(v) = &qos.compress_below_cpu
        && !(1..=100).contains(v.get_ref())
    {
        return Err(at(
            v.span(),
            "qos.compress_below_cpu: must be between 1 and 100 (percent)".to_owned(),
        ));
    }
    for (name, class) in &qos.classes {
        if let Some(dscp) = &class.dscp
            && *dscp.get_ref() > 63
        {
            return Err(at(
                dscp.span(),
                format!("qos.class.{name}.dscp: a DiffServ code point is 0 to 63"),
            ));
        }
        if let Some(priority) = &class.priority
            && !["high", "normal", "low"]
                .contains(&priority.get_ref().trim().to_ascii_lowercase().as_str())
        {
            return Err(at(
                priority.span(),
                format!(
                    "qos.class.{name}.priority: {:?} is not high, normal or low",
                    priority.get_ref()
                ),
            ));
        }
        if let Some(allow) = &class.allow
            && allow.get_ref().is_empty()
        {
            return Err(at(
                allow.span(),
                format!(
                    "qos.class.{name}.allow: name at least one address or network (leave allow out to let any client state the class)"
                ),
            ));
        }
        for address in class.allow.iter().flat_map(|a| a.get_ref()) {
            if let Err(e) = address.get_ref().parse::<IpNet>() {
                return Err(at(address.span(), format!("qos.class.{name}.allow: {e}")));
            }
        }
    }
    for (i, client) in qos.clients.iter().enumerate() {
        // Where the rule is: the first key it has (an empty rule has none to point at).
        let span = client
            .compression
            .as_ref()
            .map(Spanned::span)
            .or_else(|| client.class.as_ref().map(Spanned::span))
            .or_else(|| client.address.as_ref().map(Spanned::span))
            .or_else(|| client.path.as_ref().map(Spanned::span))
            .or_else(|| client.identity.as_ref().map(Spanned::span))
            .unwrap_or_default();
        if client.address.is_none() && client.path.is_none() && client.identity.is_none() {
            return Err(at(
                span,
                format!("qos.client[{i}]: name an address, a path or an identity to match"),
            ));
        }
        if client.compression.is_none() && client.class.is_none() {
            return Err(at(
                span,
                format!("qos.client[{i}]: give a compression or a class"),
            ));
        }
        if let Some(class) = &client.class
            && !qos.classes.contains_key(class.get_ref())
        {
            return Err(at(
                class.span(),
                format!(
                    "qos.client[{i}].class: no [qos.class.{}] is configured",
                    class.get_ref()
                ),
            ));
        }
        if let Some(address) = &client.address
            && let Err(e) = address.get_ref().parse::<IpNet>()
        {
            return Err(at(address.span(), format!("qos.client[{i}].address: {e}")));
        }
        if let Some(path) = &client.path
            && !path.get_ref().starts_with('/')
        {
            return Err(at(
                path.span(),
                format!("qos.client[{i}].path: a service path starts with /"),
            ));
        }
    }
    Ok(())
}
