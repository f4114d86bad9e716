//! Snoozes (of a monitor, of a tag) and incidents whose notifications are held.

use super::Owned;
use super::entities::{incident, monitor, monitor_live, tag_snooze};
use super::states::IncidentState;
use super::{IncidentRow, MonitorRow, Store, StoreError, Tx};
use sea_orm::sea_query::{Expr, OnConflict};
use sea_orm::{
    ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, QuerySelect, Set,
};
use std::collections::HashMap;

/// Tags of a workspace snoozed past `now`, with their end.
async fn active_tag_snoozes<C: ConnectionTrait>(
    conn: &C,
    workspace_id: &str,
    now: i64,
) -> Result<HashMap<String, i64>, StoreError> {
    Ok(tag_snooze::Entity::find()
        .filter(tag_snooze::Column::WorkspaceId.eq(workspace_id))
        .filter(tag_snooze::Column::Until.gt(now))
        .all(conn)
        .await?
        .into_iter()
        .map(|s| (s.tag, s.until))
        .collect())
}

/// Monitors among `ids`, read without locking them.
async fn peek_monitors<C: ConnectionTrait>(
    conn: &C,
    ids: Vec<String>,
) -> Result<HashMap<String, MonitorRow>, StoreError> {
    if ids.is_empty() {
        return Ok(HashMap::new());
    }
    Ok(monitor_live::Entity::find()
        .filter(monitor_live::Column::Id.is_in(ids))
        .all(conn)
        .await?
        .into_iter()
        .map(|m| (m.id.clone(), m.into()))
        .collect())
}

impl Store {
    /// Tags of a workspace snoozed past `now`.
    pub async fn tag_snoozes(
        &self,
        workspace_id: &str,
        now: i64,
    ) -> Result<HashMap<String, i64>, StoreError> {
        active_tag_snoozes(self.db(), workspace_id, now).await
    }

    /// Monitors among `ids` (any workspace), for deciding holds.
    pub async fn monitors_for_holds(
        &self,
        ids: Vec<String>,
    ) -> Result<HashMap<String, MonitorRow>, StoreError> {
        peek_monitors(self.db(), ids).await
    }

    /// Monitors of a workspace snoozed past `now`, soonest end first.
    pub async fn snoozed_monitors(
        &self,
        workspace_id: &str,
        now: i64,
    ) -> Result<Vec<MonitorRow>, StoreError> {
        Ok(monitor_live::Entity::find()
            .filter(monitor_live::Column::WorkspaceId.eq(workspace_id))
            .filter(monitor_live::Column::SnoozedUntil.gt(now))
            .order_by_asc(monitor_live::Column::SnoozedUntil)
            .all(self.db())
            .await?
            .owned())
    }

    /// Snooze a monitor until `until`, or end its snooze (None). False when it does not exist.
    pub async fn set_monitor_snooze(
        &self,
        workspace_id: &str,
        id: &str,
        until: Option<i64>,
    ) -> Result<bool, StoreError> {
        // In a transaction of its own, so the request's audit entry is written with it.
        let tx = self.begin_write().await?;
        let changed = tx.set_monitor_snooze(workspace_id, id, until).await?;
        tx.commit_if(changed).await
    }

    /// Snooze every monitor of a workspace with `tag` until `until`.
    pub async fn snooze_tag(
        &self,
        workspace_id: &str,
        tag: &str,
        until: i64,
    ) -> Result<(), StoreError> {
        // In a transaction of its own, so the request's audit entry is written with it.
        let tx = self.begin_write().await?;
        tag_snooze::Entity::insert(tag_snooze::ActiveModel {
            workspace_id: Set(workspace_id.to_string()),
            tag: Set(tag.to_string()),
            until: Set(until),
        })
        .on_conflict(
            OnConflict::columns([tag_snooze::Column::WorkspaceId, tag_snooze::Column::Tag])
                .update_column(tag_snooze::Column::Until)
                .to_owned(),
        )
        .exec(tx.conn())
        .await?;
        tx.commit().await
    }

