//! The resources' durable home: one redb file, every change one write transaction.
//!
//! Every function here blocks (file I/O, waiting for the single writer); callers run them
//! on a blocking thread.

use super::request::Change;
use super::{LAST_OPERATION, MESSAGE_COUNT, RESOURCE_NS};
use lather_envelope::{EnvelopeBuilder, Fault, FaultKind, QName};
use redb::{
    Database, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition,
    WriteTransaction,
};
use std::fmt::Display;
use std::path::{Path, PathBuf};

/// Resource id → (messages recorded, properties held, last operation's namespace and local
/// name). A resource exists while it has a row here.
const RESOURCES: TableDefinition<'static, &str, (u64, u32, &str, &str)> =
    TableDefinition::new("resources");
/// (resource id, property name in Clark notation) → the property's elements, each a
/// standalone element, concatenated in document order.
const PROPERTIES: TableDefinition<'static, (&str, &str), &[u8]> =
    TableDefinition::new("properties");

/// Most distinct properties one `wsrf-resource` resource holds.
pub const MAX_PROPERTIES: u32 = 256;
/// Most bytes one `wsrf-resource` property (all its elements together) holds.
pub const MAX_PROPERTY_BYTES: usize = 64 * 1024;

/// The redb database and its bound.
#[derive(Debug)]
pub(crate) struct Store {
    db: Database,
    path: PathBuf,
    max_resources: u64,
}

/// One resource's bookkeeping row.
struct Row<'a> {
    messages: u64,
    properties: u32,
    operation: (&'a str, &'a str),
}

impl Store {
    /// Opens (creating if absent) the store at `path` and makes sure both tables exist, so
    /// an unusable file is found now rather than at the first message.
    pub(crate) fn open(path: &Path, max_resources: u64) -> Result<Store, redb::Error> {
        let db = Database::create(path)?;
        let tx = db.begin_write()?;
        tx.open_table(RESOURCES)?;
        tx.open_table(PROPERTIES)?;
        tx.commit()?;
        Ok(Store {
            db,
            path: path.to_owned(),
            max_resources,
        })
    }

    /// A store failure as the handler's fault.
    fn failed(&self, e: impl Display) -> Fault {
        Fault::with_reason(
            FaultKind::HandlerFailed,
            format!("resource store {}: {e}", self.path.display()),
        )
    }

    /// Records one message of `operation` on resource `id` (creating it if new): increments
    /// `MessageCount`, sets `LastOperation`. Returns the new count.
    pub(crate) fn record(&self, id: &str, operation: Option<&QName>) -> Result<u64, Fault> {
        let tx = self.db.begin_write().map_err(|e| self.failed(e))?;
        let count = {
            let mut resources = tx.open_table(RESOURCES).map_err(|e| self.failed(e))?;
            let (messages, properties) = match resources.get(id).map_err(|e| self.failed(e))? {
                Some(row) => {
                    let (messages, properties, _, _) = row.value();
                    (messages, properties)
                }
                None => {
                    self.admit_new(&resources, id)?;
                    (0, 0)
                }
            };
            let (ns, local) = operation.map_or(("", ""), |op| (op.namespace(), op.local()));
            let row = Row {
                messages: messages.saturating_add(1),
                properties,
                operation: (ns, local),
            };
            put_row(&mut resources, id, &row).map_err(|e| self.failed(e))?;
            row.messages
        };
        tx.commit().map_err(|e| self.failed(e))?;
        Ok(count)
    }

    /// The elements of property `name` of resource `id`, concatenated (empty if it holds
    /// none). The bookkeeping properties are rendered from the resource's row.
    pub(crate) fn get(&self, id: &str, name: &QName) -> Result<Vec<u8>, Fault> {
        let tx = self.db.begin_read().map_err(|e| self.failed(e))?;
        let resources = tx.open_table(RESOURCES).map_err(|e| self.failed(e))?;
        let Some(row) = resources.get(id).map_err(|e| self.failed(e))? else {
            return Err(unknown(id));
        };
        let (messages, _, ns, local) = row.value();
        if name.namespace() == RESOURCE_NS {
            return match name.local() {
                MESSAGE_COUNT => Ok(EnvelopeBuilder::text_element(
                    RESOURCE_NS,
                    "wsrf",
                    MESSAGE_COUNT,
                    &messages.to_string(),
                )
                .to_vec()),
                LAST_OPERATION => Ok(last_operation(ns, local)),
                other => Err(invalid(format!(
                    "{{{RESOURCE_NS}}}{other} is not a property of this resource"
                ))),
            };
        }
        let properties = tx.open_table(PROPERTIES).map_err(|e| self.failed(e))?;
        let clark = name.to_string();
        let value = properties
            .get((id, clark.as_str()))
            .map_err(|e| self.failed(e))?;
        Ok(value.map(|v| v.value().to_vec()).unwrap_or_default())
    }

    /// Applies `changes` to resource `id` (creating it if new) in one write transaction:
    /// all of them, or — on any refusal — none.
    pub(crate) fn set(&self, id: &str, changes: &[Change]) -> Result<(), Fault> {
        let tx = self.db.begin_write().map_err(|e| self.failed(e))?;
        self.apply(&tx, id, changes)?;
        tx.commit().map_err(|e| self.failed(e))
    }

