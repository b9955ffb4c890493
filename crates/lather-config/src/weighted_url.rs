//! A URL with a weight: an entry of `wsdl_addresses` (an endpoint address a served WSDL
//! may name) or of a gateway's `upstream` list (a backend).

use serde::Deserialize;

/// The largest weight a `wsdl_addresses` or `upstream` entry may have.
pub const MAX_WEIGHT: u32 = 1000;

/// A URL and how many turns of each round it gets: `"http://a/ws"` (weight 1) or
/// `{ url = "http://a/ws", weight = 3 }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WeightedUrl {
    /// The URL as written.
    pub url: String,
    /// How many turns of each round it gets (1 to 1000).
    pub weight: u32,
}

impl<'de> Deserialize<'de> for WeightedUrl {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written {
            Url(String),
            Table(Weighted),
        }
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Weighted {
            url: String,
            weight: Option<u32>,
        }
        Ok(match Written::deserialize(deserializer)? {
            Written::Url(url) => WeightedUrl { url, weight: 1 },
            Written::Table(t) => WeightedUrl {
                url: t.url,
                weight: t.weight.unwrap_or(1),
            },
        })
    }
}