    /// End a tag's snooze. False when none was in force at `now`.
    pub async fn unsnooze_tag(
        &self,
        workspace_id: &str,
        tag: &str,
        now: i64,
    ) -> Result<bool, StoreError> {
        let active = active_tag_snoozes(self.db(), workspace_id, now)
            .await?
            .contains_key(tag);
        let tx = self.begin_write().await?;
        tag_snooze::Entity::delete_many()
            .filter(tag_snooze::Column::WorkspaceId.eq(workspace_id))
            .filter(tag_snooze::Column::Tag.eq(tag))
            .exec(tx.conn())
            .await?;
        tx.commit().await?;
        Ok(active)
    }

    /// Forget tag snoozes that ended before `before`.
    pub async fn prune_tag_snoozes(&self, before: i64) -> Result<u64, StoreError> {
        Ok(tag_snooze::Entity::delete_many()
            .filter(tag_snooze::Column::Until.lte(before))
            .exec(self.db())
            .await?
            .rows_affected)
    }

    /// Incidents whose notifications are held, oldest first.
    pub async fn held_incidents(&self, limit: u64) -> Result<Vec<IncidentRow>, StoreError> {
        Ok(incident::Entity::find()
            .filter(incident::Column::Hold.is_not_null())
            .order_by_asc(incident::Column::CreatedAt)
            .limit(limit)
            .all(self.db())
            .await?
            .owned())
    }
}

impl Tx {
    /// Tags of a workspace snoozed past `now`.
    pub async fn tag_snoozes(
        &self,
        workspace_id: &str,
        now: i64,
    ) -> Result<HashMap<String, i64>, StoreError> {
        active_tag_snoozes(self.conn(), workspace_id, now).await
    }

    /// Monitors among `ids`, read without locking them (parents of a monitor whose
    /// incident is being decided).
    pub async fn monitors_for_holds(
        &self,
        ids: Vec<String>,
    ) -> Result<HashMap<String, MonitorRow>, StoreError> {
        peek_monitors(self.conn(), ids).await
    }

    /// Change a held incident's status, hold, notified flag, escalation and reminder times, if its
    /// hold is still `hold` (as read). False when another writer changed it first.
    pub async fn claim_hold_change(
        &self,
        id: &str,
        hold: &str,
        after: &IncidentRow,
    ) -> Result<bool, StoreError> {
        let changed = incident::Entity::update_many()
            .col_expr(incident::Column::Status, Expr::value(after.status))
            .col_expr(incident::Column::Hold, Expr::value(after.hold.clone()))
            .col_expr(incident::Column::Notified, Expr::value(after.notified))
            .col_expr(incident::Column::EscalateAt, Expr::value(after.escalate_at))
            .col_expr(incident::Column::RemindAt, Expr::value(after.remind_at))
            .filter(incident::Column::Id.eq(id))
            .filter(incident::Column::Hold.eq(hold))
            .exec(self.conn())
            .await?
            .rows_affected;
        Ok(changed == 1)
    }

    /// Wait until `at` before escalating an open incident (its monitor is snoozed or in
    /// maintenance).
    pub async fn postpone_escalation(&self, id: &str, at: i64) -> Result<(), StoreError> {
        incident::Entity::update_many()
            .col_expr(incident::Column::EscalateAt, Expr::value(at))
            .filter(incident::Column::Id.eq(id))
            .filter(incident::Column::Status.eq(IncidentState::Open))
            .exec(self.conn())
            .await?;
        Ok(())
    }
}

impl Tx {
    /// Snooze a monitor until `until` (none: end its snooze), inside the caller's
    /// transaction. False when the workspace has no such monitor.
    pub async fn set_monitor_snooze(
        &self,
        workspace_id: &str,
        id: &str,
        until: Option<i64>,
    ) -> Result<bool, StoreError> {
        let changed = monitor::Entity::update_many()
            .col_expr(monitor::Column::SnoozedUntil, Expr::value(until))
            .filter(monitor::Column::WorkspaceId.eq(workspace_id))
            .filter(monitor::Column::Id.eq(id))
            .exec(self.conn())
            .await?
            .rows_affected;
        if changed == 1 {
            self.note(super::live::Seen::monitor(workspace_id, id, false));
        }
        Ok(changed == 1)
    }
}
