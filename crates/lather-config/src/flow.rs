//! A flow as written: explicit stages, or handlers for the engine to plan (`auto`).

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use std::fmt;
use toml::Spanned;

/// A flow: `[["a", "b"], ["c"]]` (stages in order, each a list of handlers that run
/// concurrently) or `{ auto = ["a", "b", "c"] }` (the engine plans the stages from the
/// handlers' accesses and `after` orders).
pub type Flow = Spanned<FlowSpec>;

/// What a flow says, once read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlowSpec {
    /// Stages given by hand.
    Stages(Vec<Vec<Spanned<String>>>),
    /// Handlers whose stages the engine plans.
    Auto(Vec<Spanned<String>>),
}

impl FlowSpec {
    /// Every handler name the flow mentions, in the order written.
    pub fn names(&self) -> Vec<&Spanned<String>> {
        match self {
            FlowSpec::Stages(stages) => stages.iter().flatten().collect(),
            FlowSpec::Auto(names) => names.iter().collect(),
        }
    }
}

impl<'de> Deserialize<'de> for FlowSpec {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(FlowVisitor)
    }
}

struct FlowVisitor;

impl<'de> Visitor<'de> for FlowVisitor {
    type Value = FlowSpec;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(r#"a list of stages like [["a", "b"], ["c"]] or { auto = ["a", "b", "c"] }"#)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<FlowSpec, A::Error> {
        let mut stages = Vec::new();
        while let Some(stage) = seq.next_element::<Vec<Spanned<String>>>()? {
            stages.push(stage);
        }
        Ok(FlowSpec::Stages(stages))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<FlowSpec, A::Error> {
        let mut names = None;
        while let Some(key) = map.next_key::<String>()? {
            if key != "auto" {
                return Err(de::Error::custom(format!(
                    "unknown key {key:?} in a flow; the only one is `auto`"
                )));
            }
            names = Some(map.next_value::<Vec<Spanned<String>>>()?);
        }
        names
            .map(FlowSpec::Auto)
            .ok_or_else(|| de::Error::custom("a flow table needs `auto = [\"a\", \"b\"]`"))
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<FlowSpec, E> {
        Err(if text == "auto" {
            E::custom(r#""auto" needs the handlers to plan: write { auto = ["a", "b", "c"] }"#)
        } else {
            E::invalid_value(de::Unexpected::Str(text), &self)
        })
    }
}
