//! Monitor rows: create, read, list, update, delete, and what the scheduler loads.

use super::Owned;
use super::entities::{
    certificate_notice, daily_uptime, heartbeat_state, monitor_health, monitor_tombstone,
};
use super::live::Seen;
use super::states::MonitorState;
use super::{MonitorChange, Order, Page, Store, StoreError, Tx};
use sea_orm::sea_query::ExprTrait as _;
use sea_orm::sea_query::{Alias, Expr, OnConflict, Query};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, PaginatorTrait, QueryFilter,
    QueryOrder, QuerySelect, Set,
};

// The monitor's entities live here, beside its row type: a new column is added to both
// models and to `MonitorRow` in this one file (and to the migration that adds it).

/// Monitors, as written. Type-specific settings live in `config` (JSON text). The
/// counters and last check are in [`monitor_health`](super::super::entities::monitor_health); reads go through [`monitor_live`].
pub(super) mod monitor {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "monitors")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        pub workspace_id: String,
        pub name: String,
        pub kind: String,
        pub config: String,
        pub interval_secs: i32,
        pub timeout_secs: i32,
        pub alert_policy_id: Option<String>,
        pub regions: String,
        pub status: crate::store::states::MonitorState,
        pub created_at: i64,
        pub updated_at: i64,
        pub region_cursor: i32,
        /// Re-check a failure from another region before it counts.
        pub regional_confirmation: bool,
        /// JSON list of tags.
        pub tags: String,
        /// Heartbeat monitors: the secret in their ping URL.
        pub ping_token: Option<String>,
        /// JSON list of the ids of monitors this one depends on.
        pub depends_on: String,
        /// Notifications are held until then (Unix ms).
        pub snoozed_until: Option<i64>,
        /// A stable identifier chosen by the owner, unique in the workspace for this kind.
        pub apply_key: Option<String>,
        /// The tool that owns the object (`tocsin apply` sets it), if any.
        pub managed_by: Option<String>,
        /// Seconds from a failing check to the next while the failure has not yet opened
        /// an incident; None: the interval.
        pub retry_interval_secs: Option<i32>,
        /// A passing check slower than this (ms) is slow; enough slow ones in a row make
        /// the monitor `degraded`. None: never degraded.
        pub degraded_after_ms: Option<i32>,
        /// The uptime it should reach, in parts per million (99.9 % is 999,000).
        pub sla_target_ppm: Option<i32>,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

// Monitors as read: the view `monitors_live`, [`monitor`] joined with [`monitor_health`](super::super::entities::monitor_health)
// (a monitor without a health row reads as never checked). Only read, never written.
own_row! {
    /// A monitor as stored: its settings and status, with its counters and last check.
    #[derive(serde::Deserialize)]
    pub struct MonitorRow in monitor_live "monitors_live" {
        key {
            pub id: String,
        }
        pub workspace_id: String,
        pub name: String,
        pub kind: String,
        pub config: String,
        pub interval_secs: i32,
        pub timeout_secs: i32,
        pub alert_policy_id: Option<String>,
        pub regions: String,
        pub status: crate::store::states::MonitorState,
        pub created_at: i64,
        pub updated_at: i64,
        pub last_checked_at: Option<i64>,
        pub last_response_time_ms: Option<i32>,
        pub consecutive_failures: i32,
        pub consecutive_successes: i32,
        pub region_cursor: i32,
        /// Re-check a failure from another region before it counts.
        pub regional_confirmation: bool,
        /// JSON list of tags.
        pub tags: String,
        /// Heartbeat monitors: the secret in their ping URL.
        pub ping_token: Option<String>,
        /// JSON list of the ids of monitors this one depends on.
        pub depends_on: String,
        /// Notifications are held until then (Unix ms).
        pub snoozed_until: Option<i64>,
        /// A stable identifier chosen by the owner, unique in the workspace for this kind.
        pub apply_key: Option<String>,
        /// The tool that owns the object (`tocsin apply` sets it), if any.
        pub managed_by: Option<String>,
        /// Seconds from a failing check to the next while the failure has not yet opened
        /// an incident; None: the interval.
        pub retry_interval_secs: Option<i32>,
        /// A passing check slower than this (ms) is slow; enough slow ones in a row make
        /// the monitor `degraded`. None: never degraded.
        pub degraded_after_ms: Option<i32>,
        /// Slow passing checks in a row.
        pub consecutive_slow: i32,
        /// The uptime it should reach, in parts per million (99.9 % is 999,000).
        pub sla_target_ppm: Option<i32>,
    }
}

