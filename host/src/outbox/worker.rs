//! The delivery worker: claims due deliveries (a lease, so one worker sends each), hands
//! each to its channel plugin, records the attempt and schedules the next one.

use super::{jitter_unit, next_delay, pipeline, signing, subscribers};
use crate::ids::{self, prefix};
use crate::plugins::abilities::Abilities;
use crate::plugins::relay::Attachment;
use crate::plugins::settings::TelegramBot;
use crate::plugins::{Notification, PluginHost};
use crate::store::{AttemptRow, DeliveryRow, DeliveryState, Store, StoreError};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{Notify, Semaphore, watch};

/// A claimed delivery is left alone by other workers this long (the delivery timeout plus
/// a margin); a worker that dies mid-delivery loses it after this.
pub const LEASE_MS: i64 = 20_000;
/// Receivers must answer within 10 seconds (the spec's webhook deadline).
pub const DELIVERY_TIMEOUT_MS: u32 = 10_000;
/// Deliveries in flight at once.
pub const MAX_IN_FLIGHT: usize = crate::plugins::limits::DELIVERY_INSTANCES as usize;
/// Deliveries of one workspace in flight at once: one team's slow receivers hold at most
/// this many of the slots, the rest stay free for everyone else's alerts.
pub const MAX_IN_FLIGHT_PER_WORKSPACE: usize = 8;
/// Longest wait between passes when nothing wakes the worker.
const IDLE_POLL: Duration = Duration::from_millis(500);

/// Server settings channel plugins see.
#[derive(Debug, Clone)]
pub struct DeliverySettings {
    pub schedule: Vec<Duration>,
    /// The server's Telegram bot.
    pub telegram: TelegramBot,
    pub allow_insecure_webhooks: bool,
    /// `[plugin_settings.<name>]` of the configuration, by plugin name.
    pub plugin_settings: std::collections::BTreeMap<String, serde_json::Value>,
}

impl DeliverySettings {
    /// The `settings` JSON a channel plugin gets: the server's own settings for it
    /// ([`crate::plugins::settings::channel_server_settings`]), then the operator's
    /// `[plugin_settings.<kind>]` keys over them.
    pub fn for_channel(&self, kind: &str, abilities: &Abilities) -> String {
        let mut settings = crate::plugins::settings::channel_server_settings(
            kind,
            abilities,
            self.allow_insecure_webhooks,
            &self.telegram,
        );
        if let Some(serde_json::Value::Object(extra)) = self.plugin_settings.get(kind) {
            for (k, v) in extra {
                settings.insert(k.clone(), v.clone());
            }
        }
        serde_json::Value::Object(settings).to_string()
    }
}

/// The first of a channel's https-only fields whose configured URL is not `https://`.
fn insecure_field<'a>(abilities: &'a Abilities, config: &str) -> Option<&'a str> {
    let config: serde_json::Value = serde_json::from_str(config).ok()?;
    abilities
        .https_only
        .iter()
        .find(|f| {
            config
                .get(f.as_str())
                .and_then(serde_json::Value::as_str)
                .is_some_and(|url| !url.starts_with("https://"))
        })
        .map(String::as_str)
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

/// Claim up to `limit` due deliveries for this worker, taking turns between workspaces;
/// `busy` says how many of each workspace's deliveries it already has in flight.
pub async fn claim_due(
    store: &Store,
    now: i64,
    limit: usize,
    busy: &InFlight,
) -> Result<Vec<DeliveryRow>, StoreError> {
    store
        .claim_due_deliveries(
            now,
            LEASE_MS,
            limit,
            |ws| MAX_IN_FLIGHT_PER_WORKSPACE.saturating_sub(busy.of(ws)),
            |id| busy.holds(id),
        )
        .await
}

/// Deliveries this worker has in flight: how many per workspace, and which.
#[derive(Clone, Default)]
pub struct InFlight(Arc<std::sync::Mutex<Counts>>);

#[derive(Default)]
pub struct Counts {
    workspaces: std::collections::HashMap<String, usize>,
    deliveries: std::collections::HashSet<String>,
}

