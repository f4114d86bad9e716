//! Incident transitions. Each function runs inside the caller's transaction and writes the
//! incident change, its timeline entry and its outbox rows together, so none of them exists
//! without the others.
//!
//! States: `open` -> `acknowledged` -> `resolved`, or `open` -> `resolved`. A resolved
//! incident is never reopened; the next outage is a new incident.

use super::events::{self, EventBody, kind};
use super::policy::{Rules, Target};
use crate::ids;
use crate::outbox::{self, Origin};
use crate::store::StoreError;
use crate::store::entities::{incident, incident_event};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter,
};
use serde_json::{Value, json};

/// Prefix of incident ids.
pub const INCIDENT_PREFIX: &str = "inc_";

/// Incident states.
pub mod status {
    pub const OPEN: &str = "open";
    pub const ACKNOWLEDGED: &str = "acknowledged";
    pub const RESOLVED: &str = "resolved";
    pub const ALL: [&str; 3] = [OPEN, ACKNOWLEDGED, RESOLVED];
}

/// What every transition needs besides the incident.
pub struct Ctx<'a> {
    pub public_url: &'a str,
    pub workspace_id: &'a str,
    pub workspace_name: &'a str,
    pub now: i64,
}

/// Add a timeline entry.
pub async fn timeline(
    conn: &impl ConnectionTrait,
    incident_id: &str,
    at: i64,
    kind: &str,
    details: Value,
) -> Result<(), StoreError> {
    incident_event::ActiveModel {
        id: Set(ids::new_id("evt_")),
        incident_id: Set(incident_id.to_string()),
        at: Set(at),
        kind: Set(kind.to_string()),
        details: Set(details.to_string()),
    }
    .insert(conn)
    .await?;
    Ok(())
}

async fn notify(
    conn: &impl ConnectionTrait,
    ctx: &Ctx<'_>,
    inc: &incident::Model,
    targets: &[&Target],
    event: &'static str,
    failure: Option<Value>,
) -> Result<usize, StoreError> {
    if targets.is_empty() {
        return Ok(0);
    }
    let body = EventBody {
        event,
        at_ms: ctx.now,
        monitor: serde_json::from_str(&inc.monitor).unwrap_or(Value::Null),
        workspace_id: ctx.workspace_id.to_string(),
        workspace_name: ctx.workspace_name.to_string(),
        incident: Some(events::incident_object(inc, ctx.public_url)),
        failure,
        ssl: None,
        test: false,
    };
    let origin = Origin {
        workspace_id: ctx.workspace_id,
        incident_id: Some(&inc.id),
        monitor_id: Some(&inc.monitor_id),
    };
    for t in targets {
        outbox::enqueue(conn, &origin, t, &body, ctx.now).await?;
    }
    let kinds: Vec<&str> = targets.iter().map(|t| t.kind.as_str()).collect();
    timeline(
        conn,
        &inc.id,
        ctx.now,
        "notified",
        json!({"event": event, "channels": kinds}),
    )
    .await?;
    Ok(targets.len())
}

/// Targets that hear about an incident: the policy's, plus the escalation's once escalated.
pub(crate) fn audience<'r>(rules: &'r Rules, inc: &incident::Model) -> Vec<&'r Target> {
    let mut all: Vec<&Target> = rules.channels.iter().collect();
    if inc.escalated_at.is_some()
        && let Some(e) = &rules.escalation
    {
        all.extend(e.channels.iter());
    }
    all
}

/// Open an incident for a monitor whose failures reached the threshold; notify DOWN.
pub async fn open(
    conn: &impl ConnectionTrait,
    ctx: &Ctx<'_>,
    monitor_id: &str,
    monitor: Value,
    policy_id: Option<&str>,
    rules: &Rules,
    failure: Value,
) -> Result<incident::Model, StoreError> {
    let escalate_at = rules
        .escalation
        .as_ref()
        .map(|e| ctx.now + i64::from(e.delay_minutes) * 60_000);
    let inc = incident::ActiveModel {
        id: Set(ids::new_id(INCIDENT_PREFIX)),
        workspace_id: Set(ctx.workspace_id.to_string()),
        monitor_id: Set(monitor_id.to_string()),
        policy_id: Set(policy_id.map(str::to_string)),
        status: Set(status::OPEN.into()),
        open_key: Set(Some(monitor_id.to_string())),
        created_at: Set(ctx.now),
        acknowledged_at: Set(None),
        acknowledged_by: Set(None),
        resolved_at: Set(None),
        escalate_at: Set(escalate_at),
        escalated_at: Set(None),
        failure: Set(failure.to_string()),
        monitor: Set(monitor.to_string()),
    }
    .insert(conn)
    .await?;
    timeline(
        conn,
        &inc.id,
        ctx.now,
        "created",
        json!({"failure": failure}),
    )
    .await?;
    let targets: Vec<&Target> = rules.channels.iter().collect();
    notify(
        conn,
        ctx,
        &inc,
        &targets,
        kind::INCIDENT_CREATED,
        Some(failure),
    )
    .await?;
    Ok(inc)
}

