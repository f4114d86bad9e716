//! The monitor state machine: consecutive failures and successes against thresholds.

use crate::store::monitors::status;

/// Thresholds that move a monitor between `up` and `down`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Thresholds {
    /// Consecutive failures before the monitor is down.
    pub failure: u32,
    /// Consecutive successes before a down monitor is up again.
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

/// Apply one check outcome. A success resets the failures and a failure the successes.
pub fn apply(previous: &Health, ok: bool, t: Thresholds) -> Health {
    let was_down = previous.status == status::DOWN;
    if ok {
        let successes = previous.consecutive_successes.saturating_add(1);
        let status = if was_down && (successes as u32) < t.recovery {
            status::DOWN
        } else {
            status::UP
        };
        Health {
            consecutive_failures: 0,
            consecutive_successes: successes,
            status: status.into(),
        }
    } else {
        let failures = previous.consecutive_failures.saturating_add(1);
        let status = if was_down || failures as u32 >= t.failure {
            status::DOWN
        } else if previous.status == status::PENDING {
            // Not yet enough evidence either way.
            status::PENDING
        } else {
            status::UP
        };
        Health {
            consecutive_failures: failures,
            consecutive_successes: 0,
            status: status.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(start: &str, outcomes: &[bool], t: Thresholds) -> Vec<String> {
        let mut h = Health {
            consecutive_failures: 0,
            consecutive_successes: 0,
            status: start.into(),
        };
        outcomes
            .iter()
            .map(|ok| {
                h = apply(&h, *ok, t);
                h.status.clone()
            })
            .collect()
    }

    #[test]
    fn goes_down_at_the_failure_threshold() {
        let s = run("up", &[false, false, false], Thresholds::default());
        assert_eq!(s, ["up", "down", "down"]);
        let s = run(
            "up",
            &[false, false, false],
            Thresholds {
                failure: 3,
                recovery: 1,
            },
        );
        assert_eq!(s, ["up", "up", "down"]);
    }

    #[test]
    fn recovers_at_the_recovery_threshold() {
        let t = Thresholds {
            failure: 1,
            recovery: 3,
        };
        let s = run("up", &[false, true, true, false, true, true, true], t);
        assert_eq!(s, ["down", "down", "down", "down", "down", "down", "up"]);
    }

    #[test]
    fn a_success_resets_failures_and_vice_versa() {
        let t = Thresholds::default();
        let s = run("up", &[false, true, false, true], t);
        assert_eq!(s, ["up", "up", "up", "up"]);
        let h = apply(
            &Health {
                consecutive_failures: 5,
                consecutive_successes: 0,
                status: "down".into(),
            },
            true,
            Thresholds {
                failure: 2,
                recovery: 2,
            },
        );
        assert_eq!(
            (
                h.consecutive_failures,
                h.consecutive_successes,
                h.status.as_str()
            ),
            (0, 1, "down")
        );
    }

    #[test]
    fn pending_until_evidence() {
        assert_eq!(run("pending", &[false], Thresholds::default()), ["pending"]);
        assert_eq!(run("pending", &[true], Thresholds::default()), ["up"]);
        assert_eq!(
            run("pending", &[false, false], Thresholds::default()),
            ["pending", "down"]
        );
    }
}
