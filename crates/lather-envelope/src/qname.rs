//! Namespace-qualified names.

use std::fmt;
use std::sync::Arc;

/// A namespace-qualified XML name: namespace URI plus local name.
///
/// The prefix a document used is not part of the name; two names are equal when their
/// namespace URIs and local names are. An empty namespace means "no namespace".
/// `Display` writes Clark notation, `{urn:example}local`.
///
/// Both parts are shared: the parser gives every header block in one namespace the same
/// copy, so a long namespace declared once costs its length once, not once per block; and
/// the names a thread sees again and again (SOAP, WS-Addressing, a service's operations)
/// are allocated once per thread, not once per message.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct QName {
    namespace: Arc<str>,
    local: Arc<str>,
}

impl QName {
    /// A name in `namespace` (empty for none) with the given local part.
    pub fn new(namespace: impl AsRef<str>, local: impl AsRef<str>) -> Self {
        QName {
            namespace: crate::interned::shared(namespace.as_ref()),
            local: crate::interned::shared(local.as_ref()),
        }
    }

    /// This name with its namespace replaced by `shared`, which must hold the same text:
    /// lets equal namespaces share one allocation.
    pub(crate) fn share_namespace(self, shared: &Arc<str>) -> Self {
        debug_assert_eq!(&*self.namespace, &**shared);
        QName {
            namespace: shared.clone(),
            local: self.local,
        }
    }

    /// The namespace as a shared string.
    pub(crate) fn namespace_shared(&self) -> &Arc<str> {
        &self.namespace
    }

    /// The namespace URI; empty when the name is in no namespace.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The local part.
    pub fn local(&self) -> &str {
        &self.local
    }

    /// Whether this name has `namespace` and `local`.
    pub fn is(&self, namespace: &str, local: &str) -> bool {
        &*self.namespace == namespace && &*self.local == local
    }
}

impl fmt::Display for QName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.namespace.is_empty() {
            f.write_str(&self.local)
        } else {
            write!(f, "{{{}}}{}", self.namespace, self.local)
        }
    }
}
