//! What a WS-BaseNotification subscription asked for, as the source keeps (and stores) it.

use serde::{Deserialize, Serialize};

/// The topic expression dialects lather reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum TopicDialect {
    /// [`crate::SIMPLE_DIALECT`]: a root topic, `tns:X`.
    Simple,
    /// [`crate::CONCRETE_DIALECT`]: a topic path, `tns:X/Y/Z`.
    Concrete,
}

impl TopicDialect {
    /// The dialect's URI.
    pub fn uri(self) -> &'static str {
        match self {
            TopicDialect::Simple => super::SIMPLE_DIALECT,
            TopicDialect::Concrete => super::CONCRETE_DIALECT,
        }
    }
}

/// One `wsnt:TopicExpression`: its dialect and the topic it names, in Clark notation with
/// the path after the root's name: `{urn:ev}Alarms/Fire`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopicFilter {
    /// The expression's dialect.
    pub dialect: TopicDialect,
    /// The topic, `{namespace}root/child/…`.
    pub topic: String,
}

/// A `wsnt:MessageContent` filter: the expression and the namespaces in scope on it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MessageContent {
    /// The dialect URI (XPath 1.0).
    pub dialect: String,
    /// The expression text.
    pub expression: String,
    /// `(prefix, URI)` in scope on the MessageContent element.
    pub namespaces: Vec<(String, String)>,
}

/// The WS-BaseNotification part of a [`crate::Subscription`]. Such a subscription keeps
/// `version` = WS-Eventing 2004/08 with WS-Addressing 1.0, whose addressing its messages
/// use, has no EndTo, and has its filter here rather than in `topics`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct WsnTerms {
    /// Topic expressions; an event must match each (none = every event).
    #[serde(default)]
    pub topics: Vec<TopicFilter>,
    /// The MessageContent filter, if one was given.
    #[serde(default)]
    pub message_content: Option<MessageContent>,
    /// `wsnt:UseRaw`: deliver the event itself rather than a `wsnt:Notify`.
    #[serde(default)]
    pub raw: bool,
}

impl WsnTerms {
    /// Whether an event with `event_topics` (Clark names and paths) is wanted: it names
    /// every topic of the filter exactly.
    pub fn wants(&self, event_topics: &[String]) -> bool {
        self.topics.iter().all(|f| event_topics.contains(&f.topic))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_topic_expression_must_match_exactly() {
        let terms = |topics: &[&str]| WsnTerms {
            topics: topics
                .iter()
                .map(|t| TopicFilter {
                    dialect: TopicDialect::Concrete,
                    topic: (*t).to_owned(),
                })
                .collect(),
            ..WsnTerms::default()
        };
        let event = ["{urn:ev}Alarm".to_owned(), "{urn:ev}Alarm/Fire".to_owned()];
        assert!(terms(&[]).wants(&event));
        assert!(terms(&["{urn:ev}Alarm/Fire"]).wants(&event));
        assert!(terms(&["{urn:ev}Alarm", "{urn:ev}Alarm/Fire"]).wants(&event));
        assert!(!terms(&["{urn:ev}Alarm/Fire/Big"]).wants(&event));
        assert!(!terms(&["{urn:ev}Alarm/Flood"]).wants(&event));
        assert!(!terms(&["{urn:ev}Alarm", "{urn:x}Alarm"]).wants(&event));
    }

    #[test]
    fn subscriptions_stored_without_the_field_still_load() {
        let json = r#"{"id":"urn:uuid:1","version":"Submission04Wsa10","soap12":true,
            "notify_to":{"address":"http://h/","params":[]},"end_to":null,
            "manager":"http://m/","expires_ms":1,"topics":[]}"#;
        let sub: crate::Subscription = serde_json::from_str(json).unwrap();
        assert_eq!(sub.wsn, None);
    }
}
