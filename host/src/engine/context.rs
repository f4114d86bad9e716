//! What the engine needs from the server around it: the base of incident links, the
//! outbox's wake-up and the background passes' [`Nudge`](crate::wake::Nudge).

use std::sync::Arc;
use tokio::sync::Notify;

/// What the engine needs from the server around it.
#[derive(Clone)]
pub struct EngineContext {
    /// Base of incident links, e.g. `https://status.example.com`.
    pub public_url: String,
    /// Woken when outbox rows were committed.
    pub outbox_wakeup: Arc<Notify>,
    /// Told when work for the background passes may have appeared.
    pub work: crate::wake::Nudge,
}

impl EngineContext {
    pub fn new(public_url: &str) -> EngineContext {
        EngineContext {
            public_url: public_url.to_string(),
            outbox_wakeup: Arc::new(Notify::new()),
            work: crate::wake::Nudge::polling(),
        }
    }

    /// Background passes with nothing to do wait to be told of work, up to `cap`, instead
    /// of polling (one node alone on its database, which sees every write made).
    pub fn idle_until_told(mut self, cap: std::time::Duration) -> EngineContext {
        self.work = self.work.idling(cap);
        self
    }
}
