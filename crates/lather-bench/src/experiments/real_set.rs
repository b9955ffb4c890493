//! Figure 3's real handlers: A decompress, B decrypt, C audit-file, D monitor, E logging.

use super::figure3::SetSpec;
use super::files::Scratch;
use crate::BenchError;

/// The real set needs the `decrypt` handler reading a header block.
pub(crate) fn spec(_scratch: &Scratch) -> Result<SetSpec, BenchError> {
    Err(BenchError::Experiment(
        "the real handler set is not wired yet".into(),
    ))
}
