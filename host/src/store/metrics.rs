//! What `GET /metrics` reads: every monitor's name, type, tags and state in one query,
//! the daily uptime counts of a range of days, and the outbox's depth.

use super::entities::{daily_uptime, delivery, monitor};
use super::{MonitorState, Store, StoreError};
use crate::store::states::DeliveryState;
use sea_orm::sea_query::Expr;
use sea_orm::{
    ColumnTrait, EntityTrait, FromQueryResult, PaginatorTrait, QueryFilter, QueryOrder, QuerySelect,
};

/// One monitor as `/metrics` labels it.
#[derive(Debug, Clone, FromQueryResult)]
pub struct MonitorMetricRow {
    pub id: String,
    pub workspace_id: String,
    pub name: String,
    pub kind: String,
    pub status: MonitorState,
    pub last_response_time_ms: Option<i32>,
    /// JSON list of tags.
    pub tags: String,
    /// Its configuration (JSON), when asked for.
    pub config: Option<String>,
}

/// Checks of one monitor on one UTC day.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DayCount {
    pub day: i32,
    pub total: i64,
    pub up: i64,
}

impl Store {
    /// Every monitor (of `workspace`, if given), ordered by workspace and id. With
    /// `with_config`, their configurations too (for the Uptime Kuma names' URL labels).
    pub async fn monitor_metric_rows(
        &self,
        workspace: Option<&str>,
        with_config: bool,
    ) -> Result<Vec<MonitorMetricRow>, StoreError> {
        let mut q = monitor::Entity::find()
            .select_only()
            .column(monitor::Column::Id)
            .column(monitor::Column::WorkspaceId)
            .column(monitor::Column::Name)
            .column(monitor::Column::Kind)
            .column(monitor::Column::Status)
            .column(monitor::Column::LastResponseTimeMs)
            .column(monitor::Column::Tags)
            .order_by_asc(monitor::Column::WorkspaceId)
            .order_by_asc(monitor::Column::Id);
        if let Some(w) = workspace {
            q = q.filter(monitor::Column::WorkspaceId.eq(w));
        }
        q = if with_config {
            q.column(monitor::Column::Config)
        } else {
            q.expr_as(Expr::cust("NULL"), "config")
        };
        Ok(q.into_model::<MonitorMetricRow>().all(&self.db).await?)
    }

    /// Every monitor's check counts for the UTC days `first..=last`.
    pub async fn day_counts(
        &self,
        first: i32,
        last: i32,
    ) -> Result<Vec<(String, DayCount)>, StoreError> {
        let rows: Vec<(String, i32, i32, i32)> = daily_uptime::Entity::find()
            .select_only()
            .column(daily_uptime::Column::MonitorId)
            .column(daily_uptime::Column::Day)
            .column(daily_uptime::Column::Total)
            .column(daily_uptime::Column::Up)
            .filter(daily_uptime::Column::Day.gte(first))
            .filter(daily_uptime::Column::Day.lte(last))
            .into_tuple()
            .all(&self.db)
            .await?;
        Ok(rows
            .into_iter()
            .map(|(id, day, total, up)| {
                (
                    id,
                    DayCount {
                        day,
                        total: i64::from(total),
                        up: i64::from(up),
                    },
                )
            })
            .collect())
    }

    /// Deliveries waiting for an attempt (the outbox's depth).
    pub async fn pending_delivery_count(&self) -> Result<u64, StoreError> {
        Ok(delivery::Entity::find()
            .filter(delivery::Column::Status.eq(DeliveryState::Pending))
            .count(&self.db)
            .await?)
    }
}
