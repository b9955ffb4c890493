//! `wsa`: WS-Addressing 1.0 and 2004/08 — validates requests, fills in responses.

mod headers;
mod reply;
mod validate;
pub(crate) mod version;

use headers::PROPERTIES;
use lather_pipeline::{
    Access, BuildEnv, Direction, Handler, HandlerFuture, HandlerKind, Message, Parts,
    SettingsError, Verdict,
};
use serde::Deserialize;
use std::sync::Arc;
use version::WsaVersion;

/// WS-Addressing for both the W3C Recommendation (1.0, `http://www.w3.org/2005/08/addressing`)
/// and the 2004/08 member submission (`http://schemas.xmlsoap.org/ws/2004/08/addressing`),
/// told apart by the namespace of the headers a request carries.
///
/// **Request flow:** validates. A request mixing the versions, repeating a header
/// (`RelatesTo` may repeat with distinct relationship types), lacking `wsa:Action` (or, in
/// 2004/08, `wsa:To`), with a `ReplyTo`/`FaultTo`/`From` without `wsa:Address`, without
/// `wsa:MessageID` although a reply is to go to a real endpoint (1.0: a `ReplyTo` or
/// `FaultTo` other than anonymous or none; 2004/08: any `ReplyTo` or `FaultTo`), or whose
/// `wsa:Action` differs from a non-empty SOAP action is refused with the version's
/// fault. With `required`, a request without addressing headers is refused too.
///
/// **Response and fault flows:** adds to the answer what it lacks, in the request's
/// version: a fresh `wsa:MessageID` (`urn:uuid:` + a random version 4 UUID),
/// `wsa:RelatesTo` = the request's `MessageID`, `wsa:Action` (`response_action`, else the
/// request's action + `Response`; `{ns}/fault` for faults) and `wsa:To` (the request's
/// `ReplyTo`/`FaultTo` address). A request without addressing headers gets an untouched
/// answer.
#[derive(Debug, Clone, Default)]
pub struct WsAddressing {
    required: bool,
    response_action: Option<String>,
}

impl WsAddressing {
    /// A handler that refuses requests without addressing headers when `required`, and
    /// gives responses the action `response_action` when set.
    pub fn new(required: bool, response_action: Option<String>) -> Self {
        WsAddressing {
            required,
            response_action,
        }
    }
}

impl Handler for WsAddressing {
    /// The addressing headers of both versions: read in requests, read and written in
    /// answers (access is declared per handler, not per flow).
    fn access(&self) -> Access {
        let parts = WsaVersion::ALL
            .into_iter()
            .flat_map(|v| PROPERTIES.map(|local| v.name(local)))
            .fold(Parts::none(), Parts::header);
        Access {
            reads: parts.clone(),
            writes: parts,
        }
    }

    fn call<'a>(&'a self, message: &'a Message) -> HandlerFuture<'a> {
        Box::pin(async move {
            let context = message.context();
            let envelope = message.envelope();
            let result = match context.direction {
                Direction::Request => {
                    validate::validate(envelope, context.action.as_deref(), self.required)
                        .map(|()| lather_pipeline::Patch::new())
                }
                Direction::Response | Direction::Fault => match &context.request {
                    Some(request) => reply::reply_headers(
                        request,
                        context.action.as_deref(),
                        envelope,
                        context.direction == Direction::Fault || envelope.is_fault(),
                        self.response_action.as_deref(),
                    ),
                    None => Ok(lather_pipeline::Patch::new()),
                },
            };
            match result {
                Ok(patch) => Verdict::Continue(patch),
                Err(fault) => Verdict::Fault(fault),
            }
        })
    }
}

/// The `wsa` kind.
#[derive(Debug, Clone, Copy, Default)]
pub struct WsaKind;

/// `[handlers.NAME]` settings of kind `wsa`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WsaSettings {
    /// A request without WS-Addressing headers is refused (default false).
    #[serde(default)]
    pub required: bool,
    /// The `wsa:Action` of responses (default: the request's action + `Response`).
    pub response_action: Option<String>,
}

impl HandlerKind for WsaKind {
    type Settings = WsaSettings;

    fn name(&self) -> &'static str {
        "wsa"
    }

    fn build(
        &self,
        settings: WsaSettings,
        _env: &BuildEnv<'_>,
    ) -> Result<Arc<dyn Handler>, SettingsError> {
        Ok(Arc::new(WsAddressing::new(
            settings.required,
            settings.response_action,
        )))
    }
}
