//! Maintenance windows as stored.

use super::Owned;

use super::{Page, Store, StoreError, Tx};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, IntoActiveModel, PaginatorTrait,
    QueryFilter, QueryOrder, QuerySelect,
};

// Maintenance windows. One-off when `rrule` and `cron` are both NULL (`starts_at` to
// `ends_at`); otherwise recurring from `starts_at` (until `ends_at`, if set), each
// occurrence lasting `duration_minutes`, read in `timezone`. `monitor_ids` and `tags` are
// JSON lists; both empty means every monitor of the workspace.
own_row! {
    /// A maintenance window as stored.
    pub struct MaintenanceWindowRow in maintenance_window "maintenance_windows" {
        key {
            pub id: String,
        }
        pub workspace_id: String,
        pub name: String,
        pub description: String,
        pub starts_at: i64,
        pub ends_at: Option<i64>,
        pub rrule: Option<String>,
        pub cron: Option<String>,
        pub duration_minutes: Option<i32>,
        pub timezone: String,
        pub monitor_ids: String,
        pub tags: String,
        pub created_at: i64,
        pub updated_at: i64,
        /// A stable identifier chosen by the owner, unique in the workspace for this kind.
        pub apply_key: Option<String>,
        /// The tool that owns the object (`tocsin apply` sets it), if any.
        pub managed_by: Option<String>,
    }
}

/// Every window of some workspaces.
async fn windows_of<C: ConnectionTrait>(
    conn: &C,
    workspace_ids: Vec<String>,
) -> Result<Vec<MaintenanceWindowRow>, StoreError> {
    if workspace_ids.is_empty() {
        return Ok(Vec::new());
    }
    Ok(maintenance_window::Entity::find()
        .filter(maintenance_window::Column::WorkspaceId.is_in(workspace_ids))
        .all(conn)
        .await?
        .owned())
}

impl Store {
    pub async fn insert_maintenance_window(
        &self,
        row: MaintenanceWindowRow,
    ) -> Result<MaintenanceWindowRow, StoreError> {
        Ok(self
            .insert_one(row.into_active_model().reset_all())
            .await?
            .into())
    }

    pub async fn update_maintenance_window(
        &self,
        row: MaintenanceWindowRow,
    ) -> Result<MaintenanceWindowRow, StoreError> {
        Ok(self
            .update_one(row.into_active_model().reset_all())
            .await?
            .into())
    }

    pub async fn maintenance_window(
        &self,
        workspace_id: &str,
        id: &str,
    ) -> Result<Option<MaintenanceWindowRow>, StoreError> {
        Ok(maintenance_window::Entity::find_by_id(id.to_string())
            .filter(maintenance_window::Column::WorkspaceId.eq(workspace_id))
            .one(self.db())
            .await?
            .owned())
    }

    /// A workspace's windows, newest first.
    pub async fn list_maintenance_windows(
        &self,
        workspace_id: &str,
        page: Page,
    ) -> Result<(Vec<MaintenanceWindowRow>, u64), StoreError> {
        let select = maintenance_window::Entity::find()
            .filter(maintenance_window::Column::WorkspaceId.eq(workspace_id));
        let total = select.clone().count(self.db()).await?;
        let rows = select
            .order_by_desc(maintenance_window::Column::CreatedAt)
            .order_by_desc(maintenance_window::Column::Id)
            .offset(page.offset())
            .limit(page.limit)
            .all(self.db())
            .await?;
        Ok((rows.owned(), total))
    }

    /// How many windows a workspace has.
    pub async fn count_maintenance_windows(&self, workspace_id: &str) -> Result<u64, StoreError> {
        Ok(maintenance_window::Entity::find()
            .filter(maintenance_window::Column::WorkspaceId.eq(workspace_id))
            .count(self.db())
            .await?)
    }

    /// Every window of some workspaces (what deciding "in maintenance?" needs).
    pub async fn maintenance_windows_of(
        &self,
        workspace_ids: Vec<String>,
    ) -> Result<Vec<MaintenanceWindowRow>, StoreError> {
        windows_of(self.db(), workspace_ids).await
    }

    pub async fn delete_maintenance_window(
        &self,
        workspace_id: &str,
        id: &str,
    ) -> Result<bool, StoreError> {
        let tx = self.begin_write().await?;
        let deleted = maintenance_window::Entity::delete_many()
            .filter(maintenance_window::Column::Id.eq(id))
            .filter(maintenance_window::Column::WorkspaceId.eq(workspace_id))
            .exec(tx.conn())
            .await?
            .rows_affected;
        tx.commit_if(deleted > 0).await
    }
}

impl Tx {
    /// Every window of some workspaces, read in this transaction.
    pub async fn maintenance_windows_of(
        &self,
        workspace_ids: Vec<String>,
    ) -> Result<Vec<MaintenanceWindowRow>, StoreError> {
        windows_of(self.conn(), workspace_ids).await
    }
}
