//! Several nodes on one database: node heartbeats and check claims. The database is the
//! only coordinator: a claim is a row whose primary key (region, bucket, slot) only one
//! node can insert, and a node is alive while its heartbeat is recent.

use super::entities::{check_claim, check_slot_claim, node};
use super::{Store, StoreError};
use sea_orm::sea_query::OnConflict;
use sea_orm::{ActiveValue::Set, ColumnTrait, EntityTrait, QueryFilter, QueryOrder};
use std::collections::HashSet;

/// A node is counted as alive this long after its last heartbeat.
pub const NODE_TTL_MS: i64 = 15_000;
/// How often a node writes its heartbeat.
pub const HEARTBEAT_MS: u64 = 5_000;
/// Claims are kept this long (for the record of who ran what), then pruned.
pub const CLAIM_RETENTION_MS: i64 = 3_600_000;

/// A node in the node list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    pub id: String,
    pub region: String,
    /// When it started (Unix ms).
    pub started_at: i64,
    /// Its last heartbeat (Unix ms).
    pub last_seen_at: i64,
    /// The server version it runs.
    pub version: String,
}

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

    /// Forget a node that is shutting down, so it stops counting as alive at once, and
    /// give back the slots of checks it claimed from `from_slot` on (a node claims a slot
    /// when it starts the slot's first check, up to a moment early), so other nodes run
    /// them.
    pub async fn leave(&self, node_id: &str, from_slot: i64) -> Result<(), StoreError> {
        check_slot_claim::Entity::delete_many()
            .filter(check_slot_claim::Column::NodeId.eq(node_id))
            .filter(check_slot_claim::Column::Slot.gte(from_slot))
            .exec(self.db())
            .await?;
        node::Entity::delete_by_id(node_id.to_string())
            .exec(self.db())
            .await?;
        Ok(())
    }

    /// Nodes heard from since `now - NODE_TTL_MS`, oldest first.
    pub async fn live_nodes(&self, now: i64) -> Result<Vec<Node>, StoreError> {
        let nodes = node::Entity::find()
            .filter(node::Column::LastSeenAt.gte(now - NODE_TTL_MS))
            .order_by_asc(node::Column::StartedAt)
            .all(self.db())
            .await?;
        Ok(nodes
            .into_iter()
            .map(|n| Node {
                id: n.id,
                region: n.region,
                started_at: n.started_at,
                last_seen_at: n.last_seen_at,
                version: n.version,
            })
            .collect())
    }

    /// Try to take several slots of `region`'s checks at once for `node_id`, in one
    /// statement: `(bucket, slot)` pairs. Returns the pairs this node holds now: those it
    /// took, those it held already (a node that forgot its answer asks again), and those
    /// it took over from a node not heard from within [`NODE_TTL_MS`] (a node must have
    /// written a heartbeat before it claims); the others belong to a live node.
    pub async fn claim_slots(
        &self,
        region: &str,
        slots: &[(i32, i64)],
        node_id: &str,
        now: i64,
    ) -> Result<HashSet<(i32, i64)>, StoreError> {
        use sea_orm::{ConnectionTrait, Statement, Value};
        let mut held = HashSet::new();
        let backend = self.db().get_database_backend();
        for chunk in slots.chunks(500) {
            let mut sql = String::from(
                "INSERT INTO check_slot_claims (region, bucket, slot, node_id, claimed_at) VALUES ",
            );
            let mut values: Vec<Value> = Vec::with_capacity(chunk.len() * 5);
            for (i, (bucket, slot)) in chunk.iter().enumerate() {
                if i > 0 {
                    sql.push_str(", ");
                }
                sql.push_str(&super::values_row(backend, values.len(), &[None; 5]));
                values.push(Value::from(region.to_string()));
                values.push(Value::from(*bucket));
                values.push(Value::from(*slot));
                values.push(Value::from(node_id.to_string()));
                values.push(Value::from(now));
            }
            // A conflict with this node's own row updates nothing but still returns the
            // row; a conflict with a live node's row returns nothing. A slot whose holder
            // has not been heard from within NODE_TTL_MS (it died, or never wrote its
            // first heartbeat) is taken over, so a dead node's slots ahead are run.
            let alive_since = super::param(backend, values.len());
            values.push(Value::from(now - NODE_TTL_MS));
            sql.push_str(&format!(
                " ON CONFLICT (region, bucket, slot) DO UPDATE SET node_id = excluded.node_id \
                 WHERE check_slot_claims.node_id = excluded.node_id \
                 OR NOT EXISTS (SELECT 1 FROM nodes WHERE nodes.id = check_slot_claims.node_id \
                 AND nodes.last_seen_at >= {alive_since}) RETURNING bucket, slot"
            ));
            let rows = self
                .db()
                .query_all_raw(Statement::from_sql_and_values(backend, sql, values))
                .await?;
            for row in rows {
                held.insert((
                    row.try_get::<i32>("", "bucket")?,
                    row.try_get::<i64>("", "slot")?,
                ));
            }
        }
        Ok(held)
    }

    /// The node holding one slot of `region`'s checks, if any (for tests and diagnosis).
    pub async fn slot_holder(
        &self,
        region: &str,
        bucket: i32,
        slot: i64,
    ) -> Result<Option<String>, StoreError> {
        Ok(
            check_slot_claim::Entity::find_by_id((region.to_string(), bucket, slot))
                .one(self.db())
                .await?
                .map(|c| c.node_id),
        )
    }

    /// Drop claims and dead nodes older than their retention.
    pub async fn prune_cluster(&self, now: i64) -> Result<(), StoreError> {
        check_slot_claim::Entity::delete_many()
            .filter(check_slot_claim::Column::ClaimedAt.lt(now - CLAIM_RETENTION_MS))
            .exec(self.db())
            .await?;
        // Written only by nodes of the version before slot claims (a rolling upgrade).
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
