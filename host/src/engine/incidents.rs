//! Incident transitions. Each function runs inside the caller's transaction and writes the
//! incident change, its timeline entry and its outbox rows together, so none of them exists
//! without the others.
//!
//! States: `open` -> `acknowledged` -> `resolved`, or `open` -> `resolved`. A resolved
//! incident is never reopened; the next outage is a new incident. An incident opened under
//! a hold (see `holds`) tells nobody until it is released; one nobody heard of recovers
//! silently.

use super::hold::Hold;
use super::policy::{Rules, Target};
use crate::ids::{self, prefix};
use crate::outbox::events::{self, EventBody, kind};
use crate::outbox::{self, Origin};
use crate::plugins::abilities::Ability;
use crate::store::groups::AlertGroup;
use crate::store::{DeliveryRow, IncidentRow, IncidentState, StoreError, Tx};
use serde_json::{Value, json};

/// What every transition needs besides the incident.
pub struct Ctx<'a> {
    pub public_url: &'a str,
    /// What each channel type asks of the host.
    pub channels: &'a crate::plugins::abilities::ChannelAbilities,
    pub workspace_id: &'a str,
    pub workspace_name: &'a str,
    pub now: i64,
}

/// Add a timeline entry.
pub async fn timeline(
    tx: &Tx,
    incident_id: &str,
    at: i64,
    kind: &str,
    details: Value,
) -> Result<(), StoreError> {
    tx.add_incident_event(incident_id, at, kind, &details).await
}

async fn notify(
    tx: &Tx,
    ctx: &Ctx<'_>,
    inc: &IncidentRow,
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
    // A DOWN (first told, released from a hold, or escalated) carries links to act on it.
    let actionable = event == kind::INCIDENT_CREATED && inc.status == IncidentState::Open;
    for t in targets {
        if actionable {
            outbox::enqueue_actionable(tx, &origin, t, &body, ctx.now, None, ctx.public_url)
                .await?;
        } else {
            outbox::enqueue(tx, &origin, t, &body, ctx.now).await?;
        }
    }
    let kinds: Vec<&str> = targets.iter().map(|t| t.kind.as_str()).collect();
    timeline(
        tx,
        &inc.id,
        ctx.now,
        "notified",
        json!({"event": event, "channels": kinds}),
    )
    .await?;
    Ok(targets.len())
}

/// Queue a monitor's `event` to `channels`, with one more object (`extra`) in its payload:
/// with `open`, the incident it concerns (and, while nobody has acknowledged it, its
/// one-click links).
pub async fn tell_monitor_event(
    tx: &Tx,
    c: &Ctx<'_>,
    m: &crate::store::MonitorRow,
    channels: &[Target],
    open: Option<&IncidentRow>,
    event: &'static str,
    extra: (&str, Value),
) -> Result<(), StoreError> {
    let body = EventBody {
        event,
        at_ms: c.now,
        monitor: events::monitor_object(m),
        workspace_id: c.workspace_id.to_string(),
        workspace_name: c.workspace_name.to_string(),
        incident: open.map(|i| events::incident_object(i, c.public_url)),
        failure: open.and_then(|i| serde_json::from_str::<Value>(&i.failure).ok()),
        ssl: None,
        test: false,
    };
    let origin = Origin {
        workspace_id: c.workspace_id,
        incident_id: open.map(|i| i.id.as_str()),
        monitor_id: Some(&m.id),
    };
    let actionable = open.is_some_and(|i| i.status == IncidentState::Open);
    for t in channels {
        let extra = Some((extra.0, extra.1.clone()));
        if actionable {
            outbox::enqueue_actionable(tx, &origin, t, &body, c.now, extra, c.public_url).await?;
        } else {
            outbox::enqueue_at(tx, &origin, t, &body, c.now, c.now, extra).await?;
        }
    }
    Ok(())
}

/// Tell the subscribers of the status pages showing the incident's monitor that it went
/// `down` or came back `up` (whatever the policy holds: visitors see the page's state).
async fn tell_pages(
    tx: &Tx,
    ctx: &Ctx<'_>,
    inc: &IncidentRow,
    state: &str,
) -> Result<(), StoreError> {
    let monitor: Value = serde_json::from_str(&inc.monitor).unwrap_or(Value::Null);
    let name = monitor["name"].as_str().unwrap_or("monitor");
    outbox::subscribers::announce_monitor_state(
        tx,
        ctx.public_url,
        ctx.workspace_id,
        &inc.monitor_id,
        name,
        state,
        ctx.now,
    )
    .await?;
    Ok(())
}

