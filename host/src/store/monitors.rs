//! Monitor rows: create, read, list, update, delete, and what the scheduler loads.

use super::entities::{certificate_notice, check_result, daily_uptime, monitor};
use super::{MonitorChange, Order, Page, Store, StoreError};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, IntoActiveModel, PaginatorTrait,
    QueryFilter, QueryOrder, QuerySelect,
};

/// A monitor as stored.
pub type MonitorRow = monitor::Model;

/// Monitor states.
pub mod status {
    pub const PENDING: &str = "pending";
    pub const UP: &str = "up";
    pub const DOWN: &str = "down";
    pub const PAUSED: &str = "paused";
    pub const ALL: [&str; 4] = [PENDING, UP, DOWN, PAUSED];
}

/// Fields of monitor lists that can be sorted on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MonitorSort {
    CreatedAt,
    UpdatedAt,
    Name,
    Status,
}

/// A validated list request.
#[derive(Debug, Clone)]
pub struct MonitorListQuery {
    pub status: Option<String>,
    pub sort: MonitorSort,
    pub order: Order,
    pub page: Page,
}

impl Store {
    /// Insert a new monitor.
    pub async fn insert_monitor(&self, row: MonitorRow) -> Result<MonitorRow, StoreError> {
        let id = row.id.clone();
        let saved = row
            .into_active_model()
            .reset_all()
            .insert(self.db())
            .await?;
        self.publish(MonitorChange::Upserted(id));
        Ok(saved)
    }

    /// Insert many monitors in one transaction (imports and the benchmark). The scheduler
    /// is not told; it picks them up when it (re)loads.
    pub async fn insert_monitors(&self, rows: Vec<MonitorRow>) -> Result<(), StoreError> {
        use sea_orm::TransactionTrait;
        let txn = self.db().begin().await?;
        let mut rows = rows.into_iter().peekable();
        while rows.peek().is_some() {
            let chunk: Vec<monitor::ActiveModel> = rows
                .by_ref()
                .take(500)
                .map(IntoActiveModel::into_active_model)
                .collect();
            monitor::Entity::insert_many(chunk)
                .exec_without_returning(&txn)
                .await?;
        }
        txn.commit().await?;
        Ok(())
    }

    /// One monitor of a workspace.
    pub async fn monitor(
        &self,
        workspace_id: &str,
        id: &str,
    ) -> Result<Option<MonitorRow>, StoreError> {
        Ok(monitor::Entity::find_by_id(id.to_string())
            .filter(monitor::Column::WorkspaceId.eq(workspace_id))
            .one(self.db())
            .await?)
    }

    /// A page of a workspace's monitors and the total count.
    pub async fn list_monitors(
        &self,
        workspace_id: &str,
        q: &MonitorListQuery,
    ) -> Result<(Vec<MonitorRow>, u64), StoreError> {
        let mut select =
            monitor::Entity::find().filter(monitor::Column::WorkspaceId.eq(workspace_id));
        if let Some(status) = &q.status {
            select = select.filter(monitor::Column::Status.eq(status.as_str()));
        }
        let total = select.clone().count(self.db()).await?;
        let column = match q.sort {
            MonitorSort::CreatedAt => monitor::Column::CreatedAt,
            MonitorSort::UpdatedAt => monitor::Column::UpdatedAt,
            MonitorSort::Name => monitor::Column::Name,
            MonitorSort::Status => monitor::Column::Status,
        };
        let order = match q.order {
            Order::Asc => sea_orm::Order::Asc,
            Order::Desc => sea_orm::Order::Desc,
        };
        let rows = select
            .order_by(column, order.clone())
            .order_by(monitor::Column::Id, order)
            .offset(q.page.offset())
            .limit(q.page.limit)
            .all(self.db())
            .await?;
        Ok((rows, total))
    }

    /// Save an edited monitor (every column but the check counters, which only checks move).
    pub async fn update_monitor(&self, row: MonitorRow) -> Result<MonitorRow, StoreError> {
        let id = row.id.clone();
        let mut active = row.into_active_model().reset_all();
        active.consecutive_failures = sea_orm::ActiveValue::NotSet;
        active.consecutive_successes = sea_orm::ActiveValue::NotSet;
        active.last_checked_at = sea_orm::ActiveValue::NotSet;
        active.last_response_time_ms = sea_orm::ActiveValue::NotSet;
        let saved = active.update(self.db()).await?;
        self.publish(MonitorChange::Upserted(id));
        Ok(saved)
    }

