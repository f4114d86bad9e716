//! Requests to confirm a failure from another region. A node whose check failed writes a
//! request naming the region to ask; a node of that region claims it with a lease (a
//! conditional update, so one node wins on SQLite and PostgreSQL alike), checks again and
//! hands both results to the recorder, which settles the request by deleting its row in the
//! same transaction that counts the verdict. A request nobody answers by its deadline is
//! settled the same way with the failure counted as it was.

use super::{Store, StoreError, Tx};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, Condition, EntityTrait, QueryFilter, QueryOrder, QuerySelect,
};

// An open request to check a monitor again from another region before a failure counts.
own_row! {
    /// A stored request.
    pub struct ConfirmationRow in check_confirmation "check_confirmations" {
        key {
            pub id: String,
        }
        pub monitor_id: String,
        pub round: i64,
        /// The region whose check failed.
        pub from_region: String,
        /// The region asked to confirm.
        pub target_region: String,
        pub requested_at: i64,
        /// After this the failure counts unconfirmed.
        pub deadline_at: i64,
        pub claimed_by: Option<String>,
        pub lease_until: Option<i64>,
        /// The failed check (JSON), written when the request is answered.
        pub original: String,
    }
}

/// Requests claimed or swept in one pass.
const BATCH: u64 = 64;
/// The most open requests of one location read at once (they live seconds: one per
/// failing round of a monitor that asks it, across the workspaces that share its name).
const OPEN_AT_A_LOCATION: u64 = 2_000;

/// A new request, before it is written.
pub struct NewConfirmation<'a> {
    pub id: &'a str,
    pub monitor_id: &'a str,
    pub round: i64,
    pub from_region: &'a str,
    pub target_region: &'a str,
    pub requested_at: i64,
    pub deadline_at: i64,
    /// The failed check, as JSON.
    pub original: String,
}

impl Store {
    /// Write a request. False when the round already has one (another node asked first).
    pub async fn request_confirmation(&self, c: NewConfirmation<'_>) -> Result<bool, StoreError> {
        insert(self.db(), c).await
    }

