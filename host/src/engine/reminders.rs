//! Reminders: while an incident stays open and unacknowledged, its policy's `repeatEvery`
//! sends its DOWN again as `incident.reminder` ("still down for 2 h 10 min"), at most
//! `repeatLimit` times. Like escalations they are driven from the database
//! (`incidents.remind_at`), and each is taken with a conditional update, so a restart or a
//! second node neither loses nor repeats one. Acknowledging or resolving the incident
//! clears its next reminder; a snoozed monitor's reminder waits for the snooze to end, one
//! under maintenance for the window's end, and a paused monitor's until it is resumed
//! (each looked at again at least every `repeatEvery`, so a snooze ended early or a window
//! shortened does not silence reminders until the old end).

use super::context::EngineContext;
use super::incidents::{self, Ctx};
use super::policy::rules_of;
use crate::outbox::events::{self, EventBody, kind};
use crate::outbox::{self, Origin};
use crate::store::{IncidentRow, MonitorState, Store, StoreError};
use serde_json::{Value, json};

/// Most reminders looked at in one pass.
const BATCH: u64 = 100;

/// "2 h 10 min", "45 min", "30 s".
pub fn down_for(seconds: i64) -> String {
    let (h, m, s) = (seconds / 3600, seconds % 3600 / 60, seconds % 60);
    match (h, m) {
        (0, 0) => format!("{s} s"),
        (0, m) => format!("{m} min"),
        (h, 0) => format!("{h} h"),
        (h, m) => format!("{h} h {m} min"),
    }
}

/// Send every reminder due at `now`. Returns how many were sent.
pub async fn remind_due(store: &Store, ctx: &EngineContext, now: i64) -> Result<usize, StoreError> {
    let due = store.due_reminders(now, BATCH).await?;
    let mut sent = 0;
    for inc in due {
        let Some(at) = inc.remind_at else { continue };
        let txn = store.begin_write().await?;
        let rules = rules_of(&txn, inc.policy_id.as_deref()).await?;
        let Some(repeat) = rules.repeat.filter(|r| inc.reminders < r.limit) else {
            // The policy no longer reminds (edited or deleted), or the limit was lowered.
            txn.set_reminder(&inc.id, None).await?;
            txn.commit().await?;
            continue;
        };
        let Some(m) = txn.monitor_by_id(&inc.monitor_id).await? else {
            txn.set_reminder(&inc.id, None).await?;
            txn.commit().await?;
            continue;
        };
        let quiet = super::holds::quiet_until(&txn, &m, now).await?;
        let paused = (m.status == MonitorState::Paused).then_some(now + repeat.every_ms);
        if let Some(until) = quiet.max(paused) {
            txn.set_reminder(&inc.id, Some(until.min(now + repeat.every_ms)))
                .await?;
            txn.commit().await?;
            continue;
        }
        let number = inc.reminders + 1;
        let next = (number < repeat.limit).then(|| now + repeat.every_ms);
        if !txn.claim_reminder(&inc.id, at, next).await? {
            continue;
        }
        let name = txn.workspace_name(&inc.workspace_id).await?;
        let c = Ctx {
            public_url: &ctx.public_url,
            channels: &ctx.channels,
            workspace_id: &inc.workspace_id,
            workspace_name: &name,
            now,
        };
        remind(&txn, &c, &inc, &rules.channels, number, repeat.limit).await?;
        txn.commit().await?;
        sent += 1;
    }
    if sent > 0 {
        ctx.outbox_wakeup.notify_one();
    }
    Ok(sent)
}

/// Queue reminder `number` of `inc` to `channels`, and note it on its timeline.
async fn remind(
    tx: &crate::store::Tx,
    c: &Ctx<'_>,
    inc: &IncidentRow,
    channels: &[crate::outbox::Target],
    number: i32,
    limit: i32,
) -> Result<(), StoreError> {
    let seconds = (c.now - inc.created_at).max(0) / 1000;
    let body = EventBody {
        event: kind::INCIDENT_REMINDER,
        at_ms: c.now,
        monitor: serde_json::from_str(&inc.monitor).unwrap_or(Value::Null),
        workspace_id: c.workspace_id.to_string(),
        workspace_name: c.workspace_name.to_string(),
        incident: Some(events::incident_object(inc, c.public_url)),
        failure: serde_json::from_str::<Value>(&inc.failure).ok(),
        ssl: None,
        test: false,
    };
    let reminder = json!({
        "number": number,
        "limit": limit,
        "downForSeconds": seconds,
        "text": format!("still down for {}", down_for(seconds)),
    });
    let origin = Origin {
        workspace_id: c.workspace_id,
        incident_id: Some(&inc.id),
        monitor_id: Some(&inc.monitor_id),
    };
    for t in channels {
        outbox::enqueue_actionable(
            tx,
            &origin,
            t,
            &body,
            c.now,
            Some(("reminder", reminder.clone())),
            c.public_url,
        )
        .await?;
    }
    let kinds: Vec<&str> = channels.iter().map(|t| t.kind.as_str()).collect();
    incidents::timeline(
        tx,
        &inc.id,
        c.now,
        "reminded",
        json!({"number": number, "channels": kinds}),
    )
    .await
}

#[cfg(test)]
mod tests {
    #[test]
    fn durations_read_as_people_say_them() {
        assert_eq!(super::down_for(30), "30 s");
        assert_eq!(super::down_for(45 * 60 + 10), "45 min");
        assert_eq!(super::down_for(2 * 3600), "2 h");
        assert_eq!(super::down_for(2 * 3600 + 10 * 60 + 5), "2 h 10 min");
    }
}
