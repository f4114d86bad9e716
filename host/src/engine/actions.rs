//! What people do through the API that changes incidents or emits events: acknowledge,
//! resolve by hand, pause and resume a monitor, delete a monitor. Each runs in one
//! transaction with the notifications it causes.

use super::context::EngineContext;
use super::incidents::{self, Ctx};
use super::policy::{Target, rules_of};
use crate::outbox::events::{self, EventBody, kind};
use crate::outbox::{self, Origin};
use crate::store::{
    IncidentRow, IncidentState, MonitorChange, MonitorRow, MonitorState, Store, StoreError, Tx,
};

/// Why an action was refused.
#[derive(Debug, thiserror::Error)]
pub enum ActionError {
    #[error("not found")]
    NotFound,
    #[error("the incident is resolved")]
    Resolved,
    #[error(transparent)]
    Store(#[from] StoreError),
}

async fn find_incident(tx: &Tx, workspace_id: &str, id: &str) -> Result<IncidentRow, ActionError> {
    tx.incident_in(workspace_id, id)
        .await?
        .ok_or(ActionError::NotFound)
}

/// Acknowledge an incident. Acknowledging an acknowledged one changes nothing.
pub async fn acknowledge(
    store: &Store,
    ctx: &EngineContext,
    workspace_id: &str,
    id: &str,
    by: &str,
    note: Option<&str>,
    now: i64,
) -> Result<IncidentRow, ActionError> {
    let txn = store.begin_write().await?;
    let inc = find_incident(&txn, workspace_id, id).await?;
    match inc.status {
        IncidentState::Resolved => return Err(ActionError::Resolved),
        IncidentState::Acknowledged => return Ok(inc),
        IncidentState::Open | IncidentState::Suppressed => {}
    }
    let rules = rules_of(&txn, inc.policy_id.as_deref()).await?;
    let name = txn.workspace_name(workspace_id).await?;
    let c = Ctx {
        public_url: &ctx.public_url,
        workspace_id,
        workspace_name: &name,
        now,
    };
    let acked = incidents::acknowledge(&txn, &c, inc, &rules, by, note).await?;
    txn.commit().await?;
    ctx.outbox_wakeup.notify_one();
    Ok(acked)
}

/// Resolve an incident by hand, with the same event and notifications as recovery. The
/// monitor's failure count starts again, so a still-failing monitor opens a new incident
/// only after another full threshold of failures. Resolving a resolved incident changes nothing.
pub async fn resolve(
    store: &Store,
    ctx: &EngineContext,
    workspace_id: &str,
    id: &str,
    by: &str,
    now: i64,
) -> Result<IncidentRow, ActionError> {
    let txn = store.begin_write().await?;
    let inc = find_incident(&txn, workspace_id, id).await?;
    if inc.status == IncidentState::Resolved {
        return Ok(inc);
    }
    let rules = rules_of(&txn, inc.policy_id.as_deref()).await?;
    let name = txn.workspace_name(workspace_id).await?;
    let c = Ctx {
        public_url: &ctx.public_url,
        workspace_id,
        workspace_name: &name,
        now,
    };
    let monitor = txn.monitor_by_id(&inc.monitor_id).await?;
    let snoozed = match &monitor {
        Some(m) => super::holds::snooze_in(&txn, m, now).await?,
        None => None,
    };
    let hold = snoozed.map(|until| super::hold::Hold::Snoozed { until });
    let resolved = incidents::resolve(&txn, &c, inc, &rules, Some(by), hold).await?;
    if let Some(m) = monitor
        && m.status != MonitorState::Paused
    {
        txn.restart_after_manual_resolve(&m.id).await?;
    }
    txn.commit().await?;
    ctx.outbox_wakeup.notify_one();
    Ok(resolved)
}

/// Pause or resume a monitor and tell its policy's webhooks. Returns the monitor and
/// whether anything changed (pausing a paused monitor is a no-op with no event).
pub async fn set_paused(
    store: &Store,
    ctx: &EngineContext,
    workspace_id: &str,
    id: &str,
    paused: bool,
    now: i64,
) -> Result<(MonitorRow, bool), ActionError> {
    let txn = store.begin_write().await?;
    let m = txn
        .monitor_in(workspace_id, id)
        .await?
        .ok_or(ActionError::NotFound)?;
    if (m.status == MonitorState::Paused) == paused {
        return Ok((m, false));
    }
    // Resuming starts afresh (an unresolved incident keeps the monitor down).
    let open = txn.open_incident_of(id).await?.is_some();
    let new_status = match (paused, open) {
        (true, _) => MonitorState::Paused,
        (false, true) => MonitorState::Down,
        (false, false) => MonitorState::Pending,
    };
    let saved = txn
        .set_monitor_state(m, new_status, !paused, Some(now))
        .await?;
    let rules = rules_of(&txn, saved.alert_policy_id.as_deref()).await?;
    let webhooks: Vec<&Target> = rules
        .channels
        .iter()
        .filter(|t| t.kind == "webhook")
        .collect();
    if !webhooks.is_empty() {
        let body = EventBody {
            event: if paused {
                kind::MONITOR_PAUSED
            } else {
                kind::MONITOR_RESUMED
            },
            at_ms: now,
            monitor: events::monitor_object(&saved),
            workspace_id: workspace_id.to_string(),
            workspace_name: txn.workspace_name(workspace_id).await?,
            incident: None,
            failure: None,
            ssl: None,
            test: false,
        };
        let origin = Origin {
            workspace_id,
            incident_id: None,
            monitor_id: Some(id),
        };
        for t in webhooks {
            outbox::enqueue(&txn, &origin, t, &body, now).await?;
        }
    }
    txn.commit().await?;
    store.publish(MonitorChange::Upserted(id.to_string()));
    ctx.outbox_wakeup.notify_one();
    // A resumed heartbeat monitor expects its next ping counting from now.
    if !paused
        && saved.kind == crate::plugins::HEARTBEAT
        && let Some(exp) = super::heartbeat::Expectation::of(&saved.config)
    {
        super::heartbeat::arm(store, &saved, &exp, now).await?;
    }
    Ok((saved, true))
}

/// Delete a monitor: its unresolved incident is resolved without notifications, and the
/// monitor and its history are removed. Returns whether it existed.
pub async fn delete_monitor(
    store: &Store,
    workspace_id: &str,
    id: &str,
    now: i64,
) -> Result<bool, ActionError> {
    let txn = store.begin_write().await?;
    if txn.monitor_in(workspace_id, id).await?.is_none() {
        return Ok(false);
    }
    if let Some(inc) = txn.open_incident_of(id).await? {
        incidents::close_silently(&txn, inc, now, "monitor deleted").await?;
    }
    txn.delete_monitor(workspace_id, id).await?;
    txn.commit().await?;
    store.publish(MonitorChange::Deleted(id.to_string()));
    Ok(true)
}
