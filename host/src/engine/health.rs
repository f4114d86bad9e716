//! Monitor health: consecutive failure and success counters, and the state shown to users.
//! A monitor is `down` exactly while it has an unresolved incident.

use crate::store::monitors::status;

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

/// The outcome-driven part of a monitor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Health {
    pub consecutive_failures: i32,
    pub consecutive_successes: i32,
    pub status: String,
}

/// Count one outcome: a success resets the failures and a failure the successes.
pub fn count(previous: &Health, ok: bool) -> Health {
    if ok {
        Health {
            consecutive_failures: 0,
            consecutive_successes: previous.consecutive_successes.saturating_add(1),
            status: previous.status.clone(),
        }
    } else {
        Health {
            consecutive_failures: previous.consecutive_failures.saturating_add(1),
            consecutive_successes: 0,
            status: previous.status.clone(),
        }
    }
}

/// The state after a check: `down` while an incident is unresolved; otherwise `up`, except
/// that a monitor that has never passed stays `pending` through failures below the threshold.
pub fn status_after(previous: &str, ok: bool, incident_open: bool) -> &'static str {
    if incident_open {
        status::DOWN
    } else if ok || previous == status::UP || previous == status::DOWN {
        status::UP
    } else {
        status::PENDING
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
            status: "down".into(),
        };
        let h = count(&h, true);
        assert_eq!((h.consecutive_failures, h.consecutive_successes), (0, 1));
        let h = count(&count(&h, true), false);
        assert_eq!((h.consecutive_failures, h.consecutive_successes), (1, 0));
    }

    #[test]
    fn status_follows_the_incident() {
        assert_eq!(status_after("up", false, true), "down");
        assert_eq!(
            status_after("down", true, true),
            "down",
            "recovering but not yet resolved"
        );
        assert_eq!(status_after("down", true, false), "up");
        assert_eq!(
            status_after("up", false, false),
            "up",
            "one failure below the threshold"
        );
        assert_eq!(status_after("pending", false, false), "pending");
        assert_eq!(status_after("pending", true, false), "up");
    }
}