/// Targets that hear about an incident: the policy's, plus the escalation's once escalated.
pub(crate) fn audience<'r>(rules: &'r Rules, inc: &IncidentRow) -> Vec<&'r Target> {
    let mut all: Vec<&Target> = rules.channels.iter().collect();
    if let Some(e) = &rules.escalation {
        let done = usize::try_from(inc.escalation_step).unwrap_or(0);
        for t in e.told(done) {
            // A channel of several steps hears each event once.
            if !all.contains(&t) {
                all.push(t);
            }
        }
    }
    all
}

/// The incident as resolved at `now`.
fn resolved_at(inc: IncidentRow, now: i64) -> IncidentRow {
    IncidentRow {
        status: IncidentState::Resolved,
        open_key: None,
        resolved_at: Some(now),
        remind_at: None,
        ..inc
    }
}

/// Open an incident for a monitor whose failures reached the threshold; notify DOWN, unless
/// `hold` says why not yet (then it waits, unescalated, for the release sweep).
#[allow(clippy::too_many_arguments)]
pub async fn open(
    tx: &Tx,
    ctx: &Ctx<'_>,
    monitor_id: &str,
    monitor: Value,
    policy_id: Option<&str>,
    rules: &Rules,
    failure: Value,
    hold: Option<Hold>,
) -> Result<IncidentRow, StoreError> {
    let escalate_at = match hold {
        Some(_) => None,
        None => rules.escalation.as_ref().and_then(|e| e.first_at(ctx.now)),
    };
    let inc = tx
        .insert_incident(IncidentRow {
            id: ids::new_id(prefix::INCIDENT),
            workspace_id: ctx.workspace_id.to_string(),
            monitor_id: monitor_id.to_string(),
            policy_id: policy_id.map(str::to_string),
            status: hold
                .as_ref()
                .map_or(IncidentState::Open, Hold::opening_state),
            open_key: Some(monitor_id.to_string()),
            created_at: ctx.now,
            acknowledged_at: None,
            acknowledged_by: None,
            resolved_at: None,
            escalate_at,
            escalated_at: None,
            failure: failure.to_string(),
            monitor: monitor.to_string(),
            hold: hold.as_ref().map(Hold::text),
            notified: hold.is_none(),
            group_id: None,
            remind_at: hold
                .is_none()
                .then(|| rules.first_reminder(ctx.now))
                .flatten(),
            reminders: 0,
            escalation_step: 0,
        })
        .await?;
    timeline(tx, &inc.id, ctx.now, "created", json!({"failure": failure})).await?;
    tell_pages(tx, ctx, &inc, "down").await?;
    if let Some(h) = &hold {
        timeline(tx, &inc.id, ctx.now, "held", h.view()).await?;
        return Ok(inc);
    }
    announce_opening(tx, ctx, inc, rules, failure).await
}

/// Most incidents one grouped message lists; later ones go out on their own.
pub const MAX_GROUP: usize = 100;

