//! Transfer batching towards the upstreams (the seed's two cut-offs): requests arriving
//! together are sent as one `lb:Batch` when `batch_max_items` have gathered or
//! `batch_wait_ms` after the first, whichever comes first; each gets its own result back.
//!
//! The first request of a batch leads it: it waits the time cut-off and sends what
//! gathered; the request that fills a batch sends it at once. A request whose batch is
//! never sent (its leader went away) or cannot be sent as a batch goes alone.

use bytes::Bytes;
use lather_envelope::{Fault, SoapVersion};
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::oneshot;

/// What a waiting request is told.
#[derive(Debug)]
pub(crate) enum Told {
    /// Its own answer (or the batch's failure, as its fault).
    Answer(Result<http::Response<Bytes>, Fault>),
    /// Go alone: the batch was not sent, or the upstream does not take batches.
    Alone,
}

/// One request in a batch being gathered.
#[derive(Debug)]
pub(crate) struct Waiting {
    /// The request as an `lb:Item`.
    pub(crate) item: Bytes,
    /// Where its answer goes.
    pub(crate) reply: oneshot::Sender<Told>,
}

/// A request's part in gathering.
#[derive(Debug)]
pub(crate) enum Role<'a> {
    /// It started a batch: wait the cut-off, then [`Lead::take`] it.
    Lead(Lead<'a>),
    /// It filled a batch: send these now.
    Send(Vec<Waiting>),
    /// Another request sends its batch.
    Follow,
}

/// The batches being gathered, one per SOAP version.
#[derive(Debug)]
pub(crate) struct TransferBatch {
    /// The size cut-off.
    pub(crate) max_items: usize,
    /// The time cut-off.
    pub(crate) wait: Duration,
    gathering: Mutex<[Gathering; 2]>,
}

#[derive(Debug, Default)]
struct Gathering {
    generation: u64,
    waiting: Vec<Waiting>,
}

/// The leader's claim on the batch it started; dropped unsent, it tells the others to go
/// alone.
#[derive(Debug)]
pub(crate) struct Lead<'a> {
    batches: &'a TransferBatch,
    slot: usize,
    generation: u64,
    done: bool,
}

impl TransferBatch {
    /// Batches of at most `max_items`, sent `wait` after their first request at the latest.
    pub(crate) fn new(max_items: usize, wait: Duration) -> Self {
        TransferBatch {
            max_items: max_items.max(1),
            wait,
            gathering: Mutex::new(Default::default()),
        }
    }

    fn slot(version: SoapVersion) -> usize {
        usize::from(version == SoapVersion::V12)
    }

    /// Adds a request of `version` to the batch being gathered.
    pub(crate) fn join(&self, version: SoapVersion, waiting: Waiting) -> Role<'_> {
        let slot = Self::slot(version);
        let mut all = self.lock();
        let gathering = &mut all[slot];
        gathering.waiting.push(waiting);
        if gathering.waiting.len() >= self.max_items {
            gathering.generation += 1;
            return Role::Send(std::mem::take(&mut gathering.waiting));
        }
        if gathering.waiting.len() == 1 {
            return Role::Lead(Lead {
                batches: self,
                slot,
                generation: gathering.generation,
                done: false,
            });
        }
        Role::Follow
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, [Gathering; 2]> {
        self.gathering
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Lead<'_> {
    /// The batch this leader started, if no other request sent it meanwhile.
    pub(crate) fn take(mut self) -> Vec<Waiting> {
        self.done = true;
        self.claim()
    }

    fn claim(&self) -> Vec<Waiting> {
        let mut all = self.batches.lock();
        let gathering = &mut all[self.slot];
        if gathering.generation != self.generation {
            return Vec::new();
        }
        gathering.generation += 1;
        std::mem::take(&mut gathering.waiting)
    }
}

impl Drop for Lead<'_> {
    fn drop(&mut self) {
        if !self.done {
            for waiting in self.claim() {
                let _ = waiting.reply.send(Told::Alone);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waiting() -> (Waiting, oneshot::Receiver<Told>) {
        let (reply, told) = oneshot::channel();
        (
            Waiting {
                item: Bytes::from_static(b"<lb:Item/>"),
                reply,
            },
            told,
        )
    }

    #[test]
    fn the_first_leads_the_one_that_fills_sends_and_a_vanished_leader_frees_the_rest() {
        let batches = TransferBatch::new(3, Duration::from_millis(2));
        let (a, _ra) = waiting();
        let lead = match batches.join(SoapVersion::V12, a) {
            Role::Lead(lead) => lead,
            other => panic!("{other:?}"),
        };
        let (b, _rb) = waiting();
        assert!(matches!(batches.join(SoapVersion::V12, b), Role::Follow));
        // Another version gathers apart.
        let (x, _rx) = waiting();
        assert!(matches!(batches.join(SoapVersion::V11, x), Role::Lead(_)));
        let (c, _rc) = waiting();
        let Role::Send(full) = batches.join(SoapVersion::V12, c) else {
            panic!("the third did not send");
        };
        assert_eq!(full.len(), 3);
        // The leader finds its batch gone.
        assert!(lead.take().is_empty());
        // A leader dropped unsent tells its followers to go alone.
        let (d, _rd) = waiting();
        let lead = batches.join(SoapVersion::V12, d);
        let (e, mut re) = waiting();
        assert!(matches!(batches.join(SoapVersion::V12, e), Role::Follow));
        drop(lead);
        assert!(matches!(re.try_recv(), Ok(Told::Alone)));
    }
}
