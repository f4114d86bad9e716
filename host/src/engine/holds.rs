//! When an incident's notifications are held, and letting them go.
//!
//! - Dependencies: a monitor lists `dependsOn`; while one of those is down (its incident
//!   is unresolved, or its last check failed), the monitor's incident opens `suppressed`,
//!   naming the parent, and nobody is told. When the parent recovers and the child is still
//!   down, the child's incident is notified then, once.
//! - Snooze: a monitor, or a tag of it, snoozed until a time. An incident that opens while
//!   snoozed is held (status `open`, nobody told, no escalation); when the snooze ends and
//!   it is still unresolved, one notification goes out. An incident already notified that
//!   recovers while snoozed has its recovery held the same way.
//!
//! The hold is stored on the incident, so a restart or another node lets it go: the
//! release sweep re-decides every held incident and claims a release with a conditional
//! update, so exactly one node sends it.

use super::context::EngineContext;
use super::hold::Hold;
use super::incidents::{self, Ctx};
use super::maintenance::Calendar;
use super::policy::rules_of;
use crate::store::{IncidentRow, IncidentState, MonitorRow, MonitorState, Store, StoreError, Tx};
use std::collections::{HashMap, HashSet};

/// If making `monitor` depend on `parents` closes a loop in `graph` (monitor id → the ids
/// it depends on), the loop as a list of ids from `monitor` back to it.
pub fn cycle_through(
    graph: &HashMap<String, Vec<String>>,
    monitor: &str,
    parents: &[String],
) -> Option<Vec<String>> {
    // Depth-first from each new parent, looking for `monitor`.
    fn walk(
        graph: &HashMap<String, Vec<String>>,
        at: &str,
        target: &str,
        seen: &mut HashSet<String>,
        path: &mut Vec<String>,
    ) -> bool {
        path.push(at.to_string());
        if at == target {
            return true;
        }
        if seen.insert(at.to_string()) {
            for next in graph.get(at).into_iter().flatten() {
                if walk(graph, next, target, seen, path) {
                    return true;
                }
            }
        }
        path.pop();
        false
    }
    let mut seen = HashSet::new();
    for parent in parents {
        let mut path = vec![monitor.to_string()];
        if walk(graph, parent, monitor, &mut seen, &mut path) {
            return Some(path);
        }
    }
    None
}

/// Whether a monitor counts as down for its dependants: an unresolved incident, or a
/// last check that failed (so a child whose threshold is lower than its parent's is not
/// notified in the moments before the parent's incident opens).
pub fn is_down(status: MonitorState, consecutive_failures: i32) -> bool {
    status == MonitorState::Down || (status != MonitorState::Paused && consecutive_failures > 0)
}

/// The ids a monitor depends on.
pub fn parents_of(m: &MonitorRow) -> Vec<String> {
    m.parent_ids()
}

/// The tags of a monitor.
fn tags_of(m: &MonitorRow) -> Vec<String> {
    m.tag_list()
}

/// When a monitor's snooze ends, if it is snoozed at `now` (its own or a tag's, the latest).
pub fn snoozed_until(m: &MonitorRow, tag_snoozes: &HashMap<String, i64>, now: i64) -> Option<i64> {
    let own = m.snoozed_until.filter(|u| *u > now);
    let by_tag = tags_of(m)
        .iter()
        .filter_map(|t| tag_snoozes.get(t).copied())
        .filter(|u| *u > now)
        .max();
    own.max(by_tag)
}

/// The hold for a monitor's incident at `now`: a down parent first (named), else a snooze.
/// `down` says whether a parent (by id) is down; `names` gives parents' names.
pub fn decide(
    m: &MonitorRow,
    parents: &HashMap<String, MonitorRow>,
    down: impl Fn(&MonitorRow) -> bool,
    tag_snoozes: &HashMap<String, i64>,
    now: i64,
) -> Option<Hold> {
    for id in parents_of(m) {
        if let Some(p) = parents.get(&id)
            && down(p)
        {
            return Some(Hold::Dependency {
                monitor_id: p.id.clone(),
                monitor_name: p.name.clone(),
            });
        }
    }
    snoozed_until(m, tag_snoozes, now).map(|until| Hold::Snoozed { until })
}

/// The hold for a monitor's incident, read inside a transaction. `fresh` gives the health
/// of monitors the caller has moved on but not written yet (a batch's).
pub async fn decide_in(
    tx: &Tx,
    m: &MonitorRow,
    fresh: impl Fn(&str) -> Option<(MonitorState, i32)>,
    now: i64,
) -> Result<Option<Hold>, StoreError> {
    let parent_ids = parents_of(m);
    let parents = if parent_ids.is_empty() {
        HashMap::new()
    } else {
        tx.monitors_for_holds(parent_ids).await?
    };
    let tag_snoozes = if !tags_of(m).is_empty() {
        tx.tag_snoozes(&m.workspace_id, now).await?
    } else {
        HashMap::new()
    };
    Ok(decide(
        m,
        &parents,
        |p| {
            let (status, failures) = fresh(&p.id).unwrap_or((p.status, p.consecutive_failures));
            is_down(status, failures)
        },
        &tag_snoozes,
        now,
    ))
}

/// When a monitor's snooze ends, read inside a transaction; None when not snoozed.
pub async fn snooze_in(tx: &Tx, m: &MonitorRow, now: i64) -> Result<Option<i64>, StoreError> {
    let tag_snoozes = if tags_of(m).is_empty() {
        HashMap::new()
    } else {
        tx.tag_snoozes(&m.workspace_id, now).await?
    };
    Ok(snoozed_until(m, &tag_snoozes, now))
}