impl InFlight {
    pub fn of(&self, workspace: &str) -> usize {
        self.0
            .lock()
            .map(|m| m.workspaces.get(workspace).copied().unwrap_or(0))
            .unwrap_or(0)
    }

    /// Whether the delivery is still in this worker's hands (being attempted, or its
    /// result waiting to be recorded): it is not claimed again, even if its lease ran out.
    pub fn holds(&self, delivery_id: &str) -> bool {
        self.0
            .lock()
            .map(|m| m.deliveries.contains(delivery_id))
            .unwrap_or(false)
    }

    /// Count one in; the guard counts it out when dropped.
    pub fn enter(&self, workspace: &str, delivery_id: &str) -> InFlightGuard {
        if let Ok(mut m) = self.0.lock() {
            *m.workspaces.entry(workspace.to_string()).or_default() += 1;
            m.deliveries.insert(delivery_id.to_string());
        }
        InFlightGuard {
            set: self.clone(),
            workspace: workspace.to_string(),
            delivery_id: delivery_id.to_string(),
        }
    }
}

/// One delivery counted in [`InFlight`] until dropped.
pub struct InFlightGuard {
    set: InFlight,
    workspace: String,
    delivery_id: String,
}

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        if let Ok(mut m) = self.set.0.lock() {
            m.deliveries.remove(&self.delivery_id);
            if let Some(n) = m.workspaces.get_mut(&self.workspace) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    m.workspaces.remove(&self.workspace);
                }
            }
        }
    }
}

/// How long a finished attempt's result is kept trying to reach an unavailable database
/// before it is given up (the delivery is then attempted again: at least once).
const RECORD_PATIENCE: Duration = Duration::from_secs(600);

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
    d: &DeliveryRow,
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
    // A status page's subscriber: anonymous input, which gets its own secret and egress.
    let visitor = subscribers::visitor_delivery(&d.event, &d.channel_config);
    let mut own_secret = None;
    if let Some(id) = visitor.as_ref().and_then(|v| v.subscriber_id.as_deref()) {
        match store.subscriber(id).await {
            Ok(Some(s)) if s.confirmed => own_secret = s.secret,
            Ok(Some(_)) => {
                return fail(false, "The subscriber is not confirmed".into(), started);
            }
            Ok(None) => return fail(false, "The subscriber has left".into(), started),
            Err(e) => return fail(true, format!("Database error: {e}"), started),
        }
    }
    let abilities = plugin.abilities();
    let headers = if abilities.signing {
        let secret = match own_secret {
            Some(secret) => secret,
            None => match store.workspace(&d.workspace_id).await {
                Ok(Some(w)) => w.webhook_secret,
                Ok(None) => return fail(false, "The workspace no longer exists".into(), started),
                Err(e) => return fail(true, format!("Database error: {e}"), started),
            },
        };
        webhook_headers(&secret, &d.event, &d.id, &d.payload, now.div_euclid(1000))
    } else {
        Vec::new()
    };
    // A channel that reaches nothing but the server's own relay (e-mail) sends a visitor's
    // message there; anything else a visitor named is reached by the visitors' egress
    // policy.
    let relay_only = plugin.description.capabilities == ["smtp"];
    let for_visitor = visitor.is_some() && !relay_only;
    let config = visitor.map_or_else(|| d.channel_config.clone(), |v| v.config);
    // The switch holds for channels saved while it was on, too.
    if !settings.allow_insecure_webhooks
        && let Some(field) = insecure_field(&abilities, &config)
    {
        return fail(
            false,
            format!(
                "The server does not allow insecure webhooks (allow_insecure_webhooks is off): \
                 this channel's http:// URL in `{field}` is not sent to; change it to https://"
            ),
            started,
        );
    }
    let n = Notification {
        event: d.event.clone(),
        config,
        payload: d.payload.clone(),
        headers: headers
            .into_iter()
            .map(|(name, value)| crate::plugins::Header { name, value })
            .collect(),
        timeout_ms: DELIVERY_TIMEOUT_MS,
        settings: settings.for_channel(&d.channel_kind, &abilities),
    };
    let delivered = if for_visitor {
        plugins.deliver_for_visitor(&plugin, n).await
    } else if d.event == super::events::kind::REPORT_MONTHLY {
        // A report carries its PDF: e-mail attaches it.
        let files = match store.delivery_files(&d.id).await {
            Ok(files) => files,
            Err(e) => return fail(true, format!("Database error: {e}"), started),
        };
        let files: Vec<Attachment> = files
            .into_iter()
            .map(|f| Attachment {
                name: f.name,
                content_type: f.content_type,
                data: f.data,
            })
            .collect();
        plugins
            .deliver_with_files(&plugin, n, Arc::from(files))
            .await
    } else {
        plugins.deliver(&plugin, n).await
    };
    match delivered {
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
            error: Some(crate::text::bounded(
                &failure.reason,
                crate::text::MAX_REASON_BYTES,
            )),
            duration_ms: elapsed(started),
        },
        Err(e) => fail(
            true,
            crate::text::bounded(
                &format!("Channel plugin failed: {e}"),
                crate::text::MAX_REASON_BYTES,
            ),
            started,
        ),
    }
}

