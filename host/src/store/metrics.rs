//! What `GET /metrics` reads, in pages: every monitor's name, type, tags and state, the
//! daily uptime counts of today and the sums of the days before, and the outbox's depth.

use super::entities::{daily_uptime, delivery, monitor, monitor_live};
use super::{MonitorState, Store, StoreError};
use crate::store::states::DeliveryState;
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveEnum, ColumnTrait, ConnectionTrait, DbBackend, EntityTrait, FromQueryResult,
    PaginatorTrait, QueryFilter, QueryOrder, QuerySelect, QueryTrait, Statement,
};

/// One monitor as `/metrics` labels it. Read as a row, or (on SQLite) as a JSON array of
/// these columns in this order ([`Store::rows_at_once`]).
#[derive(Debug, Clone, FromQueryResult, serde::Deserialize)]
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

/// One monitor's check counts over the days before today that the uptime windows use.
#[derive(Debug, Clone, PartialEq, Eq, FromQueryResult)]
pub struct PastDayCounts {
    pub monitor_id: String,
    /// Yesterday's (total, up).
    pub yesterday_total: i64,
    pub yesterday_up: i64,
    /// The 29 days before today (yesterday included).
    pub month_total: i64,
    pub month_up: i64,
    /// The day 30 days before today, the 30-day window's oldest.
    pub edge_total: i64,
    pub edge_up: i64,
}

impl Store {
    /// On SQLite, the count of writes that changed a monitor's labels (its name, type,
    /// tags, workspace or configuration) or added or removed a monitor: while it stays
    /// the same, labels read before are still what the database holds. None on
    /// PostgreSQL, where other nodes write too.
    pub async fn monitor_labels_version(&self) -> Result<Option<i64>, StoreError> {
        if !self.is_sqlite() {
            return Ok(None);
        }
        let row = self
            .db()
            .query_one_raw(Statement::from_string(
                DbBackend::Sqlite,
                "SELECT version FROM monitor_labels_version WHERE id = 1",
            ))
            .await?;
        Ok(row.and_then(|r| r.try_get_by_index::<i64>(0).ok()))
    }

    /// The monitors (of `workspace`, if given) that are not `up`, with their states,
    /// ordered by id: read through the index on the state (named, on SQLite, so that
    /// statistics saying most rows share four values never send it through the whole
    /// table), so nearly every monitor of a healthy server is skipped.
    pub async fn monitors_not_up(
        &self,
        workspace: Option<&str>,
    ) -> Result<Vec<(String, MonitorState)>, StoreError> {
        if !self.is_sqlite() {
            let mut q = monitor::Entity::find()
                .select_only()
                .column(monitor::Column::Id)
                .column(monitor::Column::Status)
                .filter(monitor::Column::Status.is_in([
                    MonitorState::Pending,
                    MonitorState::Down,
                    MonitorState::Paused,
                    MonitorState::Degraded,
                ]))
                .order_by_asc(monitor::Column::Id);
            if let Some(w) = workspace {
                q = q.filter(monitor::Column::WorkspaceId.eq(w));
            }
            return Ok(q.into_tuple().all(self.db()).await?);
        }
        let sql = "SELECT id, status FROM monitors INDEXED BY idx_monitors_status \
                   WHERE status IN ('pending', 'down', 'paused', 'degraded')";
        let statement = match workspace {
            Some(w) => Statement::from_sql_and_values(
                DbBackend::Sqlite,
                format!("{sql} AND workspace_id = ? ORDER BY id"),
                [w.into()],
            ),
            None => Statement::from_string(DbBackend::Sqlite, format!("{sql} ORDER BY id")),
        };
        let rows = self.db().query_all_raw(statement).await?;
        Ok(rows
            .into_iter()
            .filter_map(|r| {
                let id = r.try_get_by_index::<String>(0).ok()?;
                let status = r.try_get_by_index::<String>(1).ok()?;
                Some((id, MonitorState::try_from_value(&status).ok()?))
            })
            .collect())
    }

