//! Deleting what is past its retention, a small batch per transaction: each call removes
//! at most `limit` rows and returns how many it removed, so the caller repeats until a
//! call comes back short, and the recorder's writes interleave between batches.

use super::entities::{
    audit_entry, check_result, delivery, delivery_attempt, incident, incident_event,
    monitor_tombstone,
};
use super::states::{DeliveryState, IncidentState};
use super::{Store, StoreError};
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, QueryOrder, QuerySelect};

impl Store {
    /// Check results taken before `cutoff`.
    pub async fn prune_checks(&self, cutoff: i64, limit: u64) -> Result<u64, StoreError> {
        let tx = self.begin_write().await?;
        let ids: Vec<String> = check_result::Entity::find()
            .select_only()
            .column(check_result::Column::Id)
            .filter(check_result::Column::CheckedAt.lt(cutoff))
            .limit(limit)
            .into_tuple()
            .all(tx.conn())
            .await?;
        if ids.is_empty() {
            return Ok(0);
        }
        let n = check_result::Entity::delete_many()
            .filter(check_result::Column::Id.is_in(ids))
            .exec(tx.conn())
            .await?
            .rows_affected;
        tx.commit().await?;
        Ok(n)
    }

    /// Up to `limit` rows of check history of the monitor deleted first; its tombstone goes
    /// with its last rows. `None` when no deleted monitor has history left.
    pub async fn prune_deleted_monitors(&self, limit: u64) -> Result<Option<u64>, StoreError> {
        let tx = self.begin_write().await?;
        let Some(tomb) = monitor_tombstone::Entity::find()
            .order_by_asc(monitor_tombstone::Column::DeletedAt)
            .one(tx.conn())
            .await?
        else {
            return Ok(None);
        };
        let ids: Vec<String> = check_result::Entity::find()
            .select_only()
            .column(check_result::Column::Id)
            .filter(check_result::Column::MonitorId.eq(tomb.monitor_id.as_str()))
            .limit(limit)
            .into_tuple()
            .all(tx.conn())
            .await?;
        let last = (ids.len() as u64) < limit;
        let n = if ids.is_empty() {
            0
        } else {
            check_result::Entity::delete_many()
                .filter(check_result::Column::Id.is_in(ids))
                .exec(tx.conn())
                .await?
                .rows_affected
        };
        if last {
            monitor_tombstone::Entity::delete_by_id(tomb.monitor_id)
                .exec(tx.conn())
                .await?;
        }
        tx.commit().await?;
        Ok(Some(n))
    }

    /// Finished deliveries (succeeded or failed) created before `cutoff`, with their
    /// attempts.
    pub async fn prune_deliveries(&self, cutoff: i64, limit: u64) -> Result<u64, StoreError> {
        let tx = self.begin_write().await?;
        let ids: Vec<String> = delivery::Entity::find()
            .select_only()
            .column(delivery::Column::Id)
            .filter(delivery::Column::CreatedAt.lt(cutoff))
            .filter(delivery::Column::Status.ne(DeliveryState::Pending))
            .limit(limit)
            .into_tuple()
            .all(tx.conn())
            .await?;
        if ids.is_empty() {
            return Ok(0);
        }
        tx.delete_delivery_files(ids.clone()).await?;
        delivery_attempt::Entity::delete_many()
            .filter(delivery_attempt::Column::DeliveryId.is_in(ids.clone()))
            .exec(tx.conn())
            .await?;
        let n = delivery::Entity::delete_many()
            .filter(delivery::Column::Id.is_in(ids))
            .exec(tx.conn())
            .await?
            .rows_affected;
        tx.commit().await?;
        Ok(n)
    }

    /// Incidents resolved before `cutoff`, with their timelines.
    pub async fn prune_incidents(&self, cutoff: i64, limit: u64) -> Result<u64, StoreError> {
        let tx = self.begin_write().await?;
        let ids: Vec<String> = incident::Entity::find()
            .select_only()
            .column(incident::Column::Id)
            .filter(incident::Column::Status.eq(IncidentState::Resolved))
            .filter(incident::Column::ResolvedAt.lt(cutoff))
            .limit(limit)
            .into_tuple()
            .all(tx.conn())
            .await?;
        if ids.is_empty() {
            return Ok(0);
        }
        incident_event::Entity::delete_many()
            .filter(incident_event::Column::IncidentId.is_in(ids.clone()))
            .exec(tx.conn())
            .await?;
        super::links::action_link::Entity::delete_many()
            .filter(super::links::action_link::Column::IncidentId.is_in(ids.clone()))
            .exec(tx.conn())
            .await?;
        let n = incident::Entity::delete_many()
            .filter(incident::Column::Id.is_in(ids))
            .exec(tx.conn())
            .await?
            .rows_affected;
        tx.commit().await?;
        Ok(n)
    }

    /// Audit log entries written before `cutoff`.
    pub async fn prune_audit_log(&self, cutoff: i64, limit: u64) -> Result<u64, StoreError> {
        let tx = self.begin_write().await?;
        let ids: Vec<String> = audit_entry::Entity::find()
            .select_only()
            .column(audit_entry::Column::Id)
            .filter(audit_entry::Column::CreatedAt.lt(cutoff))
            .limit(limit)
            .into_tuple()
            .all(tx.conn())
            .await?;
        if ids.is_empty() {
            return Ok(0);
        }
        let n = audit_entry::Entity::delete_many()
            .filter(audit_entry::Column::Id.is_in(ids))
            .exec(tx.conn())
            .await?
            .rows_affected;
        tx.commit().await?;
        Ok(n)
    }
}
