//! Envelopes indented for reading: each element on its own line, two spaces a level; text
//! stays where it is. Only for display: what is forwarded is never changed.

/// `xml` indented; anything that is not UTF-8 is shown lossily.
pub(crate) fn indent(xml: &[u8]) -> String {
    let text = String::from_utf8_lossy(xml);
    let mut out = String::with_capacity(text.len() + text.len() / 4);
    let mut depth: usize = 0;
    let mut rest = text.trim();
    // Whether the last thing written was a start tag whose text may follow on its line.
    let mut open_inline = false;
    while !rest.is_empty() {
        if rest.starts_with('<') {
            let Some(tag_end) = rest.find('>') else {
                newline(&mut out, depth);
                out.push_str(rest);
                break;
            };
            let tag = &rest[..=tag_end];
            rest = &rest[tag_end + 1..];
            let closing = tag.starts_with("</");
            let empty = tag.ends_with("/>") || tag.starts_with("<?") || tag.starts_with("<!");
            if closing {
                depth = depth.saturating_sub(1);
                if !open_inline {
                    newline(&mut out, depth);
                }
                out.push_str(tag);
                open_inline = false;
            } else {
                newline(&mut out, depth);
                out.push_str(tag);
                open_inline = !empty;
                if !empty {
                    depth += 1;
                }
            }
        } else {
            let end = rest.find('<').unwrap_or(rest.len());
            let text = rest[..end].trim();
            if !text.is_empty() {
                if !open_inline {
                    newline(&mut out, depth);
                }
                out.push_str(text);
            }
            rest = &rest[end..];
        }
    }
    out.trim_start().to_owned()
}

fn newline(out: &mut String, depth: usize) {
    if !out.is_empty() {
        out.push('\n');
    }
    for _ in 0..depth {
        out.push_str("  ");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_go_on_their_own_lines_and_text_stays_with_its_element() {
        let xml = br#"<?xml version="1.0"?><s:Envelope xmlns:s="urn:s"><s:Body><m:echo xmlns:m="urn:m"><text>hi there</text><e/></m:echo></s:Body></s:Envelope>"#;
        assert_eq!(
            indent(xml),
            "<?xml version=\"1.0\"?>\n<s:Envelope xmlns:s=\"urn:s\">\n  <s:Body>\n    <m:echo xmlns:m=\"urn:m\">\n      <text>hi there</text>\n      <e/>\n    </m:echo>\n  </s:Body>\n</s:Envelope>"
        );
    }

    #[test]
    fn broken_markup_is_shown_as_it_is() {
        assert_eq!(indent(b"<a><b"), "<a>\n  <b");
        assert_eq!(indent(b"plain text"), "plain text");
    }
}