/// Until when `m`'s notifications wait at `now`: the end of its snooze or of the
/// maintenance window covering it, whichever is later; None when neither holds.
pub async fn quiet_until(tx: &Tx, m: &MonitorRow, now: i64) -> Result<Option<i64>, StoreError> {
    let snoozed = snooze_in(tx, m, now).await?;
    let windows = tx
        .maintenance_windows_of(vec![m.workspace_id.clone()])
        .await?;
    let maintenance = Calendar::of(&windows).active(m, now).map(|a| a.until);
    Ok(snoozed.max(maintenance))
}

/// How often held incidents are looked at.
pub const POLL: std::time::Duration = std::time::Duration::from_secs(1);

/// Re-decide every held incident and let go of those whose reason has passed: a held
/// opening is notified now (once), a held recovery is sent now. Returns how many were let go.
pub async fn release_due(
    store: &Store,
    ctx: &EngineContext,
    now: i64,
) -> Result<usize, StoreError> {
    let held = store.held_incidents(500).await?;
    if held.is_empty() {
        return Ok(0);
    }
    // Read what the decisions need in a few queries, outside any write transaction.
    let mut ids: Vec<String> = held.iter().map(|i| i.monitor_id.clone()).collect();
    ids.sort_unstable();
    ids.dedup();
    let monitors = store.monitors_for_holds(ids).await?;
    let mut parent_ids: Vec<String> = monitors.values().flat_map(parents_of).collect();
    parent_ids.sort_unstable();
    parent_ids.dedup();
    let parents = store.monitors_for_holds(parent_ids).await?;
    let mut ws_ids: Vec<String> = monitors.values().map(|m| m.workspace_id.clone()).collect();
    ws_ids.sort_unstable();
    ws_ids.dedup();
    let calendar = Calendar::of(&store.maintenance_windows_of(ws_ids).await?);
    let mut snoozes: HashMap<String, HashMap<String, i64>> = HashMap::new();
    let mut released = 0;
    for inc in held {
        let Some(text) = inc.hold.clone() else {
            continue;
        };
        let now_hold = match monitors.get(&inc.monitor_id) {
            // Nothing is sent while the monitor is under maintenance: the hold stays.
            Some(m) if calendar.active(m, now).is_some() => continue,
            Some(m) => {
                if !snoozes.contains_key(&m.workspace_id) {
                    let s = store.tag_snoozes(&m.workspace_id, now).await?;
                    snoozes.insert(m.workspace_id.clone(), s);
                }
                let tags = &snoozes[&m.workspace_id];
                match inc.status {
                    // A held recovery waits for the snooze only.
                    IncidentState::Resolved => {
                        snoozed_until(m, tags, now).map(|until| Hold::Snoozed { until })
                    }
                    _ => decide(
                        m,
                        &parents,
                        |p| is_down(p.status, p.consecutive_failures),
                        tags,
                        now,
                    ),
                }
            }
            // The monitor is gone: its incidents are closed by its deletion.
            None => continue,
        };
        let current = Hold::parse(Some(&text));
        // A flapping monitor's incidents are let go by its summary (see `flapping`).
        if matches!(current, Some(Hold::Flapping { .. })) || now_hold == current {
            continue;
        }
        if apply(store, ctx, &inc, &text, now_hold, now).await? {
            released += 1;
        }
    }
    if released > 0 {
        ctx.outbox_wakeup.notify_one();
    }
    Ok(released)
}

/// Move a held incident to its new hold, or release it. True when something was sent.
async fn apply(
    store: &Store,
    ctx: &EngineContext,
    inc: &IncidentRow,
    text: &str,
    hold: Option<Hold>,
    now: i64,
) -> Result<bool, StoreError> {
    let txn = store.begin_write().await?;
    let rules = rules_of(&txn, inc.policy_id.as_deref()).await?;
    let after = match &hold {
        // Still held, for another reason (the snooze was extended, another parent is down).
        Some(h) => IncidentRow {
            status: if inc.status == IncidentState::Resolved {
                IncidentState::Resolved
            } else {
                h.opening_state()
            },
            hold: Some(h.text()),
            ..inc.clone()
        },
        None if inc.status == IncidentState::Resolved => IncidentRow {
            hold: None,
            ..inc.clone()
        },
        None => IncidentRow {
            status: IncidentState::Open,
            hold: None,
            notified: true,
            escalate_at: rules.escalation.as_ref().and_then(|e| e.first_at(now)),
            remind_at: rules.first_reminder(now),
            ..inc.clone()
        },
    };
    if !txn.claim_hold_change(&inc.id, text, &after).await? {
        return Ok(false);
    }
    let name = txn.workspace_name(&inc.workspace_id).await?;
    let c = Ctx {
        public_url: &ctx.public_url,
        channels: &ctx.channels,
        workspace_id: &inc.workspace_id,
        workspace_name: &name,
        now,
    };
    let sent = match hold {
        Some(h) => {
            incidents::timeline(&txn, &inc.id, now, "held", h.view()).await?;
            false
        }
        None => {
            let was = Hold::parse(Some(text)).map(|h| h.view());
            incidents::release(&txn, &c, &after, &rules, was).await?;
            true
        }
    };
    txn.commit().await?;
    Ok(sent)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loops_are_found_and_named() {
        let graph: HashMap<String, Vec<String>> = [
            ("b".to_string(), vec!["c".to_string()]),
            ("c".to_string(), vec!["a".to_string()]),
            ("d".to_string(), vec![]),
        ]
        .into_iter()
        .collect();
        assert_eq!(
            cycle_through(&graph, "a", &["d".into(), "b".into()]),
            Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
        );
        assert_eq!(cycle_through(&graph, "x", &["b".into()]), None);
        assert_eq!(cycle_through(&graph, "a", &["d".into()]), None);
    }
}