/// Monitors whose tags may hold `tag`: tags are stored as a JSON list, so the quoted tag
/// is matched, wildcards escaped.
fn tag_filter(tag: &str) -> sea_orm::sea_query::SimpleExpr {
    let escaped = tag
        .replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_")
        .replace('"', "");
    sea_orm::sea_query::Expr::col(monitor_live::Column::Tags)
        .like(sea_orm::sea_query::LikeExpr::new(format!("%\"{escaped}\"%")).escape('\\'))
}

impl MonitorRow {
    /// A new monitor of `kind` named after its id, created `now`: pending and never
    /// checked, every minute with a 10 s timeout, an empty configuration, in every
    /// region, with no tags, policy, dependency or owner. Code that makes a monitor
    /// (the API, the bench, tests) starts from it and sets what differs, so a new column
    /// is added here once.
    pub fn new(id: &str, workspace_id: &str, kind: &str, now: i64) -> MonitorRow {
        MonitorRow {
            id: id.to_string(),
            workspace_id: workspace_id.to_string(),
            name: id.to_string(),
            kind: kind.to_string(),
            config: "{}".into(),
            interval_secs: 60,
            timeout_secs: 10,
            alert_policy_id: None,
            regions: "[]".into(),
            status: MonitorState::Pending,
            created_at: now,
            updated_at: now,
            last_checked_at: None,
            last_response_time_ms: None,
            consecutive_failures: 0,
            consecutive_successes: 0,
            region_cursor: 0,
            regional_confirmation: false,
            tags: "[]".into(),
            ping_token: None,
            depends_on: "[]".into(),
            snoozed_until: None,
            apply_key: None,
            managed_by: None,
            retry_interval_secs: None,
            degraded_after_ms: None,
            consecutive_slow: 0,
            sla_target_ppm: None,
        }
    }

    /// Its tags.
    pub fn tag_list(&self) -> Vec<String> {
        read_list(&self.id, "tags", &self.tags)
    }

    /// The regions it runs in; empty for every region.
    pub fn region_list(&self) -> Vec<String> {
        read_list(&self.id, "regions", &self.regions)
    }

    /// The ids of the monitors it depends on.
    pub fn parent_ids(&self) -> Vec<String> {
        read_list(&self.id, "depends_on", &self.depends_on)
    }
}

/// A monitor's stored JSON list. One that does not read as such (written by hand, or by
/// a bug) is taken as empty, logged and counted in `tocsin_unreadable_fields_total`, so
/// it is never silently lost.
pub fn read_list<T: serde::de::DeserializeOwned>(
    monitor_id: &str,
    field: &'static str,
    text: &str,
) -> Vec<T> {
    serde_json::from_str(text).unwrap_or_else(|e| {
        crate::telemetry::global().unreadable_fields.inc();
        tracing::error!(monitor = %monitor_id, field, error = %e, "a stored list does not read as a list; taken as empty");
        Vec::new()
    })
}

/// What a clustered scheduler's periodic re-read needs of a monitor to tell whether its
/// whole row must be read again.
#[derive(Debug, Clone, PartialEq)]
pub struct MonitorStamp {
    pub id: String,
    pub kind: String,
    /// JSON array text, as stored.
    pub regions: String,
    pub updated_at: i64,
}

/// The outcome-driven columns of a monitor: what the engine counts and decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Health {
    pub consecutive_failures: i32,
    pub consecutive_successes: i32,
    /// Slow passing checks in a row (see `degraded_after_ms`).
    pub consecutive_slow: i32,
    pub status: MonitorState,
}

impl Health {
    /// A stored monitor's health.
    pub fn of(m: &MonitorRow) -> Health {
        Health {
            consecutive_failures: m.consecutive_failures,
            consecutive_successes: m.consecutive_successes,
            consecutive_slow: m.consecutive_slow,
            status: m.status,
        }
    }
}

/// The workspace's monitor count as the writes keep it (`monitor_counts`), as `total`.
fn kept_total(workspace_id: &str) -> sea_orm::sea_query::SelectStatement {
    Query::select()
        .column(Alias::new("total"))
        .from(Alias::new("monitor_counts"))
        .and_where(Expr::col(Alias::new("workspace_id")).eq(workspace_id))
        .to_owned()
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
    pub status: Option<MonitorState>,
    /// Only monitors whose name contains this (case-insensitive on ASCII).
    pub search: Option<String>,
    /// Only monitors of this type.
    pub kind: Option<String>,
    /// Only monitors with this tag.
    pub tag: Option<String>,
    pub sort: MonitorSort,
    pub order: Order,
    pub page: Page,
}