/// Tell the policy's channels an incident opened (DOWN). Under a group window the
/// incident joins its policy's gathering group (or starts one): channels whose plugin asks
/// for `grouping` (e-mail and Telegram) hear of the whole group in one message when the
/// window closes; other channels at once, with the group's id. Returns the incident as
/// saved.
async fn announce_opening(
    tx: &Tx,
    ctx: &Ctx<'_>,
    inc: IncidentRow,
    rules: &Rules,
    failure: Value,
) -> Result<IncidentRow, StoreError> {
    let grouping =
        rules.group_window_secs > 0 && rules.channels.iter().any(|t| ctx.channels.grouped(&t.kind));
    let Some(policy_id) = inc.policy_id.clone().filter(|_| grouping) else {
        let targets: Vec<&Target> = rules.channels.iter().collect();
        notify(
            tx,
            ctx,
            &inc,
            &targets,
            kind::INCIDENT_CREATED,
            Some(failure),
        )
        .await?;
        return Ok(inc);
    };
    let existing = tx.open_alert_group(&policy_id, ctx.now).await?;
    let group_id = existing
        .as_ref()
        .map_or_else(|| ids::new_id(prefix::ALERT_GROUP), |g| g.id.clone());
    let inc = tx
        .save_incident(
            inc.clone(),
            &IncidentRow {
                group_id: Some(group_id.clone()),
                ..inc
            },
        )
        .await?;
    let body = opening_body(ctx, &inc, failure);
    let entry = json!({
        "monitor": body.monitor,
        "incident": body.incident,
        "failure": body.failure,
    });
    let origin = Origin {
        workspace_id: ctx.workspace_id,
        incident_id: Some(&inc.id),
        monitor_id: Some(&inc.monitor_id),
    };
    let mut told: Vec<&str> = Vec::new();
    // Channels that hear of each incident at once.
    for t in rules
        .channels
        .iter()
        .filter(|t| !ctx.channels.grouped(&t.kind))
    {
        outbox::enqueue_actionable(tx, &origin, t, &body, ctx.now, None, ctx.public_url).await?;
        told.push(&t.kind);
    }
    let grouped: Vec<&Target> = rules
        .channels
        .iter()
        .filter(|t| ctx.channels.grouped(&t.kind))
        .collect();
    match existing {
        Some(group) => {
            // Add the incident to each of the group's pending messages; a message already
            // taken by a worker (or full) leaves this incident to go out on its own.
            for id in &group.delivery_ids {
                let Some(d) = tx.delivery_row(id).await? else {
                    continue;
                };
                let target = Target {
                    kind: d.channel_kind.clone(),
                    config: d.channel_config.clone(),
                    channel_id: d.channel_id.clone(),
                };
                if !join_message(tx, &d, &entry).await? {
                    outbox::enqueue_actionable(
                        tx,
                        &origin,
                        &target,
                        &body,
                        ctx.now,
                        None,
                        ctx.public_url,
                    )
                    .await?;
                }
            }
        }
        None => {
            let closes_at = ctx.now + rules.group_window_secs * 1000;
            let first = json!({"id": group_id, "count": 1, "incidents": [entry]});
            let mut delivery_ids = Vec::new();
            for t in &grouped {
                delivery_ids.push(
                    outbox::enqueue_at(
                        tx,
                        &origin,
                        t,
                        &body,
                        ctx.now,
                        closes_at,
                        Some(("group", first.clone())),
                    )
                    .await?,
                );
            }
            tx.insert_alert_group(AlertGroup {
                id: group_id.clone(),
                workspace_id: ctx.workspace_id.to_string(),
                policy_id,
                started_at: ctx.now,
                closes_at,
                delivery_ids,
            })
            .await?;
        }
    }
    told.extend(grouped.iter().map(|t| t.kind.as_str()));
    timeline(
        tx,
        &inc.id,
        ctx.now,
        "notified",
        json!({"event": kind::INCIDENT_CREATED, "channels": told, "groupId": group_id}),
    )
    .await?;
    Ok(inc)
}

/// Add one incident to a grouped message that has not gone out. False when it has (or is
/// going out now), or lists [`MAX_GROUP`] already.
async fn join_message(tx: &Tx, d: &DeliveryRow, entry: &Value) -> Result<bool, StoreError> {
    let mut payload: Value = match serde_json::from_str(&d.payload) {
        Ok(v) => v,
        Err(_) => return Ok(false),
    };
    let Some(list) = payload["group"]["incidents"].as_array_mut() else {
        return Ok(false);
    };
    if list.len() >= MAX_GROUP {
        return Ok(false);
    }
    list.push(entry.clone());
    let count = list.len();
    payload["group"]["count"] = Value::from(count);
    tx.rewrite_untried_delivery(&d.id, &d.payload, &payload.to_string())
        .await
}

/// The DOWN event of an incident.
fn opening_body(ctx: &Ctx<'_>, inc: &IncidentRow, failure: Value) -> EventBody {
    EventBody {
        event: kind::INCIDENT_CREATED,
        at_ms: ctx.now,
        monitor: serde_json::from_str(&inc.monitor).unwrap_or(Value::Null),
        workspace_id: ctx.workspace_id.to_string(),
        workspace_name: ctx.workspace_name.to_string(),
        incident: Some(events::incident_object(inc, ctx.public_url)),
        failure: Some(failure),
        ssl: None,
        test: false,
    }
}

/// Resolve an unresolved incident; notify RECOVERY when the policy wants it. `by` names
/// who resolved it by hand; None means the checks recovered. An incident nobody was told
/// of resolves silently; `hold` (the monitor is snoozed or flapping) holds the recovery of
/// one that was told.
pub async fn resolve(
    tx: &Tx,
    ctx: &Ctx<'_>,
    inc: IncidentRow,
    rules: &Rules,
    by: Option<&str>,
    hold: Option<Hold>,
) -> Result<IncidentRow, StoreError> {
    let told = inc.notified;
    let held = hold.filter(|_| told && rules.notify_on_recovery);
    let after = IncidentRow {
        hold: held.as_ref().map(Hold::text),
        ..resolved_at(inc.clone(), ctx.now)
    };
    let resolved = tx.save_incident(inc, &after).await?;
    let mut details = match by {
        Some(who) => json!({"by": who, "manual": true}),
        None => json!({"manual": false}),
    };
    if !told {
        details["notified"] = json!(false);
    }
    timeline(tx, &resolved.id, ctx.now, "resolved", details).await?;
    tell_pages(tx, ctx, &resolved, "up").await?;
    if let Some(h) = held {
        timeline(tx, &resolved.id, ctx.now, "held", h.view()).await?;
        return Ok(resolved);
    }
    if told && rules.notify_on_recovery {
        let targets = audience(rules, &resolved);
        notify(tx, ctx, &resolved, &targets, kind::INCIDENT_RESOLVED, None).await?;
    }
    Ok(resolved)
}

