//! `audit-file`: appends every message to a file.

use bytes::Bytes;
use lather_envelope::{Fault, FaultKind};
use lather_pipeline::{
    Access, BuildEnv, Handler, HandlerFuture, HandlerKind, Message, Parts, SettingsError, Verdict,
};
use serde::Deserialize;
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::oneshot;

/// When the file is flushed to stable storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fsync {
    /// After every record, before the message goes on (durable, slowest).
    Always,
    /// At most this often; a crash may lose the records of the last interval.
    Every(Duration),
    /// Never explicitly; the operating system decides.
    Never,
}

impl Fsync {
    /// `"always"`, `"never"`, or an interval in milliseconds such as `"100ms"`.
    pub fn parse(text: &str) -> Option<Fsync> {
        match text {
            "always" => Some(Fsync::Always),
            "never" => Some(Fsync::Never),
            other => {
                let ms: u64 = other.strip_suffix("ms")?.trim().parse().ok()?;
                Some(Fsync::Every(Duration::from_millis(ms)))
            }
        }
    }
}

/// Appends each message to a file, one record per message:
///
/// ```text
/// lather-audit <id, 32 hex digits> <service> <unix time in ms> <length in bytes>\n
/// <the envelope's bytes>\n
/// ```
///
/// Writes happen on a dedicated thread (never on the I/O threads); the handler waits until
/// its record is written — and, with [`Fsync::Always`], synced — so a failure to write is
/// the handler's failure (`HandlerFailed`, unless `must_perform = false`). Records that
/// arrive while a sync is under way are written and synced together (group commit), so
/// durable auditing keeps up with many messages in flight.
#[derive(Debug)]
pub struct AuditFile {
    records: mpsc::Sender<Record>,
    path: PathBuf,
}

/// One message's record: its head line and the envelope's bytes, shared with the message
/// rather than copied (a large envelope goes from them straight to the file).
struct Record {
    head: String,
    envelope: Bytes,
    done: oneshot::Sender<std::io::Result<()>>,
}

impl Record {
    /// Its length in the file.
    fn len(&self) -> usize {
        self.head.len() + self.envelope.len() + 1
    }

    fn write_to(&self, out: &mut impl Write) -> std::io::Result<()> {
        out.write_all(self.head.as_bytes())?;
        out.write_all(&self.envelope)?;
        out.write_all(b"\n")
    }
}

impl AuditFile {
    /// Opens (creating, appending) `path` and starts the writer thread.
    pub fn open(path: &Path, fsync: Fsync) -> std::io::Result<AuditFile> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        let (records, incoming) = mpsc::channel::<Record>();
        std::thread::Builder::new()
            .name("lather-audit".into())
            .spawn(move || write_loop(file, fsync, incoming))?;
        Ok(AuditFile {
            records,
            path: path.to_owned(),
        })
    }
}

/// Records written together at most (a group commit: one write, one sync).
const GROUP: usize = 256;

fn write_loop(file: File, fsync: Fsync, incoming: mpsc::Receiver<Record>) {
    let mut synced = SyncedRange::new(&file);
    let mut out = BufWriter::new(file);
    let mut last_sync = Instant::now();
    let mut group: Vec<Record> = Vec::with_capacity(GROUP);
    while let Ok(first) = incoming.recv() {
        // Whatever queued while the last group was syncing joins this one: under load one
        // sync covers many records, and each handler still waits for its own.
        group.push(first);
        while group.len() < GROUP {
            match incoming.try_recv() {
                Ok(record) => group.push(record),
                Err(_) => break,
            }
        }
        let mut result = group
            .iter()
            .try_for_each(|r| r.write_to(&mut out))
            .and_then(|()| out.flush());
        synced.wrote(group.iter().map(Record::len).sum());
        let due = match fsync {
            Fsync::Always => true,
            Fsync::Every(every) => last_sync.elapsed() >= every,
            Fsync::Never => false,
        };
        if result.is_ok() && due {
            result = out.get_ref().sync_data();
            last_sync = Instant::now();
            if result.is_ok() {
                synced.release(out.get_ref());
            }
        }
        for record in group.drain(..) {
            let answer = match &result {
                Ok(()) => Ok(()),
                Err(e) => Err(std::io::Error::new(e.kind(), e.to_string())),
            };
            let _ = record.done.send(answer);
        }
    }
    // The handler is gone: one last flush and sync.
    let _ = out.flush();
    let _ = out.get_ref().sync_data();
}

