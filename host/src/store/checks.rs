//! Check results: batched inserts, history pages and uptime figures.

use super::entities::daily_uptime;
use super::status_pages::DAY_MS;
use super::{Owned, Page, Store, StoreError, Tx};
use sea_orm::{
    ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder, QuerySelect, QueryTrait,
};

/// A monitor's checks within `from..=to` (either end open when None).
fn checks_between(
    monitor_id: &str,
    from: Option<i64>,
    to: Option<i64>,
) -> sea_orm::Select<check_result::Entity> {
    let mut select =
        check_result::Entity::find().filter(check_result::Column::MonitorId.eq(monitor_id));
    if let Some(from) = from {
        select = select.filter(check_result::Column::CheckedAt.gte(from));
    }
    if let Some(to) = to {
        select = select.filter(check_result::Column::CheckedAt.lte(to));
    }
    select
}

// One row per check that ran.
own_row! {
    /// A check result as stored.
    pub struct CheckRow in check_result "check_results" {
        key {
            pub id: String,
        }
        pub monitor_id: String,
        pub workspace_id: String,
        pub checked_at: i64,
        pub ok: bool,
        pub reason: Option<String>,
        pub status_code: Option<i32>,
        pub response_time_ms: Option<i32>,
        pub region: String,
        pub details: String,
        /// False for a check kept as history only (see regional confirmation, and
        /// maintenance windows).
        pub counted: bool,
        /// Taken during a maintenance window (then never counted).
        pub maintenance: bool,
    }
}

/// Rows per INSERT statement; keeps statements under SQLite's bound-parameter limit.
const INSERT_CHUNK: usize = 500;

/// Longest window whose uptime is read from every result (and has a p95).
pub const RAW_WINDOW_MS: i64 = 2 * DAY_MS;

/// Uptime figures over a window.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct UptimeStats {
    pub total: u64,
    pub up: u64,
    pub down: u64,
    pub mean_response_ms: Option<f64>,
    pub p95_response_ms: Option<i32>,
    /// Results with a response time (the mean's count).
    pub timed: u64,
}

/// One check's response time, as [`Store::response_times`] reads it.
#[derive(Debug, Clone, Copy, sea_orm::FromQueryResult, serde::Deserialize)]
pub struct ResponseTime {
    pub ms: i32,
}

/// Most response times [`Store::response_times`] reads: 30 days of a monitor checked every
/// 10 seconds.
pub const MAX_RESPONSE_TIMES: u64 = 260_000;

impl Store {
    /// The response times of a monitor's timed checks since `since` (at most
    /// [`MAX_RESPONSE_TIMES`], the newest), in no particular order: what the dashboard's
    /// chart takes its median and 95th percentile from. Read as one value on SQLite.
    pub async fn response_times(
        &self,
        monitor_id: &str,
        since: i64,
    ) -> Result<Vec<i32>, StoreError> {
        let rows = check_result::Entity::find()
            .select_only()
            .column_as(check_result::Column::ResponseTimeMs, "ms")
            .filter(check_result::Column::MonitorId.eq(monitor_id))
            .filter(check_result::Column::CheckedAt.gte(since))
            .filter(check_result::Column::ResponseTimeMs.is_not_null())
            .order_by_desc(check_result::Column::CheckedAt)
            .limit(MAX_RESPONSE_TIMES)
            .into_query();
        let found: Vec<ResponseTime> = self.rows_at_once(rows, &["ms"], "p.\"ms\"").await?;
        Ok(found.into_iter().map(|r| r.ms).collect())
    }

    /// A page of a monitor's results, newest first, within `[from, to]`.
    pub async fn list_checks(
        &self,
        monitor_id: &str,
        from: Option<i64>,
        to: Option<i64>,
        page: Page,
    ) -> Result<(Vec<CheckRow>, u64), StoreError> {
        let select = checks_between(monitor_id, from, to);
        let total = select.clone().count(self.db()).await?;
        let rows = select
            .order_by_desc(check_result::Column::CheckedAt)
            .order_by_desc(check_result::Column::Id)
            .offset(page.offset())
            .limit(page.limit)
            .all(self.db())
            .await?;
        Ok((rows.into_iter().map(CheckRow::from).collect(), total))
    }