/// Record an attempt and move the delivery to its next state. `Ok(false)` when the
/// worker no longer held the delivery's lease, so nothing was recorded.
pub async fn record(
    store: &Store,
    settings: &DeliverySettings,
    d: &DeliveryRow,
    r: &AttemptResult,
    now: i64,
) -> Result<bool, StoreError> {
    let number = d.attempts + 1;
    let attempt = AttemptRow {
        id: ids::new_id(prefix::DELIVERY_ATTEMPT),
        delivery_id: d.id.clone(),
        attempt: number,
        at: now,
        ok: r.ok,
        status_code: r.status_code.map(i32::from),
        error: r.error.clone(),
        duration_ms: i32::try_from(r.duration_ms).unwrap_or(i32::MAX),
    };
    let mut after = DeliveryRow {
        attempts: number,
        lease_until: None,
        updated_at: now,
        ..d.clone()
    };
    if r.ok {
        after.status = DeliveryState::Succeeded;
        after.delivered_at = Some(now);
        after.last_error = None;
    } else {
        after.last_error = r.error.clone();
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
                after.next_attempt_at =
                    now + i64::try_from(delay.as_millis()).unwrap_or(i64::MAX / 2);
            }
            None => after.status = DeliveryState::Failed,
        }
    }
    let outcome = match after.status {
        DeliveryState::Succeeded => "delivered",
        DeliveryState::Failed => "failed",
        DeliveryState::Pending => "retrying",
        DeliveryState::Routed => "routed",
        DeliveryState::Dropped => "dropped",
    };
    let recorded = store
        .record_delivery_attempt(d.lease_until, after, attempt)
        .await?;
    if recorded {
        crate::telemetry::global().delivery(&d.channel_kind, outcome);
    }
    Ok(recorded)
}

/// The worker loop.
pub struct OutboxWorker {
    pub store: Store,
    pub plugins: Arc<PluginHost>,
    /// Woken when new deliveries were committed.
    pub wakeup: Arc<Notify>,
    pub settings: Arc<DeliverySettings>,
    pub clock: crate::clock::SharedClock,
    /// Told of API writes that may have queued deliveries (see [`crate::wake::Nudge`]).
    pub work: crate::wake::Nudge,
}