impl Store {
    /// Insert a new monitor (and count it).
    pub async fn insert_monitor(&self, row: MonitorRow) -> Result<MonitorRow, StoreError> {
        let id = row.id.clone();
        let tx = self.begin_write().await?;
        settings_of(&row).insert(tx.conn()).await?;
        health_of(&row).insert(tx.conn()).await?;
        add_to_count(tx.conn(), &row.workspace_id, 1).await?;
        tx.note(Seen::monitor(&row.workspace_id, &id, false));
        tx.commit().await?;
        self.publish(MonitorChange::Upserted(id));
        Ok(row)
    }

    /// How many monitors the workspace has (kept by the writes, not counted).
    pub async fn monitor_total(&self, workspace_id: &str) -> Result<u64, StoreError> {
        #[derive(sea_orm::FromQueryResult)]
        struct Total {
            total: i64,
        }
        let db = self.db();
        let row = <Total as sea_orm::FromQueryResult>::find_by_statement(
            db.get_database_backend().build(&kept_total(workspace_id)),
        )
        .one(db)
        .await?;
        Ok(row.map_or(0, |r| u64::try_from(r.total).unwrap_or(0)))
    }

    /// Insert many monitors in one transaction (imports and the benchmark). The scheduler
    /// is not told; it picks them up when it (re)loads.
    pub async fn insert_monitors(&self, rows: Vec<MonitorRow>) -> Result<(), StoreError> {
        use sea_orm::TransactionTrait;
        let txn = self.writer().begin().await?;
        let mut added: std::collections::BTreeMap<String, i64> = Default::default();
        for row in &rows {
            *added.entry(row.workspace_id.clone()).or_default() += 1;
        }
        for (workspace_id, n) in added {
            add_to_count(&txn, &workspace_id, n).await?;
        }
        for chunk in rows.chunks(500) {
            monitor::Entity::insert_many(chunk.iter().map(settings_of))
                .exec_without_returning(&txn)
                .await?;
            monitor_health::Entity::insert_many(chunk.iter().map(health_of))
                .exec_without_returning(&txn)
                .await?;
        }
        let _counted = self.commits.on_drop();
        txn.commit().await?;
        Ok(())
    }

    /// One monitor of a workspace.
    pub async fn monitor(
        &self,
        workspace_id: &str,
        id: &str,
    ) -> Result<Option<MonitorRow>, StoreError> {
        Ok(monitor_live::Entity::find_by_id(id.to_string())
            .filter(monitor_live::Column::WorkspaceId.eq(workspace_id))
            .one(self.db())
            .await?
            .owned())
    }

    /// Some monitors of a workspace, by id (the ones a dashboard page shows).
    pub async fn monitors_by_id(
        &self,
        workspace_id: &str,
        ids: Vec<String>,
    ) -> Result<Vec<MonitorRow>, StoreError> {
        Ok(monitor_live::Entity::find()
            .filter(monitor_live::Column::WorkspaceId.eq(workspace_id))
            .filter(monitor_live::Column::Id.is_in(ids))
            .all(self.db())
            .await?
            .owned())
    }

    /// Every monitor of a workspace with `tag` (a report's choice).
    pub async fn monitors_with_tag(
        &self,
        workspace_id: &str,
        tag: &str,
    ) -> Result<Vec<MonitorRow>, StoreError> {
        let rows = monitor_live::Entity::find()
            .filter(monitor_live::Column::WorkspaceId.eq(workspace_id))
            .filter(tag_filter(tag))
            .all(self.db())
            .await?
            .owned();
        // The pattern finds the quoted tag in the JSON text; the list itself decides.
        Ok(rows
            .into_iter()
            .filter(|m: &MonitorRow| m.tag_list().iter().any(|t| t == tag))
            .collect())
    }