/// Send what a hold kept back: the DOWN notification of an incident still unresolved
/// (`inc` already marked notified), or the RECOVERY of one resolved meanwhile.
pub async fn release(
    tx: &Tx,
    ctx: &Ctx<'_>,
    inc: &IncidentRow,
    rules: &Rules,
    was: Option<Value>,
) -> Result<(), StoreError> {
    timeline(tx, &inc.id, ctx.now, "released", json!({"hold": was})).await?;
    if inc.status == IncidentState::Resolved {
        let targets = audience(rules, inc);
        notify(tx, ctx, inc, &targets, kind::INCIDENT_RESOLVED, None).await?;
    } else {
        let failure: Value = serde_json::from_str(&inc.failure).unwrap_or(Value::Null);
        announce_opening(tx, ctx, inc.clone(), rules, failure).await?;
    }
    Ok(())
}

/// Resolve without telling anyone (the monitor was deleted).
pub async fn close_silently(
    tx: &Tx,
    inc: IncidentRow,
    now: i64,
    why: &str,
) -> Result<(), StoreError> {
    // Nothing held is owed to anyone any more.
    let after = IncidentRow {
        hold: None,
        ..resolved_at(inc.clone(), now)
    };
    tx.save_incident(inc.clone(), &after).await?;
    timeline(
        tx,
        &inc.id,
        now,
        "resolved",
        json!({"manual": true, "reason": why}),
    )
    .await
}

/// Acknowledge an open or suppressed incident: escalation and any hold no longer apply;
/// the channels whose plugin asks for `acknowledgements` hear of it if they heard of its
/// opening.
pub async fn acknowledge(
    tx: &Tx,
    ctx: &Ctx<'_>,
    inc: IncidentRow,
    rules: &Rules,
    by: &str,
    note: Option<&str>,
) -> Result<IncidentRow, StoreError> {
    let after = IncidentRow {
        status: IncidentState::Acknowledged,
        acknowledged_at: Some(ctx.now),
        acknowledged_by: Some(by.to_string()),
        hold: None,
        remind_at: None,
        ..inc.clone()
    };
    let acked = tx.save_incident(inc, &after).await?;
    timeline(
        tx,
        &acked.id,
        ctx.now,
        "acknowledged",
        json!({"by": by, "note": note}),
    )
    .await?;
    if !acked.notified {
        return Ok(acked);
    }
    let told: Vec<&Target> = audience(rules, &acked)
        .into_iter()
        .filter(|t| ctx.channels.has(&t.kind, Ability::Acknowledgements))
        .collect();
    notify(tx, ctx, &acked, &told, kind::INCIDENT_ACKNOWLEDGED, None).await?;
    Ok(acked)
}

/// Escalate an incident still open at its next step: that step's channels get the DOWN
/// notification, once, and the step after it is timed (after the last: none, or the
/// first again when the policy repeats). Returns false when another writer got there
/// first or it no longer applies (acknowledged, resolved, no step left).
pub async fn escalate(
    tx: &Tx,
    ctx: &Ctx<'_>,
    inc: &IncidentRow,
    rules: &Rules,
) -> Result<bool, StoreError> {
    let done = usize::try_from(inc.escalation_step).unwrap_or(usize::MAX);
    let Some((escalation, step)) = rules
        .escalation
        .as_ref()
        .and_then(|e| e.step(done).map(|s| (e, s)))
    else {
        return Ok(false);
    };
    let next = escalation.next_at(done + 1, ctx.now);
    if !tx
        .claim_escalation(&inc.id, inc.escalation_step, next, ctx.now)
        .await?
    {
        return Ok(false);
    }
    let escalated = IncidentRow {
        escalated_at: Some(ctx.now),
        escalation_step: inc.escalation_step + 1,
        escalate_at: next,
        ..inc.clone()
    };
    let targets: Vec<&Target> = step.channels.iter().collect();
    timeline(
        tx,
        &inc.id,
        ctx.now,
        "escalated",
        json!({"step": escalated.escalation_step, "channels": targets.len(),
               "next": next.map(crate::time::format_ms)}),
    )
    .await?;
    let failure: Value = serde_json::from_str(&inc.failure).unwrap_or(Value::Null);
    notify(
        tx,
        ctx,
        &escalated,
        &targets,
        kind::INCIDENT_CREATED,
        Some(failure),
    )
    .await?;
    Ok(true)
}
