//! The header compaction pair: `context-compact` on the sending side replaces the
//! configured header blocks by one reference header naming a context in a store (made on
//! first use, reused while the blocks are unchanged); `context-expand` on the receiving side
//! puts the blocks back, checking them against the reference's digest.

mod compact;
mod expand;
mod reference;
mod settings;

pub use compact::{CompactHandler, CompactKind};
pub use expand::{ExpandHandler, ExpandKind};
pub use reference::{REFERENCE_LOCAL, Reference};
pub use settings::{CompactionSettings, default_headers};

use lather_envelope::QName;
use lather_pipeline::{Access, Parts};

/// What both kinds read and write: the reference header and the compacted blocks.
fn header_access(names: &[QName]) -> Access {
    let parts = names
        .iter()
        .fold(Parts::none().header(Reference::name()), |p, n| {
            p.header(n.clone())
        });
    Access::read_write(parts)
}
