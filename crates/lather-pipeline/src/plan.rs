//! Steps (named handlers with options) and plans (stages of steps), checked for clashes.

use crate::access::Clash;
use crate::{Access, Handler, Options};
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// A handler as configured: its name, options and declared access, plus its counters.
pub struct Step {
    name: String,
    handler: Arc<dyn Handler>,
    options: Options,
    access: Access,
    counters: Counters,
    cost: crate::cost::Cost,
}

impl fmt::Debug for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Step")
            .field("name", &self.name)
            .field("options", &self.options)
            .field("access", &self.access)
            .finish_non_exhaustive()
    }
}

/// What happened to one step's calls, counted since start.
#[derive(Debug, Default)]
pub struct Counters {
    /// Calls started (first attempts).
    pub calls: AtomicU64,
    /// Extra attempts after a timeout or panic.
    pub retries: AtomicU64,
    /// Attempts that ran out of time.
    pub timeouts: AtomicU64,
    /// Attempts that panicked.
    pub panics: AtomicU64,
    /// Failures of a handler that is not `must_perform`, ignored.
    pub ignored_failures: AtomicU64,
    /// Failures of a oneway handler.
    pub oneway_failures: AtomicU64,
}

impl Counters {
    pub(crate) fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

impl Step {
    /// A step named `name` running `handler` with `options`.
    pub fn new(name: impl Into<String>, handler: Arc<dyn Handler>, options: Options) -> Self {
        let access = handler.access();
        Step {
            name: name.into(),
            handler,
            options,
            access,
            counters: Counters::default(),
            cost: crate::cost::Cost::default(),
        }
    }

    /// The configured name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The options.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// The declared access (read once, when the step was made).
    pub fn access(&self) -> &Access {
        &self.access
    }

    /// The step's counters.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// The handler's own figures for the metrics endpoint.
    pub fn observations(&self) -> Vec<crate::Observation> {
        self.handler.observations()
    }

    /// The average time of this step's calls so far (`None` before the first).
    pub fn average_cost(&self) -> Option<std::time::Duration> {
        self.cost.average()
    }

    pub(crate) fn cost(&self) -> &crate::cost::Cost {
        &self.cost
    }

    pub(crate) fn handler(&self) -> &dyn Handler {
        &*self.handler
    }
}

/// Why a plan was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanError {
    /// Stage `stage` (0-based) has no handler.
    EmptyStage {
        /// The stage.
        stage: usize,
    },
    /// Two handlers of one stage touch the same part.
    Clash {
        /// The stage.
        stage: usize,
        /// The handler listed first.
        first: String,
        /// The handler listed second.
        second: String,
        /// What they both touch.
        clash: Clash,
    },
    /// A oneway handler declares writes; nobody would wait for its patch.
    OnewayWrites {
        /// The handler.
        handler: String,
    },
    /// A handler that is not stateless asks for retries.
    RetriesOnStateful {
        /// The handler.
        handler: String,
    },
    /// The `after` orders of an automatic plan form a cycle.
    Cycle {
        /// The handlers on (or behind) the cycle.
        handlers: Vec<String>,
    },
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlanError::EmptyStage { stage } => write!(f, "stage {} has no handler", stage + 1),
            PlanError::Clash {
                stage,
                first,
                second,
                clash,
            } => {
                let what = match clash {
                    Clash::BothWrite(p) => format!("both write {p}"),
                    Clash::ReadsWhatOtherWrites(p) => {
                        format!("{first} reads {p}, which {second} writes")
                    }
                    Clash::WritesWhatOtherReads(p) => {
                        format!("{first} writes {p}, which {second} reads")
                    }
                };
                write!(
                    f,
                    "stage {}: {first} and {second} cannot run together: {what}",
                    stage + 1
                )
            }
            PlanError::OnewayWrites { handler } => {
                write!(
                    f,
                    "{handler} is oneway but declares writes; a oneway handler may only read"
                )
            }
            PlanError::RetriesOnStateful { handler } => {
                write!(
                    f,
                    "{handler} asks for retries but is not stateless; only stateless handlers may be retried"
                )
            }
            PlanError::Cycle { handlers } => write!(
                f,
                "the `after` orders form a cycle among {}; no order satisfies them",
                handlers.join(", ")
            ),
        }
    }
}

impl std::error::Error for PlanError {}

/// What keeps `first` and `second` out of one stage, if anything: a clash of their
/// accesses, except a read of what the other writes by a handler that reads its stage's
/// input (`snapshot`).
pub(crate) fn conflict(first: &Step, second: &Step) -> Option<Clash> {
    let clash = first.access.clash(&second.access)?;
    let excused = match clash {
        Clash::ReadsWhatOtherWrites(_) => first.options.snapshot,
        Clash::WritesWhatOtherReads(_) => second.options.snapshot,
        Clash::BothWrite(_) => false,
    };
    (!excused).then_some(clash)
}

/// A flow: stages run in order, the handlers of a stage concurrently.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    stages: Vec<Vec<Arc<Step>>>,
    /// Header names the handlers declare, gathered once when the plan is made.
    understood: Vec<lather_envelope::QName>,
}

impl Plan {
    /// Checks `stages` and makes the plan: no empty stage, no two handlers of a stage
    /// touching the same part (one writing what the other reads or writes), no oneway
    /// handler that writes, no retries on a stateful handler.
    pub fn new(stages: Vec<Vec<Arc<Step>>>) -> Result<Plan, PlanError> {
        for (i, stage) in stages.iter().enumerate() {
            if stage.is_empty() {
                return Err(PlanError::EmptyStage { stage: i });
            }
            for (a, first) in stage.iter().enumerate() {
                if first.options.oneway && !first.access.writes.is_empty() {
                    return Err(PlanError::OnewayWrites {
                        handler: first.name.clone(),
                    });
                }
                if first.options.retries > 0 && !first.options.stateless {
                    return Err(PlanError::RetriesOnStateful {
                        handler: first.name.clone(),
                    });
                }
                for second in &stage[a + 1..] {
                    if let Some(clash) = conflict(first, second) {
                        return Err(PlanError::Clash {
                            stage: i,
                            first: first.name.clone(),
                            second: second.name.clone(),
                            clash,
                        });
                    }
                }
            }
        }
        let mut understood = Vec::new();
        for step in stages.iter().flatten() {
            let access = step.access();
            for name in access
                .reads
                .named_headers()
                .iter()
                .chain(access.writes.named_headers())
            {
                if !understood.contains(name) {
                    understood.push(name.clone());
                }
            }
        }
        Ok(Plan { stages, understood })
    }

    /// The stages.
    pub fn stages(&self) -> &[Vec<Arc<Step>>] {
        &self.stages
    }

    /// The header blocks this plan's handlers understand: every header a handler names in
    /// its declared reads or writes.
    pub fn understood_headers(&self) -> &[lather_envelope::QName] {
        &self.understood
    }

    /// Whether there is nothing to run.
    pub fn is_empty(&self) -> bool {
        self.stages.is_empty()
    }
}

impl fmt::Display for Plan {
    /// One line per stage: `1: a ‖ b` with `(oneway)` / `(may fail)` marks.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, stage) in self.stages.iter().enumerate() {
            let names: Vec<String> = stage
                .iter()
                .map(|s| {
                    let mut name = s.name.clone();
                    if s.options.oneway {
                        name.push_str(" (oneway)");
                    } else if !s.options.must_perform {
                        name.push_str(" (may fail)");
                    }
                    name
                })
                .collect();
            writeln!(f, "{}: {}", i + 1, names.join(" ‖ "))?;
        }
        Ok(())
    }
}
