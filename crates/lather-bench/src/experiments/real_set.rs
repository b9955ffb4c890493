//! The stage-layouts experiment's real handlers on a real message: A `decompress` (the Body arrives gzip
//! compressed), B `decrypt` (a header block arrives as a WS-Security 1.1 EncryptedHeader,
//! AES-256-GCM), C `audit-file` (every message appended and synced), D `monitor`, E
//! `logging`.
//!
//! A writes the Body and B a header block, so they may share a stage; C, D and E read the
//! message as it entered their stage (`snapshot = true`), so they may run beside A and B —
//! the audit log keeps what was received. The message is made by lather's own `compress`
//! and `encrypt` handlers, so the experiment measures the way back.

use super::files::Scratch;
use super::stage_layouts::SetSpec;
use crate::BenchError;
use lather_envelope::{Envelope, EnvelopeBuilder, Limits, QName, SoapVersion};
use lather_handlers::{Algorithm, Compress, Encrypt, EncryptionAlgorithm, EncryptionKey};
use lather_pipeline::{Context, Message, Options, Outcome, Plan, Step, run};
use std::fmt::Write as _;
use std::sync::Arc;

const SECRET_NS: &str = "urn:lather:experiment";
/// Quote elements in the Body (about 1 MB of XML before compression).
const QUOTES: usize = 12_000;
/// Bytes of text in the encrypted header block.
const SECRET_BYTES: usize = 512 * 1024;

fn fail(what: &str, e: impl std::fmt::Display) -> BenchError {
    BenchError::Experiment(format!("stage layouts, real set: {what}: {e}"))
}

/// The plain message: a large Body of quotes and a large secret header block.
fn plain() -> Result<Envelope, BenchError> {
    let mut body = String::from(r#"<q:putQuotes xmlns:q="urn:lather:quotes">"#);
    for i in 0..QUOTES {
        let _ = write!(
            body,
            r#"<q:quote id="{i}"><q:symbol>SYM{}</q:symbol><q:price>{}.{:02}</q:price><q:venue>XLON</q:venue></q:quote>"#,
            i % 500,
            100 + i % 900,
            i % 100
        );
    }
    body.push_str("</q:putQuotes>");
    let mut secret = format!(r#"<x:Secret xmlns:x="{SECRET_NS}">"#);
    let mut n = 0u64;
    while secret.len() < SECRET_BYTES {
        n = n
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let _ = write!(secret, "{:016x}", n);
    }
    secret.push_str("</x:Secret>");
    let bytes = EnvelopeBuilder::new(SoapVersion::V11)
        .header(secret.into())
        .body(body.into())
        .build();
    Envelope::parse(bytes, &limits()).map_err(|f| fail("plain message", f))
}

fn limits() -> Limits {
    Limits {
        max_message_bytes: 8 * 1024 * 1024,
        ..Limits::default()
    }
}

/// The five handlers and the request they take apart.
pub(crate) fn spec(scratch: &Scratch) -> Result<SetSpec, BenchError> {
    let key_bytes: Vec<u8> = (0u8..32).collect();
    let key_hex: String = key_bytes.iter().map(|b| format!("{b:02x}")).collect();
    let key_file = scratch.write("header.key", format!("{key_hex}\n").as_bytes())?;
    let key = EncryptionKey::new(&key_bytes).map_err(|e| fail("key", e))?;
    let secret = QName::new(SECRET_NS, "Secret");
    let seal = Encrypt::new(key, EncryptionAlgorithm::Aes256Gcm)
        .map_err(|e| fail("encrypt", e))?
        .header(secret);
    let squeeze = Compress::new(Algorithm::Gzip, 0);
    let steps = vec![vec![
        Arc::new(Step::new("compress", Arc::new(squeeze), Options::default())),
        Arc::new(Step::new("encrypt", Arc::new(seal), Options::default())),
    ]];
    let plan = Plan::new(steps).map_err(|e| fail("plan", e))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| fail("runtime", e))?;
    let message = Message::new(plain()?, Context::default());
    let request = match runtime.block_on(run(&plan, message, &limits())) {
        Outcome::Continue(m) => m.into_envelope().as_bytes().clone(),
        other => return Err(fail("making the request", format!("{other:?}"))),
    };
    let audit = scratch.path("audit@SUFFIX@.log");
    Ok(SetSpec {
        title: "real handlers (decompress, decrypt, audit-file, monitor, logging)",
        handlers: [
            (
                "decompress (gzip Body, ~1 MB inflated)".into(),
                "kind = \"decompress\"\nmax_bytes = 8388608\n".into(),
            ),
            (
                "decrypt (512 KB EncryptedHeader, AES-256-GCM)".into(),
                format!(
                    "kind = \"decrypt\"\nkey_file = \"{}\"\nheader = \"{{{SECRET_NS}}}Secret\"\nrequired = true\n",
                    key_file.display()
                ),
            ),
            (
                "audit-file (fsync always)".into(),
                format!(
                    "kind = \"audit-file\"\npath = \"{}\"\nfsync = \"always\"\nsnapshot = true\n",
                    audit.display()
                ),
            ),
            (
                "monitor".into(),
                "kind = \"monitor\"\nsnapshot = true\n".into(),
            ),
            (
                "logging".into(),
                "kind = \"logging\"\nsnapshot = true\n".into(),
            ),
        ],
        body: scratch.write("request.xml", &request)?,
        max_message_bytes: Some(8 * 1024 * 1024),
        computes: true,
    })
}
