//! Per-operation metric handles of one service, with the cap on distinct operations
//! (`[server] metrics_max_operations`): the first N operation names a service sees get
//! label values of their own, every later one is counted as `operation="other"`.

use lather_envelope::QName;
use lather_pipeline::FnvMap;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use std::sync::{Arc, PoisonError, RwLock};

/// The `operation` of a request whose operation is not known: not parsed (a `GET`, a
/// fault before the envelope was read, no service at the path) or an empty Body.
pub(crate) const NO_OPERATION: &str = "-";
/// The `operation` of every operation after the cap was reached.
pub(crate) const OTHER: &str = "other";
/// The `operation` of an operation a service that names its operations does not serve
/// (answered with `UnknownOperation`).
pub(crate) const UNKNOWN: &str = "unknown";

/// `lather_requests_total`'s labels.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct CodeLabels {
    pub(crate) service: Arc<str>,
    pub(crate) code: u16,
    pub(crate) operation: Arc<str>,
}

/// `lather_faults_total`'s labels.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct FaultLabels {
    pub(crate) service: Arc<str>,
    pub(crate) fault: &'static str,
    pub(crate) operation: Arc<str>,
}

/// The labels of the per-request histogram and byte counters.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct OpLabels {
    pub(crate) service: Arc<str>,
    pub(crate) operation: Arc<str>,
}

/// The families the per-request series live in (clones share them).
#[derive(Debug, Clone)]
pub(crate) struct RequestFamilies {
    pub(crate) requests: Family<CodeLabels, Counter>,
    pub(crate) faults: Family<FaultLabels, Counter>,
    pub(crate) latency: Family<OpLabels, Histogram, fn() -> Histogram>,
    pub(crate) bytes_in: Family<OpLabels, Counter>,
    pub(crate) bytes_out: Family<OpLabels, Counter>,
}

fn latency_histogram() -> Histogram {
    // 50 µs … ~52 s, doubling.
    Histogram::new(exponential_buckets(0.000_05, 2.0, 21))
}

impl RequestFamilies {
    pub(crate) fn new() -> Self {
        RequestFamilies {
            requests: Family::default(),
            faults: Family::default(),
            latency: Family::new_with_constructor(latency_histogram),
            bytes_in: Family::default(),
            bytes_out: Family::default(),
        }
    }
}

/// One (service, operation)'s handles, made once so a request neither allocates labels
/// nor takes the families' locks on success.
#[derive(Debug)]
pub(crate) struct OpHandles {
    pub(crate) service: Arc<str>,
    pub(crate) operation: Arc<str>,
    pub(crate) ok: Counter,
    pub(crate) latency: Histogram,
    pub(crate) bytes_in: Counter,
    pub(crate) bytes_out: Counter,
}

impl OpHandles {
    fn new(families: &RequestFamilies, service: &Arc<str>, operation: &str) -> Self {
        let operation: Arc<str> = Arc::from(operation);
        let labels = OpLabels {
            service: service.clone(),
            operation: operation.clone(),
        };
        let ok = CodeLabels {
            service: service.clone(),
            code: 200,
            operation: operation.clone(),
        };
        OpHandles {
            service: service.clone(),
            operation,
            ok: families.requests.get_or_create(&ok).clone(),
            latency: families.latency.get_or_create(&labels).clone(),
            bytes_in: families.bytes_in.get_or_create(&labels).clone(),
            bytes_out: families.bytes_out.get_or_create(&labels).clone(),
        }
    }
}

/// A request's operation as its metrics label it; resolved once the envelope is read.
#[derive(Debug, Clone)]
pub(crate) struct Operation(pub(crate) Arc<OpHandles>);

/// What one service has seen: operation label → handles; `distinct` counts the names
/// that took a label of their own (the fixed labels aside).
#[derive(Debug, Default)]
struct Seen {
    by_label: FnvMap<String, Arc<OpHandles>>,
    distinct: usize,
}

/// One service's per-operation handles, at most `cap` operation names of its own.
#[derive(Debug)]
pub(crate) struct ServiceOps {
    service: Arc<str>,
    cap: usize,
    families: RequestFamilies,
    /// The handles of requests without an operation, made at start so every service
    /// shows at 0.
    none: Operation,
    seen: RwLock<Seen>,
}