    /// The requests among `ids` that are still open.
    pub async fn confirmations_among(
        &self,
        ids: Vec<String>,
    ) -> Result<Vec<ConfirmationRow>, StoreError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        Ok(check_confirmation::Entity::find()
            .filter(check_confirmation::Column::Id.is_in(ids))
            .all(self.db())
            .await?
            .into_iter()
            .map(ConfirmationRow::from)
            .collect())
    }

    /// Open requests addressed to `region` about monitors among `monitor_ids`, before their
    /// deadline, oldest first (what a probe of a private location answers: its own
    /// monitors'). The location's open requests are read and sorted here: a location can
    /// hold more monitors than a query may name.
    pub async fn confirmations_for(
        &self,
        region: &str,
        monitor_ids: &std::collections::HashSet<&str>,
        now: i64,
    ) -> Result<Vec<ConfirmationRow>, StoreError> {
        if monitor_ids.is_empty() {
            return Ok(Vec::new());
        }
        Ok(check_confirmation::Entity::find()
            .filter(check_confirmation::Column::TargetRegion.eq(region))
            .filter(check_confirmation::Column::DeadlineAt.gt(now))
            .order_by_asc(check_confirmation::Column::RequestedAt)
            .limit(OPEN_AT_A_LOCATION)
            .all(self.db())
            .await?
            .into_iter()
            .filter(|c| monitor_ids.contains(c.monitor_id.as_str()))
            .map(ConfirmationRow::from)
            .collect())
    }

    /// Claim up to a batch of requests addressed to `region` for `node_id`. A claim holds
    /// until the request's deadline; after that the request is settled unanswered (see
    /// [`Store::expired_confirmations`]), so a node that dies holding one delays the verdict
    /// by at most the deadline.
    pub async fn claim_confirmations(
        &self,
        region: &str,
        node_id: &str,
        now: i64,
    ) -> Result<Vec<ConfirmationRow>, StoreError> {
        let free = Condition::any()
            .add(check_confirmation::Column::LeaseUntil.is_null())
            .add(check_confirmation::Column::LeaseUntil.lt(now));
        let candidates = check_confirmation::Entity::find()
            .filter(check_confirmation::Column::TargetRegion.eq(region))
            .filter(check_confirmation::Column::DeadlineAt.gt(now))
            .filter(free.clone())
            .order_by_asc(check_confirmation::Column::RequestedAt)
            .limit(BATCH)
            .all(self.db())
            .await?;
        let mut claimed = Vec::with_capacity(candidates.len());
        for c in candidates {
            let won = check_confirmation::Entity::update_many()
                .col_expr(check_confirmation::Column::ClaimedBy, Expr::value(node_id))
                .col_expr(
                    check_confirmation::Column::LeaseUntil,
                    Expr::col(check_confirmation::Column::DeadlineAt),
                )
                .filter(check_confirmation::Column::Id.eq(c.id.as_str()))
                .filter(free.clone())
                .exec(self.db())
                .await?
                .rows_affected;
            if won == 1 {
                claimed.push(c.into());
            }
        }
        Ok(claimed)
    }

    /// Requests past their deadline (claimed or not).
    pub async fn expired_confirmations(
        &self,
        now: i64,
    ) -> Result<Vec<ConfirmationRow>, StoreError> {
        Ok(check_confirmation::Entity::find()
            .filter(check_confirmation::Column::DeadlineAt.lte(now))
            .order_by_asc(check_confirmation::Column::DeadlineAt)
            .limit(BATCH)
            .all(self.db())
            .await?
            .into_iter()
            .map(ConfirmationRow::from)
            .collect())
    }

    /// Drop a request that can no longer be answered (its stored check is unreadable).
    pub async fn drop_confirmation(&self, id: &str) -> Result<(), StoreError> {
        check_confirmation::Entity::delete_many()
            .filter(check_confirmation::Column::Id.eq(id))
            .exec(self.db())
            .await?;
        Ok(())
    }

    /// Open requests (for tests and diagnosis).
    pub async fn open_confirmations(&self) -> Result<Vec<ConfirmationRow>, StoreError> {
        Ok(check_confirmation::Entity::find()
            .order_by_asc(check_confirmation::Column::RequestedAt)
            .all(self.db())
            .await?
            .into_iter()
            .map(ConfirmationRow::from)
            .collect())
    }
}

/// Write a request on `conn`. False when the round already has one.
async fn insert(
    conn: &impl sea_orm::ConnectionTrait,
    c: NewConfirmation<'_>,
) -> Result<bool, StoreError> {
    let row = check_confirmation::ActiveModel {
        id: Set(c.id.to_string()),
        monitor_id: Set(c.monitor_id.to_string()),
        round: Set(c.round),
        from_region: Set(c.from_region.to_string()),
        target_region: Set(c.target_region.to_string()),
        requested_at: Set(c.requested_at),
        deadline_at: Set(c.deadline_at),
        claimed_by: Set(None),
        lease_until: Set(None),
        original: Set(c.original),
    };
    let inserted = check_confirmation::Entity::insert(row)
        .on_conflict(
            sea_orm::sea_query::OnConflict::columns([
                check_confirmation::Column::MonitorId,
                check_confirmation::Column::Round,
            ])
            .do_nothing()
            .to_owned(),
        )
        .exec_without_returning(conn)
        .await?;
    Ok(inserted == 1)
}

/// Writes that are part of a larger transaction.
impl Tx {
    /// Write a request in the transaction that consumes the check it is about (a
    /// probe's failure: its sequence number moves with it). False when the round already
    /// has one.
    pub async fn request_confirmation(&self, c: NewConfirmation<'_>) -> Result<bool, StoreError> {
        insert(self.conn(), c).await
    }

    /// Settle a request inside the recorder's transaction. True for exactly one caller:
    /// the one whose verdict counts.
    pub async fn settle_confirmation(&self, id: &str) -> Result<bool, StoreError> {
        let deleted = check_confirmation::Entity::delete_many()
            .filter(check_confirmation::Column::Id.eq(id))
            .exec(self.conn())
            .await?
            .rows_affected;
        Ok(deleted == 1)
    }
}