/// Resolve an open or acknowledged incident; notify RECOVERY when the policy wants it.
/// `by` names who resolved it by hand; None means the checks recovered.
pub async fn resolve(
    conn: &impl ConnectionTrait,
    ctx: &Ctx<'_>,
    inc: incident::Model,
    rules: &Rules,
    by: Option<&str>,
) -> Result<incident::Model, StoreError> {
    let mut active: incident::ActiveModel = inc.clone().into();
    active.status = Set(status::RESOLVED.into());
    active.open_key = Set(None);
    active.resolved_at = Set(Some(ctx.now));
    let resolved = active.update(conn).await?;
    let details = match by {
        Some(who) => json!({"by": who, "manual": true}),
        None => json!({"manual": false}),
    };
    timeline(conn, &resolved.id, ctx.now, "resolved", details).await?;
    if rules.notify_on_recovery {
        let targets = audience(rules, &resolved);
        notify(
            conn,
            ctx,
            &resolved,
            &targets,
            kind::INCIDENT_RESOLVED,
            None,
        )
        .await?;
    }
    Ok(resolved)
}

/// Resolve without telling anyone (the monitor was deleted).
pub async fn close_silently(
    conn: &impl ConnectionTrait,
    inc: incident::Model,
    now: i64,
    why: &str,
) -> Result<(), StoreError> {
    let mut active: incident::ActiveModel = inc.clone().into();
    active.status = Set(status::RESOLVED.into());
    active.open_key = Set(None);
    active.resolved_at = Set(Some(now));
    active.update(conn).await?;
    timeline(
        conn,
        &inc.id,
        now,
        "resolved",
        json!({"manual": true, "reason": why}),
    )
    .await
}

/// Acknowledge an open incident: escalation no longer applies; webhooks hear of it.
pub async fn acknowledge(
    conn: &impl ConnectionTrait,
    ctx: &Ctx<'_>,
    inc: incident::Model,
    rules: &Rules,
    by: &str,
    note: Option<&str>,
) -> Result<incident::Model, StoreError> {
    let mut active: incident::ActiveModel = inc.into();
    active.status = Set(status::ACKNOWLEDGED.into());
    active.acknowledged_at = Set(Some(ctx.now));
    active.acknowledged_by = Set(Some(by.to_string()));
    let acked = active.update(conn).await?;
    timeline(
        conn,
        &acked.id,
        ctx.now,
        "acknowledged",
        json!({"by": by, "note": note}),
    )
    .await?;
    let webhooks: Vec<&Target> = audience(rules, &acked)
        .into_iter()
        .filter(|t| t.kind == "webhook")
        .collect();
    notify(
        conn,
        ctx,
        &acked,
        &webhooks,
        kind::INCIDENT_ACKNOWLEDGED,
        None,
    )
    .await?;
    Ok(acked)
}

/// Escalate an incident still open after its delay: the escalation channels get the DOWN
/// notification, once. Returns false when another writer got there first or it no longer
/// applies (acknowledged, resolved).
pub async fn escalate(
    conn: &impl ConnectionTrait,
    ctx: &Ctx<'_>,
    inc: &incident::Model,
    rules: &Rules,
) -> Result<bool, StoreError> {
    let claimed = incident::Entity::update_many()
        .col_expr(incident::Column::EscalatedAt, Expr::value(ctx.now))
        .filter(incident::Column::Id.eq(inc.id.as_str()))
        .filter(incident::Column::Status.eq(status::OPEN))
        .filter(incident::Column::EscalatedAt.is_null())
        .exec(conn)
        .await?
        .rows_affected;
    if claimed != 1 {
        return Ok(false);
    }
    let escalated = incident::Model {
        escalated_at: Some(ctx.now),
        ..inc.clone()
    };
    let targets: Vec<&Target> = rules
        .escalation
        .iter()
        .flat_map(|e| e.channels.iter())
        .collect();
    timeline(
        conn,
        &inc.id,
        ctx.now,
        "escalated",
        json!({"channels": targets.len()}),
    )
    .await?;
    let failure: Value = serde_json::from_str(&inc.failure).unwrap_or(Value::Null);
    notify(
        conn,
        ctx,
        &escalated,
        &targets,
        kind::INCIDENT_CREATED,
        Some(failure),
    )
    .await?;
    Ok(true)
}