    /// Up to `limit` checks of a monitor within `from..=to`, oldest first, after `after`
    /// (the `(checked_at, id)` of the last one read): one batch of an export, read by its
    /// key so every batch costs the same however deep into the history it is.
    pub async fn checks_after(
        &self,
        monitor_id: &str,
        from: Option<i64>,
        to: Option<i64>,
        after: Option<(i64, String)>,
        limit: u64,
    ) -> Result<Vec<CheckRow>, StoreError> {
        use sea_orm::Condition;
        // One lower bound on the index's time column: given `from` and the last row's
        // time both, SQLite ranged the index from `from` and scanned every earlier batch
        // again (a million checks took minutes, growing with each batch).
        let lower = match (&after, from) {
            (Some((at, _)), Some(from)) => Some((*at).max(from)),
            (Some((at, _)), None) => Some(*at),
            (None, from) => from,
        };
        let mut select = checks_between(monitor_id, lower, to);
        if let Some((at, id)) = after {
            // The tie at the bound broken by id.
            select = select.filter(
                Condition::any()
                    .add(check_result::Column::CheckedAt.gt(at))
                    .add(check_result::Column::Id.gt(id)),
            );
        }
        Ok(select
            .order_by_asc(check_result::Column::CheckedAt)
            .order_by_asc(check_result::Column::Id)
            .limit(limit)
            .all(self.db())
            .await?
            .into_iter()
            .map(CheckRow::from)
            .collect())
    }

    /// A monitor's last check before `at` (a report's starting state).
    pub async fn check_before(
        &self,
        monitor_id: &str,
        at: i64,
    ) -> Result<Option<CheckRow>, StoreError> {
        Ok(check_result::Entity::find()
            .filter(check_result::Column::MonitorId.eq(monitor_id))
            .filter(check_result::Column::CheckedAt.lt(at))
            .order_by_desc(check_result::Column::CheckedAt)
            .order_by_desc(check_result::Column::Id)
            .one(self.db())
            .await?
            .map(CheckRow::from))
    }

    /// The last `per_monitor` checks of each of `monitor_ids` made since `since`, newest
    /// first within each monitor (the heartbeat bars of a page of monitors): one query, a
    /// window over each monitor's checks of the range, which the caller keeps short.
    pub async fn recent_checks(
        &self,
        monitor_ids: &[String],
        per_monitor: u32,
        since: i64,
    ) -> Result<Vec<CheckRow>, StoreError> {
        use sea_orm::{Statement, Value};
        if monitor_ids.is_empty() || per_monitor == 0 {
            return Ok(Vec::new());
        }
        let backend = self.backend();
        let mut values: Vec<Value> = Vec::with_capacity(monitor_ids.len() + 2);
        let mut ids = Vec::with_capacity(monitor_ids.len());
        for id in monitor_ids {
            ids.push(super::param(backend, values.len()));
            values.push(Value::from(id.clone()));
        }
        let since_at = super::param(backend, values.len());
        values.push(Value::from(since));
        let most = super::param(backend, values.len());
        values.push(Value::from(i64::from(per_monitor)));
        let columns = "id, monitor_id, workspace_id, checked_at, ok, reason, status_code, \
                       response_time_ms, region, details, counted, maintenance";
        let sql = format!(
            "SELECT {columns} FROM (SELECT {columns}, ROW_NUMBER() OVER \
             (PARTITION BY monitor_id ORDER BY checked_at DESC) AS beat \
             FROM check_results WHERE monitor_id IN ({}) AND checked_at >= {since_at}) ranked \
             WHERE beat <= {most} ORDER BY monitor_id, checked_at DESC",
            ids.join(", ")
        );
        let rows = check_result::Entity::find()
            .from_raw_sql(Statement::from_sql_and_values(backend, sql, values))
            .all(self.db())
            .await?;
        Ok(rows.owned())
    }

