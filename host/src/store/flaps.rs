//! Monitors' recent state changes, for flapping detection (see `engine::flapping`).

use super::entities::{flap_state, incident};
use super::states::IncidentState;
use super::{Store, StoreError, Tx};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, EntityTrait, IntoActiveModel, QueryFilter, QueryOrder,
    QuerySelect,
};

/// A monitor's flapping state as stored.
pub type FlapStateRow = flap_state::Model;

impl Store {
    /// Monitors flapping now, longest first.
    pub async fn flapping_states(&self, limit: u64) -> Result<Vec<FlapStateRow>, StoreError> {
        Ok(flap_state::Entity::find()
            .filter(flap_state::Column::FlappingSince.is_not_null())
            .order_by_asc(flap_state::Column::FlappingSince)
            .limit(limit)
            .all(self.db())
            .await?)
    }

    /// Whether a monitor is flapping, and since when.
    pub async fn flapping_since(&self, monitor_id: &str) -> Result<Option<i64>, StoreError> {
        Ok(flap_state::Entity::find_by_id(monitor_id.to_string())
            .one(self.db())
            .await?
            .and_then(|s| s.flapping_since))
    }
}

impl Tx {
    pub async fn flap_state(&self, monitor_id: &str) -> Result<Option<FlapStateRow>, StoreError> {
        Ok(flap_state::Entity::find_by_id(monitor_id.to_string())
            .one(self.conn())
            .await?)
    }

    /// Write a monitor's state, new or changed.
    pub async fn save_flap_state(&self, row: FlapStateRow, exists: bool) -> Result<(), StoreError> {
        let active = row.into_active_model().reset_all();
        if exists {
            active.update(self.conn()).await?;
        } else {
            active.insert(self.conn()).await?;
        }
        Ok(())
    }

    /// End a monitor's flapping that began at `since`. False when it was ended already (by
    /// another node) or began again.
    pub async fn end_flapping(&self, monitor_id: &str, since: i64) -> Result<bool, StoreError> {
        let done = flap_state::Entity::update_many()
            .col_expr(flap_state::Column::FlappingSince, Expr::value(None::<i64>))
            .col_expr(flap_state::Column::FlapCount, Expr::value(0))
            .col_expr(flap_state::Column::Changes, Expr::value("[]"))
            .filter(flap_state::Column::MonitorId.eq(monitor_id))
            .filter(flap_state::Column::FlappingSince.eq(since))
            .exec(self.conn())
            .await?;
        Ok(done.rows_affected == 1)
    }

    /// Drop the holds of a monitor's resolved incidents held for flapping: their
    /// recoveries are told by the summary.
    pub async fn clear_flapping_recoveries(&self, monitor_id: &str) -> Result<u64, StoreError> {
        Ok(incident::Entity::update_many()
            .col_expr(incident::Column::Hold, Expr::value(None::<String>))
            .filter(incident::Column::MonitorId.eq(monitor_id))
            .filter(incident::Column::Status.eq(IncidentState::Resolved))
            .filter(incident::Column::Hold.like("%\"flapping\"%"))
            .exec(self.conn())
            .await?
            .rows_affected)
    }

    pub async fn delete_flap_state(&self, monitor_id: &str) -> Result<(), StoreError> {
        flap_state::Entity::delete_by_id(monitor_id.to_string())
            .exec(self.conn())
            .await?;
        Ok(())
    }
}
