//! Rewriting a backend's WSDL so its endpoint addresses point at the gateway.

use lather_envelope::escape::escape_attribute;

/// Replaces the `location` attribute of every `address` element (`soap:address`,
/// `soap12:address`, or any prefix) with `location`.
pub(crate) fn rewrite_locations(wsdl: &str, location: &str) -> String {
    let replacement = escape_attribute(location);
    let mut out = String::with_capacity(wsdl.len() + 64);
    let mut rest = wsdl;
    while let Some(lt) = rest.find('<') {
        let (before, tag_and_after) = rest.split_at(lt);
        out.push_str(before);
        let name_end = tag_and_after[1..]
            .find(|c: char| c.is_whitespace() || c == '/' || c == '>')
            .map_or(tag_and_after.len(), |i| i + 1);
        let name = &tag_and_after[1..name_end];
        let is_address = name == "address" || name.ends_with(":address");
        match (is_address, tag_end(tag_and_after)) {
            (true, Some(end)) => {
                out.push_str(&replace_location(&tag_and_after[..end], &replacement));
                rest = &tag_and_after[end..];
            }
            _ => {
                out.push('<');
                rest = &tag_and_after[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Index just past the `>` closing the tag at the start of `s`, skipping quoted values.
fn tag_end(s: &str) -> Option<usize> {
    let mut quote = None;
    for (i, c) in s.char_indices() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '>') => return Some(i + 1),
            _ => {}
        }
    }
    None
}

fn replace_location(tag: &str, location: &str) -> String {
    let mut search = 0;
    while let Some(i) = tag[search..].find("location") {
        let at = search + i;
        let preceded_by_space = tag[..at].ends_with(|c: char| c.is_whitespace());
        let after = tag[at + 8..].trim_start();
        if preceded_by_space && let Some(value) = after.strip_prefix('=') {
            let value = value.trim_start();
            if let Some(q) = value.chars().next().filter(|c| *c == '"' || *c == '\'') {
                let value_start = tag.len() - value.len() + 1;
                if let Some(len) = tag[value_start..].find(q) {
                    return format!(
                        "{}{}{}",
                        &tag[..value_start],
                        location,
                        &tag[value_start + len..]
                    );
                }
            }
        }
        search = at + 8;
    }
    tag.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewrites_every_soap_address_and_nothing_else() {
        let wsdl = r#"<definitions><service name="S">
<port name="a"><soap:address location="http://backend:9000/ws"/></port>
<port name="b"><soap12:address  location = 'http://backend:9000/ws' /></port>
<port name="c"><http:address location="http://x"></http:address></port>
<documentation>location="keep" &lt;soap:address location="keep"/&gt;</documentation>
</service></definitions>"#;
        let out = rewrite_locations(wsdl, "http://gw:80/svc?x&y");
        assert!(
            out.contains(r#"<soap:address location="http://gw:80/svc?x&amp;y"/>"#),
            "{out}"
        );
        assert!(
            out.contains(r#"<soap12:address  location = 'http://gw:80/svc?x&amp;y' />"#),
            "{out}"
        );
        assert!(
            out.contains(r#"<http:address location="http://gw:80/svc?x&amp;y">"#),
            "{out}"
        );
        assert!(
            out.contains(r#"location="keep" &lt;soap:address location="keep"/&gt;"#),
            "{out}"
        );
        assert_eq!(out.matches("backend").count(), 0);
    }
}
