//! Members of a workspace.

use super::Owned;

use super::{Page, Store, StoreError};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, EntityTrait, IntoActiveModel, PaginatorTrait, QueryFilter,
    QueryOrder, QuerySelect,
};

// People of a workspace.
own_row! {
    /// A member as stored.
    pub struct MemberRow in member "members" {
        key {
            pub id: String,
        }
        pub workspace_id: String,
        pub email: String,
        pub name: String,
        pub role: String,
        pub created_at: i64,
        pub updated_at: i64,
    }
}

impl Store {
    pub async fn insert_member(&self, row: MemberRow) -> Result<MemberRow, StoreError> {
        Ok(self
            .insert_one(row.into_active_model().reset_all())
            .await?
            .into())
    }

    pub async fn member(
        &self,
        workspace_id: &str,
        id: &str,
    ) -> Result<Option<MemberRow>, StoreError> {
        Ok(member::Entity::find_by_id(id.to_string())
            .filter(member::Column::WorkspaceId.eq(workspace_id))
            .one(self.db())
            .await?
            .owned())
    }

    /// Members of a workspace, oldest first.
    pub async fn list_members(
        &self,
        workspace_id: &str,
        page: Page,
    ) -> Result<(Vec<MemberRow>, u64), StoreError> {
        let select = member::Entity::find().filter(member::Column::WorkspaceId.eq(workspace_id));
        let total = select.clone().count(self.db()).await?;
        let rows = select
            .order_by_asc(member::Column::CreatedAt)
            .order_by_asc(member::Column::Id)
            .offset(page.offset())
            .limit(page.limit)
            .all(self.db())
            .await?;
        Ok((rows.owned(), total))
    }

    /// How many members of a workspace have `role`.
    pub async fn count_members_with_role(
        &self,
        workspace_id: &str,
        role: &str,
    ) -> Result<u64, StoreError> {
        Ok(member::Entity::find()
            .filter(member::Column::WorkspaceId.eq(workspace_id))
            .filter(member::Column::Role.eq(role))
            .count(self.db())
            .await?)
    }

    pub async fn update_member(&self, row: MemberRow) -> Result<MemberRow, StoreError> {
        Ok(self
            .update_one(row.into_active_model().reset_all())
            .await?
            .into())
    }

    pub async fn delete_member(&self, workspace_id: &str, id: &str) -> Result<bool, StoreError> {
        let tx = self.begin_write().await?;
        let deleted = member::Entity::delete_many()
            .filter(member::Column::Id.eq(id))
            .filter(member::Column::WorkspaceId.eq(workspace_id))
            .exec(tx.conn())
            .await?
            .rows_affected;
        tx.commit_if(deleted > 0).await
    }
}
