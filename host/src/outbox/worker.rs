//! The delivery worker: claims due deliveries (a lease, so one worker sends each), hands
//! each to its channel plugin, records the attempt and schedules the next one.

use super::{jitter_unit, next_delay, signing, status};
use crate::engine::EngineContext;
use crate::ids;
use crate::plugins::{Notification, PluginHost};
use crate::store::entities::{delivery, delivery_attempt, workspace};
use crate::store::{Store, StoreError};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, Condition, EntityTrait, QueryFilter,
    QueryOrder, QuerySelect,
};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{Semaphore, watch};

/// A claimed delivery is left alone by other workers this long (the delivery timeout plus
/// a margin); a worker that dies mid-delivery loses it after this.
pub const LEASE_MS: i64 = 20_000;
/// Receivers must answer within 10 seconds (the spec's webhook deadline).
pub const DELIVERY_TIMEOUT_MS: u32 = 10_000;
/// Deliveries in flight at once.
pub const MAX_IN_FLIGHT: usize = 32;
/// Deliveries claimed per pass.
const CLAIM_BATCH: u64 = 32;
/// Longest wait between passes when nothing wakes the worker.
const IDLE_POLL: Duration = Duration::from_millis(500);

/// Server settings channel plugins see.
#[derive(Debug, Clone)]
pub struct DeliverySettings {
    pub schedule: Vec<Duration>,
    pub telegram_api_base: String,
    pub telegram_bot_token: Option<String>,
    pub allow_insecure_webhooks: bool,
}

impl DeliverySettings {
    /// The `settings` JSON a channel plugin gets.
    pub fn for_kind(&self, kind: &str) -> String {
        match kind {
            "telegram" => {
                json!({"apiBase": self.telegram_api_base, "botToken": self.telegram_bot_token})
            }
            "webhook" => json!({"allowInsecure": self.allow_insecure_webhooks}),
            _ => json!({}),
        }
        .to_string()
    }
}

/// What one attempt came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptResult {
    pub ok: bool,
    pub retryable: bool,
    pub status_code: Option<u16>,
    pub error: Option<String>,
    pub duration_ms: u32,
}

/// Claim due deliveries for this worker.
pub async fn claim_due(store: &Store, now: i64) -> Result<Vec<delivery::Model>, StoreError> {
    let free = Condition::any()
        .add(delivery::Column::LeaseUntil.is_null())
        .add(delivery::Column::LeaseUntil.lt(now));
    let candidates = delivery::Entity::find()
        .filter(delivery::Column::Status.eq(status::PENDING))
        .filter(delivery::Column::NextAttemptAt.lte(now))
        .filter(free.clone())
        .order_by_asc(delivery::Column::NextAttemptAt)
        .limit(CLAIM_BATCH)
        .all(store.db())
        .await?;
    let mut claimed = Vec::with_capacity(candidates.len());
    for d in candidates {
        let won = delivery::Entity::update_many()
            .col_expr(delivery::Column::LeaseUntil, Expr::value(now + LEASE_MS))
            .filter(delivery::Column::Id.eq(d.id.as_str()))
            .filter(delivery::Column::Status.eq(status::PENDING))
            .filter(free.clone())
            .exec(store.db())
            .await?
            .rows_affected;
        if won == 1 {
            claimed.push(d);
        }
    }
    Ok(claimed)
}

/// The headers a webhook delivery carries, signed now.
pub fn webhook_headers(
    secret: &str,
    event: &str,
    delivery_id: &str,
    body: &str,
    unix_now: i64,
) -> Vec<(String, String)> {
    vec![
        ("Content-Type".into(), "application/json".into()),
        (
            "X-Service-Signature".into(),
            signing::sign(secret, unix_now, body),
        ),
        ("X-Service-Timestamp".into(), unix_now.to_string()),
        ("X-Service-Event".into(), event.to_string()),
        ("X-Service-Webhook-ID".into(), delivery_id.to_string()),
    ]
}

/// Make one attempt at a delivery (no bookkeeping).
pub async fn attempt(
    store: &Store,
    plugins: &PluginHost,
    settings: &DeliverySettings,
    d: &delivery::Model,
    now: i64,
) -> AttemptResult {
    let started = Instant::now();
    let elapsed = |s: Instant| u32::try_from(s.elapsed().as_millis()).unwrap_or(u32::MAX);
    let fail = |retryable: bool, error: String, s: Instant| AttemptResult {
        ok: false,
        retryable,
        status_code: None,
        error: Some(error),
        duration_ms: elapsed(s),
    };
    let Some(plugin) = plugins.channel(&d.channel_kind) else {
        return fail(
            false,
            format!(
                "No loaded plugin provides the channel type `{}`",
                d.channel_kind
            ),
            started,
        );
    };
    let headers = if d.channel_kind == "webhook" {
        let secret = match workspace::Entity::find_by_id(d.workspace_id.clone())
            .one(store.db())
            .await
        {
            Ok(Some(w)) => w.webhook_secret,
            Ok(None) => return fail(false, "The workspace no longer exists".into(), started),
            Err(e) => return fail(true, format!("Database error: {e}"), started),
        };
        webhook_headers(&secret, &d.event, &d.id, &d.payload, now.div_euclid(1000))
    } else {
        Vec::new()
    };
    let n = Notification {
        event: d.event.clone(),
        config: d.channel_config.clone(),
        payload: d.payload.clone(),
        headers: headers
            .into_iter()
            .map(|(name, value)| crate::plugins::bindings::types::Header { name, value })
            .collect(),
        timeout_ms: DELIVERY_TIMEOUT_MS,
        settings: settings.for_kind(&d.channel_kind),
    };
    match plugins.deliver(&plugin, n).await {
        Ok(Ok(receipt)) => AttemptResult {
            ok: true,
            retryable: false,
            status_code: receipt.status_code,
            error: None,
            duration_ms: elapsed(started),
        },
        Ok(Err(failure)) => AttemptResult {
            ok: false,
            retryable: failure.retryable,
            status_code: failure.status_code,
            error: Some(failure.reason),
            duration_ms: elapsed(started),
        },
        Err(e) => fail(true, format!("Channel plugin failed: {e}"), started),
    }
}

