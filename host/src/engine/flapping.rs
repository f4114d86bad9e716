//! Flapping: a monitor that keeps going down and up. With a policy's `flapping` setting
//! (more than `changes` changes within `windowMinutes`), the change that crosses the line
//! marks the monitor flapping (since the window's first change) and tells the policy's
//! channels so, once (`monitor.flapping_started`: "changed state 4 times in 1 min; alerts
//! are held until it settles"); from then on its openings are held (`hold: flapping`) and
//! its recoveries too, until it has gone `windowMinutes` without a change. Then one
//! summary (`monitor.flapping`) tells the policy's channels how many changes there were
//! and how the monitor is now; an incident still open is told by it (and escalates from
//! then), and held recoveries are dropped (the summary says it is up).
//!
//! A change is an incident opening or resolving, as the thresholds decide. The changes are
//! kept in the database (`flap_states`), so a restart or another node carries on.

use super::context::EngineContext;
use super::hold::Hold;
use super::incidents::{self, Ctx};
use super::maintenance::Calendar;
use super::policy::{Rules, rules_of};
use crate::outbox::events::kind;
use crate::store::flaps::FlapState;
use crate::store::{IncidentRow, MonitorRow, Store, StoreError, Tx};
use serde_json::{Value, json};

/// Most flapping monitors looked at in one pass.
const BATCH: u64 = 200;

/// A monitor flapping, as a change of its state found it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flap {
    /// Since when (the window's first change).
    pub since: i64,
    /// This change crossed the line: how many changes the window holds (to be told).
    pub started: Option<i32>,
}

/// Note a change of state of `m` at `now`. Returns whether the monitor is flapping
/// (counting this change), or None. Free when the policy does not watch for flapping.
pub async fn note_change(
    tx: &Tx,
    m: &MonitorRow,
    rules: &Rules,
    now: i64,
) -> Result<Option<Flap>, StoreError> {
    let Some(f) = rules.flapping else {
        return Ok(None);
    };
    let stored = tx.flap_state(&m.id).await?;
    let exists = stored.is_some();
    let mut st = stored.unwrap_or_else(|| FlapState::new(&m.id, &m.workspace_id, now));
    let mut changes = std::mem::take(&mut st.changes);
    changes.push(now);
    changes.retain(|t| *t > now - f.window_ms);
    let mut started = None;
    if st.flapping_since.is_some() {
        st.flap_count += 1;
    } else if changes.len() > f.changes as usize {
        // It has been flapping since the first change of the window.
        st.flapping_since = changes.first().copied().or(Some(now));
        st.flap_count = i32::try_from(changes.len()).unwrap_or(i32::MAX);
        started = Some(st.flap_count);
    }
    // Only the window's worth is needed to decide; keep it bounded.
    let keep = changes.len().saturating_sub(f.changes as usize + 1);
    changes.drain(..keep);
    st.changes = changes;
    st.last_change = now;
    let since = st.flapping_since;
    tx.save_flap_state(st, exists).await?;
    Ok(since.map(|since| Flap { since, started }))
}

/// Tell the policy's channels that `m` started flapping (`monitor.flapping_started`):
/// `flap`'s count of changes within the policy's window, the state this change moved it
/// to, and `open`, the incident it now holds if it went down.
pub async fn started(
    tx: &Tx,
    c: &Ctx<'_>,
    m: &MonitorRow,
    rules: &Rules,
    flap: Flap,
    open: Option<&IncidentRow>,
) -> Result<(), StoreError> {
    let (Some(changes), Some(f)) = (flap.started, rules.flapping) else {
        return Ok(());
    };
    let flapping = json!({
        "since": crate::time::format_ms(flap.since),
        "changes": changes,
        "windowMinutes": f.window_ms / 60_000,
        "state": if open.is_some() { "down" } else { "up" },
    });
    tell(
        tx,
        c,
        m,
        rules,
        open,
        kind::MONITOR_FLAPPING_STARTED,
        flapping,
    )
    .await
}