    /// Uptime, counts and response times of a monitor within `[from, to]`. Windows up to
    /// [`RAW_WINDOW_MS`] read every result; longer ones read the daily rollups for the
    /// whole days inside them and results only for the part days at their edges, so a
    /// year costs a few hundred rows (and no p95, which rollups cannot give).
    pub async fn uptime(
        &self,
        monitor_id: &str,
        from: i64,
        to: i64,
    ) -> Result<UptimeStats, StoreError> {
        if to - from <= RAW_WINDOW_MS {
            return self.raw_uptime(monitor_id, from, to).await;
        }
        // Whole UTC days inside the window: [first_day, end_day).
        let first_day = from.div_euclid(DAY_MS) + i64::from(from.rem_euclid(DAY_MS) != 0);
        let end_day = (to + 1).div_euclid(DAY_MS);
        let days: Vec<(i32, i32, i64, i32)> = daily_uptime::Entity::find()
            .select_only()
            .column(daily_uptime::Column::Total)
            .column(daily_uptime::Column::Up)
            .column(daily_uptime::Column::ResponseMsSum)
            .column(daily_uptime::Column::ResponseCount)
            .filter(daily_uptime::Column::MonitorId.eq(monitor_id))
            .filter(daily_uptime::Column::Day.gte(first_day))
            .filter(daily_uptime::Column::Day.lt(end_day))
            .into_tuple()
            .all(self.db())
            .await?;
        let head = self
            .raw_uptime(monitor_id, from, (first_day * DAY_MS - 1).min(to))
            .await?;
        let tail = if end_day * DAY_MS <= to {
            self.raw_uptime(monitor_id, (end_day * DAY_MS).max(from), to)
                .await?
        } else {
            UptimeStats::default()
        };
        let mut total = head.total + tail.total;
        let mut up = head.up + tail.up;
        let mut sum: f64 = [&head, &tail]
            .iter()
            .filter_map(|s| s.mean_response_ms.map(|m| m * s.timed as f64))
            .sum();
        let mut timed = head.timed + tail.timed;
        for (t, u, ms, n) in days {
            total += u64::try_from(t).unwrap_or(0);
            up += u64::try_from(u).unwrap_or(0);
            sum += ms as f64;
            timed += u64::try_from(n).unwrap_or(0);
        }
        Ok(UptimeStats {
            total,
            up,
            down: total - up,
            mean_response_ms: (timed > 0).then(|| sum / timed as f64),
            p95_response_ms: None,
            timed,
        })
    }

    /// Uptime from every result within `[from, to]`.
    async fn raw_uptime(
        &self,
        monitor_id: &str,
        from: i64,
        to: i64,
    ) -> Result<UptimeStats, StoreError> {
        if to < from {
            return Ok(UptimeStats::default());
        }
        let rows: Vec<(bool, Option<i32>)> = check_result::Entity::find()
            .select_only()
            .column(check_result::Column::Ok)
            .column(check_result::Column::ResponseTimeMs)
            .filter(check_result::Column::MonitorId.eq(monitor_id))
            .filter(check_result::Column::CheckedAt.gte(from))
            .filter(check_result::Column::CheckedAt.lte(to))
            .filter(check_result::Column::Counted.eq(true))
            .into_tuple()
            .all(self.db())
            .await?;
        Ok(summarise(&rows))
    }
}

/// Figures from (ok, response time) pairs.
pub fn summarise(rows: &[(bool, Option<i32>)]) -> UptimeStats {
    let total = rows.len() as u64;
    let up = rows.iter().filter(|(ok, _)| *ok).count() as u64;
    let mut times: Vec<i32> = rows.iter().filter_map(|(_, t)| *t).collect();
    times.sort_unstable();
    let mean_response_ms = if times.is_empty() {
        None
    } else {
        Some(times.iter().map(|t| f64::from(*t)).sum::<f64>() / times.len() as f64)
    };
    // Nearest-rank percentile.
    let p95_response_ms = if times.is_empty() {
        None
    } else {
        let rank = ((times.len() as f64) * 0.95).ceil() as usize;
        times.get(rank.saturating_sub(1)).copied()
    };
    UptimeStats {
        total,
        up,
        down: total - up,
        mean_response_ms,
        p95_response_ms,
        timed: times.len() as u64,
    }
}

/// Writes that are part of a larger transaction.
impl Tx {
    /// Insert many results in few statements.
    pub async fn insert_checks(&self, rows: Vec<CheckRow>) -> Result<(), StoreError> {
        let mut rows = rows.into_iter().peekable();
        while rows.peek().is_some() {
            let chunk: Vec<check_result::ActiveModel> = rows
                .by_ref()
                .take(INSERT_CHUNK)
                .map(|row| {
                    sea_orm::IntoActiveModel::into_active_model(check_result::Model::from(row))
                })
                .collect();
            check_result::Entity::insert_many(chunk)
                .exec_without_returning(self.conn())
                .await?;
        }
        Ok(())
    }
}

/// What writing a monitor's history came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HistoryWrite {
    /// Rows written now, and rows already stored (unchanged).
    Written { written: u64, already: u64 },
    /// The monitor was deleted meanwhile: nothing written.
    MonitorGone,
    /// Another request wrote some of the same rows meanwhile: nothing written (send again).
    Raced,
}

