//! The `Host` header of an HTTP/1.1 request: exactly one, naming a host (RFC 9112 §3.2).

use http::header::HOST;
use http::{Request, Version};

/// What is wrong with the request's `Host`, if anything. HTTP/1.0 may omit it; HTTP/2
/// carries `:authority` instead and is not checked here.
pub(crate) fn problem<B>(req: &Request<B>) -> Option<String> {
    if req.version() != Version::HTTP_11 {
        return None;
    }
    let mut hosts = req.headers().get_all(HOST).iter();
    let Some(host) = hosts.next() else {
        return Some("an HTTP/1.1 request must carry a Host header (RFC 9112 §3.2)".to_owned());
    };
    if hosts.next().is_some() {
        return Some("the request carries more than one Host header (RFC 9112 §3.2)".to_owned());
    }
    // An empty Host is allowed: it goes with a target URI that has no authority.
    let valid = host
        .to_str()
        .is_ok_and(|text| text.is_empty() || is_host_port(text));
    if valid {
        return None;
    }
    let shown = String::from_utf8_lossy(host.as_bytes());
    let cut = shown.floor_char_boundary(100);
    Some(format!(
        "Host {:?} is not host[:port] (RFC 9112 §3.2)",
        &shown[..cut]
    ))
}

/// `uri-host [ ":" port ]` (RFC 3986): an IP literal in brackets or a reg-name / IPv4
/// address, and a port of digits.
fn is_host_port(text: &str) -> bool {
    let Some(parts) = crate::authority::split(text) else {
        return false;
    };
    let host_ok = parts
        .host
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-._~%!$&'()*+,;=".contains(&b));
    let port_ok = parts
        .port
        .is_none_or(|p| p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()));
    (parts.literal || !parts.host.is_empty()) && host_ok && port_ok
}

#[cfg(test)]
mod tests {
    use super::problem;
    use http::{Request, Version};

    fn request(version: Version, hosts: &[&str]) -> Request<()> {
        let mut builder = Request::builder().uri("/echo").version(version);
        for host in hosts {
            builder = builder.header("host", *host);
        }
        builder.body(()).unwrap()
    }

    #[test]
    fn one_valid_host_on_http11() {
        assert_eq!(problem(&request(Version::HTTP_11, &["a.example:80"])), None);
        assert_eq!(problem(&request(Version::HTTP_11, &["[::1]:8080"])), None);
        assert_eq!(problem(&request(Version::HTTP_11, &[""])), None);
        assert_eq!(problem(&request(Version::HTTP_10, &[])), None);
        assert!(
            problem(&request(Version::HTTP_11, &[]))
                .unwrap()
                .contains("must carry")
        );
        assert!(
            problem(&request(Version::HTTP_11, &["a", "b"]))
                .unwrap()
                .contains("more than one")
        );
        for bad in ["a b", "u@host", "host:port", "a/b"] {
            let why = problem(&request(Version::HTTP_11, &[bad])).unwrap();
            assert!(why.contains("is not host[:port]"), "{bad}: {why}");
        }
        let long = "x".repeat(10_000) + " y";
        assert!(problem(&request(Version::HTTP_11, &[&long])).unwrap().len() < 200);
    }
}
