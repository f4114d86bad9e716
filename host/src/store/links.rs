//! One-click links in alerts (acknowledge, snooze, resolve): one row per link, keyed by
//! the SHA-256 of its token, written with the delivery that carries it. A link is used at
//! most once: the use is a conditional update, so two clicks at once (or two nodes) cannot
//! both act.

use super::{Owned, Store, StoreError, Tx};
use sea_orm::sea_query::Expr;
use sea_orm::{ActiveModelTrait, ColumnTrait, EntityTrait, IntoActiveModel, QueryFilter};

own_row! {
    /// A link sent in one delivery.
    pub struct ActionLinkRow in action_link "action_links" {
        key {
            pub token_hash: String,
        }
        pub workspace_id: String,
        pub incident_id: String,
        pub delivery_id: String,
        /// The stored channel it was sent to (none: a policy's inline target).
        pub channel_id: Option<String>,
        pub channel_kind: String,
        /// `acknowledge`, `snooze1h`, `snoozeUntilMorning` or `resolve`.
        pub action: String,
        pub created_at: i64,
        pub used_at: Option<i64>,
        /// Who used it, as recorded on the incident.
        pub used_by: Option<String>,
    }
}

impl Tx {
    /// Store the links of one delivery.
    pub async fn insert_action_links(&self, rows: Vec<ActionLinkRow>) -> Result<(), StoreError> {
        if rows.is_empty() {
            return Ok(());
        }
        action_link::Entity::insert_many(
            rows.into_iter()
                .map(|r| r.into_active_model().reset_all())
                .collect::<Vec<_>>(),
        )
        .exec(self.conn())
        .await?;
        Ok(())
    }

    /// The link, read inside the transaction that may use it.
    pub async fn action_link(&self, token_hash: &str) -> Result<Option<ActionLinkRow>, StoreError> {
        Ok(action_link::Entity::find_by_id(token_hash.to_string())
            .one(self.conn())
            .await?
            .owned())
    }

    /// Mark a link used. False when it was used already (by another click that won).
    pub async fn use_action_link(
        &self,
        token_hash: &str,
        by: &str,
        now: i64,
    ) -> Result<bool, StoreError> {
        let done = action_link::Entity::update_many()
            .col_expr(action_link::Column::UsedAt, Expr::value(now))
            .col_expr(action_link::Column::UsedBy, Expr::value(by))
            .filter(action_link::Column::TokenHash.eq(token_hash))
            .filter(action_link::Column::UsedAt.is_null())
            .exec(self.conn())
            .await?;
        Ok(done.rows_affected == 1)
    }
}

impl Store {
    /// The link whose token hashes to `token_hash`, used or not.
    pub async fn action_link(&self, token_hash: &str) -> Result<Option<ActionLinkRow>, StoreError> {
        Ok(action_link::Entity::find_by_id(token_hash.to_string())
            .one(self.db())
            .await?
            .owned())
    }

    /// Links made before `cutoff` (long expired). Returns how many went.
    pub async fn prune_action_links(&self, cutoff: i64) -> Result<u64, StoreError> {
        let tx = self.begin_write().await?;
        let n = action_link::Entity::delete_many()
            .filter(action_link::Column::CreatedAt.lt(cutoff))
            .exec(tx.conn())
            .await?
            .rows_affected;
        tx.commit_if(n > 0).await?;
        Ok(n)
    }
}
