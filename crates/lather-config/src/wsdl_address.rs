//! One entry of `wsdl_addresses`: an endpoint address a served WSDL may name, with its
//! weight.

use serde::Deserialize;

/// The largest weight a `wsdl_addresses` entry may have.
pub const MAX_WSDL_WEIGHT: u32 = 1000;

/// One address a served WSDL may name: `"http://a/ws"` (weight 1) or
/// `{ url = "http://a/ws", weight = 3 }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WsdlAddress {
    /// The endpoint URL written into the WSDL's `soap:address`.
    pub url: String,
    /// How many turns of each round it gets (1 to 1000).
    pub weight: u32,
}

impl<'de> Deserialize<'de> for WsdlAddress {
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
            Written::Url(url) => WsdlAddress { url, weight: 1 },
            Written::Table(t) => WsdlAddress {
                url: t.url,
                weight: t.weight.unwrap_or(1),
            },
        })
    }
}
