//! Alert policy and stored channel rows.

use super::entities::{alert_policy, channel, monitor};
use super::{Page, Store, StoreError, Tx};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, EntityTrait, IntoActiveModel, PaginatorTrait, QueryFilter,
    QueryOrder, QuerySelect,
};

/// A policy as stored.
pub type PolicyRow = alert_policy::Model;
/// A channel as stored.
pub type ChannelRow = channel::Model;

impl Store {
    pub async fn insert_alert_policy(&self, row: PolicyRow) -> Result<PolicyRow, StoreError> {
        Ok(row
            .into_active_model()
            .reset_all()
            .insert(self.db())
            .await?)
    }

    pub async fn alert_policy(
        &self,
        workspace_id: &str,
        id: &str,
    ) -> Result<Option<PolicyRow>, StoreError> {
        Ok(alert_policy::Entity::find_by_id(id.to_string())
            .filter(alert_policy::Column::WorkspaceId.eq(workspace_id))
            .one(self.db())
            .await?)
    }

    pub async fn list_alert_policies(
        &self,
        workspace_id: &str,
        page: Page,
    ) -> Result<(Vec<PolicyRow>, u64), StoreError> {
        let select =
            alert_policy::Entity::find().filter(alert_policy::Column::WorkspaceId.eq(workspace_id));
        let total = select.clone().count(self.db()).await?;
        let rows = select
            .order_by_desc(alert_policy::Column::CreatedAt)
            .order_by_desc(alert_policy::Column::Id)
            .offset(page.offset())
            .limit(page.limit)
            .all(self.db())
            .await?;
        Ok((rows, total))
    }

    pub async fn update_alert_policy(&self, row: PolicyRow) -> Result<PolicyRow, StoreError> {
        Ok(row
            .into_active_model()
            .reset_all()
            .update(self.db())
            .await?)
    }

    /// Delete a policy and detach it from its monitors (they keep running, unnotified).
    pub async fn delete_alert_policy(
        &self,
        workspace_id: &str,
        id: &str,
    ) -> Result<bool, StoreError> {
        let txn = self.begin_write().await?;
        let deleted = alert_policy::Entity::delete_many()
            .filter(alert_policy::Column::Id.eq(id))
            .filter(alert_policy::Column::WorkspaceId.eq(workspace_id))
            .exec(txn.conn())
            .await?
            .rows_affected;
        if deleted > 0 {
            monitor::Entity::update_many()
                .col_expr(
                    monitor::Column::AlertPolicyId,
                    Expr::value(Option::<String>::None),
                )
                .filter(monitor::Column::AlertPolicyId.eq(id))
                .exec(txn.conn())
                .await?;
        }
        txn.commit().await?;
        Ok(deleted > 0)
    }

    pub async fn insert_channel(&self, row: ChannelRow) -> Result<ChannelRow, StoreError> {
        Ok(row
            .into_active_model()
            .reset_all()
            .insert(self.db())
            .await?)
    }

    pub async fn channel(
        &self,
        workspace_id: &str,
        id: &str,
    ) -> Result<Option<ChannelRow>, StoreError> {
        Ok(channel::Entity::find_by_id(id.to_string())
            .filter(channel::Column::WorkspaceId.eq(workspace_id))
            .one(self.db())
            .await?)
    }

    /// Channels of a workspace among `ids`.
    pub async fn channels_by_ids(
        &self,
        workspace_id: &str,
        ids: Vec<String>,
    ) -> Result<Vec<ChannelRow>, StoreError> {
        Ok(channel::Entity::find()
            .filter(channel::Column::WorkspaceId.eq(workspace_id))
            .filter(channel::Column::Id.is_in(ids))
            .all(self.db())
            .await?)
    }

    pub async fn list_channels(
        &self,
        workspace_id: &str,
        page: Page,
    ) -> Result<(Vec<ChannelRow>, u64), StoreError> {
        let select = channel::Entity::find().filter(channel::Column::WorkspaceId.eq(workspace_id));
        let total = select.clone().count(self.db()).await?;
        let rows = select
            .order_by_desc(channel::Column::CreatedAt)
            .order_by_desc(channel::Column::Id)
            .offset(page.offset())
            .limit(page.limit)
            .all(self.db())
            .await?;
        Ok((rows, total))
    }

    pub async fn update_channel(&self, row: ChannelRow) -> Result<ChannelRow, StoreError> {
        Ok(row
            .into_active_model()
            .reset_all()
            .update(self.db())
            .await?)
    }

    pub async fn delete_channel(&self, workspace_id: &str, id: &str) -> Result<bool, StoreError> {
        let deleted = channel::Entity::delete_many()
            .filter(channel::Column::Id.eq(id))
            .filter(channel::Column::WorkspaceId.eq(workspace_id))
            .exec(self.db())
            .await?
            .rows_affected;
        Ok(deleted > 0)
    }
}

/// Policies and the stored channels they name, as the engine reads them inside a change.
impl Tx {
    /// The policies among `ids` (in any workspace).
    pub async fn policies_by_ids(&self, ids: Vec<String>) -> Result<Vec<PolicyRow>, StoreError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        Ok(alert_policy::Entity::find()
            .filter(alert_policy::Column::Id.is_in(ids))
            .all(self.conn())
            .await?)
    }

    /// The stored channels among `ids` (in any workspace).
    pub async fn channels_among(&self, ids: Vec<String>) -> Result<Vec<ChannelRow>, StoreError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        Ok(channel::Entity::find()
            .filter(channel::Column::Id.is_in(ids))
            .all(self.conn())
            .await?)
    }
}
