//! Monitors' recent state changes, for flapping detection (see `engine::flapping`).

use super::entities::{flap_state, incident};
use super::states::IncidentState;
use super::{Store, StoreError, Tx};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, EntityTrait, IntoActiveModel, QueryFilter, QueryOrder,
    QuerySelect,
};

/// A monitor's recent changes of state, and whether it is flapping.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlapState {
    pub monitor_id: String,
    pub workspace_id: String,
    /// The times (Unix ms) of its changes within the policy's window, oldest first.
    pub changes: Vec<i64>,
    /// Since when it is flapping; `None` when it is not.
    pub flapping_since: Option<i64>,
    /// Changes since it started flapping.
    pub flap_count: i32,
    pub last_change: i64,
}

impl FlapState {
    /// A monitor with no change recorded yet, as of `now`.
    pub fn new(monitor_id: &str, workspace_id: &str, now: i64) -> FlapState {
        FlapState {
            monitor_id: monitor_id.to_string(),
            workspace_id: workspace_id.to_string(),
            changes: Vec::new(),
            flapping_since: None,
            flap_count: 0,
            last_change: now,
        }
    }
}

impl From<flap_state::Model> for FlapState {
    fn from(m: flap_state::Model) -> Self {
        FlapState {
            changes: super::monitors::read_list(&m.monitor_id, "flap changes", &m.changes),
            monitor_id: m.monitor_id,
            workspace_id: m.workspace_id,
            flapping_since: m.flapping_since,
            flap_count: m.flap_count,
            last_change: m.last_change,
        }
    }
}

impl From<FlapState> for flap_state::Model {
    fn from(s: FlapState) -> Self {
        flap_state::Model {
            changes: serde_json::to_string(&s.changes).unwrap_or_else(|_| "[]".into()),
            monitor_id: s.monitor_id,
            workspace_id: s.workspace_id,
            flapping_since: s.flapping_since,
            flap_count: s.flap_count,
            last_change: s.last_change,
        }
    }
}

impl Store {
    /// Monitors flapping now, longest first.
    pub async fn flapping_states(&self, limit: u64) -> Result<Vec<FlapState>, StoreError> {
        let rows = flap_state::Entity::find()
            .filter(flap_state::Column::FlappingSince.is_not_null())
            .order_by_asc(flap_state::Column::FlappingSince)
            .limit(limit)
            .all(self.db())
            .await?;
        Ok(rows.into_iter().map(FlapState::from).collect())
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
    pub async fn flap_state(&self, monitor_id: &str) -> Result<Option<FlapState>, StoreError> {
        Ok(flap_state::Entity::find_by_id(monitor_id.to_string())
            .one(self.conn())
            .await?
            .map(FlapState::from))
    }

    /// Write a monitor's state, new or changed.
    pub async fn save_flap_state(&self, state: FlapState, exists: bool) -> Result<(), StoreError> {
        let active = flap_state::Model::from(state)
            .into_active_model()
            .reset_all();
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
