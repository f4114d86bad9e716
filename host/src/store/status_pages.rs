//! Status pages and the daily check counts behind their uptime bars.

use super::Owned;

use super::{Page, Store, StoreError, Tx};
use sea_orm::sea_query::{Alias, Expr, ExprTrait, OnConflict};
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, EntityTrait, IntoActiveModel, PaginatorTrait,
    QueryFilter, QueryOrder, QuerySelect,
};
use std::collections::BTreeMap;

// Checks per monitor and UTC day, for uptime bars.
own_row! {
    /// One monitor's check counts of one UTC day.
    pub struct DailyUptimeRow in daily_uptime "daily_uptime" {
        key {
            pub monitor_id: String,
            /// Days since 1970-01-01 (UTC).
            pub day: i32,
        }
        pub total: i32,
        pub up: i32,
        /// Sum and count of the day's response times, for means over long windows.
        pub response_ms_sum: i64,
        pub response_count: i32,
    }
}

// Public status pages.
own_row! {
    /// A status page as stored.
    pub struct StatusPageRow in status_page "status_pages" {
        key {
            pub id: String,
        }
        pub workspace_id: String,
        pub slug: String,
        pub title: String,
        pub description: String,
        pub public: bool,
        /// JSON list of monitor ids, in display order.
        pub monitor_ids: String,
        pub created_at: i64,
        pub updated_at: i64,
        /// A stable identifier chosen by the owner, unique in the workspace for this kind.
        pub apply_key: Option<String>,
        /// The tool that owns the object (`tocsin apply` sets it), if any.
        pub managed_by: Option<String>,
    }
}

/// Milliseconds in a day.
pub const DAY_MS: i64 = 86_400_000;

/// One monitor's checks of one day, as the rollup adds them up.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DayCounts {
    pub total: i32,
    pub up: i32,
    pub response_ms_sum: i64,
    pub response_count: i32,
}

/// The daily rollup of some check rows: those that count, by monitor and UTC day.
pub fn day_counts<'a>(
    rows: impl IntoIterator<Item = &'a super::CheckRow>,
) -> BTreeMap<(String, i32), DayCounts> {
    let mut daily: BTreeMap<(String, i32), DayCounts> = BTreeMap::new();
    for row in rows.into_iter().filter(|r| r.counted) {
        let e = daily
            .entry((row.monitor_id.clone(), day_of(row.checked_at)))
            .or_default();
        e.total += 1;
        e.up += i32::from(row.ok);
        if let Some(ms) = row.response_time_ms {
            e.response_ms_sum += i64::from(ms);
            e.response_count += 1;
        }
    }
    daily
}

/// The UTC day (days since 1970-01-01) of a time in milliseconds.
pub fn day_of(ms: i64) -> i32 {
    i32::try_from(ms.div_euclid(DAY_MS)).unwrap_or(i32::MAX)
}

impl Store {
    pub async fn insert_status_page(
        &self,
        row: StatusPageRow,
    ) -> Result<StatusPageRow, StoreError> {
        Ok(self
            .insert_one(row.into_active_model().reset_all())
            .await?
            .into())
    }

    pub async fn update_status_page(
        &self,
        row: StatusPageRow,
    ) -> Result<StatusPageRow, StoreError> {
        Ok(self
            .update_one(row.into_active_model().reset_all())
            .await?
            .into())
    }

    pub async fn status_page(
        &self,
        workspace_id: &str,
        id: &str,
    ) -> Result<Option<StatusPageRow>, StoreError> {
        Ok(status_page::Entity::find_by_id(id.to_string())
            .filter(status_page::Column::WorkspaceId.eq(workspace_id))
            .one(self.db())
            .await?
            .owned())
    }

    /// A page by its public slug, in any workspace.
    pub async fn status_page_by_slug(
        &self,
        slug: &str,
    ) -> Result<Option<StatusPageRow>, StoreError> {
        Ok(status_page::Entity::find()
            .filter(status_page::Column::Slug.eq(slug))
            .one(self.db())
            .await?
            .owned())
    }

