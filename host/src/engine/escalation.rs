//! Escalation timers, driven from the database rather than memory: an incident still
//! `open` at its `escalate_at` is escalated once (the claim is a conditional update), so a
//! restart neither loses nor repeats an escalation. The same loop lets held incidents go
//! (see `holds`).

use super::context::EngineContext;
use super::incidents::{self, Ctx};
use super::policy::rules_of;
use crate::clock::SharedClock;
use crate::store::{Store, StoreError};
use std::time::Duration;
use tokio::sync::watch;

/// How often due escalations are looked for.
pub const POLL: Duration = Duration::from_secs(1);
/// How often maintenance windows are looked at for notices to subscribers due.
const ANNOUNCE_EVERY: Duration = Duration::from_secs(10);

/// Escalate every incident that is due now. Returns how many were escalated.
pub async fn escalate_due(
    store: &Store,
    ctx: &EngineContext,
    now: i64,
) -> Result<usize, StoreError> {
    let due = store.due_escalations(now, 100).await?;
    let mut escalated = 0;
    for inc in due {
        let txn = store.begin_write().await?;
        let rules = rules_of(&txn, inc.policy_id.as_deref()).await?;
        let done = usize::try_from(inc.escalation_step).unwrap_or(usize::MAX);
        if rules
            .escalation
            .as_ref()
            .and_then(|e| e.step(done))
            .is_none()
        {
            // The policy no longer escalates this far (edited or deleted): stop waiting.
            txn.cancel_escalation(&inc.id).await?;
            txn.commit().await?;
            continue;
        }
        // A snoozed monitor's incident waits for the snooze to end, and one under
        // maintenance for the window's end.
        if let Some(m) = txn.monitor_by_id(&inc.monitor_id).await?
            && let Some(until) = super::holds::quiet_until(&txn, &m, now).await?
        {
            txn.postpone_escalation(&inc.id, until).await?;
            txn.commit().await?;
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
        if incidents::escalate(&txn, &c, &inc, &rules).await? {
            escalated += 1;
        }
        txn.commit().await?;
    }
    if escalated > 0 {
        ctx.outbox_wakeup.notify_one();
    }
    Ok(escalated)
}

/// Run until `shutdown` turns true.
pub async fn run(
    store: Store,
    ctx: EngineContext,
    clock: SharedClock,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut told = ctx.work.listen();
    let mut announced_at: Option<tokio::time::Instant> = None;
    loop {
        // Tells from here on wake the wait below, even those that come during the passes.
        told.borrow_and_update();
        // One question first when passes may idle: with no incident waiting to escalate,
        // none held and no monitor flapping, the three passes have nothing to look at.
        let pending = if ctx.work.idles() {
            store.incident_work_pending().await.unwrap_or(true)
        } else {
            true
        };
        if pending {
            if let Err(e) = escalate_due(&store, &ctx, clock.now_ms()).await {
                tracing::warn!(error = %e, "escalation pass failed; retrying");
            }
            if let Err(e) = super::reminders::remind_due(&store, &ctx, clock.now_ms()).await {
                tracing::warn!(error = %e, "reminder pass failed; retrying");
            }
            if let Err(e) = super::holds::release_due(&store, &ctx, clock.now_ms()).await {
                tracing::warn!(error = %e, "pass over held incidents failed; retrying");
            }
            if let Err(e) = super::flapping::summarize_due(&store, &ctx, clock.now_ms()).await {
                tracing::warn!(error = %e, "pass over flapping monitors failed; retrying");
            }
        }
        // Maintenance notices come due with time alone, not with a write.
        if announced_at.is_none_or(|at| at.elapsed() >= ANNOUNCE_EVERY) {
            announced_at = Some(tokio::time::Instant::now());
            if let Err(e) = super::announcements::announce_due(&store, &ctx, clock.now_ms()).await {
                tracing::warn!(error = %e, "pass over maintenance notices failed; retrying");
            }
        }
        let (wait, listening) = ctx.work.wait(pending, POLL);
        // Idle or not, the maintenance notices are looked at every ANNOUNCE_EVERY.
        let wait = wait.min(ANNOUNCE_EVERY);
        if crate::wake::pause(wait, listening, &mut told, &mut shutdown).await {
            break;
        }
    }
}
