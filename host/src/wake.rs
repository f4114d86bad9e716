//! Wakes the server's background passes (escalations, holds and flapping, heartbeat
//! deadlines, the outbox) when work may have appeared, so that with nothing pending they
//! sleep instead of asking the database every second.

use std::sync::Arc;

/// Tells the engine's background passes (escalations, holds and flapping, heartbeat
/// deadlines, the outbox) that work may have appeared: an API write, a ping, a batch of
/// results with a failure or a notification. A pass with nothing pending waits for this
/// instead of asking the database every second, which at 500 monitors was a fifth of the
/// server's CPU (docs/performance.md, "Round 3"). Only a node alone on its database
/// waits: it sees every write; nodes sharing one poll as before (the server decides
/// which, with [`Nudge::idling`]).
#[derive(Clone)]
pub struct Nudge {
    told: Arc<tokio::sync::watch::Sender<u64>>,
    /// The longest a pass with nothing pending waits; None: it polls.
    idle_cap: Option<std::time::Duration>,
}

impl Nudge {
    pub fn polling() -> Nudge {
        Nudge {
            told: Arc::new(tokio::sync::watch::Sender::new(0)),
            idle_cap: None,
        }
    }

    /// The same channel, whose passes idle up to `cap` when nothing is pending.
    pub fn idling(mut self, cap: std::time::Duration) -> Nudge {
        self.idle_cap = Some(cap);
        self
    }

    /// Say that work may have appeared.
    pub fn tell(&self) {
        self.told.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// What a pass listens to. A tell between two waits is not lost.
    pub fn listen(&self) -> tokio::sync::watch::Receiver<u64> {
        self.told.subscribe()
    }

    /// How long a pass waits: `poll` while it has work pending (or nodes share the
    /// database), else until told or `idle_cap`.
    pub fn wait(&self, pending: bool, poll: std::time::Duration) -> (std::time::Duration, bool) {
        match self.idle_cap {
            Some(cap) if !pending => (cap, true),
            _ => (poll, false),
        }
    }

    /// Whether passes wait to be told (see [`Nudge::idling`]).
    pub fn idles(&self) -> bool {
        self.idle_cap.is_some()
    }

    /// The longest a pass with nothing due waits, or `poll` when passes poll.
    pub fn cap_or(&self, poll: std::time::Duration) -> std::time::Duration {
        self.idle_cap.unwrap_or(poll)
    }
}

/// Sleep for `wait`, or until told (when `listening`) or shut down. True on shutdown.
pub async fn pause(
    wait: std::time::Duration,
    listening: bool,
    told: &mut tokio::sync::watch::Receiver<u64>,
    shutdown: &mut tokio::sync::watch::Receiver<bool>,
) -> bool {
    let told_now = async {
        if listening {
            if told.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        } else {
            std::future::pending::<()>().await;
        }
    };
    tokio::select! {
        _ = tokio::time::sleep(wait) => false,
        _ = told_now => false,
        _ = shutdown.changed() => *shutdown.borrow(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    const LONG: Duration = Duration::from_secs(30);

    #[tokio::test]
    async fn a_tell_wakes_a_listening_pass_even_when_it_came_first() {
        let nudge = Nudge::polling().idling(LONG);
        let mut told = nudge.listen();
        let (_stop, mut shutdown) = tokio::sync::watch::channel(false);
        // Told between the pass and its wait: the wait ends at once, nothing is lost.
        nudge.tell();
        let started = Instant::now();
        assert!(!pause(LONG, true, &mut told, &mut shutdown).await);
        assert!(started.elapsed() < LONG / 2);
        // Told while it waits.
        let teller = nudge.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            teller.tell();
        });
        let started = Instant::now();
        assert!(!pause(LONG, true, &mut told, &mut shutdown).await);
        assert!(started.elapsed() < LONG / 2);
    }

    #[tokio::test]
    async fn a_polling_pass_sleeps_its_time_whatever_it_is_told() {
        let nudge = Nudge::polling();
        let mut told = nudge.listen();
        let (_stop, mut shutdown) = tokio::sync::watch::channel(false);
        nudge.tell();
        let started = Instant::now();
        assert!(!pause(Duration::from_millis(200), false, &mut told, &mut shutdown).await);
        assert!(started.elapsed() >= Duration::from_millis(200));
    }

    #[tokio::test]
    async fn shutdown_ends_a_wait() {
        let nudge = Nudge::polling().idling(LONG);
        let mut told = nudge.listen();
        let (stop, mut shutdown) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            let _ = stop.send(true);
        });
        assert!(pause(LONG, true, &mut told, &mut shutdown).await);
    }

    #[test]
    fn only_a_pass_with_nothing_pending_on_a_lone_node_idles() {
        let poll = Duration::from_secs(1);
        let lone = Nudge::polling().idling(LONG);
        assert_eq!(lone.wait(false, poll), (LONG, true));
        assert_eq!(lone.wait(true, poll), (poll, false));
        assert_eq!(lone.cap_or(poll), LONG);
        let shared = Nudge::polling();
        assert_eq!(shared.wait(false, poll), (poll, false));
        assert_eq!(shared.cap_or(poll), poll);
        assert!(lone.idles() && !shared.idles());
    }
}
