//! WS-Topics expressions in the Simple and Concrete dialects, read into Clark notation
//! (`{namespace}root/child`), and written back for a notification's `wsnt:Topic`.

use super::fault::{WsnFault, WsnRefusal, refuse};
use super::terms::{TopicDialect, TopicFilter};
use lather_envelope::escape::{escape_attribute, escape_text};
use lather_envelope::{Element, QName};

/// Most steps a Concrete path may have.
const MAX_STEPS: usize = 32;

/// Reads `expression` in `dialect` (a URI), resolving prefixes on `scope` (the element the
/// expression is the text of).
pub(crate) fn parse(
    dialect: Option<&str>,
    expression: &str,
    scope: &Element,
) -> Result<TopicFilter, WsnRefusal> {
    let dialect = match dialect.map(str::trim) {
        Some(super::SIMPLE_DIALECT) => TopicDialect::Simple,
        Some(super::CONCRETE_DIALECT) => TopicDialect::Concrete,
        Some(other) => {
            return refuse(
                WsnFault::DialectUnknown,
                format!(
                    "topic expression dialect {other:?} is not supported; only {} and {}",
                    super::SIMPLE_DIALECT,
                    super::CONCRETE_DIALECT
                ),
            );
        }
        None => {
            return refuse(
                WsnFault::DialectUnknown,
                "the TopicExpression has no Dialect",
            );
        }
    };
    let expression = expression.trim_matches([' ', '\t', '\r', '\n']);
    let steps: Vec<&str> = match dialect {
        TopicDialect::Simple => vec![expression],
        TopicDialect::Concrete => expression.split('/').collect(),
    };
    if steps.len() > MAX_STEPS {
        return refuse(
            WsnFault::InvalidTopic,
            format!("the topic path has more than {MAX_STEPS} steps"),
        );
    }
    let root = name(steps[0], scope, expression, dialect)?;
    if root.namespace().is_empty() {
        return refuse(
            WsnFault::TopicNotSupported,
            format!(
                "topic {expression:?} is in no namespace; lather's topics are qualified (give the root a prefix)"
            ),
        );
    }
    let mut topic = format!("{{{}}}{}", root.namespace(), root.local());
    for step in &steps[1..] {
        let child = if step.contains(':') {
            name(step, scope, expression, dialect)?
        } else if is_ncname(step) {
            QName::new(root.namespace(), *step)
        } else {
            return invalid(expression, dialect);
        };
        if child.namespace() != root.namespace() {
            return refuse(
                WsnFault::InvalidTopic,
                format!(
                    "topic {expression:?}: child topic {step:?} is not in the root's namespace {}",
                    root.namespace()
                ),
            );
        }
        topic.push('/');
        topic.push_str(child.local());
    }
    Ok(TopicFilter { dialect, topic })
}

/// One `prefix:local` or `local` step resolved on `scope`.
fn name(
    step: &str,
    scope: &Element,
    expression: &str,
    dialect: TopicDialect,
) -> Result<QName, WsnRefusal> {
    let (prefix, local) = step.split_once(':').unwrap_or(("", step));
    if !is_ncname(local) || (step.contains(':') && !is_ncname(prefix)) {
        return invalid(expression, dialect);
    }
    match scope.resolve_qname(step) {
        Some(q) => Ok(q),
        None => refuse(
            WsnFault::InvalidTopic,
            format!("topic {expression:?} uses the undeclared prefix {prefix:?}"),
        ),
    }
}

fn invalid<T>(expression: &str, dialect: TopicDialect) -> Result<T, WsnRefusal> {
    let shape = match dialect {
        TopicDialect::Simple => "a QName (tns:Topic)",
        TopicDialect::Concrete => "a path of names below a QName (tns:Topic/Child)",
    };
    refuse(
        WsnFault::InvalidTopic,
        format!("topic expression {expression:?} is not {shape}"),
    )
}