    /// A page of a workspace's monitors and the total count.
    pub async fn list_monitors(
        &self,
        workspace_id: &str,
        q: &MonitorListQuery,
    ) -> Result<(Vec<MonitorRow>, u64), StoreError> {
        let mut select =
            monitor_live::Entity::find().filter(monitor_live::Column::WorkspaceId.eq(workspace_id));
        if let Some(status) = q.status {
            select = select.filter(monitor_live::Column::Status.eq(status));
        }
        if let Some(kind) = &q.kind {
            select = select.filter(monitor_live::Column::Kind.eq(kind.as_str()));
        }
        if let Some(tag) = q.tag.as_deref().filter(|t| !t.is_empty()) {
            select = select.filter(tag_filter(tag));
        }
        if let Some(search) = q.search.as_deref().filter(|s| !s.is_empty()) {
            // LIKE with the wildcards of the search text escaped, lower case on both sides.
            let escaped = search
                .to_lowercase()
                .replace('\\', "\\\\")
                .replace('%', "\\%")
                .replace('_', "\\_");
            select = select.filter(
                sea_orm::sea_query::Expr::expr(sea_orm::sea_query::Func::lower(
                    sea_orm::sea_query::Expr::col(monitor_live::Column::Name),
                ))
                .like(sea_orm::sea_query::LikeExpr::new(format!("%{escaped}%")).escape('\\')),
            );
        }
        let unfiltered = q.status.is_none()
            && q.kind.is_none()
            && q.tag.as_deref().is_none_or(str::is_empty)
            && q.search.as_deref().is_none_or(str::is_empty);
        let total = if unfiltered {
            kept_total(workspace_id)
        } else {
            super::pages::count_of(select.clone())
        };
        let column = match q.sort {
            MonitorSort::CreatedAt => monitor_live::Column::CreatedAt,
            MonitorSort::UpdatedAt => monitor_live::Column::UpdatedAt,
            MonitorSort::Name => monitor_live::Column::Name,
            MonitorSort::Status => monitor_live::Column::Status,
        };
        self.page_and_total(
            select,
            &[(column, q.order), (monitor_live::Column::Id, q.order)],
            q.page,
            total,
        )
        .await
        .map(|(rows, total)| (rows.owned(), total))
    }

    /// The tags a workspace's monitors use, sorted, each once.
    pub async fn monitor_tags(&self, workspace_id: &str) -> Result<Vec<String>, StoreError> {
        let lists: Vec<String> = monitor::Entity::find()
            .select_only()
            .column(monitor::Column::Tags)
            .filter(monitor::Column::WorkspaceId.eq(workspace_id))
            .filter(monitor::Column::Tags.ne("[]"))
            .distinct()
            .into_tuple()
            .all(self.db())
            .await?;
        let mut tags: Vec<String> = lists
            .iter()
            .flat_map(|l| serde_json::from_str::<Vec<String>>(l).unwrap_or_default())
            .collect();
        tags.sort();
        tags.dedup();
        Ok(tags)
    }

    /// How many monitors of a workspace are in each state.
    pub async fn count_monitors_by_state(
        &self,
        workspace_id: &str,
    ) -> Result<Vec<(MonitorState, u64)>, StoreError> {
        let rows: Vec<(MonitorState, i64)> = monitor::Entity::find()
            .select_only()
            .column(monitor::Column::Status)
            .column_as(monitor::Column::Id.count(), "n")
            .filter(monitor::Column::WorkspaceId.eq(workspace_id))
            .group_by(monitor::Column::Status)
            .into_tuple()
            .all(self.db())
            .await?;
        Ok(rows
            .into_iter()
            .map(|(s, n)| (s, u64::try_from(n).unwrap_or(0)))
            .collect())
    }

    /// Save an edited monitor (every column but the check counters, which only checks
    /// move). A new interval moves its health row to its new place in the schedule.
    pub async fn update_monitor(&self, row: MonitorRow) -> Result<MonitorRow, StoreError> {
        let id = row.id.clone();
        let mut active = settings_of(&row);
        // Set by their own requests, never by an edit.
        active.ping_token = sea_orm::ActiveValue::NotSet;
        active.snoozed_until = sea_orm::ActiveValue::NotSet;
        let tx = self.begin_write().await?;
        active.update(tx.conn()).await?;
        let (interval_ms, phase_ms) = place_of(&row);
        monitor_health::Entity::update_many()
            .col_expr(monitor_health::Column::IntervalMs, Expr::value(interval_ms))
            .col_expr(monitor_health::Column::PhaseMs, Expr::value(phase_ms))
            .filter(monitor_health::Column::MonitorId.eq(id.as_str()))
            .filter(monitor_health::Column::IntervalMs.ne(interval_ms))
            .exec(tx.conn())
            .await?;
        let saved = monitor_live::Entity::find_by_id(id.clone())
            .one(tx.conn())
            .await?
            .ok_or_else(|| sea_orm::DbErr::RecordNotUpdated)?;
        tx.note(Seen::monitor(&row.workspace_id, &id, false));
        tx.commit().await?;
        self.publish(MonitorChange::Upserted(id));
        Ok(saved.into())
    }

