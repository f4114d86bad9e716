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
        /// Minutes before an occurrence starts that the subscribers of the public pages
        /// showing a covered monitor are told of it (0: never).
        pub subscriber_notice_minutes: i32,
    }
}

/// Notices given to status-page subscribers: one per window, occurrence (its start) and
/// phase (`scheduled`, `ended`).
pub(super) mod maintenance_notice {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "maintenance_notices")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub window_id: String,
        #[sea_orm(primary_key, auto_increment = false)]
        pub starts_at: i64,
        #[sea_orm(primary_key, auto_increment = false)]
        pub phase: String,
        pub sent_at: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
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

impl Store {
    /// Whether the subscribers were told of `phase` of an occurrence.
    pub async fn maintenance_notice_given(
        &self,
        window_id: &str,
        starts_at: i64,
        phase: &str,
    ) -> Result<bool, StoreError> {
        Ok(maintenance_notice::Entity::find()
            .filter(maintenance_notice::Column::WindowId.eq(window_id))
            .filter(maintenance_notice::Column::StartsAt.eq(starts_at))
            .filter(maintenance_notice::Column::Phase.eq(phase))
            .count(self.db())
            .await?
            > 0)
    }

    /// Forget the notices of occurrences that started before `before` (long past being
    /// told again); a write only when there are some.
    pub async fn prune_maintenance_notices(&self, before: i64) -> Result<u64, StoreError> {
        let old = maintenance_notice::Entity::find()
            .filter(maintenance_notice::Column::StartsAt.lt(before))
            .count(self.db())
            .await?;
        if old == 0 {
            return Ok(0);
        }
        Ok(maintenance_notice::Entity::delete_many()
            .filter(maintenance_notice::Column::StartsAt.lt(before))
            .exec(self.writer())
            .await?
            .rows_affected)
    }

    /// Every window that tells status-page subscribers of its occurrences, of every
    /// workspace.
    pub async fn windows_announcing(&self) -> Result<Vec<MaintenanceWindowRow>, StoreError> {
        Ok(maintenance_window::Entity::find()
            .filter(maintenance_window::Column::SubscriberNoticeMinutes.gt(0))
            .all(self.db())
            .await?
            .owned())
    }
}

impl Tx {
    /// Note that the subscribers are told of `phase` of the occurrence of `window_id`
    /// starting at `starts_at`: true the first time, false when it was noted before (by
    /// this node or another).
    pub async fn claim_maintenance_notice(
        &self,
        window_id: &str,
        starts_at: i64,
        phase: &str,
        now: i64,
    ) -> Result<bool, StoreError> {
        use sea_orm::sea_query::OnConflict;
        let row = maintenance_notice::ActiveModel {
            window_id: sea_orm::ActiveValue::Set(window_id.to_string()),
            starts_at: sea_orm::ActiveValue::Set(starts_at),
            phase: sea_orm::ActiveValue::Set(phase.to_string()),
            sent_at: sea_orm::ActiveValue::Set(now),
        };
        let inserted = maintenance_notice::Entity::insert(row)
            .on_conflict(
                OnConflict::columns([
                    maintenance_notice::Column::WindowId,
                    maintenance_notice::Column::StartsAt,
                    maintenance_notice::Column::Phase,
                ])
                .do_nothing()
                .to_owned(),
            )
            .exec_without_returning(self.conn())
            .await?;
        Ok(inserted > 0)
    }

    /// Every window of some workspaces, read in this transaction.
    pub async fn maintenance_windows_of(
        &self,
        workspace_ids: Vec<String>,
    ) -> Result<Vec<MaintenanceWindowRow>, StoreError> {
        windows_of(self.conn(), workspace_ids).await
    }
}
