//! The durable outbox. Notifications are rows written in the same transaction as the
//! incident change that caused them; a worker claims due rows, hands each to its channel
//! plugin, records the attempt and schedules the next one. Nothing is lost across a crash,
//! and a delivery whose success was recorded is never sent again.

pub mod events;
pub mod links;
pub mod pipeline;
pub mod signing;
pub mod subscribers;
pub mod worker;

use crate::ids::{self, prefix};
use crate::store::{DeliveryRow, DeliveryState, StoreError, Tx};
use events::EventBody;
use std::time::Duration;

/// One place a notification goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Channel type, e.g. `webhook`.
    pub kind: String,
    /// The channel plugin's configuration (JSON object text).
    pub config: String,
    /// The stored channel, when the policy refers to one.
    pub channel_id: Option<String>,
}

/// Where a delivery comes from.
pub struct Origin<'a> {
    pub workspace_id: &'a str,
    pub incident_id: Option<&'a str>,
    pub monitor_id: Option<&'a str>,
}

/// Queue one notification to one target, due now. Returns the delivery id.
pub async fn enqueue(
    tx: &Tx,
    origin: &Origin<'_>,
    target: &Target,
    body: &EventBody,
    now: i64,
) -> Result<String, StoreError> {
    enqueue_at(tx, origin, target, body, now, now, None).await
}

/// Queue one notification to one target, first tried at `due`. `extra`, when given, is
/// added to the payload as one more object (see [`events::payload_with`]).
pub async fn enqueue_at(
    tx: &Tx,
    origin: &Origin<'_>,
    target: &Target,
    body: &EventBody,
    now: i64,
    due: i64,
    extra: Option<(&str, serde_json::Value)>,
) -> Result<String, StoreError> {
    insert(tx, origin, target, body, now, due, extra, None).await
}

/// Queue an alert about an open incident, due now, with its one-click links (see
/// [`links`]) under `public_url` in the payload's `actions`.
pub async fn enqueue_actionable(
    tx: &Tx,
    origin: &Origin<'_>,
    target: &Target,
    body: &EventBody,
    now: i64,
    extra: Option<(&str, serde_json::Value)>,
    public_url: &str,
) -> Result<String, StoreError> {
    insert(tx, origin, target, body, now, now, extra, Some(public_url)).await
}

#[allow(clippy::too_many_arguments)]
async fn insert(
    tx: &Tx,
    origin: &Origin<'_>,
    target: &Target,
    body: &EventBody,
    now: i64,
    due: i64,
    extra: Option<(&str, serde_json::Value)>,
    links_under: Option<&str>,
) -> Result<String, StoreError> {
    let id = ids::new_id(prefix::DELIVERY);
    let mut payload = events::payload_with(body, &id, extra);
    if let Some(public_url) = links_under.filter(|_| !body.test)
        && let Some(actions) = links::mint(tx, origin, target, &id, public_url, now).await?
    {
        payload = events::with_object(&payload, "actions", actions);
    }
    pending_row(tx, origin, target, &id, body.event, payload, now, due).await?;
    Ok(id)
}

/// Write delivery `id` as pending, first tried at `due`.
#[allow(clippy::too_many_arguments)]
async fn pending_row(
    tx: &Tx,
    origin: &Origin<'_>,
    target: &Target,
    id: &str,
    event: &str,
    payload: String,
    now: i64,
    due: i64,
) -> Result<(), StoreError> {
    tx.insert_delivery(DeliveryRow {
        id: id.to_string(),
        workspace_id: origin.workspace_id.to_string(),
        incident_id: origin.incident_id.map(str::to_string),
        monitor_id: origin.monitor_id.map(str::to_string),
        channel_id: target.channel_id.clone(),
        channel_kind: target.kind.clone(),
        channel_config: target.config.clone(),
        event: event.to_string(),
        payload,
        status: DeliveryState::Pending,
        attempts: 0,
        next_attempt_at: due,
        lease_until: None,
        last_error: None,
        created_at: now,
        updated_at: now,
        delivered_at: None,
        pipeline: None,
    })
    .await?;
    Ok(())
}

/// Queue a notification whose payload is not an incident or monitor event (a status
/// page's messages to its subscribers): `payload` is given the delivery id.
pub async fn enqueue_raw(
    tx: &Tx,
    origin: &Origin<'_>,
    target: &Target,
    event: &str,
    payload: impl FnOnce(&str) -> String,
    now: i64,
) -> Result<String, StoreError> {
    let id = ids::new_id(prefix::DELIVERY);
    let text = payload(&id);
    pending_row(tx, origin, target, &id, event, text, now, now).await?;
    Ok(id)
}

/// When attempt number `attempts` (1-based, just failed) should be followed by another:
/// the schedule's step with ±10% jitter, or None when the schedule is used up.
pub fn next_delay(schedule: &[Duration], attempts: u32, jitter_unit: f64) -> Option<Duration> {
    let step = *schedule.get(usize::try_from(attempts).ok()?.checked_sub(1)?)?;
    // jitter_unit in [0, 1) maps to a factor in [0.9, 1.1).
    let factor = 0.9 + 0.2 * jitter_unit.clamp(0.0, 0.999_999);
    Some(step.mul_f64(factor))
}

/// A number in [0, 1) from the OS random source, for jitter.
pub fn jitter_unit() -> f64 {
    let mut b = [0u8; 4];
    if getrandom::fill(&mut b).is_err() {
        return 0.5;
    }
    f64::from(u32::from_le_bytes(b)) / (f64::from(u32::MAX) + 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schedule_runs_out_after_its_last_step() {
        let s = crate::config::parse_schedule("10s,1m,5m").expect("schedule");
        assert_eq!(next_delay(&s, 1, 0.5), Some(Duration::from_secs(10)));
        assert_eq!(next_delay(&s, 3, 0.5), Some(Duration::from_secs(300)));
        assert_eq!(next_delay(&s, 4, 0.5), None);
        assert_eq!(next_delay(&s, 0, 0.5), None);
        let low = next_delay(&s, 2, 0.0).expect("step");
        let high = next_delay(&s, 2, 0.999_999).expect("step");
        assert!(
            low >= Duration::from_secs(54) && high < Duration::from_secs(66),
            "{low:?} {high:?}"
        );
        let u = jitter_unit();
        assert!((0.0..1.0).contains(&u));
    }
}
