//! What people do through the API that changes incidents or emits events: acknowledge,
//! resolve by hand, pause and resume a monitor, delete a monitor. Each runs in one
//! transaction with the notifications it causes.

use super::context::EngineContext;
use super::incidents::{self, Ctx};
use super::policy::{Target, rules_of};
use crate::outbox::events::{self, EventBody, kind};
use crate::outbox::{self, Origin};
use crate::plugins::abilities::Ability;
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

/// An incident read for a change once its monitor is locked, in the recorder's order
/// (monitor, then incident): a person's change and a check's recovery of the same
/// incident take turns, so neither overwrites the other (and they cannot deadlock).
async fn locked_incident(
    tx: &Tx,
    workspace_id: &str,
    id: &str,
) -> Result<IncidentRow, ActionError> {
    let first = find_incident(tx, workspace_id, id).await?;
    tx.monitors_by_ids(vec![first.monitor_id]).await?;
    find_incident(tx, workspace_id, id).await
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
    let inc = locked_incident(&txn, workspace_id, id).await?;
    match inc.status {
        IncidentState::Resolved => return Err(ActionError::Resolved),
        IncidentState::Acknowledged => return Ok(inc),
        IncidentState::Open | IncidentState::Suppressed => {}
    }
    let rules = rules_of(&txn, inc.policy_id.as_deref()).await?;
    let name = txn.workspace_name(workspace_id).await?;
    let c = Ctx {
        public_url: &ctx.public_url,
        channels: &ctx.channels,
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
    let inc = locked_incident(&txn, workspace_id, id).await?;
    if inc.status == IncidentState::Resolved {
        return Ok(inc);
    }
    let name = txn.workspace_name(workspace_id).await?;
    let c = Ctx {
        public_url: &ctx.public_url,
        channels: &ctx.channels,
        workspace_id,
        workspace_name: &name,
        now,
    };
    let monitor = txn.monitor_by_id(&inc.monitor_id).await?;
    let resolved = resolve_by_hand(&txn, &c, inc, monitor, by).await?;
    txn.commit().await?;
    ctx.outbox_wakeup.notify_one();
    Ok(resolved)
}

/// Resolve `inc` by hand inside `txn` (its monitor already read): recovery's event and
/// notifications (held while the monitor is snoozed), and the monitor's failures count
/// from zero again unless it is paused.
async fn resolve_by_hand(
    txn: &Tx,
    c: &Ctx<'_>,
    inc: IncidentRow,
    monitor: Option<MonitorRow>,
    by: &str,
) -> Result<IncidentRow, StoreError> {
    let rules = rules_of(txn, inc.policy_id.as_deref()).await?;
    let hold = match &monitor {
        Some(m) => super::holds::snooze_in(txn, m, c.now)
            .await?
            .map(|until| super::hold::Hold::Snoozed { until }),
        None => None,
    };
    let resolved = incidents::resolve(txn, c, inc, &rules, Some(by), hold).await?;
    if let Some(m) = monitor
        && m.status != MonitorState::Paused
    {
        txn.restart_after_manual_resolve(&m.id).await?;
    }
    Ok(resolved)
}

/// Pause or resume a monitor and tell the channels of its policy that ask for `pauses`
/// (webhooks). Returns the monitor and whether anything changed (pausing a paused monitor
/// is a no-op with no event).
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
    let told: Vec<&Target> = rules
        .channels
        .iter()
        .filter(|t| ctx.channels.has(&t.kind, Ability::Pauses))
        .collect();
    if !told.is_empty() {
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
        for t in told {
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

/// Why a one-click link did nothing.
#[derive(Debug, thiserror::Error)]
pub enum LinkRefusal {
    /// No such link: mistyped, altered, or pruned long after it expired.
    #[error("not found")]
    NotFound,
    #[error("expired")]
    Expired,
    /// Used already: when, and as whom.
    #[error("used")]
    Used { at: i64, by: String },
    /// The incident was resolved meanwhile: its links do nothing more.
    #[error("the incident is resolved")]
    Resolved,
    /// Acknowledged already, by whom (the link is kept for another action).
    #[error("acknowledged already")]
    Acknowledged { by: String },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What a used link did.
#[derive(Debug, Clone)]
pub struct LinkUsed {
    pub action: crate::outbox::links::Action,
    pub incident: IncidentRow,
    /// The end of the monitor's snooze, for the snooze actions.
    pub snoozed_until: Option<i64>,
}

/// Whether a stored link may still be used at `now`: not used, not expired.
pub fn unspent(
    link: &crate::store::links::ActionLinkRow,
    lifetime_ms: i64,
    now: i64,
) -> Result<(), LinkRefusal> {
    if let Some(at) = link.used_at {
        return Err(LinkRefusal::Used {
            at,
            by: link.used_by.clone().unwrap_or_default(),
        });
    }
    if now > link.created_at + lifetime_ms {
        return Err(LinkRefusal::Expired);
    }
    Ok(())
}

/// A link that can be used now, with its incident; else why not.
pub async fn usable_link(
    tx: &Tx,
    token_hash: &str,
    lifetime_ms: i64,
    now: i64,
) -> Result<(crate::store::links::ActionLinkRow, IncidentRow), LinkRefusal> {
    let link = tx
        .action_link(token_hash)
        .await?
        .ok_or(LinkRefusal::NotFound)?;
    unspent(&link, lifetime_ms, now)?;
    let inc = tx
        .incident_in(&link.workspace_id, &link.incident_id)
        .await?
        .ok_or(LinkRefusal::NotFound)?;
    Ok((link, inc))
}

/// Use a one-click link from an alert, as `by`: acknowledge its incident, snooze its
/// monitor, or resolve it; the link is spent in the same transaction, so it acts once.
/// `zone` is the workspace's time zone (when "until 09:00" is).
pub async fn use_link(
    store: &Store,
    ctx: &EngineContext,
    token_hash: &str,
    by: &str,
    lifetime_ms: i64,
    zone: chrono_tz::Tz,
    now: i64,
) -> Result<LinkUsed, LinkRefusal> {
    use crate::outbox::links::Action;
    let txn = store.begin_write().await?;
    let (link, first) = usable_link(&txn, token_hash, lifetime_ms, now).await?;
    let action = Action::parse(&link.action).ok_or(LinkRefusal::NotFound)?;
    // The monitor first, as the recorder locks it, then the incident as it is now.
    let monitor = txn
        .monitors_by_ids(vec![first.monitor_id.clone()])
        .await?
        .into_iter()
        .next();
    let inc = txn
        .incident_in(&link.workspace_id, &link.incident_id)
        .await?
        .ok_or(LinkRefusal::NotFound)?;
    if inc.status == IncidentState::Resolved {
        return Err(LinkRefusal::Resolved);
    }
    let workspace_id = link.workspace_id.as_str();
    let name = txn.workspace_name(workspace_id).await?;
    let c = Ctx {
        public_url: &ctx.public_url,
        channels: &ctx.channels,
        workspace_id,
        workspace_name: &name,
        now,
    };
    let mut snoozed_until = None;
    let incident = match action {
        Action::Acknowledge if inc.status == IncidentState::Acknowledged => {
            return Err(LinkRefusal::Acknowledged {
                by: inc.acknowledged_by.clone().unwrap_or_default(),
            });
        }
        Action::Acknowledge => {
            let rules = rules_of(&txn, inc.policy_id.as_deref()).await?;
            incidents::acknowledge(&txn, &c, inc, &rules, by, None).await?
        }
        Action::Resolve => resolve_by_hand(&txn, &c, inc, monitor, by).await?,
        Action::SnoozeHour | Action::SnoozeUntilMorning => {
            let asked = match action {
                Action::SnoozeHour => now + 3_600_000,
                _ => next_morning(now, zone),
            };
            // A link never shortens a snooze someone set for longer.
            let until = monitor
                .as_ref()
                .and_then(|m| m.snoozed_until)
                .map_or(asked, |set| set.max(asked));
            if !txn
                .set_monitor_snooze(workspace_id, &inc.monitor_id, Some(until))
                .await?
            {
                return Err(LinkRefusal::NotFound);
            }
            incidents::timeline(
                &txn,
                &inc.id,
                now,
                "snoozed",
                serde_json::json!({"by": by, "until": crate::time::format_ms(until)}),
            )
            .await?;
            snoozed_until = Some(until);
            inc
        }
    };
    if !txn.use_action_link(token_hash, by, now).await? {
        // Another click won between the read and the update: this one did nothing (its
        // transaction is rolled back when dropped).
        let won = txn.action_link(token_hash).await?;
        return Err(LinkRefusal::Used {
            at: won.as_ref().and_then(|l| l.used_at).unwrap_or(now),
            by: won.and_then(|l| l.used_by).unwrap_or_default(),
        });
    }
    crate::store::audit::note(
        crate::store::audit::Change::new(
            Some(workspace_id),
            match action {
                Action::Acknowledge => "incident.acknowledge",
                Action::Resolve => "incident.resolve",
                Action::SnoozeHour | Action::SnoozeUntilMorning => "monitor.snooze",
            },
            if snoozed_until.is_some() {
                "monitor"
            } else {
                "incident"
            },
            Some(if snoozed_until.is_some() {
                incident.monitor_id.as_str()
            } else {
                incident.id.as_str()
            }),
        )
        .after(serde_json::json!({
            "incidentId": incident.id,
            "link": action.name(),
            "until": snoozed_until.map(crate::time::format_ms),
        })),
    );
    txn.commit().await?;
    ctx.outbox_wakeup.notify_one();
    Ok(LinkUsed {
        action,
        incident,
        snoozed_until,
    })
}

/// The next 09:00 after `now` in `zone` (tomorrow's once today's has passed).
pub fn next_morning(now: i64, zone: chrono_tz::Tz) -> i64 {
    use chrono::{Days, NaiveTime, TimeZone};
    let nine = NaiveTime::from_hms_opt(9, 0, 0).unwrap_or_default();
    let Some(local) = chrono::DateTime::from_timestamp_millis(now).map(|t| t.with_timezone(&zone))
    else {
        return now + 86_400_000;
    };
    let mut day = local.date_naive();
    for _ in 0..3 {
        // A 09:00 that a clock change skips takes the first instant after it.
        if let Some(t) = zone
            .from_local_datetime(&day.and_time(nine))
            .earliest()
            .map(|t| t.timestamp_millis())
            .filter(|t| *t > now)
        {
            return t;
        }
        day = day.checked_add_days(Days::new(1)).unwrap_or(day);
    }
    now + 86_400_000
}

#[cfg(test)]
mod tests {
    use super::next_morning;

    #[test]
    fn mornings_are_the_next_nine_o_clock_in_the_zone() {
        let at = |s: &str| crate::time::parse_ms(s).expect("time");
        let paris: chrono_tz::Tz = "Europe/Paris".parse().expect("zone");
        // 07:30 in Paris (06:30 UTC in winter): today's 09:00.
        assert_eq!(
            next_morning(at("2026-11-30T06:30:00Z"), paris),
            at("2026-11-30T08:00:00Z")
        );
        // 22:00 in Paris: tomorrow's.
        assert_eq!(
            next_morning(at("2026-11-30T21:00:00Z"), paris),
            at("2026-12-01T08:00:00Z")
        );
        // Exactly 09:00: the next day's.
        assert_eq!(
            next_morning(at("2026-11-30T09:00:00Z"), chrono_tz::UTC),
            at("2026-12-01T09:00:00Z")
        );
    }
}