    /// Monitors of a workspace among `ids`.
    pub async fn monitors_in_workspace(
        &self,
        workspace_id: &str,
        ids: Vec<String>,
    ) -> Result<Vec<MonitorRow>, StoreError> {
        Ok(monitor_live::Entity::find()
            .filter(monitor_live::Column::WorkspaceId.eq(workspace_id))
            .filter(monitor_live::Column::Id.is_in(ids))
            .all(self.db())
            .await?
            .owned())
    }

    /// A workspace's first `limit` monitors by name, and how many it has in all.
    pub async fn monitors_by_name(
        &self,
        workspace_id: &str,
        limit: u64,
    ) -> Result<(Vec<MonitorRow>, u64), StoreError> {
        let all = monitor::Entity::find()
            .filter(monitor::Column::WorkspaceId.eq(workspace_id))
            .count(self.db())
            .await?;
        let rows = monitor_live::Entity::find()
            .filter(monitor_live::Column::WorkspaceId.eq(workspace_id))
            .order_by_asc(monitor_live::Column::Name)
            .order_by_asc(monitor_live::Column::Id)
            .limit(limit)
            .all(self.db())
            .await?
            .owned();
        Ok((rows, all))
    }

    /// Which monitors of a workspace depend on which (only those that depend on any).
    pub async fn dependency_graph(
        &self,
        workspace_id: &str,
    ) -> Result<std::collections::HashMap<String, Vec<String>>, StoreError> {
        let rows: Vec<(String, String)> = monitor::Entity::find()
            .select_only()
            .column(monitor::Column::Id)
            .column(monitor::Column::DependsOn)
            .filter(monitor::Column::WorkspaceId.eq(workspace_id))
            .filter(monitor::Column::DependsOn.ne("[]"))
            .into_tuple()
            .all(self.db())
            .await?;
        Ok(rows
            .into_iter()
            .map(|(id, deps)| (id, serde_json::from_str(&deps).unwrap_or_default()))
            .collect())
    }

    /// Up to `limit` monitors that are not paused, by id, after id `after`: the scheduler
    /// reads a million monitors a page at a time instead of holding every row at once.
    pub async fn active_monitors_after(
        &self,
        after: Option<&str>,
        limit: u64,
    ) -> Result<Vec<MonitorRow>, StoreError> {
        let mut query = monitor_live::Entity::find()
            .filter(monitor_live::Column::Status.ne(MonitorState::Paused))
            .order_by_asc(monitor_live::Column::Id)
            .limit(limit);
        if let Some(after) = after {
            query = query.filter(monitor_live::Column::Id.gt(after));
        }
        Ok(query.all(self.db()).await?.owned())
    }

    /// The ids, types, regions and edit times of active (not paused) monitors, ordered by
    /// id, after `after`: a clustered scheduler's cheap periodic re-read.
    pub async fn active_monitor_stamps_after(
        &self,
        after: Option<&str>,
        limit: u64,
    ) -> Result<Vec<MonitorStamp>, StoreError> {
        let mut query = monitor::Entity::find()
            .select_only()
            .column(monitor::Column::Id)
            .column(monitor::Column::Kind)
            .column(monitor::Column::Regions)
            .column(monitor::Column::UpdatedAt)
            .filter(monitor::Column::Status.ne(MonitorState::Paused))
            .order_by_asc(monitor::Column::Id)
            .limit(limit);
        if let Some(after) = after {
            query = query.filter(monitor::Column::Id.gt(after));
        }
        let rows: Vec<(String, String, String, i64)> = query.into_tuple().all(self.db()).await?;
        Ok(rows
            .into_iter()
            .map(|(id, kind, regions, updated_at)| MonitorStamp {
                id,
                kind,
                regions,
                updated_at,
            })
            .collect())
    }

