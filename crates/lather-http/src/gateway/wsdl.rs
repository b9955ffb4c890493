//! Rewriting a backend's WSDL (and the documents it imports) so its endpoint addresses
//! and its imports point at the gateway.

use lather_envelope::escape::escape_attribute;

/// Which kind of document an import names: a WSDL (`location`) or a schema
/// (`schemaLocation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Imported {
    /// `wsdl:import location` (and WSDL 2.0 `include`/`import`).
    Wsdl,
    /// `xsd:import`, `xsd:include`, `xsd:redefine` or `xsd:override` `schemaLocation`.
    Xsd,
}

/// Replaces the `location` attribute of every `address` element (`soap:address`,
/// `soap12:address`, or any prefix) with `endpoint`.
#[cfg(test)]
fn rewrite_locations(wsdl: &str, endpoint: &str) -> String {
    rewrite(wsdl, endpoint, |_, _| None)
}

/// Rewrites `doc`: the `location` of every `address` element becomes `endpoint`, and the
/// location of every import becomes what `link` makes of it (its kind and its value,
/// unescaped), or stays when `link` gives `None`.
pub(crate) fn rewrite(
    doc: &str,
    endpoint: &str,
    link: impl Fn(Imported, &str) -> Option<String>,
) -> String {
    let endpoint = escape_attribute(endpoint).to_string();
    let link = &link;
    let relink = |kind| {
        move |value: &str| link(kind, &unescape(value)).map(|l| escape_attribute(&l).to_string())
    };
    let mut out = String::with_capacity(doc.len() + 64);
    let mut rest = doc;
    while let Some(lt) = rest.find('<') {
        let (before, tag_and_after) = rest.split_at(lt);
        out.push_str(before);
        let name_end = tag_and_after[1..]
            .find(|c: char| c.is_whitespace() || c == '/' || c == '>')
            .map_or(tag_and_after.len(), |i| i + 1);
        let name = &tag_and_after[1..name_end];
        let local = name.rsplit(':').next().unwrap_or(name);
        let rewritten = match local {
            "address" => tag_end(tag_and_after).map(|end| {
                let tag = &tag_and_after[..end];
                (
                    replace_attribute(tag, "location", |_| Some(endpoint.clone())),
                    end,
                )
            }),
            "import" | "include" | "redefine" | "override" => tag_end(tag_and_after).map(|end| {
                let tag = &tag_and_after[..end];
                let tag = replace_attribute(tag, "schemaLocation", relink(Imported::Xsd));
                (
                    replace_attribute(&tag, "location", relink(Imported::Wsdl)),
                    end,
                )
            }),
            _ => None,
        };
        match rewritten {
            Some((tag, end)) => {
                out.push_str(&tag);
                rest = &tag_and_after[end..];
            }
            None => {
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

/// `tag` with the value of its attribute `name` replaced by what `replace` makes of it
/// (`None`: kept).
fn replace_attribute(tag: &str, name: &str, replace: impl Fn(&str) -> Option<String>) -> String {
    let mut search = 0;
    while let Some(i) = tag[search..].find(name) {
        let at = search + i;
        let preceded_by_space = tag[..at].ends_with(|c: char| c.is_whitespace());
        let after = tag[at + name.len()..].trim_start();
        if preceded_by_space && let Some(value) = after.strip_prefix('=') {
            let value = value.trim_start();
            if let Some(q) = value.chars().next().filter(|c| *c == '"' || *c == '\'') {
                let value_start = tag.len() - value.len() + 1;
                if let Some(len) = tag[value_start..].find(q) {
                    let old = &tag[value_start..value_start + len];
                    return match replace(old) {
                        Some(new) => format!(
                            "{}{}{}",
                            &tag[..value_start],
                            new,
                            &tag[value_start + len..]
                        ),
                        None => tag.to_owned(),
                    };
                }
            }
        }
        search = at + name.len();
    }
    tag.to_owned()
}

/// An attribute value with XML's predefined and numeric character references resolved.
fn unescape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        let after = &rest[amp + 1..];
        let Some(semi) = after.find(';') else {
            out.push_str(&rest[amp..]);
            return out;
        };
        let entity = &after[..semi];
        let c = match entity {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            _ => entity
                .strip_prefix("#x")
                .map(|h| u32::from_str_radix(h, 16))
                .or_else(|| entity.strip_prefix('#').map(str::parse))
                .and_then(Result::ok)
                .and_then(char::from_u32),
        };
        match c {
            Some(c) => {
                out.push(c);
                rest = &after[semi + 1..];
            }
            None => {
                out.push('&');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
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

    #[test]
    fn imports_are_relinked_by_kind_and_others_kept() {
        let wsdl = r#"<wsdl:definitions>
<wsdl:import namespace="urn:a" location="more.wsdl?a=1&amp;b=2"/>
<wsdl:types><xsd:schema>
<xsd:import namespace="urn:t" schemaLocation="types.xsd"/>
<xs:include schemaLocation='http://www.w3.org/x.xsd'/>
<redefine schemaLocation="r.xsd"></redefine>
</xsd:schema></wsdl:types>
<wsdl:service><wsdl:port><soap:address location="http://backend/ws"/></wsdl:port></wsdl:service>
</wsdl:definitions>"#;
        let out = rewrite(wsdl, "http://gw/svc", |kind, value| {
            (!value.starts_with("http://www.w3.org")).then(|| format!("GW[{kind:?}:{value}]&"))
        });
        assert!(
            out.contains(r#"location="GW[Wsdl:more.wsdl?a=1&amp;b=2]&amp;""#),
            "{out}"
        );
        assert!(
            out.contains(
                r#"<xsd:import namespace="urn:t" schemaLocation="GW[Xsd:types.xsd]&amp;"/>"#
            ),
            "{out}"
        );
        assert!(
            out.contains(r#"schemaLocation='http://www.w3.org/x.xsd'"#),
            "{out}"
        );
        assert!(
            out.contains(r#"<redefine schemaLocation="GW[Xsd:r.xsd]&amp;">"#),
            "{out}"
        );
        assert!(
            out.contains(r#"<soap:address location="http://gw/svc"/>"#),
            "{out}"
        );
        // namespace="…" is never taken for a location.
        assert!(out.contains(r#"namespace="urn:a""#), "{out}");
    }

    #[test]
    fn attribute_values_are_unescaped() {
        assert_eq!(unescape("a&amp;b&lt;&#x41;&#66;&bogus;&"), "a&b<AB&bogus;&");
    }
}
