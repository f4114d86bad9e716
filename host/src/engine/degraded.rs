//! Degraded: up, but slow. A monitor with `degradedAfterMs` counts its passing checks
//! slower than that in a row; its policy's `degradedThreshold` of them make it `degraded`
//! (between `up` and `down`; uptime counts it up), and a pass that is not slow makes it
//! `up` again. With the policy's `notifyDegraded`, its channels hear both:
//! `monitor.degraded` ("responding in 2.4 s, slower than 1 s for 3 checks") and
//! `monitor.degraded_ended`. A monitor that goes down meanwhile is told by its incident,
//! and a snoozed one is told nothing.

use super::incidents::Ctx;
use super::policy::Rules;
use crate::outbox::events::kind;
use crate::store::{MonitorRow, MonitorState, StoreError, Tx};
use serde_json::json;

/// A change between `up` and `degraded` that `m`'s policy tells, as its event kind.
pub fn told_change(
    rules: &Rules,
    before: MonitorState,
    after: MonitorState,
) -> Option<&'static str> {
    if !rules.notify_degraded || rules.channels.is_empty() {
        return None;
    }
    match (before, after) {
        // From down too: its recovery said up, so slow is news (and its end is told).
        (MonitorState::Up | MonitorState::Pending | MonitorState::Down, MonitorState::Degraded) => {
            Some(kind::MONITOR_DEGRADED)
        }
        (MonitorState::Degraded, MonitorState::Up) => Some(kind::MONITOR_DEGRADED_ENDED),
        _ => None,
    }
}

/// After a check moved `m` from `change.0` to `change.1`: tell the policy's channels if
/// it asks and the monitor is not snoozed. True when something was queued.
pub async fn tell_change(
    tx: &Tx,
    c: &Ctx<'_>,
    m: &MonitorRow,
    rules: &Rules,
    change: (MonitorState, MonitorState),
    response_ms: Option<u32>,
    slow_checks: i32,
) -> Result<bool, StoreError> {
    let Some(event) = told_change(rules, change.0, change.1) else {
        return Ok(false);
    };
    if super::holds::snooze_in(tx, m, c.now).await?.is_some() {
        return Ok(false);
    }
    tell(tx, c, m, rules, event, response_ms, slow_checks).await?;
    Ok(true)
}

/// Queue `event` about `m` to the policy's channels: the `degraded` object says how slow
/// the check that decided was, against what limit, over how many checks.
pub async fn tell(
    tx: &Tx,
    c: &Ctx<'_>,
    m: &MonitorRow,
    rules: &Rules,
    event: &'static str,
    response_ms: Option<u32>,
    slow_checks: i32,
) -> Result<(), StoreError> {
    let degraded = json!({
        "state": if event == kind::MONITOR_DEGRADED { "degraded" } else { "up" },
        "responseTime": response_ms,
        "thresholdMs": m.degraded_after_ms,
        "slowChecks": slow_checks,
    });
    super::incidents::tell_monitor_event(
        tx,
        c,
        m,
        &rules.channels,
        None,
        event,
        ("degraded", degraded),
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_policy_that_asks_tells_and_only_the_changes_between_up_and_degraded() {
        let mut r = Rules {
            notify_degraded: true,
            channels: vec![crate::outbox::Target {
                kind: "webhook".into(),
                config: "{}".into(),
                channel_id: None,
            }],
            ..Rules::default()
        };
        use MonitorState::*;
        assert_eq!(told_change(&r, Up, Degraded), Some(kind::MONITOR_DEGRADED));
        assert_eq!(
            told_change(&r, Degraded, Up),
            Some(kind::MONITOR_DEGRADED_ENDED)
        );
        assert_eq!(told_change(&r, Degraded, Down), None, "the incident tells");
        assert_eq!(told_change(&r, Down, Up), None);
        assert_eq!(
            told_change(&r, Down, Degraded),
            Some(kind::MONITOR_DEGRADED),
            "recovered, but slow: its end will be told, so its start is"
        );
        assert_eq!(told_change(&r, Degraded, Degraded), None);
        r.notify_degraded = false;
        assert_eq!(told_change(&r, Up, Degraded), None);
    }
}