impl ServiceOps {
    pub(crate) fn new(families: &RequestFamilies, service: &str, cap: usize) -> Self {
        let service: Arc<str> = Arc::from(service);
        let none = Operation(Arc::new(OpHandles::new(families, &service, NO_OPERATION)));
        ServiceOps {
            service,
            cap,
            families: families.clone(),
            none,
            seen: RwLock::new(Seen::default()),
        }
    }

    /// The handles of requests without an operation.
    pub(crate) fn none(&self) -> &Operation {
        &self.none
    }

    /// The label for operation `op` of a service serving `declared` (empty: any): its
    /// local name while the cap allows, `other` after; `unknown` when the service names
    /// its operations and `op` is not among them (nor one lather answers itself).
    pub(crate) fn operation(&self, declared: &[QName], op: Option<&QName>) -> Operation {
        let Some(op) = op else {
            return self.none.clone();
        };
        if !declared.is_empty() && !declared.contains(op) && !answered_by_lather(op) {
            return self.fixed(UNKNOWN);
        }
        self.named(op.local())
    }

    /// The handles of `name`, within the cap.
    fn named(&self, name: &str) -> Operation {
        {
            let seen = self.seen.read().unwrap_or_else(PoisonError::into_inner);
            if let Some(h) = seen.by_label.get(name) {
                return Operation(h.clone());
            }
            if seen.distinct >= self.cap
                && let Some(other) = seen.by_label.get(OTHER)
            {
                return Operation(other.clone());
            }
        }
        let mut seen = self.seen.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(h) = seen.by_label.get(name) {
            return Operation(h.clone());
        }
        let label = if seen.distinct >= self.cap {
            OTHER
        } else {
            seen.distinct += 1;
            name
        };
        self.insert(&mut seen, label)
    }

    /// The handles of a fixed label (not counted against the cap).
    fn fixed(&self, label: &'static str) -> Operation {
        if let Some(h) = self
            .seen
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .by_label
            .get(label)
        {
            return Operation(h.clone());
        }
        let mut seen = self.seen.write().unwrap_or_else(PoisonError::into_inner);
        self.insert(&mut seen, label)
    }

    fn insert(&self, seen: &mut Seen, label: &str) -> Operation {
        let handles = seen
            .by_label
            .entry(label.to_owned())
            .or_insert_with(|| Arc::new(OpHandles::new(&self.families, &self.service, label)));
        Operation(handles.clone())
    }
}

/// Operations lather answers before a service's own list is consulted: a batch, the QoS
/// offers, a stream's opening.
fn answered_by_lather(op: &QName) -> bool {
    lather_envelope::batch::is_batch(op)
        || op.is(lather_qos::QOS_NS, "GetOffers")
        || op.is(lather_context::stream::negotiation::NS, "OpenStream")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn label(op: &Operation) -> &str {
        &op.0.operation
    }

    #[test]
    fn names_beyond_the_cap_are_other_and_fixed_labels_do_not_count() {
        let families = RequestFamilies::new();
        let ops = ServiceOps::new(&families, "s", 2);
        let q = |l: &str| QName::new("urn:t", l);
        assert_eq!(label(&ops.operation(&[], None)), NO_OPERATION);
        assert_eq!(label(&ops.operation(&[], Some(&q("a")))), "a");
        assert_eq!(label(&ops.operation(&[], Some(&q("b")))), "b");
        assert_eq!(label(&ops.operation(&[], Some(&q("c")))), OTHER);
        assert_eq!(label(&ops.operation(&[], Some(&q("d")))), OTHER);
        // Names seen before the cap keep their label.
        assert_eq!(label(&ops.operation(&[], Some(&q("a")))), "a");
        let declared = [q("a")];
        let fresh = ServiceOps::new(&families, "t", 1);
        assert_eq!(label(&fresh.operation(&declared, Some(&q("zz")))), UNKNOWN);
        assert_eq!(label(&fresh.operation(&declared, Some(&q("a")))), "a");
        let batch = QName::new(lather_envelope::batch::BATCH_NS, "Batch");
        assert_eq!(label(&fresh.operation(&declared, Some(&batch))), OTHER);
    }
}
