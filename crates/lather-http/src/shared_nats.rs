//! The NATS connection the shared stores use (event sources' subscriptions, context
//! stores' contexts): the remote stages' link when there is one, else one link made on
//! first need and shared by every such service.

use crate::ServeError;
use crate::state::State;
use lather_config::NatsConfig;
use lather_remote::Link;
use std::sync::Arc;

/// Hands out a connected NATS client, connecting once.
pub(crate) struct SharedNats<'a> {
    state: &'a State,
    nats: &'a NatsConfig,
    link: Option<Arc<Link>>,
}

impl<'a> SharedNats<'a> {
    /// For the `[nats]` table `nats` of a server whose state is `state`.
    pub(crate) fn new(state: &'a State, nats: &'a NatsConfig) -> Self {
        SharedNats {
            state,
            nats,
            link: None,
        }
    }

    /// A connected client and the server's URL (for messages). NATS unreachable →
    /// [`ServeError::NatsUnreachable`] naming the URL.
    pub(crate) async fn client(&mut self) -> Result<(async_nats::Client, String), ServeError> {
        let (state, nats) = (self.state, self.nats);
        let link = self.link.get_or_insert_with(|| {
            state
                .link
                .clone()
                .unwrap_or_else(|| Arc::new(Link::new(nats)))
        });
        link.connect()
            .await
            .map_err(|e| ServeError::NatsUnreachable(e.to_string()))?;
        let client = link.client().cloned().ok_or_else(|| {
            ServeError::NatsUnreachable(format!("{}: no client after connecting", link.url()))
        })?;
        Ok((client, link.url().to_owned()))
    }

    /// The link handed out, if any client was asked for.
    pub(crate) fn into_link(self) -> Option<Arc<Link>> {
        self.link
    }
}

/// The configured services `wants` picks, each with the service serving it.
pub(crate) fn services_where<'a>(
    config: &'a lather_config::Config,
    state: &'a State,
    wants: impl Fn(&lather_config::ServiceConfig) -> bool + 'a,
) -> impl Iterator<
    Item = (
        &'a lather_config::ServiceConfig,
        &'a Arc<crate::service::Service>,
    ),
> + 'a {
    config
        .services
        .iter()
        .filter(move |svc| wants(svc))
        .filter_map(|svc| Some((svc, state.services.get(svc.path.get_ref())?)))
}
