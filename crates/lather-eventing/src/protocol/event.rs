//! An event as published (stamped for delivery in `crate::delivery::stamped`).

use bytes::Bytes;
use lather_envelope::escape::escape_text;
use std::time::{SystemTime, UNIX_EPOCH};

/// One event to publish with [`crate::EventSource::publish_event`].
#[derive(Debug, Clone, Default)]
pub struct Event {
    /// The event: one standalone XML element (the notification's Body content).
    pub payload: Bytes,
    /// The notifications' `wsa:Action`; the source's default when `None`.
    pub action: Option<String>,
    /// The event's topics (`{namespace}local` or plain strings), matched against filters.
    pub topics: Vec<String>,
    /// Extra header blocks every notification of this event carries (e.g. an
    /// authentication or a reference-data header).
    pub headers: Vec<EventHeader>,
}

/// A simple header block: an element with text content and no attributes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventHeader {
    /// The element's namespace.
    pub namespace: String,
    /// The element's local name.
    pub local: String,
    /// Its text.
    pub text: String,
}

impl EventHeader {
    /// The header as an XML element (`<h:local xmlns:h="namespace">text</h:local>`).
    pub fn to_xml(&self) -> String {
        let mut xml = String::new();
        self.write_xml(&mut xml);
        xml
    }

    /// Appends [`EventHeader::to_xml`]'s text to `out`.
    pub(crate) fn write_xml(&self, out: &mut String) {
        out.push_str("<h:");
        out.push_str(&self.local);
        out.push_str(r#" xmlns:h=""#);
        out.push_str(&lather_envelope::escape::escape_attribute(&self.namespace));
        out.push_str(r#"">"#);
        out.push_str(&escape_text(&self.text));
        out.push_str("</h:");
        out.push_str(&self.local);
        out.push('>');
    }

    /// The Clark name `{namespace}local`.
    pub fn clark(&self) -> String {
        format!("{{{}}}{}", self.namespace, self.local)
    }
}

/// Unix nanoseconds now.
pub fn unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_is_one_element_with_its_namespace_and_text_escaped() {
        let header = EventHeader {
            namespace: r#"urn:a?b="c"&d"#.into(),
            local: "Auth".into(),
            text: "<1 & 2>".into(),
        };
        let xml = header.to_xml();
        assert_eq!(
            xml,
            r#"<h:Auth xmlns:h="urn:a?b=&quot;c&quot;&amp;d">&lt;1 &amp; 2&gt;</h:Auth>"#
        );
        let mut appended = String::from("<x/>");
        header.write_xml(&mut appended);
        assert_eq!(appended, format!("<x/>{xml}"));
    }
}