    fn apply(&self, tx: &WriteTransaction, id: &str, changes: &[Change]) -> Result<(), Fault> {
        let mut resources = tx.open_table(RESOURCES).map_err(|e| self.failed(e))?;
        let mut properties = tx.open_table(PROPERTIES).map_err(|e| self.failed(e))?;
        let (messages, mut held, ns, local) = match resources.get(id).map_err(|e| self.failed(e))? {
            Some(row) => {
                let (m, p, ns, local) = row.value();
                (m, p, ns.to_owned(), local.to_owned())
            }
            None => {
                self.admit_new(&resources, id)?;
                (0, 0, String::new(), String::new())
            }
        };
        for change in changes {
            let name = change.property();
            if name.namespace() == RESOURCE_NS {
                return Err(invalid(format!(
                    "{name} is kept by the resource itself and cannot be changed"
                )));
            }
            let clark = name.to_string();
            let key = (id, clark.as_str());
            let old: Option<Vec<u8>> = properties
                .get(key)
                .map_err(|e| self.failed(e))?
                .map(|v| v.value().to_vec());
            let new: Option<Vec<u8>> = match change {
                Change::Update { elements, .. } => Some(elements.clone()),
                Change::Insert { elements, .. } => {
                    let mut all = old.clone().unwrap_or_default();
                    all.extend_from_slice(elements);
                    Some(all)
                }
                Change::Delete { .. } => None,
            };
            match (&old, &new) {
                (None, Some(_)) => held += 1,
                (Some(_), None) => held -= 1,
                _ => {}
            }
            if held > MAX_PROPERTIES {
                return Err(invalid(format!(
                    "a resource holds at most {MAX_PROPERTIES} properties"
                )));
            }
            match new {
                Some(bytes) if bytes.len() > MAX_PROPERTY_BYTES => {
                    return Err(invalid(format!(
                        "property {name} would hold {} bytes; at most {MAX_PROPERTY_BYTES} are allowed",
                        bytes.len()
                    )));
                }
                Some(bytes) => {
                    properties
                        .insert(key, bytes.as_slice())
                        .map_err(|e| self.failed(e))?;
                }
                None => {
                    properties.remove(key).map_err(|e| self.failed(e))?;
                }
            }
        }
        let row = Row {
            messages,
            properties: held,
            operation: (&ns, &local),
        };
        put_row(&mut resources, id, &row).map_err(|e| self.failed(e))
    }

    /// Removes resource `id` and all its properties in one write transaction.
    pub(crate) fn destroy(&self, id: &str) -> Result<(), Fault> {
        let tx = self.db.begin_write().map_err(|e| self.failed(e))?;
        {
            let mut resources = tx.open_table(RESOURCES).map_err(|e| self.failed(e))?;
            if resources.remove(id).map_err(|e| self.failed(e))?.is_none() {
                return Err(unknown(id));
            }
            let mut properties = tx.open_table(PROPERTIES).map_err(|e| self.failed(e))?;
            // Every (id, name) key sorts before (id + "\0", ""): the smallest longer string.
            let after = format!("{id}\0");
            properties
                .retain_in((id, "")..(after.as_str(), ""), |_, _| false)
                .map_err(|e| self.failed(e))?;
        }
        tx.commit().map_err(|e| self.failed(e))
    }

    /// Refuses a new resource when the store is full.
    fn admit_new(&self, resources: &impl ReadableTableMetadata, id: &str) -> Result<(), Fault> {
        let held = resources.len().map_err(|e| self.failed(e))?;
        if held >= self.max_resources {
            return Err(Fault::with_reason(
                FaultKind::ResourceStoreFull,
                format!(
                    "the store holds {held} resources, its maximum; resource {id:?} is not created"
                ),
            ));
        }
        Ok(())
    }
}

fn put_row(
    resources: &mut redb::Table<'_, &str, (u64, u32, &str, &str)>,
    id: &str,
    row: &Row<'_>,
) -> Result<(), redb::StorageError> {
    let (ns, local) = row.operation;
    resources.insert(id, (row.messages, row.properties, ns, local))?;
    Ok(())
}

/// `LastOperation` as an `xs:QName`, its prefix declared on the element.
fn last_operation(ns: &str, local: &str) -> Vec<u8> {
    use lather_envelope::escape::{escape_attribute, escape_text};
    let value = if ns.is_empty() {
        format!(
            r#"<wsrf:{LAST_OPERATION} xmlns:wsrf="{RESOURCE_NS}">{}</wsrf:{LAST_OPERATION}>"#,
            escape_text(local)
        )
    } else {
        format!(
            r#"<wsrf:{LAST_OPERATION} xmlns:wsrf="{RESOURCE_NS}" xmlns:op="{}">op:{}</wsrf:{LAST_OPERATION}>"#,
            escape_attribute(ns),
            escape_text(local)
        )
    };
    value.into_bytes()
}

fn unknown(id: &str) -> Fault {
    Fault::with_reason(
        FaultKind::ResourceUnknown,
        format!("no resource {id:?} is held here"),
    )
}

pub(crate) fn invalid(why: String) -> Fault {
    Fault::with_reason(FaultKind::InvalidResourceRequest, why)
}
