//! What the engine needs from the server around it: the base of incident links, the
//! outbox's wake-up, the background passes' [`Nudge`](crate::wake::Nudge) and the
//! scheduler's ear for fast re-checks ([`Retries`]).

use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::{Notify, mpsc};

/// What the engine needs from the server around it.
#[derive(Clone)]
pub struct EngineContext {
    /// Base of incident links, e.g. `https://status.example.com`.
    pub public_url: String,
    /// Woken when outbox rows were committed.
    pub outbox_wakeup: Arc<Notify>,
    /// Told when work for the background passes may have appeared.
    pub work: crate::wake::Nudge,
    /// Where the recorder asks for fast re-checks (the scheduler listens).
    pub retries: Retries,
    /// The private locations whose probes are all silent (the locations' pass keeps it).
    pub offline: super::locations::OfflineLocations,
    /// What each channel type asks of the host (acknowledgements, grouping, ...).
    pub channels: crate::plugins::abilities::ChannelAbilities,
}

/// A failing check that did not open an incident, of a monitor with a `retryInterval`:
/// its next check should come that long after this one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Retry {
    pub monitor_id: String,
    /// When the failing check started (Unix ms).
    pub checked_at: i64,
}

/// The recorder's requests for fast re-checks, sent once their check's batch committed,
/// to the scheduler that listens (none: nobody re-checks, as in tests without one).
#[derive(Clone, Default)]
pub struct Retries(Arc<Mutex<Option<mpsc::UnboundedSender<Retry>>>>);

impl Retries {
    /// Hear the requests from now on (a listener before it hears no more).
    pub fn listen(&self) -> mpsc::UnboundedReceiver<Retry> {
        let (tx, rx) = mpsc::unbounded_channel();
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(tx);
        rx
    }

    /// Ask for these re-checks.
    pub fn ask(&self, retries: Vec<Retry>) {
        if retries.is_empty() {
            return;
        }
        let guard = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(tx) = guard.as_ref() {
            for retry in retries {
                let _ = tx.send(retry);
            }
        }
    }
}

impl EngineContext {
    pub fn new(public_url: &str) -> EngineContext {
        EngineContext {
            public_url: public_url.to_string(),
            outbox_wakeup: Arc::new(Notify::new()),
            work: crate::wake::Nudge::polling(),
            retries: Retries::default(),
            offline: Default::default(),
            channels: Default::default(),
        }
    }

    /// Background passes with nothing to do wait to be told of work, up to `cap`, instead
    /// of polling (one node alone on its database, which sees every write made).
    pub fn idle_until_told(mut self, cap: std::time::Duration) -> EngineContext {
        self.work = self.work.idling(cap);
        self
    }
}