/// Whether `s` is an XML NCName (ASCII punctuation limited to `_`, `-`, `.`).
fn is_ncname(s: &str) -> bool {
    let mut chars = s.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    (first.is_alphabetic() || first == '_')
        && chars.all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// The `wsnt:Topic` element naming `topic` (Clark notation, maybe with a path) in the
/// dialect it needs; `None` if `topic` is not in Clark notation.
pub(crate) fn element(topic: &str) -> Option<String> {
    let (ns, path) = topic.strip_prefix('{')?.split_once('}')?;
    if path.is_empty() {
        return None;
    }
    let dialect = if path.contains('/') {
        TopicDialect::Concrete
    } else {
        TopicDialect::Simple
    };
    Some(if ns.is_empty() {
        format!(
            r#"<wsnt:Topic Dialect="{}">{}</wsnt:Topic>"#,
            dialect.uri(),
            escape_text(path)
        )
    } else {
        format!(
            r#"<wsnt:Topic Dialect="{}" xmlns:tns="{}">tns:{}</wsnt:Topic>"#,
            dialect.uri(),
            escape_attribute(ns),
            escape_text(path)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::wsn::{CONCRETE_DIALECT, SIMPLE_DIALECT};
    use lather_envelope::Limits;

    fn scope() -> Element {
        Element::parse(
            br#"<f xmlns:tns="urn:ev" xmlns:other="urn:other" xmlns="urn:default"/>"#,
            &Limits::default(),
        )
        .unwrap()
    }

    fn read(dialect: &str, text: &str) -> Result<String, WsnFault> {
        parse(Some(dialect), text, &scope())
            .map(|f| f.topic)
            .map_err(|r| r.fault)
    }

    #[test]
    fn simple_names_a_root_topic() {
        assert_eq!(
            read(SIMPLE_DIALECT, " tns:Alarm ").unwrap(),
            "{urn:ev}Alarm"
        );
        assert_eq!(read(SIMPLE_DIALECT, "Alarm").unwrap(), "{urn:default}Alarm");
        for bad in ["tns:Alarm/Fire", "tns:*", "tns:", "1x", "tns:a b", ""] {
            assert_eq!(
                read(SIMPLE_DIALECT, bad),
                Err(WsnFault::InvalidTopic),
                "{bad}"
            );
        }
        assert_eq!(
            read(SIMPLE_DIALECT, "nope:Alarm"),
            Err(WsnFault::InvalidTopic)
        );
    }

    #[test]
    fn concrete_names_a_path_below_a_qualified_root() {
        assert_eq!(
            read(CONCRETE_DIALECT, "tns:Alarm/Fire/Big").unwrap(),
            "{urn:ev}Alarm/Fire/Big"
        );
        assert_eq!(
            read(CONCRETE_DIALECT, "tns:Alarm/tns:Fire").unwrap(),
            "{urn:ev}Alarm/Fire"
        );
        assert_eq!(
            read(CONCRETE_DIALECT, "tns:Alarm").unwrap(),
            "{urn:ev}Alarm"
        );
        for bad in [
            "tns:Alarm//Fire",
            "tns:Alarm/",
            "tns:Alarm/*",
            "tns:Alarm/other:Fire",
        ] {
            assert_eq!(
                read(CONCRETE_DIALECT, bad),
                Err(WsnFault::InvalidTopic),
                "{bad}"
            );
        }
        let deep = format!("tns:a{}", "/b".repeat(MAX_STEPS));
        assert_eq!(read(CONCRETE_DIALECT, &deep), Err(WsnFault::InvalidTopic));
    }

    #[test]
    fn unqualified_topics_and_other_dialects_are_refused() {
        let plain = Element::parse(b"<f/>", &Limits::default()).unwrap();
        let fault = parse(Some(SIMPLE_DIALECT), "Alarm", &plain)
            .unwrap_err()
            .fault;
        assert_eq!(fault, WsnFault::TopicNotSupported);
        let full = "http://docs.oasis-open.org/wsn/t-1/TopicExpression/Full";
        assert_eq!(read(full, "tns:Alarm"), Err(WsnFault::DialectUnknown));
        assert_eq!(
            parse(None, "tns:Alarm", &scope()).unwrap_err().fault,
            WsnFault::DialectUnknown
        );
    }

    #[test]
    fn topics_are_written_back_in_their_dialect() {
        assert_eq!(
            element("{urn:ev}Alarm/Fire").unwrap(),
            format!(
                r#"<wsnt:Topic Dialect="{CONCRETE_DIALECT}" xmlns:tns="urn:ev">tns:Alarm/Fire</wsnt:Topic>"#
            )
        );
        assert_eq!(
            element("{urn:ev}Alarm").unwrap(),
            format!(
                r#"<wsnt:Topic Dialect="{SIMPLE_DIALECT}" xmlns:tns="urn:ev">tns:Alarm</wsnt:Topic>"#
            )
        );
        assert_eq!(element("plain-topic"), None);
    }
}