/// End the flapping of monitors stable for their policy's window, each with one summary.
/// Returns how many summaries were queued.
pub async fn summarize_due(
    store: &Store,
    ctx: &EngineContext,
    now: i64,
) -> Result<usize, StoreError> {
    let states = store.flapping_states(BATCH).await?;
    let mut sent = 0;
    for st in states {
        let Some(since) = st.flapping_since else {
            continue;
        };
        let txn = store.begin_write().await?;
        let Some(m) = txn.monitor_by_id(&st.monitor_id).await? else {
            txn.delete_flap_state(&st.monitor_id).await?;
            txn.commit().await?;
            continue;
        };
        let rules = rules_of(&txn, m.alert_policy_id.as_deref()).await?;
        // Flapping turned off (or the policy gone) ends it at once.
        let window = rules.flapping.map_or(0, |f| f.window_ms);
        if st.last_change > now - window {
            continue;
        }
        // Nothing is sent under maintenance; the summary waits for the window's end.
        let windows = txn
            .maintenance_windows_of(vec![m.workspace_id.clone()])
            .await?;
        if Calendar::of(&windows).active(&m, now).is_some() {
            continue;
        }
        if !txn.end_flapping(&m.id, since).await? {
            continue;
        }
        txn.clear_flapping_recoveries(&m.id).await?;
        let name = txn.workspace_name(&m.workspace_id).await?;
        let c = Ctx {
            public_url: &ctx.public_url,
            channels: &ctx.channels,
            workspace_id: &m.workspace_id,
            workspace_name: &name,
            now,
        };
        let open = txn
            .open_incidents_of(vec![m.id.clone()])
            .await?
            .remove(&m.id);
        let open = match open {
            Some(inc)
                if matches!(
                    Hold::parse(inc.hold.as_deref()),
                    Some(Hold::Flapping { .. })
                ) =>
            {
                Some(release(&txn, &c, inc, &rules).await?)
            }
            other => other,
        };
        summary(&txn, &c, &m, &rules, open.as_ref(), since, st.flap_count).await?;
        txn.commit().await?;
        sent += 1;
    }
    if sent > 0 {
        ctx.outbox_wakeup.notify_one();
    }
    Ok(sent)
}

/// An incident held for flapping, told by the summary: notified, escalating from now.
async fn release(
    tx: &Tx,
    c: &Ctx<'_>,
    inc: IncidentRow,
    rules: &Rules,
) -> Result<IncidentRow, StoreError> {
    let was = Hold::parse(inc.hold.as_deref()).map(|h| h.view());
    let after = IncidentRow {
        hold: None,
        notified: true,
        escalate_at: rules.escalation.as_ref().and_then(|e| e.first_at(c.now)),
        remind_at: rules.first_reminder(c.now),
        ..inc.clone()
    };
    let saved = tx.save_incident(inc, &after).await?;
    incidents::timeline(tx, &saved.id, c.now, "released", json!({"hold": was})).await?;
    Ok(saved)
}

/// Queue the `monitor.flapping` summary to the policy's channels.
async fn summary(
    tx: &Tx,
    c: &Ctx<'_>,
    m: &MonitorRow,
    rules: &Rules,
    open: Option<&IncidentRow>,
    since: i64,
    changes: i32,
) -> Result<(), StoreError> {
    let flapping = json!({
        "since": crate::time::format_ms(since),
        "until": crate::time::format_ms(c.now),
        "changes": changes,
        "state": if open.is_some() { "down" } else { "up" },
    });
    tell(tx, c, m, rules, open, kind::MONITOR_FLAPPING, flapping).await
}

/// Queue a flapping `event` with its `flapping` object to the policy's channels, with
/// `open`, the incident it concerns if the monitor is down, noted on that incident's
/// timeline.
async fn tell(
    tx: &Tx,
    c: &Ctx<'_>,
    m: &MonitorRow,
    rules: &Rules,
    open: Option<&IncidentRow>,
    event: &'static str,
    flapping: Value,
) -> Result<(), StoreError> {
    incidents::tell_monitor_event(
        tx,
        c,
        m,
        &rules.channels,
        open,
        event,
        ("flapping", flapping),
    )
    .await?;
    if let Some(inc) = open {
        let kinds: Vec<&str> = rules.channels.iter().map(|t| t.kind.as_str()).collect();
        incidents::timeline(
            tx,
            &inc.id,
            c.now,
            "notified",
            json!({"event": event, "channels": kinds}),
        )
        .await?;
    }
    Ok(())
}
