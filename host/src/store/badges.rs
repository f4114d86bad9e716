//! Public badges of monitors: one secret token per monitor marked public.

use super::Owned;
use super::{Store, StoreError, Tx};
use sea_orm::{ActiveModelTrait, ColumnTrait, EntityTrait, IntoActiveModel, QueryFilter};

own_row! {
    /// A monitor's public badge: whoever has the token sees its status, uptime and
    /// response time (never its name, target or reasons).
    pub struct BadgeRow in monitor_badge "monitor_badges" {
        key {
            pub monitor_id: String,
        }
        pub workspace_id: String,
        pub token: String,
        pub created_at: i64,
    }
}

impl Store {
    /// The badge of a monitor of a workspace, if it has one.
    pub async fn badge_of(
        &self,
        workspace_id: &str,
        monitor_id: &str,
    ) -> Result<Option<BadgeRow>, StoreError> {
        Ok(monitor_badge::Entity::find_by_id(monitor_id.to_string())
            .filter(monitor_badge::Column::WorkspaceId.eq(workspace_id))
            .one(self.db())
            .await?
            .owned())
    }

    /// The badge a token opens.
    pub async fn badge_by_token(&self, token: &str) -> Result<Option<BadgeRow>, StoreError> {
        Ok(monitor_badge::Entity::find()
            .filter(monitor_badge::Column::Token.eq(token))
            .one(self.db())
            .await?
            .owned())
    }

    /// Give a monitor a badge, replacing its token if it had one (the old links stop
    /// working at once).
    pub async fn set_badge(&self, row: BadgeRow) -> Result<BadgeRow, StoreError> {
        let tx = self.begin_write().await?;
        monitor_badge::Entity::delete_by_id(row.monitor_id.clone())
            .exec(tx.conn())
            .await?;
        let saved = row.into_active_model().insert(tx.conn()).await?;
        tx.commit().await?;
        Ok(saved.into())
    }

    /// Take a monitor's badge away. Returns whether it had one.
    pub async fn delete_badge(
        &self,
        workspace_id: &str,
        monitor_id: &str,
    ) -> Result<bool, StoreError> {
        let tx = self.begin_write().await?;
        let deleted = monitor_badge::Entity::delete_many()
            .filter(monitor_badge::Column::MonitorId.eq(monitor_id))
            .filter(monitor_badge::Column::WorkspaceId.eq(workspace_id))
            .exec(tx.conn())
            .await?
            .rows_affected;
        tx.commit_if(deleted > 0).await
    }
}

impl Tx {
    /// A deleted monitor's badge goes with it.
    pub(super) async fn delete_badge_of(&self, monitor_id: &str) -> Result<(), StoreError> {
        monitor_badge::Entity::delete_many()
            .filter(monitor_badge::Column::MonitorId.eq(monitor_id))
            .exec(self.conn())
            .await?;
        Ok(())
    }
}
