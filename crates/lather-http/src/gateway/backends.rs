//! A gateway's backends: fixed, or followed in a registry (asked every `poll`, the list
//! replaced when it changes; the last good list kept while the registry cannot be asked).
//! A backend keeps its record (failures, ejection, health) while it stays in the list.

use super::backend::Backend;
use lather_config::{RegistryBackends, Upstream};
use std::sync::{Arc, RwLock, Weak};
use std::time::Duration;

/// The backends a gateway forwards to now.
#[derive(Debug)]
pub(crate) enum Backends {
    /// Configured once: read without a lock.
    Fixed(Arc<Vec<Arc<Backend>>>),
    /// Followed in a registry under `name`; `list` is replaced when it changes.
    Followed {
        name: String,
        list: RwLock<Arc<Vec<Arc<Backend>>>>,
    },
}

impl Backends {
    /// Fixed backends.
    pub(crate) fn fixed(list: Vec<Upstream>) -> Arc<Backends> {
        Arc::new(Backends::Fixed(Arc::new(
            list.into_iter()
                .map(|u| Arc::new(Backend::new(u)))
                .collect(),
        )))
    }

    /// Backends followed in a registry by a task that ends with the last reference to
    /// them. Empty until the registry first answers. Must be called within a tokio runtime.
    /// The registry is asked over `outbound`'s TLS when its URL is `https://`.
    pub(crate) fn following(
        source: &RegistryBackends,
        timeout: Duration,
        outbound: &lather_client::OutboundTls,
    ) -> Arc<Backends> {
        let backends = Arc::new(Backends::Followed {
            name: source.name.clone(),
            list: RwLock::new(Arc::new(Vec::new())),
        });
        match lather_context::registry::RegistryClient::with_tls(
            source.registry.url.clone(),
            timeout,
            outbound.clone(),
        ) {
            Ok(client) => {
                tokio::spawn(follow(
                    Arc::downgrade(&backends),
                    client,
                    source.name.clone(),
                    source.poll,
                ));
            }
            Err(e) => {
                tracing::error!(registry = %source.registry.url, "cannot make a registry client: {e}")
            }
        }
        backends
    }

    /// The backends now.
    pub(crate) fn snapshot(&self) -> Arc<Vec<Arc<Backend>>> {
        match self {
            Backends::Fixed(list) => list.clone(),
            Backends::Followed { list, .. } => list
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone(),
        }
    }

    /// Why there is no backend, for the fault.
    pub(crate) fn none_why(&self) -> String {
        match self {
            Backends::Followed { name, .. } => format!("no backend is registered as {name} now"),
            Backends::Fixed(_) => "no backend is configured".to_owned(),
        }
    }

    /// Replaces a followed list; whether it changed.
    fn replace(&self, new: Vec<Upstream>) -> bool {
        let Backends::Followed { list, .. } = self else {
            return false;
        };
        let mut current = list
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let same =
            current.len() == new.len() && current.iter().zip(&new).all(|(b, u)| b.upstream == *u);
        if same {
            return false;
        }
        // Backends still listed keep their record.
        let kept: Vec<Arc<Backend>> = new
            .into_iter()
            .map(|u| {
                current
                    .iter()
                    .find(|b| b.upstream == u)
                    .cloned()
                    .unwrap_or_else(|| Arc::new(Backend::new(u)))
            })
            .collect();
        *current = Arc::new(kept);
        true
    }
}

/// Asks the registry every `poll` while the gateway lives.
async fn follow(
    backends: Weak<Backends>,
    client: lather_context::registry::RegistryClient,
    name: String,
    poll: Duration,
) {
    loop {
        let answer = client.endpoints(&name).await;
        let Some(live) = backends.upgrade() else {
            return;
        };
        match answer {
            Ok(endpoints) => {
                let list: Vec<Upstream> = endpoints
                    .into_iter()
                    .filter_map(|url| match upstream_of(&url) {
                        Some(u) => Some(u),
                        None => {
                            tracing::warn!(
                                name,
                                endpoint = url,
                                "registered endpoint is not an http:// or https:// URL: skipped"
                            );
                            None
                        }
                    })
                    .collect();
                let count = list.len();
                if live.replace(list) {
                    tracing::info!(name, backends = count, "backends from the registry changed");
                }
            }
            Err(e) => tracing::warn!(
                name,
                "cannot ask the registry, keeping the last backends: {e}"
            ),
        }
        drop(live);
        tokio::time::sleep(poll).await;
    }
}

/// A registered endpoint as a backend: an `http://` or `https://` URL with a host.
fn upstream_of(url: &str) -> Option<Upstream> {
    let uri: http::Uri = url.parse().ok()?;
    let scheme_ok = matches!(uri.scheme_str(), Some("http" | "https"));
    (scheme_ok && uri.host().is_some_and(|h| !h.is_empty())).then(|| Upstream {
        url: url.to_owned(),
        uri,
        weight: 1,
    })
}

#[cfg(test)]
mod tests {
    use super::upstream_of;

    #[test]
    fn registered_endpoints_may_be_http_or_https() {
        assert!(upstream_of("http://a:1/ws").is_some());
        assert_eq!(
            upstream_of("https://a:8443/ws").map(|u| u.uri.port_u16()),
            Some(Some(8443))
        );
        for bad in ["ftp://a/ws", "/ws", "https:///ws", "not a url"] {
            assert!(upstream_of(bad).is_none(), "{bad}");
        }
    }
}
