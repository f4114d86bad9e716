//! What people do through the API that changes incidents or emits events: acknowledge,
//! resolve by hand, pause and resume a monitor, delete a monitor. Each runs in one
//! transaction with the notifications it causes.

use super::events::{self, EventBody, kind};
use super::incidents::{self, Ctx, status as incident_status};
use super::policy::{self, Rules, Target};
use super::recorder::EngineContext;
use crate::outbox::{self, Origin};
use crate::store::entities::{alert_policy, incident, monitor, workspace};
use crate::store::monitors::{MonitorRow, status};
use crate::store::{MonitorChange, Store, StoreError};
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, ConnectionTrait, EntityTrait, IntoActiveModel,
    QueryFilter,
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

impl From<sea_orm::DbErr> for ActionError {
    fn from(e: sea_orm::DbErr) -> Self {
        ActionError::Store(e.into())
    }
}

/// The rules of a policy (defaults when there is none or it was deleted).
pub async fn rules_of(
    conn: &impl ConnectionTrait,
    policy_id: Option<&str>,
) -> Result<Rules, StoreError> {
    let Some(id) = policy_id else {
        return Ok(Rules::default());
    };
    let Some(p) = alert_policy::Entity::find_by_id(id.to_string())
        .one(conn)
        .await?
    else {
        return Ok(Rules::default());
    };
    Ok(policy::load_rules(conn, &[p])
        .await?
        .remove(id)
        .unwrap_or_default())
}

async fn workspace_name(conn: &impl ConnectionTrait, id: &str) -> Result<String, StoreError> {
    Ok(workspace::Entity::find_by_id(id.to_string())
        .one(conn)
        .await?
        .map(|w| w.name)
        .unwrap_or_default())
}

async fn find_incident(
    conn: &impl ConnectionTrait,
    workspace_id: &str,
    id: &str,
) -> Result<incident::Model, ActionError> {
    incident::Entity::find_by_id(id.to_string())
        .filter(incident::Column::WorkspaceId.eq(workspace_id))
        .one(conn)
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
) -> Result<incident::Model, ActionError> {
    let txn = store.begin_write().await?;
    let inc = find_incident(&txn, workspace_id, id).await?;
    match inc.status.as_str() {
        incident_status::RESOLVED => return Err(ActionError::Resolved),
        incident_status::ACKNOWLEDGED => return Ok(inc),
        _ => {}
    }
    let rules = rules_of(&txn, inc.policy_id.as_deref()).await?;
    let name = workspace_name(&txn, workspace_id).await?;
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
) -> Result<incident::Model, ActionError> {
    let txn = store.begin_write().await?;
    let inc = find_incident(&txn, workspace_id, id).await?;
    if inc.status == incident_status::RESOLVED {
        return Ok(inc);
    }
    let rules = rules_of(&txn, inc.policy_id.as_deref()).await?;
    let name = workspace_name(&txn, workspace_id).await?;
    let c = Ctx {
        public_url: &ctx.public_url,
        workspace_id,
        workspace_name: &name,
        now,
    };
    let monitor_id = inc.monitor_id.clone();
    let resolved = incidents::resolve(&txn, &c, inc, &rules, Some(by)).await?;
    if let Some(m) = monitor::Entity::find_by_id(monitor_id).one(&txn).await?
        && m.status != status::PAUSED
    {
        let mut active = m.into_active_model();
        active.status = Set(status::UP.into());
        active.consecutive_failures = Set(0);
        active.update(&txn).await?;
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
    let m = monitor::Entity::find_by_id(id.to_string())
        .filter(monitor::Column::WorkspaceId.eq(workspace_id))
        .one(&txn)
        .await?
        .ok_or(ActionError::NotFound)?;
    if (m.status == status::PAUSED) == paused {
        return Ok((m, false));
    }
    // Resuming starts afresh (an unresolved incident keeps the monitor down).
    let open = incident::Entity::find()
        .filter(incident::Column::OpenKey.eq(id))
        .one(&txn)
        .await?
        .is_some();
    let new_status = match (paused, open) {
        (true, _) => status::PAUSED,
        (false, true) => status::DOWN,
        (false, false) => status::PENDING,
    };
    let mut active = m.clone().into_active_model();
    active.status = Set(new_status.into());
    active.updated_at = Set(now);
    if !paused {
        active.consecutive_failures = Set(0);
        active.consecutive_successes = Set(0);
    }
    let saved = active.update(&txn).await?;
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
            workspace_name: workspace_name(&txn, workspace_id).await?,
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
    let exists = monitor::Entity::find_by_id(id.to_string())
        .filter(monitor::Column::WorkspaceId.eq(workspace_id))
        .one(&txn)
        .await?
        .is_some();
    if !exists {
        return Ok(false);
    }
    if let Some(inc) = incident::Entity::find()
        .filter(incident::Column::OpenKey.eq(id))
        .one(&txn)
        .await?
    {
        incidents::close_silently(&txn, inc, now, "monitor deleted").await?;
    }
    Store::delete_monitor_in(&txn, workspace_id, id).await?;
    txn.commit().await?;
    store.publish(MonitorChange::Deleted(id.to_string()));
    Ok(true)
}
