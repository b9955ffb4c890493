//! Message-context properties: typed values handlers attach to a message for the handlers,
//! services and gateway after them (the authenticated identity first of all).

use std::any::{Any, TypeId};
use std::fmt;
use std::sync::Arc;

/// A value that can travel in a message's context. Any `Clone + PartialEq + Debug + Send +
/// Sync + 'static` type is one; give each meaning its own type (a newtype), since the
/// context holds one value per type.
pub trait PropertyValue: Any + Clone + PartialEq + fmt::Debug + Send + Sync {}

impl<T: Any + Clone + PartialEq + fmt::Debug + Send + Sync> PropertyValue for T {}

/// One property: a value of some [`PropertyValue`] type.
#[derive(Clone)]
pub struct Property {
    type_id: TypeId,
    value: Arc<dyn Any + Send + Sync>,
    eq: fn(&(dyn Any + Send + Sync), &(dyn Any + Send + Sync)) -> bool,
    debug: fn(&(dyn Any + Send + Sync), &mut fmt::Formatter<'_>) -> fmt::Result,
}

impl Property {
    /// Wraps `value`.
    pub fn new<T: PropertyValue>(value: T) -> Self {
        Property {
            type_id: TypeId::of::<T>(),
            value: Arc::new(value),
            eq: |a, b| match (a.downcast_ref::<T>(), b.downcast_ref::<T>()) {
                (Some(a), Some(b)) => a == b,
                _ => false,
            },
            debug: |v, f| match v.downcast_ref::<T>() {
                Some(v) => v.fmt(f),
                None => f.write_str("?"),
            },
        }
    }

    /// The value, if it is a `T`.
    pub fn get<T: PropertyValue>(&self) -> Option<&T> {
        self.value.downcast_ref::<T>()
    }
}

impl PartialEq for Property {
    fn eq(&self, other: &Self) -> bool {
        self.type_id == other.type_id && (self.eq)(&*self.value, &*other.value)
    }
}

impl Eq for Property {}

impl fmt::Debug for Property {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (self.debug)(&*self.value, f)
    }
}

/// The properties of one message, one per type. Cheap to clone (values are shared).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Properties {
    entries: Vec<Property>,
}

impl Properties {
    /// No properties.
    pub fn new() -> Self {
        Properties::default()
    }

    /// The value of type `T`, if set.
    pub fn get<T: PropertyValue>(&self) -> Option<&T> {
        self.entries.iter().find_map(Property::get::<T>)
    }

    /// Sets `value`, replacing a value of the same type.
    pub fn insert<T: PropertyValue>(&mut self, value: T) {
        self.set(Property::new(value));
    }

    /// Sets `property`, replacing one of the same type.
    pub fn set(&mut self, property: Property) {
        match self
            .entries
            .iter_mut()
            .find(|p| p.type_id == property.type_id)
        {
            Some(slot) => *slot = property,
            None => self.entries.push(property),
        }
    }

    /// Whether no property is set.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl fmt::Debug for Properties {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(&self.entries).finish()
    }
}

/// Who sent the message, as a handler established it (e.g. `wsse-username` from a
/// verified UsernameToken): the authenticated user name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Identity(pub String);

impl Identity {
    /// The user name.
    pub fn name(&self) -> &str {
        &self.0
    }
}

/// The certificate the client presented on a TLS connection and the listener verified
/// (`[server.tls] client_auth`): its subject's common name, or its first DNS name when the
/// subject has none. Set by the host for every request on such a connection; a handler
/// may turn it into an [`Identity`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ClientCertificate(pub String);

impl ClientCertificate {
    /// The certificate's name (subject CN, else first DNS name).
    pub fn name(&self) -> &str {
        &self.0
    }
}

/// What the requester's HTTP `Cache-Control` (or `Pragma: no-cache`) asked of caches;
/// set by the host only when the request carries one of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RequestCacheControl {
    /// `no-cache`: do not answer from a cache (a fresh answer may still be stored).
    pub no_cache: bool,
    /// `no-store`: neither answer from a cache nor store the answer.
    pub no_store: bool,
}

impl RequestCacheControl {
    /// The directives in HTTP request headers; `None` when they ask for nothing.
    pub fn from_headers(headers: &http::HeaderMap) -> Option<Self> {
        let mut found = RequestCacheControl::default();
        for value in headers.get_all(http::header::CACHE_CONTROL) {
            for directive in value.to_str().unwrap_or("").split(',') {
                let name = directive.split('=').next().unwrap_or("").trim();
                if name.eq_ignore_ascii_case("no-cache") {
                    found.no_cache = true;
                } else if name.eq_ignore_ascii_case("no-store") {
                    found.no_store = true;
                }
            }
        }
        if headers.get_all(http::header::PRAGMA).iter().any(|v| {
            v.to_str()
                .is_ok_and(|v| v.to_ascii_lowercase().contains("no-cache"))
        }) {
            found.no_cache = true;
        }
        (found != RequestCacheControl::default()).then_some(found)
    }
}

/// The HTTP status of an answer passed on as it came (a gateway's backend answer), set on
/// the response flow's context only when it is not 200 OK.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplyStatus(pub u16);

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, PartialEq)]
    struct Tenant(u32);

    #[test]
    fn one_value_per_type_replaced_by_a_later_set() {
        let mut props = Properties::new();
        assert!(props.get::<Identity>().is_none());
        props.insert(Identity("ann".into()));
        props.insert(Tenant(7));
        props.insert(Identity("bob".into()));
        assert_eq!(props.get::<Identity>().map(Identity::name), Some("bob"));
        assert_eq!(props.get::<Tenant>(), Some(&Tenant(7)));
        assert_eq!(format!("{props:?}"), r#"[Identity("bob"), Tenant(7)]"#);
    }

    #[test]
    fn cache_directives_are_read_from_cache_control_and_pragma() {
        let mut headers = http::HeaderMap::new();
        assert_eq!(RequestCacheControl::from_headers(&headers), None);
        headers.insert("cache-control", "max-age=0, No-Store".parse().unwrap());
        assert_eq!(
            RequestCacheControl::from_headers(&headers),
            Some(RequestCacheControl {
                no_cache: false,
                no_store: true
            })
        );
        headers.remove("cache-control");
        headers.insert("pragma", "no-cache".parse().unwrap());
        assert_eq!(
            RequestCacheControl::from_headers(&headers).map(|c| c.no_cache),
            Some(true)
        );
    }

    #[test]
    fn properties_compare_by_type_and_value() {
        assert_eq!(Property::new(Tenant(1)), Property::new(Tenant(1)));
        assert_ne!(Property::new(Tenant(1)), Property::new(Tenant(2)));
        assert_ne!(
            Property::new(Identity("1".into())),
            Property::new("1".to_owned())
        );
    }
}