    /// Monitors of every status changed (created, edited, paused, resumed) at or after
    /// `since`, for nodes that follow each other's edits.
    pub async fn monitors_updated_since(&self, since: i64) -> Result<Vec<MonitorRow>, StoreError> {
        Ok(monitor_live::Entity::find()
            .filter(monitor_live::Column::UpdatedAt.gte(since))
            .all(self.db())
            .await?
            .owned())
    }

    /// Monitors among `ids` in any workspace, for the scheduler (those that exist).
    pub async fn monitors_by_id_any(
        &self,
        ids: Vec<String>,
    ) -> Result<Vec<MonitorRow>, StoreError> {
        let mut rows = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(500) {
            rows.extend(
                monitor_live::Entity::find()
                    .filter(monitor_live::Column::Id.is_in(chunk.to_vec()))
                    .all(self.db())
                    .await?
                    .into_iter()
                    .map(MonitorRow::from),
            );
        }
        Ok(rows)
    }

    /// One monitor by id in any workspace, for the scheduler.
    pub async fn monitor_by_id(&self, id: &str) -> Result<Option<MonitorRow>, StoreError> {
        Ok(monitor_live::Entity::find_by_id(id.to_string())
            .one(self.db())
            .await?
            .owned())
    }
}

/// Add `delta` to a workspace's monitor count, in the transaction that adds or deletes them.
async fn add_to_count(
    conn: &impl ConnectionTrait,
    workspace_id: &str,
    delta: i64,
) -> Result<(), sea_orm::DbErr> {
    let table = Alias::new("monitor_counts");
    let total = Alias::new("total");
    let insert = Query::insert()
        .into_table(table.clone())
        .columns([Alias::new("workspace_id"), total.clone()])
        .values([workspace_id.into(), delta.into()])
        .map_err(|e| sea_orm::DbErr::Custom(e.to_string()))?
        .on_conflict(
            OnConflict::column(Alias::new("workspace_id"))
                .value(total.clone(), Expr::col((table, total)).add(delta))
                .to_owned(),
        )
        .to_owned();
    conn.execute(&insert).await?;
    Ok(())
}

/// Monitor writes that are part of a larger change (checks, incidents, deletion).
impl Tx {
    /// Delete a monitor (its check history follows, in batches). Returns whether it existed.
    pub async fn delete_monitor(&self, workspace_id: &str, id: &str) -> Result<bool, StoreError> {
        let deleted = monitor::Entity::delete_many()
            .filter(monitor::Column::Id.eq(id))
            .filter(monitor::Column::WorkspaceId.eq(workspace_id))
            .exec(self.conn())
            .await?
            .rows_affected;
        if deleted > 0 {
            self.note(Seen::monitor(workspace_id, id, true));
            add_to_count(self.conn(), workspace_id, -1).await?;
            // Its check history may be large: the retention sweeper removes it in small
            // batches afterwards, so deleting a monitor never holds a long write lock.
            monitor_tombstone::ActiveModel {
                monitor_id: Set(id.to_string()),
                deleted_at: Set(chrono::Utc::now().timestamp_millis()),
            }
            .insert(self.conn())
            .await?;
            certificate_notice::Entity::delete_many()
                .filter(certificate_notice::Column::MonitorId.eq(id))
                .exec(self.conn())
                .await?;
            daily_uptime::Entity::delete_many()
                .filter(daily_uptime::Column::MonitorId.eq(id))
                .exec(self.conn())
                .await?;
            heartbeat_state::Entity::delete_many()
                .filter(heartbeat_state::Column::MonitorId.eq(id))
                .exec(self.conn())
                .await?;
            self.delete_badge_of(id).await?;
        }
        Ok(deleted > 0)
    }

    /// Monitors among `ids`, locked for this transaction.
    pub async fn monitors_by_ids(&self, ids: Vec<String>) -> Result<Vec<MonitorRow>, StoreError> {
        // On PostgreSQL, lock the rows (in id order, so two writers cannot deadlock) until
        // the transaction ends: counters and incident decisions of one monitor are made by
        // one transaction at a time, whichever node they come from. SQLite transactions
        // that write already hold the database's one write lock.
        if self.conn().get_database_backend() == sea_orm::DbBackend::Postgres {
            let _locked: Vec<String> = monitor::Entity::find()
                .select_only()
                .column(monitor::Column::Id)
                .filter(monitor::Column::Id.is_in(ids.clone()))
                .order_by_asc(monitor::Column::Id)
                .lock_exclusive()
                .into_tuple()
                .all(self.conn())
                .await?;
        }
        Ok(monitor_live::Entity::find()
            .filter(monitor_live::Column::Id.is_in(ids))
            .order_by_asc(monitor_live::Column::Id)
            .all(self.conn())
            .await?
            .owned())
    }

