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
    /// Consecutive slow passes before the monitor is `degraded`.
    pub degraded: u32,
}

impl Default for Thresholds {
    /// A monitor without an alert policy uses the policy defaults, 2, 1 and 3.
    fn default() -> Self {
        Thresholds {
            failure: 2,
            recovery: 1,
            degraded: 3,
        }
    }
}

/// What a counted check said: failed, passed, or passed slower than the monitor's
/// `degradedAfterMs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Failed,
    Passed,
    Slow,
}

impl Outcome {
    /// A check's outcome: `response_ms` above `degraded_after_ms` makes a pass slow.
    pub fn of(ok: bool, response_ms: Option<u32>, degraded_after_ms: Option<i32>) -> Outcome {
        match (ok, response_ms, degraded_after_ms) {
            (false, ..) => Outcome::Failed,
            (true, Some(ms), Some(limit)) if i64::from(ms) > i64::from(limit) => Outcome::Slow,
            _ => Outcome::Passed,
        }
    }

    pub fn ok(self) -> bool {
        self != Outcome::Failed
    }
}

/// Count one outcome: a success resets the failures and a failure the successes; a slow
/// pass adds to the slow ones in a row, anything else ends them.
pub fn count(previous: &Health, outcome: Outcome) -> Health {
    let consecutive_slow = match outcome {
        Outcome::Slow => previous.consecutive_slow.saturating_add(1),
        _ => 0,
    };
    if outcome.ok() {
        Health {
            consecutive_failures: 0,
            consecutive_successes: previous.consecutive_successes.saturating_add(1),
            consecutive_slow,
            status: previous.status,
        }
    } else {
        Health {
            consecutive_failures: previous.consecutive_failures.saturating_add(1),
            consecutive_successes: 0,
            consecutive_slow,
            status: previous.status,
        }
    }
}

/// The state after a check: `down` while an incident is unresolved; `degraded` once
/// `degraded_threshold` slow passes came in a row, until a pass that is not slow (a
/// failure below the failure threshold changes nothing); otherwise `up`, except that a
/// monitor that has never passed stays `pending` through failures below the threshold.
pub fn status_after(
    previous: MonitorState,
    now: &Health,
    outcome: Outcome,
    incident_open: bool,
    degraded_threshold: u32,
) -> MonitorState {
    if incident_open {
        return MonitorState::Down;
    }
    match outcome {
        Outcome::Slow if now.consecutive_slow as u32 >= degraded_threshold.max(1) => {
            MonitorState::Degraded
        }
        Outcome::Slow if previous == MonitorState::Degraded => MonitorState::Degraded,
        Outcome::Slow | Outcome::Passed => MonitorState::Up,
        Outcome::Failed => match previous {
            MonitorState::Degraded => MonitorState::Degraded,
            MonitorState::Up | MonitorState::Down => MonitorState::Up,
            _ => MonitorState::Pending,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn health(failures: i32, slow: i32, status: MonitorState) -> Health {
        Health {
            consecutive_failures: failures,
            consecutive_successes: 0,
            consecutive_slow: slow,
            status,
        }
    }

    #[test]
    fn counters_reset_each_other() {
        let h = health(3, 0, MonitorState::Down);
        let h = count(&h, Outcome::Passed);
        assert_eq!((h.consecutive_failures, h.consecutive_successes), (0, 1));
        let h = count(&count(&h, Outcome::Passed), Outcome::Failed);
        assert_eq!((h.consecutive_failures, h.consecutive_successes), (1, 0));
        let h = count(&count(&h, Outcome::Slow), Outcome::Slow);
        assert_eq!((h.consecutive_slow, h.consecutive_successes), (2, 2));
        assert_eq!(count(&h, Outcome::Passed).consecutive_slow, 0);
        assert_eq!(count(&h, Outcome::Failed).consecutive_slow, 0);
    }

    #[test]
    fn slow_means_above_the_limit_and_only_for_passes() {
        assert_eq!(Outcome::of(true, Some(301), Some(300)), Outcome::Slow);
        assert_eq!(Outcome::of(true, Some(300), Some(300)), Outcome::Passed);
        assert_eq!(Outcome::of(true, None, Some(300)), Outcome::Passed);
        assert_eq!(Outcome::of(true, Some(9_000), None), Outcome::Passed);
        assert_eq!(Outcome::of(false, Some(9_000), Some(300)), Outcome::Failed);
    }

    #[test]
    fn status_follows_the_incident() {
        let any = health(0, 0, MonitorState::Up);
        let after = |previous, outcome, open| status_after(previous, &any, outcome, open, 3);
        assert_eq!(
            after(MonitorState::Up, Outcome::Failed, true),
            MonitorState::Down
        );
        assert_eq!(
            after(MonitorState::Down, Outcome::Passed, true),
            MonitorState::Down,
            "recovering but not yet resolved"
        );
        assert_eq!(
            after(MonitorState::Down, Outcome::Passed, false),
            MonitorState::Up
        );
        assert_eq!(
            after(MonitorState::Up, Outcome::Failed, false),
            MonitorState::Up,
            "one failure below the threshold"
        );
        assert_eq!(
            after(MonitorState::Pending, Outcome::Failed, false),
            MonitorState::Pending
        );
        assert_eq!(
            after(MonitorState::Pending, Outcome::Passed, false),
            MonitorState::Up
        );
    }

    #[test]
    fn enough_slow_passes_in_a_row_degrade_and_one_fast_pass_ends_it() {
        let at = |slow| health(0, slow, MonitorState::Up);
        let s = |previous, slow, outcome| status_after(previous, &at(slow), outcome, false, 3);
        assert_eq!(s(MonitorState::Up, 2, Outcome::Slow), MonitorState::Up);
        assert_eq!(
            s(MonitorState::Up, 3, Outcome::Slow),
            MonitorState::Degraded
        );
        assert_eq!(
            s(MonitorState::Degraded, 4, Outcome::Slow),
            MonitorState::Degraded
        );
        assert_eq!(
            s(MonitorState::Degraded, 0, Outcome::Failed),
            MonitorState::Degraded,
            "a failure below the threshold keeps it degraded"
        );
        assert_eq!(
            s(MonitorState::Degraded, 1, Outcome::Slow),
            MonitorState::Degraded,
            "slow again after that failure"
        );
        assert_eq!(
            s(MonitorState::Degraded, 0, Outcome::Passed),
            MonitorState::Up
        );
        assert_eq!(
            status_after(MonitorState::Degraded, &at(0), Outcome::Failed, true, 3),
            MonitorState::Down
        );
    }
}
