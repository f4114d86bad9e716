//! Escalation timers, driven from the database rather than memory: an incident still
//! `open` at its `escalate_at` is escalated once (the claim is a conditional update), so a
//! restart neither loses nor repeats an escalation.

use super::actions::rules_of;
use super::incidents::{self, Ctx, status};
use super::recorder::EngineContext;
use crate::clock::SharedClock;
use crate::store::entities::{incident, workspace};
use crate::store::{Store, StoreError};
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, QueryOrder, QuerySelect};
use std::time::Duration;
use tokio::sync::watch;

/// How often due escalations are looked for.
pub const POLL: Duration = Duration::from_secs(1);

/// Escalate every incident that is due now. Returns how many were escalated.
pub async fn escalate_due(
    store: &Store,
    ctx: &EngineContext,
    now: i64,
) -> Result<usize, StoreError> {
    let due = incident::Entity::find()
        .filter(incident::Column::Status.eq(status::OPEN))
        .filter(incident::Column::EscalatedAt.is_null())
        .filter(incident::Column::EscalateAt.lte(now))
        .order_by_asc(incident::Column::EscalateAt)
        .limit(100)
        .all(store.db())
        .await?;
    let mut escalated = 0;
    for inc in due {
        let txn = store.begin_write().await?;
        let rules = rules_of(&txn, inc.policy_id.as_deref()).await?;
        if rules
            .escalation
            .as_ref()
            .is_none_or(|e| e.channels.is_empty())
        {
            // The policy no longer escalates (edited or deleted): stop waiting.
            incident::Entity::update_many()
                .col_expr(
                    incident::Column::EscalateAt,
                    sea_orm::sea_query::Expr::value(Option::<i64>::None),
                )
                .filter(incident::Column::Id.eq(inc.id.as_str()))
                .exec(&txn)
                .await?;
            txn.commit().await?;
            continue;
        }
        let name = workspace::Entity::find_by_id(inc.workspace_id.clone())
            .one(&txn)
            .await?
            .map(|w| w.name)
            .unwrap_or_default();
        let c = Ctx {
            public_url: &ctx.public_url,
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
    loop {
        if let Err(e) = escalate_due(&store, &ctx, clock.now_ms()).await {
            tracing::warn!(error = %e, "escalation pass failed; retrying");
        }
        tokio::select! {
            _ = tokio::time::sleep(POLL) => {}
            _ = shutdown.changed() => if *shutdown.borrow() { break },
        }
    }
}