    /// Up to `limit` monitors (of `workspace`, if given) whose ids come after `after`,
    /// ordered by id: one page of a scrape, so a scrape never holds every monitor's row.
    /// With `with_config`, their configurations too (for the Uptime Kuma names' URL labels).
    pub async fn monitor_metric_page(
        &self,
        workspace: Option<&str>,
        after: Option<&str>,
        limit: u64,
        with_config: bool,
    ) -> Result<Vec<MonitorMetricRow>, StoreError> {
        let mut q = monitor_live::Entity::find()
            .select_only()
            .column(monitor_live::Column::Id)
            .column(monitor_live::Column::WorkspaceId)
            .column(monitor_live::Column::Name)
            .column(monitor_live::Column::Kind)
            .column(monitor_live::Column::Status)
            .column(monitor_live::Column::LastResponseTimeMs)
            .column(monitor_live::Column::Tags)
            .order_by_asc(monitor_live::Column::Id)
            .limit(limit);
        if let Some(w) = workspace {
            q = q.filter(monitor_live::Column::WorkspaceId.eq(w));
        }
        if let Some(id) = after {
            q = q.filter(monitor_live::Column::Id.gt(id));
        }
        q = if with_config {
            q.column(monitor_live::Column::Config)
        } else {
            q.expr_as(Expr::cust("NULL"), "config")
        };
        // The columns in the order of `MonitorMetricRow`'s fields.
        self.rows_at_once(
            q.into_query(),
            &[
                "id",
                "workspace_id",
                "name",
                "kind",
                "status",
                "last_response_time_ms",
                "tags",
                "config",
            ],
            "p.\"id\" ASC",
        )
        .await
    }

    /// Up to `limit` monitors' check counts of the UTC day `day`, for the monitors whose
    /// ids come after `after`, ordered by monitor id.
    pub async fn day_counts_page(
        &self,
        day: i32,
        after: Option<&str>,
        limit: u64,
    ) -> Result<Vec<(String, DayCount)>, StoreError> {
        let mut q = daily_uptime::Entity::find()
            .select_only()
            .column(daily_uptime::Column::MonitorId)
            .column(daily_uptime::Column::Total)
            .column(daily_uptime::Column::Up)
            .filter(daily_uptime::Column::Day.eq(day))
            .order_by_asc(daily_uptime::Column::MonitorId)
            .limit(limit);
        if let Some(id) = after {
            q = q.filter(daily_uptime::Column::MonitorId.gt(id));
        }
        let rows: Vec<(String, i32, i32)> = q.into_tuple().all(&self.db).await?;
        Ok(rows
            .into_iter()
            .map(|(id, total, up)| {
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

    /// Up to `limit` monitors' sums over the days before `today` (see [`PastDayCounts`]),
    /// for the monitors whose ids come after `after`, ordered by monitor id. The database
    /// adds the days up, so a month of a million monitors arrives as a million rows, not
    /// thirty million.
    pub async fn past_day_counts_page(
        &self,
        today: i32,
        after: Option<&str>,
        limit: u64,
    ) -> Result<Vec<PastDayCounts>, StoreError> {
        let (yesterday, month, edge) = (today - 1, today - 29, today - 30);
        // Read by the primary key (monitor, day), whose order is the page's. Without
        // statistics SQLite would take the day's index and sort every day of the window
        // for each page; `+day` keeps it off that index. PostgreSQL's statistics choose
        // the key by themselves, and `+day` would hide the range from its estimates.
        let day = match self.db.get_database_backend() {
            sea_orm::DbBackend::Sqlite => "+day",
            _ => "day",
        };
        // Day numbers are integers of ours, written into the text: placeholders differ
        // between the backends inside custom expressions.
        let sum = |column: &str, from: i32, to: i32| {
            Expr::cust(format!(
                "SUM(CASE WHEN day BETWEEN {from} AND {to} THEN {column} ELSE 0 END)"
            ))
        };
        let mut q = daily_uptime::Entity::find()
            .select_only()
            .column(daily_uptime::Column::MonitorId)
            .expr_as(sum("total", yesterday, yesterday), "yesterday_total")
            .expr_as(sum("up", yesterday, yesterday), "yesterday_up")
            .expr_as(sum("total", month, yesterday), "month_total")
            .expr_as(sum("up", month, yesterday), "month_up")
            .expr_as(sum("total", edge, edge), "edge_total")
            .expr_as(sum("up", edge, edge), "edge_up")
            .filter(Expr::cust(format!("{day} BETWEEN {edge} AND {yesterday}")))
            .group_by(daily_uptime::Column::MonitorId)
            .order_by_asc(daily_uptime::Column::MonitorId)
            .limit(limit);
        if let Some(id) = after {
            q = q.filter(daily_uptime::Column::MonitorId.gt(id));
        }
        Ok(q.into_model::<PastDayCounts>().all(&self.db).await?)
    }

    /// Deliveries waiting for an attempt (the outbox's depth).
    pub async fn pending_delivery_count(&self) -> Result<u64, StoreError> {
        Ok(delivery::Entity::find()
            .filter(delivery::Column::Status.eq(DeliveryState::Pending))
            .count(&self.db)
            .await?)
    }
}
