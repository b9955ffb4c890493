//! `require-identity`: lets through only messages an earlier stage authenticated.

use lather_envelope::{Fault, FaultKind};
use lather_pipeline::{
    Access, BuildEnv, Handler, HandlerFuture, HandlerKind, Identity, Message, Parts, SettingsError,
    Verdict,
};
use serde::Deserialize;
use std::collections::BTreeSet;
use std::sync::Arc;

/// Refuses a message whose context carries no authenticated [`Identity`] (set by a handler
/// of an earlier stage, such as `wsse-username`), or one whose identity is not in the allow
/// list, with `wsse:FailedAuthentication` ("could not be authenticated or authorized").
#[derive(Debug, Clone, Default)]
pub struct RequireIdentity {
    allow: Option<BTreeSet<String>>,
}

impl RequireIdentity {
    /// Any authenticated identity passes (`None`), or only those in `allow`.
    pub fn new(allow: Option<impl IntoIterator<Item = String>>) -> Self {
        RequireIdentity {
            allow: allow.map(|names| names.into_iter().collect()),
        }
    }
}

impl Handler for RequireIdentity {
    fn access(&self) -> Access {
        Access::read_only(Parts::none())
    }

    fn call<'a>(&'a self, message: &'a Message) -> HandlerFuture<'a> {
        Box::pin(async move {
            match message.context().properties.get::<Identity>() {
                None => Verdict::Fault(Fault::with_reason(
                    FaultKind::FailedAuthentication,
                    "the message is not authenticated: an authenticating handler \
                     (e.g. wsse-username) must run in an earlier stage",
                )),
                Some(who) if self.allow.as_ref().is_some_and(|a| !a.contains(who.name())) => {
                    Verdict::Fault(Fault::with_reason(
                        FaultKind::FailedAuthentication,
                        "the authenticated user may not use this service",
                    ))
                }
                Some(_) => Verdict::proceed(),
            }
        })
    }
}

/// The `require-identity` kind.
#[derive(Debug, Clone, Copy, Default)]
pub struct RequireIdentityKind;

/// `[handlers.NAME]` settings of kind `require-identity`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequireIdentitySettings {
    /// The user names let through (default: every authenticated user).
    pub allow: Option<Vec<String>>,
}

impl HandlerKind for RequireIdentityKind {
    type Settings = RequireIdentitySettings;

    fn name(&self) -> &'static str {
        "require-identity"
    }

    fn build(
        &self,
        settings: RequireIdentitySettings,
        _env: &BuildEnv<'_>,
    ) -> Result<Arc<dyn Handler>, SettingsError> {
        if settings.allow.as_ref().is_some_and(Vec::is_empty) {
            return Err(SettingsError::key(
                "allow",
                "lists nobody, so every message would be refused; leave it out to let any authenticated user through",
            ));
        }
        Ok(Arc::new(RequireIdentity::new(settings.allow)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lather_envelope::{Envelope, Limits};
    use lather_pipeline::Context;

    fn message(identity: Option<&str>) -> Message {
        let text = r#"<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope"><s:Body><m:x xmlns:m="urn:m"/></s:Body></s:Envelope>"#;
        let envelope =
            Envelope::parse(text.as_bytes().to_vec().into(), &Limits::default()).unwrap();
        let mut context = Context::default();
        if let Some(name) = identity {
            context.properties.insert(Identity(name.to_owned()));
        }
        Message::new(envelope, context)
    }

    fn refused(verdict: Verdict) -> Option<String> {
        match verdict {
            Verdict::Fault(f) if f.kind() == FaultKind::FailedAuthentication => {
                Some(f.reason().to_owned())
            }
            Verdict::Continue(_) => None,
            other => panic!("unexpected {other:?}"),
        }
    }

    #[tokio::test]
    async fn unauthenticated_and_unlisted_users_are_refused() {
        let any = RequireIdentity::new(None::<Vec<String>>);
        assert!(
            refused(any.call(&message(None)).await)
                .unwrap()
                .contains("not authenticated")
        );
        assert_eq!(refused(any.call(&message(Some("ann"))).await), None);
        let listed = RequireIdentity::new(Some(vec!["ann".to_owned()]));
        assert_eq!(refused(listed.call(&message(Some("ann"))).await), None);
        assert!(
            refused(listed.call(&message(Some("bob"))).await)
                .unwrap()
                .contains("may not use")
        );
    }

    #[test]
    fn an_empty_allow_list_is_refused_by_key() {
        let settings = RequireIdentitySettings {
            allow: Some(Vec::new()),
        };
        let resources = lather_pipeline::Resources::new();
        let Err(err) = RequireIdentityKind.build(settings, &BuildEnv::bare("r", &resources)) else {
            panic!("an empty allow list was accepted");
        };
        assert_eq!(err.setting(), Some("allow"));
    }
}
