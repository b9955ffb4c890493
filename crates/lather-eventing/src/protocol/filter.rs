//! The Subscribe's `Filter`: its dialect — lather's topic dialect or XPath 1.0 (the default
//! of both versions) — and what it asks for.

use crate::Subscription;
use crate::protocol::problem::{Problem, Refusal, refuse};
use crate::protocol::request;
use crate::protocol::version::{TOPIC_DIALECT, Version};
use crate::protocol::xpath::{XPATH_DIALECT_2004, XPATH_DIALECT_2011, XPathError, XPathFilter};
use lather_envelope::escape::escape_text;
use lather_envelope::{Element, QName};

/// The dialects a Filter may name.
pub(crate) const DIALECTS: [&str; 5] = [
    TOPIC_DIALECT,
    XPATH_DIALECT_2004,
    XPATH_DIALECT_2011,
    crate::protocol::action_filter::DPWS_ACTION_DIALECT,
    crate::protocol::action_filter::DPWS06_ACTION_DIALECT,
];

/// What a Filter asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Filter {
    /// Events with any of these topics (Clark names or strings).
    Topics(Vec<String>),
    /// Notifications with one of these actions (the DPWS action filter).
    Actions(Vec<String>),
    /// Events for which this XPath 1.0 expression is true.
    XPath(XPathFilter),
}

/// Reads a Filter element. No `Dialect` means XPath 1.0; either XPath URI is accepted in
/// both versions.
pub(crate) fn read(filter: &Element) -> Result<Filter, Refusal> {
    if crate::protocol::action_filter::is_action_filter(filter) {
        return crate::protocol::action_filter::actions(filter).map(Filter::Actions);
    }
    let dialect = filter.attribute(&QName::new("", "Dialect")).map(str::trim);
    match dialect {
        Some(TOPIC_DIALECT) => request::topics(filter).map(Filter::Topics),
        None | Some(XPATH_DIALECT_2004) | Some(XPATH_DIALECT_2011) => xpath(filter),
        Some(other) => refuse(
            Problem::Dialect,
            format!(
                "filter dialect {other:?} is not supported; supported: {}",
                DIALECTS.join(", ")
            ),
        ),
    }
}

/// An XPath Filter: its text is the expression, its in-scope namespaces (the default
/// namespace aside: XPath 1.0 names without a prefix have none) resolve the prefixes.
fn xpath(filter: &Element) -> Result<Filter, Refusal> {
    let expression = filter.text();
    if expression.trim().is_empty() {
        return refuse(Problem::EmptyFilter, "the XPath filter has no expression");
    }
    let namespaces: Vec<(String, String)> = filter
        .namespaces()
        .iter()
        .filter(|(prefix, _)| !prefix.is_empty())
        .cloned()
        .collect();
    match XPathFilter::compile(&expression, &namespaces) {
        Ok(compiled) => Ok(Filter::XPath(compiled)),
        Err(why) => refuse(Problem::BadFilter, why.to_string()),
    }
}

/// The XPath filter a (stored) subscription carries, compiled again; `None` if it has none.
pub(crate) fn xpath_of(sub: &Subscription) -> Result<Option<XPathFilter>, XPathError> {
    if let Some(content) = sub.wsn.as_ref().and_then(|t| t.message_content.as_ref()) {
        return XPathFilter::compile(&content.expression, &content.namespaces).map(Some);
    }
    match &sub.xpath {
        Some(expression) => XPathFilter::compile(expression, &sub.xpath_namespaces).map(Some),
        None => Ok(None),
    }
}

/// The `wse:SupportedDialect` elements of a FilteringRequestedUnavailable fault's detail.
pub(crate) fn supported_dialects(version: Version) -> String {
    let wse = version.eventing_ns();
    DIALECTS
        .iter()
        .map(|d| {
            format!(
                r#"<wse:SupportedDialect xmlns:wse="{wse}">{}</wse:SupportedDialect>"#,
                escape_text(d)
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use lather_envelope::Limits;

    fn read_filter(xml: &str) -> Result<Filter, Refusal> {
        let element = Element::parse(xml.as_bytes(), &Limits::default()).unwrap();
        read(&element)
    }

    #[test]
    fn no_dialect_and_both_xpath_uris_mean_xpath() {
        for dialect in [
            "",
            &format!(r#" Dialect="{XPATH_DIALECT_2004}""#),
            &format!(r#" Dialect="{XPATH_DIALECT_2011}""#),
        ] {
            let xml = format!(r#"<f{dialect} xmlns="urn:default" xmlns:e="urn:ev">e:a</f>"#);
            match read_filter(&xml) {
                Ok(Filter::XPath(x)) => {
                    assert_eq!(x.expression(), "e:a");
                    // The default namespace is not one XPath 1.0 uses.
                    assert_eq!(x.namespaces(), [("e".to_owned(), "urn:ev".to_owned())]);
                }
                other => panic!("{xml}: {other:?}"),
            }
        }
    }

    #[test]
    fn the_topic_dialect_and_unknown_ones() {
        let topic = format!(r#"<f Dialect="{TOPIC_DIALECT}">alarms</f>"#);
        assert_eq!(
            read_filter(&topic),
            Ok(Filter::Topics(vec!["alarms".into()]))
        );
        let other = read_filter(r#"<f Dialect="urn:x">a</f>"#).unwrap_err();
        assert_eq!(other.problem, Problem::Dialect);
        let empty = read_filter("<f> </f>").unwrap_err();
        assert_eq!(empty.problem, Problem::EmptyFilter);
        let bad = read_filter("<f>a[</f>").unwrap_err();
        assert_eq!(bad.problem, Problem::BadFilter);
    }

    #[test]
    fn the_fault_detail_lists_every_dialect_in_the_version_s_namespace() {
        let detail = supported_dialects(Version::Submission04Wsa10);
        for d in DIALECTS {
            assert!(detail.contains(&format!(
                r#"<wse:SupportedDialect xmlns:wse="{}">{d}</wse:SupportedDialect>"#,
                lather_envelope::WSE04_NS
            )));
        }
    }
}
