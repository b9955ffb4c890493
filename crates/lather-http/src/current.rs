//! The state requests are served with now: replaced whole by a configuration reload,
//! while requests begun before keep the state they started with.

use crate::state::State;
use std::sync::{Arc, RwLock};

/// The current [`State`], read once per request.
#[derive(Debug)]
pub(crate) struct CurrentState(RwLock<Arc<State>>);

impl CurrentState {
    /// Serving `state`.
    pub(crate) fn new(state: Arc<State>) -> Self {
        CurrentState(RwLock::new(state))
    }

    /// The state now.
    pub(crate) fn load(&self) -> Arc<State> {
        self.0
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Serves `state` from the next request on.
    pub(crate) fn replace(&self, state: Arc<State>) {
        *self
            .0
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = state;
    }
}
