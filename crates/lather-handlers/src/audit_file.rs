//! `audit-file`: appends every message to a file.

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

struct Record {
    bytes: Vec<u8>,
    done: oneshot::Sender<std::io::Result<()>>,
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
            .try_for_each(|r| out.write_all(&r.bytes))
            .and_then(|()| out.flush());
        let due = match fsync {
            Fsync::Always => true,
            Fsync::Every(every) => last_sync.elapsed() >= every,
            Fsync::Never => false,
        };
        if result.is_ok() && due {
            result = out.get_ref().sync_data();
            last_sync = Instant::now();
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

impl Handler for AuditFile {
    fn access(&self) -> Access {
        Access::read_only(Parts::everything())
    }

    fn call<'a>(&'a self, message: &'a Message) -> HandlerFuture<'a> {
        Box::pin(async move {
            let ctx = message.context();
            let envelope = message.envelope().as_bytes();
            let millis = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_millis());
            let head = format!(
                "lather-audit {:032x} {} {millis} {}\n",
                ctx.id,
                ctx.service,
                envelope.len()
            );
            let mut bytes = Vec::with_capacity(head.len() + envelope.len() + 1);
            bytes.extend_from_slice(head.as_bytes());
            bytes.extend_from_slice(envelope);
            bytes.push(b'\n');
            let (done, written) = oneshot::channel();
            let failed = |why: String| {
                Verdict::Fault(Fault::with_reason(
                    FaultKind::HandlerFailed,
                    format!("audit file {}: {why}", self.path.display()),
                ))
            };
            if self.records.send(Record { bytes, done }).is_err() {
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
