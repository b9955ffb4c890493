//! The documents a gateway's WSDL imports, as its clients name them: `?wsdl=PATH` or
//! `?xsd=PATH`, PATH the document's path (and query) on the backend's own origin,
//! percent-encoded. A value is only ever joined to a backend's scheme and authority, so
//! no client can make the gateway fetch from anywhere else.

use super::wsdl::Imported;
use http::Uri;
use http::uri::PathAndQuery;

/// The path and query of a document on the backend's origin, normalized (no dot
/// segments), e.g. `/ws/types.xsd`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct BackendPath(String);

impl BackendPath {
    /// The path and query as the backend is asked for it.
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }

    /// A checked path and query: absolute (`/…`, not `//…`), printable ASCII, no fragment
    /// or backslash; dot segments resolved.
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        if !text.starts_with('/') || text.starts_with("//") {
            return Err("names no absolute path on the backend".to_owned());
        }
        if let Some(c) = text
            .chars()
            .find(|c| !c.is_ascii_graphic() || matches!(c, '\\' | '#'))
        {
            return Err(format!("holds {c:?}"));
        }
        let (path, query) = match text.split_once('?') {
            Some((path, query)) => (path, Some(query)),
            None => (text, None),
        };
        let mut normal = remove_dot_segments(path);
        if let Some(query) = query {
            normal.push('?');
            normal.push_str(query);
        }
        PathAndQuery::try_from(normal.as_str()).map_err(|e| e.to_string())?;
        Ok(BackendPath(normal))
    }
}

/// The document a `?wsdl=…` or `?xsd=…` query asks for, if it asks for one: its kind and
/// path, or why the value names none.
pub(crate) fn requested(query: Option<&str>) -> Option<(Imported, Result<BackendPath, String>)> {
    query?.split('&').find_map(|pair| {
        let (key, value) = pair.split_once('=')?;
        let kind = if key.eq_ignore_ascii_case("wsdl") {
            Imported::Wsdl
        } else if key.eq_ignore_ascii_case("xsd") {
            Imported::Xsd
        } else {
            return None;
        };
        let path = percent_decode(value)
            .ok_or_else(|| "is not percent-encoded UTF-8".to_owned())
            .and_then(|v| BackendPath::parse(&v));
        Some((kind, path))
    })
}

/// The gateway's link to a backend document: `{base}?wsdl=…` or `{base}?xsd=…`.
pub(crate) fn link(base: &str, kind: Imported, path: &BackendPath) -> String {
    let key = match kind {
        Imported::Wsdl => "wsdl",
        Imported::Xsd => "xsd",
    };
    format!("{base}?{key}={}", percent_encode(path.as_str()))
}

/// The document `reference` (a location as written in the document at `doc`) names,
/// when it is on `doc`'s own origin (same scheme, host and port); `None` for another
/// origin, an empty reference or one that cannot be read.
pub(crate) fn on_origin(doc: &Uri, reference: &str) -> Option<BackendPath> {
    let reference = reference.trim();
    let reference = reference.split('#').next().unwrap_or("");
    if reference.is_empty() {
        return None;
    }
    let has_scheme = reference.split_once(':').is_some_and(|(scheme, _)| {
        scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    });
    let target = if has_scheme || reference.starts_with("//") {
        let absolute = if has_scheme {
            reference.to_owned()
        } else {
            format!("{}:{reference}", doc.scheme_str()?)
        };
        let uri: Uri = absolute.parse().ok()?;
        if !same_origin(doc, &uri) {
            return None;
        }
        uri.path_and_query()
            .map_or("/", PathAndQuery::as_str)
            .to_owned()
    } else if reference.starts_with('/') {
        reference.to_owned()
    } else if reference.starts_with('?') {
        format!("{}{reference}", doc.path())
    } else {
        let path = doc.path();
        let dir = &path[..path.rfind('/').map_or(0, |i| i + 1)];
        format!("{}{reference}", if dir.is_empty() { "/" } else { dir })
    };
    BackendPath::parse(&target).ok()
}

/// The URI of `path` on `upstream`'s origin.
pub(crate) fn on(upstream: &Uri, path: &BackendPath) -> Option<Uri> {
    let mut parts = http::uri::Parts::default();
    parts.scheme = upstream.scheme().cloned();
    parts.authority = upstream.authority().cloned();
    parts.path_and_query = Some(PathAndQuery::try_from(path.as_str()).ok()?);
    Uri::from_parts(parts).ok()
}