    /// Delete a monitor and its check history inside a transaction. Returns whether it existed.
    pub async fn delete_monitor_in(
        conn: &impl ConnectionTrait,
        workspace_id: &str,
        id: &str,
    ) -> Result<bool, StoreError> {
        let deleted = monitor::Entity::delete_many()
            .filter(monitor::Column::Id.eq(id))
            .filter(monitor::Column::WorkspaceId.eq(workspace_id))
            .exec(conn)
            .await?
            .rows_affected;
        if deleted > 0 {
            check_result::Entity::delete_many()
                .filter(check_result::Column::MonitorId.eq(id))
                .exec(conn)
                .await?;
            certificate_notice::Entity::delete_many()
                .filter(certificate_notice::Column::MonitorId.eq(id))
                .exec(conn)
                .await?;
            daily_uptime::Entity::delete_many()
                .filter(daily_uptime::Column::MonitorId.eq(id))
                .exec(conn)
                .await?;
        }
        Ok(deleted > 0)
    }

    /// Monitors of a workspace among `ids`.
    pub async fn monitors_in_workspace(
        &self,
        workspace_id: &str,
        ids: Vec<String>,
    ) -> Result<Vec<MonitorRow>, StoreError> {
        Ok(monitor::Entity::find()
            .filter(monitor::Column::WorkspaceId.eq(workspace_id))
            .filter(monitor::Column::Id.is_in(ids))
            .all(self.db())
            .await?)
    }

    /// Every monitor that is not paused, for the scheduler.
    pub async fn active_monitors(&self) -> Result<Vec<MonitorRow>, StoreError> {
        Ok(monitor::Entity::find()
            .filter(monitor::Column::Status.ne(status::PAUSED))
            .all(self.db())
            .await?)
    }

    /// Monitors of every status changed (created, edited, paused, resumed) at or after
    /// `since`, for nodes that follow each other's edits.
    pub async fn monitors_updated_since(&self, since: i64) -> Result<Vec<MonitorRow>, StoreError> {
        Ok(monitor::Entity::find()
            .filter(monitor::Column::UpdatedAt.gte(since))
            .all(self.db())
            .await?)
    }

    /// One monitor by id in any workspace, for the scheduler.
    pub async fn monitor_by_id(&self, id: &str) -> Result<Option<MonitorRow>, StoreError> {
        Ok(monitor::Entity::find_by_id(id.to_string())
            .one(self.db())
            .await?)
    }

    /// Monitors among `ids`, inside a transaction or not.
    pub async fn monitors_by_ids(
        conn: &impl ConnectionTrait,
        ids: Vec<String>,
    ) -> Result<Vec<MonitorRow>, StoreError> {
        let query = monitor::Entity::find()
            .filter(monitor::Column::Id.is_in(ids))
            .order_by_asc(monitor::Column::Id);
        // On PostgreSQL, lock the rows (in id order, so two writers cannot deadlock) until
        // the transaction ends: counters and incident decisions of one monitor are made by
        // one transaction at a time, whichever node they come from. SQLite transactions
        // that write already hold the database's one write lock.
        if conn.get_database_backend() == sea_orm::DbBackend::Postgres {
            Ok(query.lock_exclusive().all(conn).await?)
        } else {
            Ok(query.all(conn).await?)
        }
    }

    /// Write the outcome-driven columns of a monitor (counters, status, last check).
    pub async fn save_monitor_health(
        conn: &impl ConnectionTrait,
        id: &str,
        health: &crate::engine::health::Health,
        last_checked_at: i64,
        last_response_time_ms: Option<i32>,
    ) -> Result<(), StoreError> {
        monitor::Entity::update_many()
            .col_expr(
                monitor::Column::ConsecutiveFailures,
                Expr::value(health.consecutive_failures),
            )
            .col_expr(
                monitor::Column::ConsecutiveSuccesses,
                Expr::value(health.consecutive_successes),
            )
            .col_expr(monitor::Column::Status, Expr::value(health.status.clone()))
            .col_expr(monitor::Column::LastCheckedAt, Expr::value(last_checked_at))
            .col_expr(
                monitor::Column::LastResponseTimeMs,
                Expr::value(last_response_time_ms),
            )
            .filter(monitor::Column::Id.eq(id))
            // A pause that landed while the check ran wins.
            .filter(monitor::Column::Status.ne(status::PAUSED))
            .exec(conn)
            .await?;
        Ok(())
    }
}
