//! Where heartbeat monitors stand: last ping, a run in progress, the next deadline.

use super::Owned;
use super::entities::{heartbeat_state, monitor_live};
use super::states::MonitorState;
use super::{MonitorRow, Store, StoreError};
use sea_orm::sea_query::{Expr, OnConflict};
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, QueryOrder, QuerySelect, Set};
use std::collections::HashMap;

/// Where a heartbeat monitor stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeartbeatState {
    pub monitor_id: String,
    pub last_ping_at: Option<i64>,
    /// A run reported its start and has not finished.
    pub started_at: Option<i64>,
    /// The next ping is due by then; `None` while paused.
    pub deadline_at: Option<i64>,
}

impl From<heartbeat_state::Model> for HeartbeatState {
    fn from(m: heartbeat_state::Model) -> Self {
        HeartbeatState {
            monitor_id: m.monitor_id,
            last_ping_at: m.last_ping_at,
            started_at: m.started_at,
            deadline_at: m.deadline_at,
        }
    }
}

impl HeartbeatState {
    /// A monitor that has never been pinged and has no deadline yet.
    pub fn new(monitor_id: &str) -> HeartbeatState {
        HeartbeatState {
            monitor_id: monitor_id.to_string(),
            last_ping_at: None,
            started_at: None,
            deadline_at: None,
        }
    }
}

impl Store {
    /// The heartbeat monitor whose ping URL holds `token`.
    pub async fn monitor_by_ping_token(
        &self,
        token: &str,
    ) -> Result<Option<MonitorRow>, StoreError> {
        Ok(monitor_live::Entity::find()
            .filter(monitor_live::Column::PingToken.eq(token))
            .one(self.db())
            .await?
            .owned())
    }

    /// A heartbeat monitor's state, if it has one yet.
    pub async fn heartbeat_state(
        &self,
        monitor_id: &str,
    ) -> Result<Option<HeartbeatState>, StoreError> {
        Ok(heartbeat_state::Entity::find_by_id(monitor_id.to_string())
            .one(self.db())
            .await?
            .map(HeartbeatState::from))
    }

    /// States of some heartbeat monitors, by monitor id.
    pub async fn heartbeat_states(
        &self,
        monitor_ids: Vec<String>,
    ) -> Result<HashMap<String, HeartbeatState>, StoreError> {
        Ok(heartbeat_state::Entity::find()
            .filter(heartbeat_state::Column::MonitorId.is_in(monitor_ids))
            .all(self.db())
            .await?
            .into_iter()
            .map(|s| (s.monitor_id.clone(), HeartbeatState::from(s)))
            .collect())
    }

    /// Write a heartbeat monitor's state.
    pub async fn save_heartbeat_state(&self, state: &HeartbeatState) -> Result<(), StoreError> {
        let row = heartbeat_state::ActiveModel {
            monitor_id: Set(state.monitor_id.clone()),
            last_ping_at: Set(state.last_ping_at),
            started_at: Set(state.started_at),
            deadline_at: Set(state.deadline_at),
        };
        heartbeat_state::Entity::insert(row)
            .on_conflict(
                OnConflict::column(heartbeat_state::Column::MonitorId)
                    .update_columns([
                        heartbeat_state::Column::LastPingAt,
                        heartbeat_state::Column::StartedAt,
                        heartbeat_state::Column::DeadlineAt,
                    ])
                    .to_owned(),
            )
            .exec_without_returning(self.db())
            .await?;
        Ok(())
    }

    /// Heartbeat monitors (not paused) without a deadline: created while the server
    /// stopped between writing the monitor and its state.
    pub async fn unarmed_heartbeats(&self) -> Result<Vec<MonitorRow>, StoreError> {
        let monitors = monitor_live::Entity::find()
            .filter(monitor_live::Column::PingToken.is_not_null())
            .filter(monitor_live::Column::Status.ne(MonitorState::Paused))
            .all(self.db())
            .await?;
        let states = self
            .heartbeat_states(monitors.iter().map(|m| m.id.clone()).collect())
            .await?;
        Ok(monitors
            .into_iter()
            .filter(|m| states.get(&m.id).is_none_or(|s| s.deadline_at.is_none()))
            .map(MonitorRow::from)
            .collect())
    }

    /// Heartbeat monitors (not paused) whose deadline passed by `now`, oldest first.
    /// The earliest deadline of any heartbeat monitor.
    pub async fn next_heartbeat_deadline(&self) -> Result<Option<i64>, StoreError> {
        let at: Option<Option<i64>> = heartbeat_state::Entity::find()
            .select_only()
            .column_as(heartbeat_state::Column::DeadlineAt.min(), "at")
            .into_tuple()
            .one(self.db())
            .await?;
        Ok(at.flatten())
    }

    pub async fn due_heartbeats(
        &self,
        now: i64,
        limit: u64,
    ) -> Result<Vec<(MonitorRow, HeartbeatState)>, StoreError> {
        let due = heartbeat_state::Entity::find()
            .filter(heartbeat_state::Column::DeadlineAt.lte(now))
            .order_by_asc(heartbeat_state::Column::DeadlineAt)
            .limit(limit)
            .all(self.db())
            .await?;
        if due.is_empty() {
            return Ok(Vec::new());
        }
        let mut monitors: HashMap<String, MonitorRow> = monitor_live::Entity::find()
            .filter(monitor_live::Column::Id.is_in(due.iter().map(|s| s.monitor_id.clone())))
            .all(self.db())
            .await?
            .into_iter()
            .map(|m| (m.id.clone(), m.into()))
            .collect();
        let mut out = Vec::with_capacity(due.len());
        for state in due {
            match monitors.remove(&state.monitor_id) {
                Some(m) if m.status != MonitorState::Paused => out.push((m, state.into())),
                Some(_) => {
                    // Paused: no deadline until resumed.
                    self.advance_heartbeat_deadline(&state.monitor_id, state.deadline_at, None)
                        .await?;
                }
                None => {
                    // Deleted.
                    heartbeat_state::Entity::delete_by_id(state.monitor_id.clone())
                        .exec(self.db())
                        .await?;
                }
            }
        }
        Ok(out)
    }

    /// Move a deadline from `from` to `to`, unless someone moved it first (a ping, or
    /// another node's sweep). True when this call moved it.
    pub async fn advance_heartbeat_deadline(
        &self,
        monitor_id: &str,
        from: Option<i64>,
        to: impl Into<Option<i64>>,
    ) -> Result<bool, StoreError> {
        let mut update = heartbeat_state::Entity::update_many()
            .col_expr(heartbeat_state::Column::DeadlineAt, Expr::value(to.into()))
            .filter(heartbeat_state::Column::MonitorId.eq(monitor_id));
        update = match from {
            Some(at) => update.filter(heartbeat_state::Column::DeadlineAt.eq(at)),
            None => update.filter(heartbeat_state::Column::DeadlineAt.is_null()),
        };
        Ok(update.exec(self.db()).await?.rows_affected == 1)
    }

    /// Forget a heartbeat monitor's state (deleted, or no longer a heartbeat).
    pub async fn delete_heartbeat_state(&self, monitor_id: &str) -> Result<(), StoreError> {
        heartbeat_state::Entity::delete_by_id(monitor_id.to_string())
            .exec(self.db())
            .await?;
        Ok(())
    }
}