    /// Write the outcome-driven columns of many monitors: `(id, health, last checked at,
    /// last response time, whether its status moved)`. Counters and last check go to
    /// `monitor_health`, one statement per 200 monitors (a check batch touches every
    /// monitor it holds, and their rows there share pages); a monitor's own row is
    /// written only when its status moved.
    pub async fn save_monitor_healths(
        &self,
        rows: &[(&str, &Health, i64, Option<i32>, bool)],
    ) -> Result<(), StoreError> {
        use sea_orm::{Statement, Value};
        let backend = self.conn().get_database_backend();
        for chunk in rows.chunks(200) {
            let mut sql = String::from("WITH v(id, cf, cs, lc, rt, sl) AS (VALUES ");
            let mut values: Vec<Value> = Vec::with_capacity(chunk.len() * 6);
            for (i, (id, health, checked_at, response_ms, _)) in chunk.iter().enumerate() {
                if i > 0 {
                    sql.push_str(", ");
                }
                sql.push_str(&super::values_row(
                    backend,
                    values.len(),
                    &[
                        Some("TEXT"),
                        Some("INTEGER"),
                        Some("INTEGER"),
                        Some("BIGINT"),
                        Some("INTEGER"),
                        Some("INTEGER"),
                    ],
                ));
                values.push(Value::from(id.to_string()));
                values.push(Value::from(health.consecutive_failures));
                values.push(Value::from(health.consecutive_successes));
                values.push(Value::from(*checked_at));
                values.push(Value::from(*response_ms));
                values.push(Value::from(health.consecutive_slow));
            }
            sql.push_str(
                ") UPDATE monitor_health SET consecutive_failures = v.cf, \
                 consecutive_successes = v.cs, last_checked_at = v.lc, \
                 last_response_time_ms = v.rt, consecutive_slow = v.sl \
                 FROM v WHERE monitor_health.monitor_id = v.id",
            );
            self.conn()
                .execute_raw(Statement::from_sql_and_values(backend, sql, values))
                .await?;
        }
        let moved: Vec<(&str, MonitorState)> = rows
            .iter()
            .filter(|r| r.4)
            .map(|(id, health, ..)| (*id, health.status))
            .collect();
        for chunk in moved.chunks(200) {
            let mut sql = String::from("WITH v(id, st) AS (VALUES ");
            let mut values: Vec<Value> = Vec::with_capacity(chunk.len() * 2);
            for (i, (id, status)) in chunk.iter().enumerate() {
                if i > 0 {
                    sql.push_str(", ");
                }
                sql.push_str(&super::values_row(
                    backend,
                    values.len(),
                    &[Some("TEXT"), Some("TEXT")],
                ));
                values.push(Value::from(id.to_string()));
                values.push(Value::from(sea_orm::ActiveEnum::to_value(status)));
            }
            // A pause that landed while the check ran wins.
            sql.push_str(
                ") UPDATE monitors SET status = v.st FROM v \
                 WHERE monitors.id = v.id AND monitors.status <> 'paused'",
            );
            self.conn()
                .execute_raw(Statement::from_sql_and_values(backend, sql, values))
                .await?;
        }
        Ok(())
    }

    /// One monitor of a workspace.
    pub async fn monitor_in(
        &self,
        workspace_id: &str,
        id: &str,
    ) -> Result<Option<MonitorRow>, StoreError> {
        Ok(monitor_live::Entity::find_by_id(id.to_string())
            .filter(monitor_live::Column::WorkspaceId.eq(workspace_id))
            .one(self.conn())
            .await?
            .owned())
    }

    /// One monitor in any workspace.
    pub async fn monitor_by_id(&self, id: &str) -> Result<Option<MonitorRow>, StoreError> {
        Ok(monitor_live::Entity::find_by_id(id.to_string())
            .one(self.conn())
            .await?
            .owned())
    }

