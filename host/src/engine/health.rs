//! Monitor health: consecutive failure and success counters, and the state shown to users.
//! A monitor is `down` exactly while it has an unresolved incident.

pub use crate::store::Health;
use crate::store::MonitorState;

/// Thresholds that open and resolve incidents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Thresholds {
    /// Consecutive failures before an incident opens.
    pub failure: u32,
    /// Consecutive successes before it resolves.
    pub recovery: u32,
}

impl Default for Thresholds {
    /// A monitor without an alert policy uses the policy defaults, 2 and 1.
    fn default() -> Self {
        Thresholds {
            failure: 2,
            recovery: 1,
        }
    }
}

/// Count one outcome: a success resets the failures and a failure the successes.
pub fn count(previous: &Health, ok: bool) -> Health {
    if ok {
        Health {
            consecutive_failures: 0,
            consecutive_successes: previous.consecutive_successes.saturating_add(1),
            status: previous.status,
        }
    } else {
        Health {
            consecutive_failures: previous.consecutive_failures.saturating_add(1),
            consecutive_successes: 0,
            status: previous.status,
        }
    }
}

/// The state after a check: `down` while an incident is unresolved; otherwise `up`, except
/// that a monitor that has never passed stays `pending` through failures below the threshold.
pub fn status_after(previous: MonitorState, ok: bool, incident_open: bool) -> MonitorState {
    if incident_open {
        MonitorState::Down
    } else if ok || matches!(previous, MonitorState::Up | MonitorState::Down) {
        MonitorState::Up
    } else {
        MonitorState::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_reset_each_other() {
        let h = Health {
            consecutive_failures: 3,
            consecutive_successes: 0,
            status: MonitorState::Down,
        };
        let h = count(&h, true);
        assert_eq!((h.consecutive_failures, h.consecutive_successes), (0, 1));
        let h = count(&count(&h, true), false);
        assert_eq!((h.consecutive_failures, h.consecutive_successes), (1, 0));
    }

    #[test]
    fn status_follows_the_incident() {
        assert_eq!(
            status_after(MonitorState::Up, false, true),
            MonitorState::Down
        );
        assert_eq!(
            status_after(MonitorState::Down, true, true),
            MonitorState::Down,
            "recovering but not yet resolved"
        );
        assert_eq!(
            status_after(MonitorState::Down, true, false),
            MonitorState::Up
        );
        assert_eq!(
            status_after(MonitorState::Up, false, false),
            MonitorState::Up,
            "one failure below the threshold"
        );
        assert_eq!(
            status_after(MonitorState::Pending, false, false),
            MonitorState::Pending
        );
        assert_eq!(
            status_after(MonitorState::Pending, true, false),
            MonitorState::Up
        );
    }
}
