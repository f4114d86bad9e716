//! Retention: raw check results, finished deliveries (with their attempts) and resolved
//! incidents (with their timelines) are deleted once older than the configured windows;
//! daily rollups stay for ever. Status-page subscribers that never confirmed (or were never
//! approved) in time go too. A deleted monitor's history goes the same way. Every
//! deletion is a small batch in its own transaction with a pause between batches, so a
//! monitor with a million rows never holds the write lock for long and checks keep being
//! recorded meanwhile.

use crate::clock::SharedClock;
use crate::store::{Store, StoreError};
use std::time::Duration;
use tokio::sync::watch;

/// Rows deleted per transaction.
pub const BATCH: u64 = 500;
/// Pause between batches: the recorder's transactions get their turn.
const PAUSE: Duration = Duration::from_millis(20);
/// How often the sweep runs.
const EVERY: Duration = Duration::from_secs(3600);

/// How long each kind of row is kept; `None` keeps it for ever.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetentionSettings {
    pub checks: Option<Duration>,
    pub deliveries: Option<Duration>,
    pub incidents: Option<Duration>,
    /// Audit log entries.
    pub audit: Option<Duration>,
}

/// What one sweep deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SweepReport {
    pub checks: u64,
    pub deleted_monitor_checks: u64,
    pub deliveries: u64,
    pub incidents: u64,
    pub audit: u64,
    /// Transactions it took.
    pub batches: u64,
}

fn cutoff(now_ms: i64, keep: Duration) -> i64 {
    now_ms - i64::try_from(keep.as_millis()).unwrap_or(i64::MAX / 2)
}

/// Repeat `step` until a batch comes back short; the rows deleted and batches run.
async fn drain<F, Fut>(mut step: F) -> Result<(u64, u64), StoreError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<u64, StoreError>>,
{
    let (mut rows, mut batches) = (0, 0);
    loop {
        let n = step().await?;
        rows += n;
        batches += 1;
        if n < BATCH {
            return Ok((rows, batches));
        }
        tokio::time::sleep(PAUSE).await;
    }
}

/// Delete everything past its window, as of `now_ms`.
pub async fn sweep(
    store: &Store,
    settings: &RetentionSettings,
    now_ms: i64,
) -> Result<SweepReport, StoreError> {
    let mut report = SweepReport::default();
    while let Some(n) = store.prune_deleted_monitors(BATCH).await? {
        report.deleted_monitor_checks += n;
        report.batches += 1;
        tokio::time::sleep(PAUSE).await;
    }
    if let Some(keep) = settings.checks {
        let (n, b) = drain(|| store.prune_checks(cutoff(now_ms, keep), BATCH)).await?;
        report.checks = n;
        report.batches += b;
    }
    if let Some(keep) = settings.deliveries {
        let (n, b) = drain(|| store.prune_deliveries(cutoff(now_ms, keep), BATCH)).await?;
        report.deliveries = n;
        report.batches += b;
    }
    if let Some(keep) = settings.incidents {
        let (n, b) = drain(|| store.prune_incidents(cutoff(now_ms, keep), BATCH)).await?;
        report.incidents = n;
        report.batches += b;
    }
    if let Some(keep) = settings.audit {
        let (n, b) = drain(|| store.prune_audit_log(cutoff(now_ms, keep), BATCH)).await?;
        report.audit = n;
        report.batches += b;
    }
    // Expired sessions, used or expired links and abandoned sign-ins.
    store.prune_expired_credentials(now_ms).await?;
    store.prune_tag_snoozes(now_ms).await?;
    // Alerts' one-click links, a day after the longest lifetime they may have.
    store
        .prune_action_links(now_ms - crate::outbox::links::KEPT_MS)
        .await?;
    // Status-page subscribers that never confirmed or were never approved in time.
    store.prune_pending_subscribers(now_ms).await?;
    Ok(report)
}

/// Sweep at start and every hour until `shutdown` turns true.
pub async fn run(
    store: Store,
    clock: SharedClock,
    settings: RetentionSettings,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        match sweep(&store, &settings, clock.now_ms()).await {
            Ok(r)
                if r.checks + r.deleted_monitor_checks + r.deliveries + r.incidents + r.audit
                    > 0 =>
            {
                tracing::info!(
                    checks = r.checks,
                    deleted_monitor_checks = r.deleted_monitor_checks,
                    deliveries = r.deliveries,
                    incidents = r.incidents,
                    batches = r.batches,
                    "retention sweep deleted old rows"
                );
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "retention sweep failed; trying again later"),
        }
        tokio::select! {
            _ = tokio::time::sleep(EVERY) => {}
            _ = shutdown.changed() => if *shutdown.borrow() { break },
        }
    }
}