impl OutboxWorker {
    /// Run until `shutdown` turns true.
    pub async fn run(self, mut shutdown: watch::Receiver<bool>) {
        let permits = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
        let busy = InFlight::default();
        let mut told = self.work.listen();
        loop {
            // Claim only what can start at once: a claimed delivery never waits for a slot
            // while its lease runs out (another worker would then send it too).
            let Ok(first) = permits.clone().acquire_owned().await else {
                return;
            };
            let free = permits.available_permits() + 1;
            let claimed = match claim_due(&self.store, self.clock.now_ms(), free, &busy).await {
                Ok(c) => c,
                Err(e) => {
                    tracing::warn!(error = %e, "claiming deliveries failed; retrying");
                    Vec::new()
                }
            };
            let full = claimed.len() == free;
            let mut first = Some(first);
            for d in claimed {
                // Only this loop takes permits, so those counted free are still free.
                let Some(slot) = first
                    .take()
                    .or_else(|| permits.clone().try_acquire_owned().ok())
                else {
                    break;
                };
                let (store, plugins, settings, clock, wakeup) = (
                    self.store.clone(),
                    self.plugins.clone(),
                    self.settings.clone(),
                    self.clock.clone(),
                    self.wakeup.clone(),
                );
                let counted = busy.enter(&d.workspace_id, &d.id);
                tokio::spawn(async move {
                    // Before its first attempt, a notification passes its policy's pipeline.
                    let stage = pipeline::Stage {
                        store: &store,
                        plugins: &plugins,
                        settings: &settings.plugin_settings,
                        now: clock.now_ms(),
                        clock: &*clock,
                        lease_ms: LEASE_MS,
                    };
                    let d = match pipeline::pass(&stage, d).await {
                        Ok(pipeline::Passage::Deliver(d)) => *d,
                        Ok(pipeline::Passage::Taken) => {
                            drop(counted);
                            drop(slot);
                            wakeup.notify_one();
                            return;
                        }
                        Err(e) => {
                            // Its lease runs out and the pipeline is asked again.
                            tracing::warn!(error = %e, "the alert pipeline could not be recorded; retrying");
                            drop(counted);
                            drop(slot);
                            return;
                        }
                    };
                    let result = attempt(&store, &plugins, &settings, &d, clock.now_ms()).await;
                    if result.ok {
                        tracing::debug!(delivery = %d.id, channel = %d.channel_kind, "delivered");
                    } else {
                        tracing::info!(delivery = %d.id, channel = %d.channel_kind, attempt = d.attempts + 1, error = ?result.error, "delivery attempt failed");
                    }
                    // The attempt happened: record it, waiting out a database outage rather
                    // than letting the delivery be sent again.
                    let waiting_since = Instant::now();
                    loop {
                        match record(&store, &settings, &d, &result, clock.now_ms()).await {
                            Ok(true) => {}
                            Ok(false) => {
                                tracing::warn!(delivery = %d.id, "the delivery's lease was taken over during the attempt; its result was not recorded");
                            }
                            Err(e)
                                if e.is_unavailable()
                                    && waiting_since.elapsed() < RECORD_PATIENCE =>
                            {
                                tracing::debug!(delivery = %d.id, error = %e, "database unavailable; keeping the attempt's result");
                                tokio::time::sleep(Duration::from_secs(1)).await;
                                continue;
                            }
                            Err(e) => {
                                // The lease runs out and the delivery is tried again: at least once.
                                tracing::error!(delivery = %d.id, error = %e, "could not record a delivery attempt");
                            }
                        }
                        break;
                    }
                    drop(counted);
                    drop(slot);
                    // A workspace that was at its share may have more waiting.
                    wakeup.notify_one();
                });
            }
            if full {
                continue;
            }
            // Alone on its database, the worker sleeps until the next delivery is due; new
            // ones wake it (the engine's notify, or any API write).
            let wait = if self.work.idles() {
                let now = self.clock.now_ms();
                match self.store.next_delivery_due(now).await {
                    Ok(Some(at)) if at > now => {
                        Duration::from_millis(u64::try_from(at - now).unwrap_or(0))
                            .min(self.work.cap_or(IDLE_POLL))
                    }
                    Ok(None) => self.work.cap_or(IDLE_POLL),
                    _ => IDLE_POLL,
                }
            } else {
                IDLE_POLL
            };
            let told_now = async {
                if self.work.idles() {
                    let _ = told.changed().await;
                } else {
                    std::future::pending::<()>().await;
                }
            };
            tokio::select! {
                _ = self.wakeup.notified() => {}
                _ = told_now => {}
                _ = tokio::time::sleep(wait) => {}
                _ = shutdown.changed() => if *shutdown.borrow() { break },
            }
            told.borrow_and_update();
        }
    }
}

/// Release every lease (single-node start-up: no other worker can hold one).
pub async fn release_all_leases(store: &Store) -> Result<(), StoreError> {
    store.release_delivery_leases().await
}
