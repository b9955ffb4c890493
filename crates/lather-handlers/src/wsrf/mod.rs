//! `wsrf-resource`: a WS-ResourceFramework-style stateful resource in an embedded redb store.

mod request;
mod store;

use lather_envelope::{Envelope, EnvelopeBuilder, Fault, FaultKind, Limits, QName};
use lather_pipeline::{
    Access, BuildEnv, Handler, HandlerFuture, HandlerKind, Message, Parts, SettingsError, Verdict,
};
use request::Request;
use serde::Deserialize;
use std::path::Path;
use std::sync::Arc;
use store::Store;

pub use store::{MAX_PROPERTIES, MAX_PROPERTY_BYTES};

/// WS-ResourceProperties 1.2 (`wsrp:GetResourceProperty`, `wsrp:SetResourceProperties`).
pub const WSRP_NS: &str = "http://docs.oasis-open.org/wsrf/rp-2";
/// WS-ResourceLifetime 1.2 (`wsrl:Destroy`).
pub const WSRL_NS: &str = "http://docs.oasis-open.org/wsrf/rl-2";
/// lather's resource namespace: the `ResourceId` header block and the bookkeeping
/// properties `MessageCount` and `LastOperation`.
pub const RESOURCE_NS: &str = "urn:lather:wsrf";
/// Local name of the header block naming the resource (a WS-Addressing reference
/// parameter as the client echoes it).
pub const RESOURCE_ID: &str = "ResourceId";
/// Bookkeeping property: messages of other operations recorded on the resource.
const MESSAGE_COUNT: &str = "MessageCount";
/// Bookkeeping property: the operation of the last message recorded, as an `xs:QName`.
const LAST_OPERATION: &str = "LastOperation";
/// Longest resource id accepted, in bytes.
const MAX_ID_BYTES: usize = 256;

/// A stateful resource per `wsrf:ResourceId`, kept in a redb file that survives restarts.
///
/// The resource is named by the header block `<wsrf:ResourceId
/// xmlns:wsrf="urn:lather:wsrf">id</wsrf:ResourceId>` (1 to 256 bytes of text). By the Body's
/// operation:
///
/// - `wsrp:GetResourceProperty` (its text a property QName) → the handler answers itself
///   with `wsrp:GetResourcePropertyResponse` holding the property's elements (none if it
///   holds none); an unknown resource → `ResourceUnknown`.
/// - `wsrp:SetResourceProperties` with `Update` / `Insert` / `Delete` components → all
///   applied in one write transaction (or none, on any refusal), answered with
///   `wsrp:SetResourcePropertiesResponse`; creates the resource if new.
/// - `wsrl:Destroy` → removes the resource and its properties; `wsrl:DestroyResponse`.
/// - any other operation → the message goes on unchanged, and the resource (created if new)
///   records it in one write transaction: `wsrf:MessageCount` + 1, `wsrf:LastOperation`
///   set. Without a `ResourceId` such a message passes untouched.
///
/// A resource operation without a `ResourceId` → `ResourceUnknown`. A new resource beyond
/// `max_resources` → `ResourceStoreFull`. Property values are stored as the bytes of their
/// elements, each carrying the namespace declarations in scope where it was sent.
///
/// Store calls block, so they run on tokio's blocking threads. Every change is one redb
/// write transaction, atomic on commit and durable when the commit returns: a future
/// dropped by a timeout leaves its transaction to finish or abort whole on that thread —
/// never half applied (a timed-out message may still have been recorded).
#[derive(Debug)]
pub struct WsrfResource {
    store: Arc<Store>,
}

/// What the store answered: a response Body, or go on.
enum Answer {
    Respond(String),
    Continue,
}

impl WsrfResource {
    /// Opens (creating if absent) the store at `path`, holding at most `max_resources`
    /// resources. Fails if the file is not a redb database, is corrupted, or is open
    /// elsewhere.
    pub fn open(path: &Path, max_resources: u64) -> Result<WsrfResource, redb::Error> {
        Ok(WsrfResource {
            store: Arc::new(Store::open(path, max_resources)?),
        })
    }

    /// The header block naming the resource.
    pub fn resource_id_header() -> QName {
        QName::new(RESOURCE_NS, RESOURCE_ID)
    }
}

/// The resource id the message names, if it names one.
fn resource_id(envelope: &Envelope) -> Result<Option<String>, Fault> {
    let Some(block) = envelope.header(&WsrfResource::resource_id_header()) else {
        return Ok(None);
    };
    match envelope.header_text(block) {
        Some(id) if !id.is_empty() && id.len() <= MAX_ID_BYTES => Ok(Some(id)),
        _ => Err(Fault::with_reason(
            FaultKind::ResourceUnknown,
            format!("wsrf:{RESOURCE_ID} must hold 1 to {MAX_ID_BYTES} bytes of text"),
        )),
    }
}

