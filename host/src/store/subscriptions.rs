//! Status-page updates and subscribers.

use super::entities::{status_page, status_subscriber, status_update};
use super::status_pages::StatusPageRow;
use super::{Page, Store, StoreError, Tx};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, EntityTrait, IntoActiveModel, PaginatorTrait, QueryFilter,
    QueryOrder, QuerySelect,
};

/// An update as stored.
pub type StatusUpdateRow = status_update::Model;
/// A subscriber as stored.
pub type SubscriberRow = status_subscriber::Model;

impl Store {
    /// A page's updates, newest first.
    pub async fn list_status_updates(
        &self,
        page_id: &str,
        page: Page,
    ) -> Result<(Vec<StatusUpdateRow>, u64), StoreError> {
        let select =
            status_update::Entity::find().filter(status_update::Column::PageId.eq(page_id));
        let total = select.clone().count(self.db()).await?;
        let rows = select
            .order_by_desc(status_update::Column::CreatedAt)
            .order_by_desc(status_update::Column::Id)
            .offset(page.offset())
            .limit(page.limit)
            .all(self.db())
            .await?;
        Ok((rows, total))
    }

    pub async fn delete_status_update(&self, page_id: &str, id: &str) -> Result<bool, StoreError> {
        // In a transaction of its own, so the request's audit entry is written with it.
        let tx = self.begin_write().await?;
        let deleted = status_update::Entity::delete_many()
            .filter(status_update::Column::Id.eq(id))
            .filter(status_update::Column::PageId.eq(page_id))
            .exec(tx.conn())
            .await?
            .rows_affected;
        tx.commit_if(deleted > 0).await
    }

    /// A page's subscribers, newest first.
    pub async fn list_subscribers(
        &self,
        page_id: &str,
        page: Page,
    ) -> Result<(Vec<SubscriberRow>, u64), StoreError> {
        let select =
            status_subscriber::Entity::find().filter(status_subscriber::Column::PageId.eq(page_id));
        let total = select.clone().count(self.db()).await?;
        let rows = select
            .order_by_desc(status_subscriber::Column::CreatedAt)
            .order_by_desc(status_subscriber::Column::Id)
            .offset(page.offset())
            .limit(page.limit)
            .all(self.db())
            .await?;
        Ok((rows, total))
    }

    pub async fn count_subscribers(&self, page_id: &str) -> Result<u64, StoreError> {
        Ok(status_subscriber::Entity::find()
            .filter(status_subscriber::Column::PageId.eq(page_id))
            .count(self.db())
            .await?)
    }

    /// A page's subscriber with this address or URL, if any.
    pub async fn subscriber_by_target(
        &self,
        page_id: &str,
        target: &str,
    ) -> Result<Option<SubscriberRow>, StoreError> {
        Ok(status_subscriber::Entity::find()
            .filter(status_subscriber::Column::PageId.eq(page_id))
            .filter(status_subscriber::Column::Target.eq(target))
            .one(self.db())
            .await?)
    }

    pub async fn subscriber_by_token(
        &self,
        token: &str,
    ) -> Result<Option<SubscriberRow>, StoreError> {
        Ok(status_subscriber::Entity::find()
            .filter(status_subscriber::Column::Token.eq(token))
            .one(self.db())
            .await?)
    }

    /// Confirm the subscriber with this token. False when there is none.
    pub async fn confirm_subscriber(&self, token: &str) -> Result<bool, StoreError> {
        Ok(status_subscriber::Entity::update_many()
            .col_expr(status_subscriber::Column::Confirmed, Expr::value(true))
            .filter(status_subscriber::Column::Token.eq(token))
            .exec(self.db())
            .await?
            .rows_affected
            > 0)
    }

    /// Remove the subscriber with this token. False when there is none.
    pub async fn unsubscribe(&self, token: &str) -> Result<bool, StoreError> {
        Ok(status_subscriber::Entity::delete_many()
            .filter(status_subscriber::Column::Token.eq(token))
            .exec(self.db())
            .await?
            .rows_affected
            > 0)
    }

    /// Remove a page's subscriber by id (the workspace's own action).
    pub async fn delete_subscriber(&self, page_id: &str, id: &str) -> Result<bool, StoreError> {
        // In a transaction of its own, so the request's audit entry is written with it.
        let tx = self.begin_write().await?;
        let deleted = status_subscriber::Entity::delete_many()
            .filter(status_subscriber::Column::Id.eq(id))
            .filter(status_subscriber::Column::PageId.eq(page_id))
            .exec(tx.conn())
            .await?
            .rows_affected;
        tx.commit_if(deleted > 0).await
    }
}

impl Tx {
    pub async fn insert_status_update(&self, row: StatusUpdateRow) -> Result<(), StoreError> {
        row.into_active_model()
            .reset_all()
            .insert(self.conn())
            .await?;
        Ok(())
    }

    pub async fn insert_subscriber(&self, row: SubscriberRow) -> Result<(), StoreError> {
        row.into_active_model()
            .reset_all()
            .insert(self.conn())
            .await?;
        Ok(())
    }

    /// The confirmed subscribers of some pages.
    pub async fn confirmed_subscribers(
        &self,
        page_ids: Vec<String>,
    ) -> Result<Vec<SubscriberRow>, StoreError> {
        if page_ids.is_empty() {
            return Ok(Vec::new());
        }
        Ok(status_subscriber::Entity::find()
            .filter(status_subscriber::Column::PageId.is_in(page_ids))
            .filter(status_subscriber::Column::Confirmed.eq(true))
            .all(self.conn())
            .await?)
    }

    /// The public pages of a workspace that show a monitor.
    pub async fn public_pages_showing(
        &self,
        workspace_id: &str,
        monitor_id: &str,
    ) -> Result<Vec<StatusPageRow>, StoreError> {
        Ok(status_page::Entity::find()
            .filter(status_page::Column::WorkspaceId.eq(workspace_id))
            .filter(status_page::Column::Public.eq(true))
            .filter(status_page::Column::MonitorIds.contains(format!("\"{monitor_id}\"")))
            .all(self.conn())
            .await?)
    }
}
