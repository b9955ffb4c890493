//! Reading a configuration file without trusting it: a regular file, bounded in size.

use std::io::Read;
use std::path::Path;

/// The largest configuration file read, in bytes (1 MiB). A larger one is refused rather
/// than read to the end (`--config /dev/zero` would never end).
pub const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

/// The text of the file at `path`, or why it cannot be used (without the path).
pub(crate) fn bounded(path: &Path) -> Result<String, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read: {e}"))?;
    let meta = file.metadata().map_err(|e| format!("cannot read: {e}"))?;
    if !meta.is_file() {
        return Err(format!(
            "cannot read: not a regular file ({}); give the path of a TOML file",
            kind_of(&meta.file_type())
        ));
    }
    let mut bytes = Vec::new();
    file.take(MAX_CONFIG_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read: {e}"))?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Err(format!(
            "cannot read: larger than {MAX_CONFIG_BYTES} bytes, the most a configuration may hold"
        ));
    }
    String::from_utf8(bytes).map_err(|_| "cannot read: not UTF-8 text".to_owned())
}

fn kind_of(kind: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_char_device() {
            return "a character device";
        }
        if kind.is_block_device() {
            return "a block device";
        }
        if kind.is_fifo() {
            return "a pipe";
        }
        if kind.is_socket() {
            return "a socket";
        }
    }
    if kind.is_dir() {
        "a directory"
    } else {
        "a special file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lather_test_util::ScratchDir;

    #[test]
    fn devices_directories_and_big_files_are_refused() {
        let err = bounded(Path::new("/dev/zero")).unwrap_err();
        assert!(
            err.contains("not a regular file (a character device)"),
            "{err}"
        );
        let err = bounded(Path::new("/")).unwrap_err();
        assert!(err.contains("a directory"), "{err}");
        let dir = ScratchDir::new("read");
        let big = dir.join("big.toml");
        std::fs::write(&big, vec![b'#'; MAX_CONFIG_BYTES as usize + 1]).unwrap();
        let err = bounded(&big).unwrap_err();
        assert!(err.contains("larger than 1048576 bytes"), "{err}");
        let fits = dir.join("fits.toml");
        std::fs::write(&fits, vec![b'#'; MAX_CONFIG_BYTES as usize]).unwrap();
        assert_eq!(bounded(&fits).unwrap().len(), MAX_CONFIG_BYTES as usize);
    }
}