    /// After an incident was resolved by hand: the monitor is up and its failures (and
    /// slow checks) count from zero again.
    pub async fn restart_after_manual_resolve(&self, id: &str) -> Result<(), StoreError> {
        monitor::Entity::update_many()
            .col_expr(monitor::Column::Status, Expr::value(MonitorState::Up))
            .filter(monitor::Column::Id.eq(id))
            .exec(self.conn())
            .await?;
        monitor_health::Entity::update_many()
            .col_expr(monitor_health::Column::ConsecutiveFailures, Expr::value(0))
            .col_expr(monitor_health::Column::ConsecutiveSlow, Expr::value(0))
            .filter(monitor_health::Column::MonitorId.eq(id))
            .exec(self.conn())
            .await?;
        Ok(())
    }

    /// Set a monitor's state; `reset_counters` starts its consecutive counts afresh.
    pub async fn set_monitor_state(
        &self,
        m: MonitorRow,
        status: MonitorState,
        reset_counters: bool,
        now: Option<i64>,
    ) -> Result<MonitorRow, StoreError> {
        let mut update = monitor::Entity::update_many()
            .col_expr(monitor::Column::Status, Expr::value(status))
            .filter(monitor::Column::Id.eq(m.id.as_str()));
        if let Some(now) = now {
            update = update.col_expr(monitor::Column::UpdatedAt, Expr::value(now));
        }
        if update.exec(self.conn()).await?.rows_affected == 0 {
            return Err(sea_orm::DbErr::RecordNotUpdated.into());
        }
        self.note(Seen::monitor(&m.workspace_id, &m.id, false));
        if reset_counters {
            monitor_health::Entity::update_many()
                .col_expr(monitor_health::Column::ConsecutiveFailures, Expr::value(0))
                .col_expr(monitor_health::Column::ConsecutiveSuccesses, Expr::value(0))
                .col_expr(monitor_health::Column::ConsecutiveSlow, Expr::value(0))
                .filter(monitor_health::Column::MonitorId.eq(m.id.as_str()))
                .exec(self.conn())
                .await?;
        }
        let (consecutive_failures, consecutive_successes, consecutive_slow) = if reset_counters {
            (0, 0, 0)
        } else {
            (
                m.consecutive_failures,
                m.consecutive_successes,
                m.consecutive_slow,
            )
        };
        Ok(MonitorRow {
            status,
            updated_at: now.unwrap_or(m.updated_at),
            consecutive_failures,
            consecutive_successes,
            consecutive_slow,
            ..m
        })
    }
}

/// The columns of a monitor's own row (everything but its counters and last check).
fn settings_of(row: &MonitorRow) -> monitor::ActiveModel {
    let row = row.clone();
    monitor::ActiveModel {
        id: Set(row.id),
        workspace_id: Set(row.workspace_id),
        name: Set(row.name),
        kind: Set(row.kind),
        config: Set(row.config),
        interval_secs: Set(row.interval_secs),
        timeout_secs: Set(row.timeout_secs),
        alert_policy_id: Set(row.alert_policy_id),
        regions: Set(row.regions),
        status: Set(row.status),
        created_at: Set(row.created_at),
        updated_at: Set(row.updated_at),
        region_cursor: Set(row.region_cursor),
        regional_confirmation: Set(row.regional_confirmation),
        tags: Set(row.tags),
        ping_token: Set(row.ping_token),
        depends_on: Set(row.depends_on),
        snoozed_until: Set(row.snoozed_until),
        apply_key: Set(row.apply_key),
        managed_by: Set(row.managed_by),
        retry_interval_secs: Set(row.retry_interval_secs),
        degraded_after_ms: Set(row.degraded_after_ms),
        sla_target_ppm: Set(row.sla_target_ppm),
    }
}

/// Where a monitor's health row sits: its interval and the phase its rounds start at in
/// it (the scheduler's), in ms, so a second's checks find their rows side by side.
fn place_of(row: &MonitorRow) -> (i64, i64) {
    let interval = crate::ids::Interval::of(&row.id, row.interval_secs);
    (interval.every_ms(), interval.phase_ms())
}

/// A new monitor's health row: its counters and last check as given.
fn health_of(row: &MonitorRow) -> monitor_health::ActiveModel {
    let (interval_ms, phase_ms) = place_of(row);
    monitor_health::ActiveModel {
        interval_ms: Set(interval_ms),
        phase_ms: Set(phase_ms),
        monitor_id: Set(row.id.clone()),
        consecutive_failures: Set(row.consecutive_failures),
        consecutive_successes: Set(row.consecutive_successes),
        consecutive_slow: Set(row.consecutive_slow),
        last_checked_at: Set(row.last_checked_at),
        last_response_time_ms: Set(row.last_response_time_ms),
    }
}