impl Store {
    /// Write past checks of `monitor_id` (another tool's history) with their daily rollup,
    /// in one transaction: rows whose id is already stored are left as they are.
    pub async fn write_history(
        &self,
        monitor_id: &str,
        rows: Vec<CheckRow>,
    ) -> Result<HistoryWrite, StoreError> {
        use sea_orm::sea_query::OnConflict;
        let tx = self.begin_write().await?;
        // Read again inside the transaction: a monitor deleted since is not written to.
        if tx.monitor_by_id(monitor_id).await?.is_none() {
            tx.commit_if(false).await?;
            return Ok(HistoryWrite::MonitorGone);
        }
        let mut present = std::collections::HashSet::new();
        for chunk in rows.chunks(INSERT_CHUNK) {
            let ids: Vec<String> = chunk.iter().map(|r| r.id.clone()).collect();
            let found: Vec<String> = check_result::Entity::find()
                .select_only()
                .column(check_result::Column::Id)
                .filter(check_result::Column::Id.is_in(ids))
                .into_tuple()
                .all(tx.conn())
                .await?;
            present.extend(found);
        }
        let total = rows.len() as u64;
        let new: Vec<CheckRow> = rows
            .into_iter()
            .filter(|r| !present.contains(&r.id))
            .collect();
        let daily = super::status_pages::day_counts(&new);
        let written = new.len() as u64;
        // A row another request wrote since the read above is not inserted again: then
        // the counts would be off, so nothing is written and the caller sends again.
        let mut inserted = 0;
        for chunk in new.chunks(INSERT_CHUNK) {
            let models: Vec<check_result::ActiveModel> = chunk
                .iter()
                .cloned()
                .map(|row| {
                    sea_orm::IntoActiveModel::into_active_model(check_result::Model::from(row))
                })
                .collect();
            inserted += check_result::Entity::insert_many(models)
                .on_conflict(
                    OnConflict::column(check_result::Column::Id)
                        .do_nothing()
                        .to_owned(),
                )
                .exec_without_returning(tx.conn())
                .await?;
        }
        if inserted != written {
            tx.commit_if(false).await?;
            return Ok(HistoryWrite::Raced);
        }
        tx.add_daily_uptime(&daily).await?;
        tx.commit().await?;
        Ok(HistoryWrite::Written {
            written,
            already: total - written,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summarises_counts_and_percentiles() {
        let mut rows: Vec<(bool, Option<i32>)> = (1..=100).map(|t| (true, Some(t))).collect();
        rows.push((false, None));
        let s = summarise(&rows);
        assert_eq!((s.total, s.up, s.down), (101, 100, 1));
        assert_eq!(s.p95_response_ms, Some(95));
        assert_eq!(s.mean_response_ms, Some(50.5));
        let empty = summarise(&[]);
        assert_eq!(
            (empty.total, empty.mean_response_ms, empty.p95_response_ms),
            (0, None, None)
        );
    }
}

/// One time bucket (an hour, unless asked otherwise) of one monitor's checks.
#[derive(Debug, Clone, PartialEq)]
pub struct HourSummary {
    pub monitor_id: String,
    /// Buckets since the Unix epoch.
    pub hour: i64,
    pub total: i64,
    pub up: i64,
    pub mean_response_ms: Option<f64>,
}

impl Store {
    /// Hourly summaries of some monitors' checks since `since` (one grouped query, for a
    /// page of the dashboard's overview).
    pub async fn hourly_summaries(
        &self,
        monitor_ids: Vec<String>,
        since: i64,
    ) -> Result<Vec<HourSummary>, StoreError> {
        self.summaries(monitor_ids, since, 3_600_000).await
    }

    /// Summaries of some monitors' checks since `since`, in buckets of `bucket_ms`.
    pub async fn summaries(
        &self,
        monitor_ids: Vec<String>,
        since: i64,
        bucket_ms: u32,
    ) -> Result<Vec<HourSummary>, StoreError> {
        use sea_orm::sea_query::Expr;
        let bucket = format!("checked_at / {}", bucket_ms.max(1));
        let rows: Vec<(String, i64, i64, i64, Option<f64>)> = check_result::Entity::find()
            .select_only()
            .column(check_result::Column::MonitorId)
            .column_as(Expr::cust(bucket.clone()), "hour")
            .column_as(Expr::cust("COUNT(*)"), "total")
            .column_as(Expr::cust("SUM(CASE WHEN ok THEN 1 ELSE 0 END)"), "good")
            .column_as(
                Expr::cust("CAST(AVG(response_time_ms) AS DOUBLE PRECISION)"),
                "mean_ms",
            )
            .filter(check_result::Column::MonitorId.is_in(monitor_ids))
            .filter(check_result::Column::CheckedAt.gte(since))
            .group_by(check_result::Column::MonitorId)
            .group_by(Expr::cust(bucket))
            .into_tuple()
            .all(self.db())
            .await?;
        Ok(rows
            .into_iter()
            .map(|(monitor_id, hour, total, up, mean)| HourSummary {
                monitor_id,
                hour,
                total,
                up,
                mean_response_ms: mean,
            })
            .collect())
    }
}