/// The part of the file written since its pages last left the page cache. An audit log is
/// written and not read back, so once a sync has put records on disk their pages are
/// handed back (`POSIX_FADV_DONTNEED`): the log does not push other files out of the cache,
/// and the next records are copied into pages the system already has in hand rather than
/// into fresh memory (on a VM the first touch of a page costs the host a fault too).
struct SyncedRange {
    /// Where the records not yet handed back begin.
    from: u64,
    /// The file's length as far as this writer knows.
    end: u64,
}

impl SyncedRange {
    fn new(file: &File) -> SyncedRange {
        let end = file.metadata().map_or(0, |m| m.len());
        SyncedRange { from: end, end }
    }

    fn wrote(&mut self, bytes: usize) {
        self.end += bytes as u64;
    }

    /// Hands back the pages of what has been synced (an advice: a failure changes nothing).
    fn release(&mut self, file: &File) {
        #[cfg(target_os = "linux")]
        if let Some(len) = std::num::NonZeroU64::new(self.end - self.from) {
            let _ = rustix::fs::fadvise(file, self.from, Some(len), rustix::fs::Advice::DontNeed);
        }
        #[cfg(not(target_os = "linux"))]
        let _ = file;
        self.from = self.end;
    }
}

impl Handler for AuditFile {
    fn access(&self) -> Access {
        Access::read_only(Parts::everything())
    }

    fn call<'a>(&'a self, message: &'a Message) -> HandlerFuture<'a> {
        Box::pin(async move {
            let ctx = message.context();
            let envelope = message.envelope().as_bytes().clone();
            let millis = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_millis());
            let head = format!(
                "lather-audit {:032x} {} {millis} {}\n",
                ctx.id,
                ctx.service,
                envelope.len()
            );
            let (done, written) = oneshot::channel();
            let failed = |why: String| {
                Verdict::Fault(Fault::with_reason(
                    FaultKind::HandlerFailed,
                    format!("audit file {}: {why}", self.path.display()),
                ))
            };
            let record = Record {
                head,
                envelope,
                done,
            };
            if self.records.send(record).is_err() {
                return failed("the writer has stopped".into());
            }
            match written.await {
                Ok(Ok(())) => Verdict::proceed(),
                Ok(Err(e)) => failed(e.to_string()),
                Err(_) => failed("the writer has stopped".into()),
            }
        })
    }
}

/// The `audit-file` kind: its handlers write outside the message, so they are not
/// idempotent.
#[derive(Debug, Clone, Copy, Default)]
pub struct AuditFileKind;

/// `[handlers.NAME]` settings of kind `audit-file`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditFileSettings {
    /// The file messages are appended to (required).
    pub path: String,
    /// `"always"` (default), `"never"`, or an interval like `"100ms"`.
    pub fsync: Option<String>,
}

impl HandlerKind for AuditFileKind {
    type Settings = AuditFileSettings;

    fn name(&self) -> &'static str {
        "audit-file"
    }

    fn idempotent(&self) -> bool {
        false
    }

    fn build(
        &self,
        settings: AuditFileSettings,
        _env: &BuildEnv<'_>,
    ) -> Result<Arc<dyn Handler>, SettingsError> {
        let fsync = match settings.fsync.as_deref() {
            None => Fsync::Always,
            Some(f) => Fsync::parse(f).ok_or_else(|| {
                SettingsError::key(
                    "fsync",
                    format!("{f:?} is not \"always\", \"never\" or an interval like \"100ms\""),
                )
            })?,
        };
        let file = AuditFile::open(Path::new(&settings.path), fsync).map_err(|e| {
            SettingsError::key("path", format!("cannot open {:?}: {e}", settings.path))
        })?;
        Ok(Arc::new(file))
    }
}
