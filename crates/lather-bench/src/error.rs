//! The error type of the load generator.

use std::io;
use std::path::PathBuf;

/// Why a benchmark could not be run.
///
/// Failures of individual requests are not errors: they are counted in the
/// [`Report`](crate::Report).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BenchError {
    /// The target URL is malformed or not `http://`.
    #[error("invalid URL {url:?}: {reason}")]
    InvalidUrl {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The target host name could not be resolved.
    #[error("cannot resolve {host}: {source}")]
    Resolve {
        /// `host:port` that was looked up.
        host: String,
        /// The resolver error.
        #[source]
        source: io::Error,
    },
    /// The `--body` file could not be read.
    #[error("cannot read request body from {}: {source}", path.display())]
    ReadBody {
        /// The file given with `--body`.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
    /// A `--header` or `--content-type` value is not a valid HTTP header.
    #[error("invalid header {header:?}: {reason}")]
    InvalidHeader {
        /// The header as given.
        header: String,
        /// What is wrong with it.
        reason: String,
    },
    /// An option has a value outside its range.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The JSON report could not be written.
    #[error("cannot write JSON report to {}: {source}", path.display())]
    WriteJson {
        /// The file given with `--json`.
        path: PathBuf,
        /// The I/O or serialization error.
        #[source]
        source: io::Error,
    },
    /// The tokio runtime could not be built.
    #[error("cannot build the tokio runtime: {0}")]
    Runtime(#[source] io::Error),
    /// The open loop's pacer thread could not be started.
    #[error("cannot start the pacer thread: {0}")]
    Pacer(#[source] io::Error),
    /// A generator task panicked or was cancelled.
    #[error("a load generator task failed: {0}")]
    Task(String),
    /// An experiment could not be set up or run (its server, files or answers).
    #[error("{0}")]
    Experiment(String),
    /// The server process named by `--server-pid` could not be read in `/proc`.
    #[error(transparent)]
    Proc(#[from] crate::procfs::ProcError),
    /// `lather-bench abuse`: some cases did not get the expected treatment.
    #[error("{failed} of {total} abuse cases did not meet their expectation")]
    AbuseExpectations {
        /// Cases whose expectation was not met.
        failed: usize,
        /// Cases run.
        total: usize,
    },
}