/// Whether `a` and `b` share scheme, host and (effective) port.
fn same_origin(a: &Uri, b: &Uri) -> bool {
    let port = |u: &Uri| {
        u.port_u16().or(match u.scheme_str() {
            Some(s) if s.eq_ignore_ascii_case("https") => Some(443),
            Some(s) if s.eq_ignore_ascii_case("http") => Some(80),
            _ => None,
        })
    };
    let host = |u: &Uri| u.host().map(str::to_ascii_lowercase);
    a.scheme_str().map(str::to_ascii_lowercase) == b.scheme_str().map(str::to_ascii_lowercase)
        && host(a).is_some()
        && host(a) == host(b)
        && port(a) == port(b)
}

/// `path` without `.` and `..` segments (RFC 3986 §5.2.4); `..` never climbs above `/`.
fn remove_dot_segments(path: &str) -> String {
    let mut kept: Vec<&str> = Vec::new();
    let segments: Vec<&str> = path.split('/').skip(1).collect();
    let last = segments.len().saturating_sub(1);
    for (i, segment) in segments.iter().enumerate() {
        match *segment {
            "." | ".." => {
                if *segment == ".." {
                    kept.pop();
                }
                if i == last {
                    kept.push("");
                }
            }
            s => kept.push(s),
        }
    }
    format!("/{}", kept.join("/"))
}

/// Every byte but the unreserved ones and `/` as `%XX`.
fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `text` with its `%XX` escapes decoded (`+` stays `+`); `None` for a broken escape or
/// a result that is not UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc() -> Uri {
        "http://backend:9000/ws/svc?wsdl".parse().unwrap()
    }

    fn path(s: &str) -> Option<String> {
        on_origin(&doc(), s).map(|p| p.0)
    }

    #[test]
    fn references_resolve_against_the_document_on_its_origin_only() {
        assert_eq!(path("types.xsd").as_deref(), Some("/ws/types.xsd"));
        assert_eq!(path("../common/a.xsd").as_deref(), Some("/common/a.xsd"));
        assert_eq!(path("../../../../x.xsd").as_deref(), Some("/x.xsd"));
        assert_eq!(path("/abs/b.xsd#frag").as_deref(), Some("/abs/b.xsd"));
        assert_eq!(path("?xsd=1").as_deref(), Some("/ws/svc?xsd=1"));
        assert_eq!(
            path("http://BACKEND:9000/ws/c.xsd").as_deref(),
            Some("/ws/c.xsd")
        );
        assert_eq!(path("//backend:9000/d.xsd").as_deref(), Some("/d.xsd"));
        let default_port: Uri = "http://backend/ws".parse().unwrap();
        assert_eq!(
            on_origin(&default_port, "http://backend:80/e.xsd").map(|p| p.0),
            Some("/e.xsd".to_owned())
        );
        for foreign in [
            "http://www.w3.org/2001/xml.xsd",
            "https://backend:9000/ws/c.xsd",
            "http://backend:9001/ws/c.xsd",
            "//other/d.xsd",
            "urn:x",
            "",
        ] {
            assert_eq!(path(foreign), None, "{foreign}");
        }
    }

    #[test]
    fn links_round_trip_through_the_query() {
        let p = BackendPath::parse("/ws/types v2.xsd?a=1&b=%").unwrap_err();
        assert!(p.contains("' '"), "{p}");
        let p = BackendPath::parse("/ws/t.xsd?a=1&b=2").unwrap();
        let l = link("http://gw/svc", Imported::Xsd, &p);
        assert_eq!(l, "http://gw/svc?xsd=/ws/t.xsd%3Fa%3D1%26b%3D2");
        let query = l.split_once('?').unwrap().1;
        let (kind, back) = requested(Some(query)).unwrap();
        assert_eq!(kind, Imported::Xsd);
        assert_eq!(back.unwrap(), p);
        assert_eq!(
            requested(Some("wsdl=%2Fa%2F..%2Fb.wsdl"))
                .unwrap()
                .1
                .unwrap()
                .0,
            "/b.wsdl"
        );
        assert!(requested(Some("wsdl")).is_none());
        assert!(requested(Some("reply=1")).is_none());
    }

    #[test]
    fn values_that_leave_the_origin_are_refused() {
        for bad in [
            "http%3A%2F%2Fevil%2Fx",
            "%2F%2Fevil%2Fx",
            "evil.example/x",
            "%2F%5Cevil",
            "%2Fa%23b",
            "%2Fa%00",
            "%ZZ",
            "%2",
        ] {
            let (_, got) = requested(Some(&format!("xsd={bad}"))).unwrap();
            assert!(got.is_err(), "{bad}: {got:?}");
        }
        let upstream: Uri = "http://backend:9000/ws/svc".parse().unwrap();
        let p = BackendPath::parse("/x/../y.xsd").unwrap();
        assert_eq!(
            on(&upstream, &p).unwrap().to_string(),
            "http://backend:9000/y.xsd"
        );
    }
}
