//! Patches: the changes a handler asks for, named by header QName so that handlers of one
//! stage can compute them against the same snapshot.

use crate::access::{Access, Part};
use crate::property::{Property, PropertyValue};
use bytes::Bytes;
use lather_envelope::{Edit, Envelope, Fault, QName};

/// Changes to a message, applied by the engine after the handler's stage.
///
/// Header blocks are named by QName, not position: `replace_header` replaces the first block
/// with that name (or adds one if there is none), `remove_header` removes every block with
/// that name. Each change must be to a part the handler declared in
/// [`Access::writes`](crate::Access); the engine refuses a patch that is not.
#[derive(Debug, Clone, Default)]
pub struct Patch {
    ops: Vec<Op>,
    /// Edits made (and so checked) by the handler, by the index of their op in `ops`:
    /// applied as they are, not checked again ([`Patch::add_checked_header`]).
    checked: Vec<(usize, Edit)>,
}

/// Two patches are equal when they ask for the same changes, whether or not the handler
/// checked their blocks itself.
impl PartialEq for Patch {
    fn eq(&self, other: &Patch) -> bool {
        self.ops == other.ops
    }
}

impl Eq for Patch {}

/// One change of a [`Patch`], as listed by [`Patch::operations`] (e.g. to send a patch to
/// another process and rebuild it there with the matching builder method).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatchOp {
    /// [`Patch::add_header`]: append this block.
    AddHeader(QName, Bytes),
    /// [`Patch::replace_header`]: replace the first block of this name, or add it.
    ReplaceHeader(QName, Bytes),
    /// [`Patch::remove_header`]: remove every block of this name.
    RemoveHeader(QName),
    /// [`Patch::replace_body`]: the Body's new content.
    ReplaceBody(Bytes),
    /// [`Patch::set_property`]: a message-context property for the handlers, service and
    /// gateway after this stage.
    SetProperty(Property),
}

use PatchOp as Op;

impl Patch {
    /// No change.
    pub fn new() -> Self {
        Patch::default()
    }

    /// Whether the patch changes nothing.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Appends the header block `block` (one element named `name`, its namespaces declared
    /// on itself).
    pub fn add_header(mut self, name: QName, block: impl Into<Bytes>) -> Self {
        self.ops.push(Op::AddHeader(name, block.into()));
        self
    }

    /// Appends a header block the handler has checked already, as an edit made with
    /// [`Edit::add_header`] (e.g. to read the block's name with [`Edit::header_name`]): the
    /// same as [`Patch::add_header`] with the edit's bytes, but the engine applies the edit
    /// without checking the bytes a second time. Any other edit is added by its bytes and
    /// checked when applied.
    pub fn add_checked_header(mut self, name: QName, block: Edit) -> Self {
        let bytes = block.content().cloned().unwrap_or_default();
        if block.adds_header() {
            self.checked.push((self.ops.len(), block));
        }
        self.ops.push(Op::AddHeader(name, bytes));
        self
    }

    /// Replaces the first header block named `name` with `block`, or adds `block`.
    pub fn replace_header(mut self, name: QName, block: impl Into<Bytes>) -> Self {
        self.ops.push(Op::ReplaceHeader(name, block.into()));
        self
    }

    /// Removes every header block named `name`.
    pub fn remove_header(mut self, name: QName) -> Self {
        self.ops.push(Op::RemoveHeader(name));
        self
    }

    /// Replaces the Body's content.
    pub fn replace_body(mut self, content: impl Into<Bytes>) -> Self {
        self.ops.push(Op::ReplaceBody(content.into()));
        self
    }

    /// Sets a message-context property (one value per type; a later set replaces an
    /// earlier one) that the stages, the service and the gateway after this stage read
    /// from [`Context::properties`](crate::Context). Properties are not part of a
    /// handler's [`Access`]: handlers of one stage that set the same type are merged in the
    /// stage's order, the last one winning.
    pub fn set_property<T: PropertyValue>(mut self, value: T) -> Self {
        self.ops.push(Op::SetProperty(Property::new(value)));
        self
    }

    /// The properties this patch sets, in order.
    pub fn properties(&self) -> impl Iterator<Item = &Property> {
        self.ops.iter().filter_map(|op| match op {
            Op::SetProperty(p) => Some(p),
            _ => None,
        })
    }

    /// The changes in the order they were asked for.
    pub fn operations(&self) -> &[PatchOp] {
        &self.ops
    }

    /// Appends `op` (the same as calling its builder method).
    pub fn with(mut self, op: PatchOp) -> Self {
        self.ops.push(op);
        self
    }

    /// The first part this patch changes that `access` does not declare as written.
    pub(crate) fn undeclared_write(&self, access: &Access) -> Option<Part> {
        self.ops.iter().find_map(|op| match op {
            Op::AddHeader(name, _) | Op::ReplaceHeader(name, _) | Op::RemoveHeader(name) => {
                (!access.writes.has_header(name)).then(|| Part::Header(name.clone()))
            }
            Op::ReplaceBody(_) => (!access.writes.has_body()).then_some(Part::Body),
            Op::SetProperty(_) => None,
        })
    }

    /// The envelope edits this patch makes to `envelope`, appended to `out`.
    pub(crate) fn edits_for(&self, envelope: &Envelope, out: &mut Vec<Edit>) -> Result<(), Fault> {
        for (index, op) in self.ops.iter().enumerate() {
            match op {
                Op::AddHeader(_, block) => match self.checked.iter().find(|(i, _)| *i == index) {
                    Some((_, checked)) => out.push(checked.clone()),
                    None => out.push(Edit::add_header(block.clone())?),
                },
                Op::ReplaceHeader(name, block) => match envelope.header_index(name) {
                    Some(i) => out.push(Edit::replace_header(i, block.clone())?),
                    None => out.push(Edit::add_header(block.clone())?),
                },
                Op::RemoveHeader(name) => {
                    let named = envelope
                        .headers()
                        .iter()
                        .enumerate()
                        .filter(|(_, b)| b.name() == name);
                    out.extend(named.map(|(i, _)| Edit::remove_header(i)));
                }
                Op::ReplaceBody(content) => out.push(Edit::replace_body(content.clone())?),
                Op::SetProperty(_) => {}
            }
        }
        Ok(())
    }
}
