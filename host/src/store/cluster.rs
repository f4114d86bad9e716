//! Several nodes on one database: node heartbeats and check claims. The database is the
//! only coordinator: a claim is a row whose primary key (monitor, round) only one node can
//! insert, and a node is alive while its heartbeat is recent.

use super::entities::{check_claim, node};
use super::{Store, StoreError};
use sea_orm::sea_query::OnConflict;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, EntityTrait, QueryFilter, QueryOrder, TryInsertResult,
};
use std::collections::HashSet;

/// A node is counted as alive this long after its last heartbeat.
pub const NODE_TTL_MS: i64 = 15_000;
/// How often a node writes its heartbeat.
pub const HEARTBEAT_MS: u64 = 5_000;
/// Claims are kept this long (for the record of who ran what), then pruned.
pub const CLAIM_RETENTION_MS: i64 = 3_600_000;

impl Store {
    /// Record that `node_id` (in `region`) is alive at `now`.
    pub async fn heartbeat(
        &self,
        node_id: &str,
        region: &str,
        started_at: i64,
        now: i64,
    ) -> Result<(), StoreError> {
        let row = node::ActiveModel {
            id: Set(node_id.to_string()),
            region: Set(region.to_string()),
            started_at: Set(started_at),
            last_seen_at: Set(now),
            version: Set(env!("CARGO_PKG_VERSION").to_string()),
        };
        node::Entity::insert(row)
            .on_conflict(
                OnConflict::column(node::Column::Id)
                    .update_columns([node::Column::Region, node::Column::LastSeenAt])
                    .to_owned(),
            )
            .exec_without_returning(self.db())
            .await?;
        Ok(())
    }

    /// Forget a node that is shutting down, so it stops counting as alive at once.
    pub async fn leave(&self, node_id: &str) -> Result<(), StoreError> {
        node::Entity::delete_by_id(node_id.to_string())
            .exec(self.db())
            .await?;
        Ok(())
    }

    /// Nodes heard from since `now - NODE_TTL_MS`, oldest first.
    pub async fn live_nodes(&self, now: i64) -> Result<Vec<node::Model>, StoreError> {
        Ok(node::Entity::find()
            .filter(node::Column::LastSeenAt.gte(now - NODE_TTL_MS))
            .order_by_asc(node::Column::StartedAt)
            .all(self.db())
            .await?)
    }

    /// Try to take several rounds at once for `node_id`, in one statement. Returns the
    /// (monitor, round) pairs this node won; the others belong to another node already.
    pub async fn claim_rounds(
        &self,
        rounds: &[(String, i64)],
        node_id: &str,
        now: i64,
    ) -> Result<HashSet<(String, i64)>, StoreError> {
        let rows = rounds
            .iter()
            .map(|(monitor_id, round)| check_claim::ActiveModel {
                monitor_id: Set(monitor_id.clone()),
                round: Set(*round),
                node_id: Set(node_id.to_string()),
                claimed_at: Set(now),
            });
        let inserted = check_claim::Entity::insert_many(rows)
            .on_conflict_do_nothing_on([check_claim::Column::MonitorId, check_claim::Column::Round])
            .exec_with_returning_keys(self.db())
            .await?;
        Ok(match inserted {
            TryInsertResult::Inserted(keys) => keys.into_iter().collect(),
            TryInsertResult::Empty | TryInsertResult::Conflicted => HashSet::new(),
        })
    }

    /// Who claimed which rounds of `monitor_id` (for tests and diagnosis).
    pub async fn claims_of(&self, monitor_id: &str) -> Result<Vec<check_claim::Model>, StoreError> {
        Ok(check_claim::Entity::find()
            .filter(check_claim::Column::MonitorId.eq(monitor_id))
            .order_by_asc(check_claim::Column::Round)
            .all(self.db())
            .await?)
    }

    /// Drop claims and dead nodes older than their retention.
    pub async fn prune_cluster(&self, now: i64) -> Result<(), StoreError> {
        check_claim::Entity::delete_many()
            .filter(check_claim::Column::ClaimedAt.lt(now - CLAIM_RETENTION_MS))
            .exec(self.db())
            .await?;
        node::Entity::delete_many()
            .filter(node::Column::LastSeenAt.lt(now - CLAIM_RETENTION_MS))
            .exec(self.db())
            .await?;
        Ok(())
    }
}