    pub async fn list_status_pages(
        &self,
        workspace_id: &str,
        page: Page,
    ) -> Result<(Vec<StatusPageRow>, u64), StoreError> {
        let select =
            status_page::Entity::find().filter(status_page::Column::WorkspaceId.eq(workspace_id));
        let total = select.clone().count(self.db()).await?;
        let rows = select
            .order_by_desc(status_page::Column::CreatedAt)
            .order_by_desc(status_page::Column::Id)
            .offset(page.offset())
            .limit(page.limit)
            .all(self.db())
            .await?;
        Ok((rows.owned(), total))
    }

    pub async fn delete_status_page(
        &self,
        workspace_id: &str,
        id: &str,
    ) -> Result<bool, StoreError> {
        let tx = self.begin_write().await?;
        let deleted = status_page::Entity::delete_many()
            .filter(status_page::Column::Id.eq(id))
            .filter(status_page::Column::WorkspaceId.eq(workspace_id))
            .exec(tx.conn())
            .await?
            .rows_affected;
        tx.commit_if(deleted > 0).await
    }

    /// Daily counts of some monitors from `first_day` on.
    pub async fn daily_uptime(
        &self,
        monitor_ids: Vec<String>,
        first_day: i32,
    ) -> Result<Vec<DailyUptimeRow>, StoreError> {
        Ok(daily_uptime::Entity::find()
            .filter(daily_uptime::Column::MonitorId.is_in(monitor_ids))
            .filter(daily_uptime::Column::Day.gte(first_day))
            .all(self.db())
            .await?
            .into_iter()
            .map(DailyUptimeRow::from)
            .collect())
    }
}

/// Writes that are part of a larger transaction.
impl Tx {
    /// Add check counts to the daily rollup: `(monitor, day) -> counts`, in one
    /// statement per 500 rows (it runs in every check batch).
    pub async fn add_daily_uptime(
        &self,
        counts: &BTreeMap<(String, i32), DayCounts>,
    ) -> Result<(), StoreError> {
        let rows: Vec<daily_uptime::ActiveModel> = counts
            .iter()
            .map(|((monitor_id, day), c)| daily_uptime::ActiveModel {
                monitor_id: Set(monitor_id.clone()),
                day: Set(*day),
                total: Set(c.total),
                up: Set(c.up),
                response_ms_sum: Set(c.response_ms_sum),
                response_count: Set(c.response_count),
            })
            .collect();
        let excluded = Alias::new("excluded");
        for chunk in rows.chunks(500) {
            daily_uptime::Entity::insert_many(chunk.to_vec())
                .on_conflict(
                    OnConflict::columns([
                        daily_uptime::Column::MonitorId,
                        daily_uptime::Column::Day,
                    ])
                    .value(
                        daily_uptime::Column::Total,
                        Expr::col((daily_uptime::Entity, daily_uptime::Column::Total))
                            .add(Expr::col((excluded.clone(), daily_uptime::Column::Total))),
                    )
                    .value(
                        daily_uptime::Column::Up,
                        Expr::col((daily_uptime::Entity, daily_uptime::Column::Up))
                            .add(Expr::col((excluded.clone(), daily_uptime::Column::Up))),
                    )
                    .value(
                        daily_uptime::Column::ResponseMsSum,
                        Expr::col((daily_uptime::Entity, daily_uptime::Column::ResponseMsSum)).add(
                            Expr::col((excluded.clone(), daily_uptime::Column::ResponseMsSum)),
                        ),
                    )
                    .value(
                        daily_uptime::Column::ResponseCount,
                        Expr::col((daily_uptime::Entity, daily_uptime::Column::ResponseCount)).add(
                            Expr::col((excluded.clone(), daily_uptime::Column::ResponseCount)),
                        ),
                    )
                    .to_owned(),
                )
                .exec_without_returning(self.conn())
                .await?;
        }
        Ok(())
    }
}