/// Record an attempt and move the delivery to its next state.
pub async fn record(
    store: &Store,
    settings: &DeliverySettings,
    d: &delivery::Model,
    r: &AttemptResult,
    now: i64,
) -> Result<(), StoreError> {
    let number = d.attempts + 1;
    let txn = store.begin_write().await?;
    delivery_attempt::ActiveModel {
        id: Set(ids::new_id("att_")),
        delivery_id: Set(d.id.clone()),
        attempt: Set(number),
        at: Set(now),
        ok: Set(r.ok),
        status_code: Set(r.status_code.map(i32::from)),
        error: Set(r.error.clone()),
        duration_ms: Set(i32::try_from(r.duration_ms).unwrap_or(i32::MAX)),
    }
    .insert(&txn)
    .await?;
    let mut active: delivery::ActiveModel = d.clone().into();
    active.attempts = Set(number);
    active.lease_until = Set(None);
    active.updated_at = Set(now);
    if r.ok {
        active.status = Set(status::SUCCEEDED.into());
        active.delivered_at = Set(Some(now));
        active.last_error = Set(None);
    } else {
        active.last_error = Set(r.error.clone());
        let next = if r.retryable {
            next_delay(
                &settings.schedule,
                u32::try_from(number).unwrap_or(u32::MAX),
                jitter_unit(),
            )
        } else {
            None
        };
        match next {
            Some(delay) => {
                active.next_attempt_at =
                    Set(now + i64::try_from(delay.as_millis()).unwrap_or(i64::MAX / 2));
            }
            None => active.status = Set(status::FAILED.into()),
        }
    }
    active.update(&txn).await?;
    txn.commit().await?;
    Ok(())
}

/// The worker loop.
pub struct OutboxWorker {
    pub store: Store,
    pub plugins: Arc<PluginHost>,
    pub ctx: EngineContext,
    pub settings: Arc<DeliverySettings>,
    pub clock: crate::clock::SharedClock,
}

impl OutboxWorker {
    /// Run until `shutdown` turns true.
    pub async fn run(self, mut shutdown: watch::Receiver<bool>) {
        let permits = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
        loop {
            let claimed = match claim_due(&self.store, self.clock.now_ms()).await {
                Ok(c) => c,
                Err(e) => {
                    tracing::warn!(error = %e, "claiming deliveries failed; retrying");
                    Vec::new()
                }
            };
            let full = claimed.len() as u64 == CLAIM_BATCH;
            for d in claimed {
                let Ok(permit) = permits.clone().acquire_owned().await else {
                    return;
                };
                let (store, plugins, settings, clock) = (
                    self.store.clone(),
                    self.plugins.clone(),
                    self.settings.clone(),
                    self.clock.clone(),
                );
                tokio::spawn(async move {
                    let result = attempt(&store, &plugins, &settings, &d, clock.now_ms()).await;
                    if result.ok {
                        tracing::debug!(delivery = %d.id, channel = %d.channel_kind, "delivered");
                    } else {
                        tracing::info!(delivery = %d.id, channel = %d.channel_kind, attempt = d.attempts + 1, error = ?result.error, "delivery attempt failed");
                    }
                    if let Err(e) = record(&store, &settings, &d, &result, clock.now_ms()).await {
                        // The lease runs out and the delivery is tried again: at least once.
                        tracing::error!(delivery = %d.id, error = %e, "could not record a delivery attempt");
                    }
                    drop(permit);
                });
            }
            if full {
                continue;
            }
            tokio::select! {
                _ = self.ctx.outbox_wakeup.notified() => {}
                _ = tokio::time::sleep(IDLE_POLL) => {}
                _ = shutdown.changed() => if *shutdown.borrow() { break },
            }
        }
    }
}

/// Release every lease (single-node start-up: no other worker can hold one).
pub async fn release_all_leases(store: &Store) -> Result<(), StoreError> {
    delivery::Entity::update_many()
        .col_expr(
            delivery::Column::LeaseUntil,
            Expr::value(Option::<i64>::None),
        )
        .filter(delivery::Column::Status.eq(status::PENDING))
        .exec(store.db())
        .await?;
    Ok(())
}