/// Runs `request` against the store, on the calling (blocking) thread.
fn answer(store: &Store, id: &str, request: Request) -> Result<Answer, Fault> {
    // Prefixed, so a property element in no namespace stays in none inside it.
    let wrapped = |local: &str, content: &[u8]| {
        let content = String::from_utf8_lossy(content);
        let (prefix, ns) = if local.starts_with("Destroy") {
            ("wsrl", WSRL_NS)
        } else {
            ("wsrp", WSRP_NS)
        };
        Answer::Respond(format!(
            r#"<{prefix}:{local} xmlns:{prefix}="{ns}">{content}</{prefix}:{local}>"#
        ))
    };
    match request {
        Request::Get(name) => Ok(wrapped(
            "GetResourcePropertyResponse",
            &store.get(id, &name)?,
        )),
        Request::Set(changes) => {
            store.set(id, &changes)?;
            Ok(wrapped("SetResourcePropertiesResponse", b""))
        }
        Request::Destroy => {
            store.destroy(id)?;
            Ok(wrapped("DestroyResponse", b""))
        }
        Request::Other(operation) => {
            store.record(id, operation.as_ref())?;
            Ok(Answer::Continue)
        }
    }
}

impl Handler for WsrfResource {
    fn access(&self) -> Access {
        Access::read_only(Parts::none().header(Self::resource_id_header()).body())
    }

    fn call<'a>(&'a self, message: &'a Message) -> HandlerFuture<'a> {
        Box::pin(async move {
            let envelope = message.envelope();
            let prepared = Request::parse(envelope).and_then(|request| {
                let id = resource_id(envelope)?;
                Ok((request, id))
            });
            let (request, id) = match prepared {
                Ok(ready) => ready,
                Err(fault) => return Verdict::Fault(fault),
            };
            let id = match id {
                Some(id) => id,
                None if request.is_resource_operation() => {
                    return Verdict::Fault(Fault::with_reason(
                        FaultKind::ResourceUnknown,
                        format!(
                            "a resource operation needs a <wsrf:{RESOURCE_ID} xmlns:wsrf=\"{RESOURCE_NS}\"> header"
                        ),
                    ));
                }
                None => return Verdict::proceed(),
            };
            let store = self.store.clone();
            let done = tokio::task::spawn_blocking(move || answer(&store, &id, request)).await;
            match done {
                Ok(Ok(Answer::Continue)) => Verdict::proceed(),
                Ok(Ok(Answer::Respond(body))) => {
                    let bytes = EnvelopeBuilder::new(envelope.version())
                        .body(body.into())
                        .build();
                    match Envelope::parse(bytes, &Limits::default()) {
                        Ok(response) => Verdict::Respond(Box::new(response)),
                        Err(fault) => Verdict::Fault(Fault::with_reason(
                            FaultKind::HandlerFailed,
                            format!(
                                "the resource's answer is not an envelope: {}",
                                fault.reason()
                            ),
                        )),
                    }
                }
                Ok(Err(fault)) => Verdict::Fault(fault),
                Err(e) => Verdict::Fault(Fault::with_reason(
                    FaultKind::HandlerFailed,
                    format!("resource store call failed: {e}"),
                )),
            }
        })
    }
}

/// The `wsrf-resource` kind: its handlers keep resources in a store, so they are stateful
/// (never retried, not idempotent).
#[derive(Debug, Clone, Copy, Default)]
pub struct WsrfResourceKind;

/// `[handlers.NAME]` settings of kind `wsrf-resource`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WsrfResourceSettings {
    /// The redb store (required).
    pub path: String,
    /// Most resources the store holds; new ones beyond are refused (default 100 000).
    #[serde(default = "default_max_resources")]
    pub max_resources: u64,
}

/// Resources a store holds unless `max_resources` says otherwise.
fn default_max_resources() -> u64 {
    100_000
}

impl HandlerKind for WsrfResourceKind {
    type Settings = WsrfResourceSettings;

    fn name(&self) -> &'static str {
        "wsrf-resource"
    }

    fn stateful(&self) -> bool {
        true
    }

    fn build(
        &self,
        settings: WsrfResourceSettings,
        _env: &BuildEnv<'_>,
    ) -> Result<Arc<dyn Handler>, SettingsError> {
        let store =
            WsrfResource::open(Path::new(&settings.path), settings.max_resources).map_err(|e| {
                SettingsError::key(
                    "path",
                    format!("cannot open the resource store {:?}: {e}", settings.path),
                )
            })?;
        Ok(Arc::new(store))
    }
}
