//! The durable outbox. Notifications are rows written in the same transaction as the
//! incident change that caused them; a worker claims due rows, hands each to its channel
//! plugin, records the attempt and schedules the next one. Nothing is lost across a crash,
//! and a delivery whose success was recorded is never sent again.

pub mod signing;
pub mod worker;

use crate::engine::events::{self, EventBody};
use crate::engine::policy::Target;
use crate::ids;
use crate::store::StoreError;
use crate::store::entities::delivery;
use sea_orm::{ActiveModelTrait, ActiveValue::Set, ConnectionTrait};
use std::time::Duration;

/// Prefix of delivery ids (also the `webhookId` and `X-Service-Webhook-ID`).
pub const DELIVERY_PREFIX: &str = "whd_";

/// Delivery states.
pub mod status {
    pub const PENDING: &str = "pending";
    pub const SUCCEEDED: &str = "succeeded";
    pub const FAILED: &str = "failed";
    pub const ALL: [&str; 3] = [PENDING, SUCCEEDED, FAILED];
}

/// Where a delivery comes from.
pub struct Origin<'a> {
    pub workspace_id: &'a str,
    pub incident_id: Option<&'a str>,
    pub monitor_id: Option<&'a str>,
}

/// Queue one notification to one target. Returns the delivery id.
pub async fn enqueue(
    conn: &impl ConnectionTrait,
    origin: &Origin<'_>,
    target: &Target,
    body: &EventBody,
    now: i64,
) -> Result<String, StoreError> {
    let id = ids::new_id(DELIVERY_PREFIX);
    let row = delivery::ActiveModel {
        id: Set(id.clone()),
        workspace_id: Set(origin.workspace_id.to_string()),
        incident_id: Set(origin.incident_id.map(str::to_string)),
        monitor_id: Set(origin.monitor_id.map(str::to_string)),
        channel_id: Set(target.channel_id.clone()),
        channel_kind: Set(target.kind.clone()),
        channel_config: Set(target.config.clone()),
        event: Set(body.event.to_string()),
        payload: Set(events::payload(body, &id)),
        status: Set(status::PENDING.into()),
        attempts: Set(0),
        next_attempt_at: Set(now),
        lease_until: Set(None),
        last_error: Set(None),
        created_at: Set(now),
        updated_at: Set(now),
        delivered_at: Set(None),
    };
    row.insert(conn).await?;
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
