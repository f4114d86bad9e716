//! Monthly reports: which channels a workspace's report goes to and the last month sent;
//! and the files a delivery carries besides its payload (the report's PDF).

use super::Owned;
use super::{Store, StoreError, Tx};
use sea_orm::sea_query::{Expr, OnConflict};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, Condition, EntityTrait, IntoActiveModel, QueryFilter,
    QueryOrder, QuerySelect,
};

own_row! {
    /// A workspace's monthly report: where it goes, and the last month sent.
    pub struct MonthlyReportRow in monthly_report "monthly_reports" {
        key {
            pub workspace_id: String,
        }
        /// Channel ids, a JSON array.
        pub channel_ids: String,
        /// The last month whose report was queued, `2026-10`.
        pub sent_for: Option<String>,
        pub updated_at: i64,
    }
}

own_row! {
    /// A file a delivery carries (a report's PDF): the channel gets it with the message.
    pub struct DeliveryFileRow in delivery_file "delivery_files" {
        key {
            pub delivery_id: String,
            pub name: String,
        }
        pub content_type: String,
        pub data: Vec<u8>,
    }
}

impl Store {
    /// The workspace's monthly report setting, if it has one.
    pub async fn monthly_report(
        &self,
        workspace_id: &str,
    ) -> Result<Option<MonthlyReportRow>, StoreError> {
        Ok(monthly_report::Entity::find_by_id(workspace_id.to_string())
            .one(self.db())
            .await?
            .map(Into::into))
    }

    /// Set (or, with no channel, remove) the workspace's monthly report. `sent_for` is
    /// kept when the row exists; a new row starts at `first_sent_for`, so turning reports
    /// on sends the next month's rather than an old one.
    pub async fn set_monthly_report(
        &self,
        workspace_id: &str,
        channel_ids: &[String],
        first_sent_for: &str,
        now: i64,
    ) -> Result<(), StoreError> {
        let tx = self.begin_write().await?;
        let before = monthly_report::Entity::find_by_id(workspace_id.to_string())
            .one(tx.conn())
            .await?;
        match (before, channel_ids.is_empty()) {
            (Some(_), true) => {
                monthly_report::Entity::delete_by_id(workspace_id.to_string())
                    .exec(tx.conn())
                    .await?;
            }
            (None, true) => {}
            (Some(row), false) => {
                let mut row: MonthlyReportRow = row.into();
                row.channel_ids = serde_json::to_string(channel_ids).unwrap_or_default();
                row.updated_at = now;
                row.into_active_model()
                    .reset_all()
                    .update(tx.conn())
                    .await?;
            }
            (None, false) => {
                // Another request may be making it at the same time (PostgreSQL): then
                // its month stays and these channels win.
                let row: monthly_report::ActiveModel = MonthlyReportRow {
                    workspace_id: workspace_id.to_string(),
                    channel_ids: serde_json::to_string(channel_ids).unwrap_or_default(),
                    sent_for: Some(first_sent_for.to_string()),
                    updated_at: now,
                }
                .into_active_model()
                .reset_all();
                monthly_report::Entity::insert(row)
                    .on_conflict(
                        OnConflict::column(monthly_report::Column::WorkspaceId)
                            .update_columns([
                                monthly_report::Column::ChannelIds,
                                monthly_report::Column::UpdatedAt,
                            ])
                            .to_owned(),
                    )
                    .exec_without_returning(tx.conn())
                    .await?;
            }
        }
        tx.commit().await
    }

    /// Every workspace's monthly report setting, in workspace order, `limit` at a time
    /// after `after`.
    pub async fn monthly_reports(
        &self,
        after: Option<&str>,
        limit: u64,
    ) -> Result<Vec<MonthlyReportRow>, StoreError> {
        let mut q = monthly_report::Entity::find();
        if let Some(after) = after {
            q = q.filter(monthly_report::Column::WorkspaceId.gt(after));
        }
        Ok(q.order_by_asc(monthly_report::Column::WorkspaceId)
            .limit(limit)
            .all(self.db())
            .await?
            .owned())
    }

    /// The files a delivery carries, by name.
    pub async fn delivery_files(
        &self,
        delivery_id: &str,
    ) -> Result<Vec<DeliveryFileRow>, StoreError> {
        Ok(delivery_file::Entity::find()
            .filter(delivery_file::Column::DeliveryId.eq(delivery_id))
            .order_by_asc(delivery_file::Column::Name)
            .all(self.db())
            .await?
            .owned())
    }
}

impl Tx {
    /// Take month `month` of the workspace's report: true when it had not been sent yet
    /// (and now counts as sent when this commits), false when another pass took it.
    pub async fn take_report_month(
        &self,
        workspace_id: &str,
        month: &str,
        now: i64,
    ) -> Result<bool, StoreError> {
        let taken = monthly_report::Entity::update_many()
            .col_expr(monthly_report::Column::SentFor, Expr::value(month))
            .col_expr(monthly_report::Column::UpdatedAt, Expr::value(now))
            .filter(monthly_report::Column::WorkspaceId.eq(workspace_id))
            .filter(
                Condition::any()
                    .add(monthly_report::Column::SentFor.is_null())
                    .add(monthly_report::Column::SentFor.lt(month)),
            )
            .exec(self.conn())
            .await?
            .rows_affected;
        Ok(taken == 1)
    }

    pub async fn insert_delivery_file(&self, row: DeliveryFileRow) -> Result<(), StoreError> {
        row.into_active_model()
            .reset_all()
            .insert(self.conn())
            .await?;
        Ok(())
    }

    /// Remove the files of these deliveries (they are being removed).
    pub(in crate::store) async fn delete_delivery_files(
        &self,
        delivery_ids: Vec<String>,
    ) -> Result<(), StoreError> {
        delivery_file::Entity::delete_many()
            .filter(delivery_file::Column::DeliveryId.is_in(delivery_ids))
            .exec(self.conn())
            .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_month_is_taken_once_and_never_an_earlier_one() {
        let store = Store::connect("sqlite::memory:").await.expect("store");
        store.migrate().await.expect("migrate");
        let ws = "ws_report";
        store
            .set_monthly_report(ws, &["ch_1".into()], "2026-09", 1)
            .await
            .expect("set");
        let tx = store.begin_write().await.expect("tx");
        assert!(tx.take_report_month(ws, "2026-10", 2).await.expect("take"));
        assert!(!tx.take_report_month(ws, "2026-10", 3).await.expect("again"));
        assert!(!tx.take_report_month(ws, "2026-09", 3).await.expect("older"));
        tx.commit().await.expect("commit");
        let row = store.monthly_report(ws).await.expect("read").expect("row");
        assert_eq!(row.sent_for.as_deref(), Some("2026-10"));
        // Changing the channels keeps the month sent.
        store
            .set_monthly_report(ws, &["ch_2".into()], "2026-11", 4)
            .await
            .expect("set");
        let row = store.monthly_report(ws).await.expect("read").expect("row");
        assert_eq!(row.sent_for.as_deref(), Some("2026-10"));
        assert_eq!(row.channel_ids, r#"["ch_2"]"#);
        store
            .set_monthly_report(ws, &[], "2026-11", 5)
            .await
            .expect("off");
        assert!(store.monthly_report(ws).await.expect("read").is_none());
    }
}
