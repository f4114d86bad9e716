//! Probes: processes that run a workspace's checks in a private location and post the
//! results back (`tocsin probe`). A probe authenticates with a token whose SHA-256 alone
//! is stored; its row keeps what it last reported and the highest sequence number of its
//! results stored (`acked_seq`), moved in the same transaction as the results.

use super::Owned;
use super::monitors::MonitorRow;
use super::states::MonitorState;
use super::{Store, StoreError, Tx};
use crate::ids::{self, PROBE_TOKEN_PREFIX, SECRET_RANDOM_CHARS};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder,
    QuerySelect,
};
use std::collections::HashMap;

own_row! {
    /// A probe: where it checks from, the hash of its token and what it last reported.
    pub struct ProbeRow in probe "probes" {
        key {
            pub id: String,
        }
        pub workspace_id: String,
        pub name: String,
        /// The (private) region it checks from.
        pub location: String,
        /// The token's first characters, to tell probes apart.
        pub prefix: String,
        pub secret_hash: String,
        pub created_at: i64,
        pub created_by: Option<String>,
        pub revoked_at: Option<i64>,
        pub last_contact_at: Option<i64>,
        pub version: Option<String>,
        /// The highest sequence number of its results stored.
        pub acked_seq: i64,
        /// Results waiting in its buffer when it last reported.
        pub buffered: i64,
        /// Results it dropped because its buffer was full or too old, in all.
        pub shed: i64,
        /// How old its oldest unsent result was when it last reported (ms).
        pub lag_ms: Option<i64>,
        /// Checks a second it ran, times 1000.
        pub rate_milli: i64,
        /// The running process that last used the token, and when.
        pub instance: Option<String>,
        pub instance_seen_at: Option<i64>,
        /// A heartbeat monitor the probe's contacts ping.
        pub heartbeat_monitor_id: Option<String>,
        /// It said, when it last asked for its assignments, that it answers confirmation
        /// requests (probes of earlier releases do not).
        pub answers_confirmations: bool,
    }
}

own_row! {
    /// A workspace's private location, once one of its probes has been heard from.
    pub struct LocationRow in location "locations" {
        key {
            pub workspace_id: String,
            pub name: String,
        }
        /// Since when all its probes are silent; None while one is heard from.
        pub offline_since: Option<i64>,
        pub changed_at: i64,
    }
}

/// A probe not heard from for this long is offline, and its location's other probes take
/// its monitors. Held requests last less than this, so a waiting probe stays online.
pub const PROBE_SILENCE_MS: i64 = 45_000;

/// What a probe reports with each request.
#[derive(Debug, Clone, Default)]
pub struct ProbeReport {
    pub version: String,
    pub buffered: i64,
    pub shed: i64,
    pub lag_ms: Option<i64>,
    pub rate_milli: i64,
}

/// A new probe token: `tpb_` and 40 letters and digits.
pub fn generate_token() -> String {
    format!(
        "{PROBE_TOKEN_PREFIX}{}",
        ids::random_base62(SECRET_RANDOM_CHARS)
    )
}

/// Whether `token` has the shape of a probe token.
pub fn is_well_formed_token(token: &str) -> bool {
    token.strip_prefix(PROBE_TOKEN_PREFIX).is_some_and(|rest| {
        rest.len() == SECRET_RANDOM_CHARS && rest.bytes().all(|b| b.is_ascii_alphanumeric())
    })
}

impl Store {
    /// Create a probe for `location`; the answer holds its token, shown this once.
    pub async fn create_probe(
        &self,
        workspace_id: &str,
        name: &str,
        location: &str,
        heartbeat_monitor_id: Option<String>,
        made_by: Option<String>,
        now: i64,
    ) -> Result<(ProbeRow, String), StoreError> {
        let token = generate_token();
        let model = probe::ActiveModel {
            id: Set(ids::new_id(ids::prefix::PROBE)),
            workspace_id: Set(workspace_id.to_string()),
            name: Set(name.to_string()),
            location: Set(location.to_string()),
            prefix: Set(token.chars().take(8).collect()),
            secret_hash: Set(super::keys::hash_secret(&token)),
            created_at: Set(now),
            created_by: Set(made_by),
            revoked_at: Set(None),
            last_contact_at: Set(None),
            version: Set(None),
            acked_seq: Set(0),
            buffered: Set(0),
            shed: Set(0),
            lag_ms: Set(None),
            rate_milli: Set(0),
            instance: Set(None),
            instance_seen_at: Set(None),
            heartbeat_monitor_id: Set(heartbeat_monitor_id),
            answers_confirmations: Set(false),
        };
        Ok((self.insert_one(model).await?.into(), token))
    }

    /// The workspace's probes that are not revoked, oldest first.
    pub async fn probes_of(&self, workspace_id: &str) -> Result<Vec<ProbeRow>, StoreError> {
        Ok(probe::Entity::find()
            .filter(probe::Column::WorkspaceId.eq(workspace_id))
            .filter(probe::Column::RevokedAt.is_null())
            .order_by_asc(probe::Column::CreatedAt)
            .order_by_asc(probe::Column::Id)
            .all(self.db())
            .await?
            .owned())
    }

    /// One of the workspace's probes, unless revoked.
    pub async fn probe_in(
        &self,
        workspace_id: &str,
        id: &str,
    ) -> Result<Option<ProbeRow>, StoreError> {
        Ok(probe::Entity::find_by_id(id.to_string())
            .filter(probe::Column::WorkspaceId.eq(workspace_id))
            .filter(probe::Column::RevokedAt.is_null())
            .one(self.db())
            .await?
            .owned())
    }

    /// The probe a token belongs to, unless it is revoked or the token is not one.
    pub async fn probe_by_token(&self, token: &str) -> Result<Option<ProbeRow>, StoreError> {
        if !is_well_formed_token(token) {
            return Ok(None);
        }
        let Some(found) = probe::Entity::find()
            .filter(probe::Column::SecretHash.eq(super::keys::hash_secret(token)))
            .filter(probe::Column::RevokedAt.is_null())
            .one(self.db())
            .await?
        else {
            return Ok(None);
        };
        // A probe's token reads secrets: it works while the member who made it is still
        // an admin of the workspace, as an admin key does.
        if let Some(maker) = &found.created_by {
            let member = super::entities::member::Entity::find_by_id(maker.clone())
                .filter(
                    super::entities::member::Column::WorkspaceId.eq(found.workspace_id.as_str()),
                )
                .one(self.db())
                .await?;
            let admin = member
                .is_some_and(|m| super::keys::Role::of_member(&m.role) >= super::keys::Role::Admin);
            if !admin {
                return Ok(None);
            }
        }
        Ok(Some(found.into()))
    }

    /// Revoke a probe: its token is refused from the next request on. False when there
    /// was no such live probe.
    pub async fn revoke_probe(
        &self,
        workspace_id: &str,
        id: &str,
        now: i64,
    ) -> Result<bool, StoreError> {
        let tx = self.begin_write().await?;
        let done = probe::Entity::update_many()
            .col_expr(probe::Column::RevokedAt, Expr::value(now))
            .filter(probe::Column::Id.eq(id))
            .filter(probe::Column::WorkspaceId.eq(workspace_id))
            .filter(probe::Column::RevokedAt.is_null())
            .exec(tx.conn())
            .await?
            .rows_affected;
        tx.commit_if(done > 0).await
    }

    /// Rename a live probe and set its heartbeat monitor; None when there is no such live
    /// probe.
    pub async fn update_probe(
        &self,
        workspace_id: &str,
        id: &str,
        name: &str,
        heartbeat_monitor_id: Option<&str>,
    ) -> Result<Option<ProbeRow>, StoreError> {
        let done = probe::Entity::update_many()
            .col_expr(probe::Column::Name, Expr::value(name))
            .col_expr(
                probe::Column::HeartbeatMonitorId,
                Expr::value(heartbeat_monitor_id.map(str::to_string)),
            )
            .filter(probe::Column::Id.eq(id))
            .filter(probe::Column::WorkspaceId.eq(workspace_id))
            .filter(probe::Column::RevokedAt.is_null())
            .exec(self.db())
            .await?
            .rows_affected;
        if done == 0 {
            return Ok(None);
        }
        self.probe_in(workspace_id, id).await
    }

    /// Give a probe a new token; the old one is refused from the next request on.
    pub async fn rotate_probe_token(
        &self,
        workspace_id: &str,
        id: &str,
    ) -> Result<Option<(ProbeRow, String)>, StoreError> {
        let token = generate_token();
        let tx = self.begin_write().await?;
        let done = probe::Entity::update_many()
            .col_expr(
                probe::Column::SecretHash,
                Expr::value(super::keys::hash_secret(&token)),
            )
            .col_expr(
                probe::Column::Prefix,
                Expr::value(token.chars().take(8).collect::<String>()),
            )
            .filter(probe::Column::Id.eq(id))
            .filter(probe::Column::WorkspaceId.eq(workspace_id))
            .filter(probe::Column::RevokedAt.is_null())
            .exec(tx.conn())
            .await?
            .rows_affected;
        if !tx.commit_if(done > 0).await? {
            return Ok(None);
        }
        Ok(self.probe_in(workspace_id, id).await?.map(|p| (p, token)))
    }

    /// Claim a probe's token for the running process `instance`: false while another
    /// process used it within `silence_ms` (two processes must not share one token).
    pub async fn claim_probe_instance(
        &self,
        id: &str,
        instance: &str,
        now: i64,
        silence_ms: i64,
    ) -> Result<bool, StoreError> {
        let done = probe::Entity::update_many()
            .col_expr(probe::Column::Instance, Expr::value(instance))
            .col_expr(probe::Column::InstanceSeenAt, Expr::value(now))
            .filter(probe::Column::Id.eq(id))
            .filter(
                sea_orm::Condition::any()
                    .add(probe::Column::Instance.is_null())
                    .add(probe::Column::Instance.eq(instance))
                    .add(probe::Column::InstanceSeenAt.lt(now - silence_ms)),
            )
            .exec(self.db())
            .await?
            .rows_affected;
        Ok(done > 0)
    }

    /// Note that a probe was heard from.
    pub async fn touch_probe_contact(
        &self,
        id: &str,
        now: i64,
        answers_confirmations: bool,
    ) -> Result<(), StoreError> {
        probe::Entity::update_many()
            .col_expr(probe::Column::LastContactAt, Expr::value(now))
            .col_expr(
                probe::Column::AnswersConfirmations,
                Expr::value(answers_confirmations),
            )
            .filter(probe::Column::Id.eq(id))
            .exec(self.db())
            .await?;
        Ok(())
    }

    /// Note that a probe was heard from, with what it reported.
    pub async fn touch_probe(
        &self,
        id: &str,
        now: i64,
        report: &ProbeReport,
    ) -> Result<(), StoreError> {
        let version: String = report.version.chars().take(64).collect();
        probe::Entity::update_many()
            .col_expr(probe::Column::LastContactAt, Expr::value(now))
            .col_expr(probe::Column::Version, Expr::value(version))
            .col_expr(probe::Column::Buffered, Expr::value(report.buffered))
            .col_expr(probe::Column::Shed, Expr::value(report.shed))
            .col_expr(probe::Column::LagMs, Expr::value(report.lag_ms))
            .col_expr(probe::Column::RateMilli, Expr::value(report.rate_milli))
            .filter(probe::Column::Id.eq(id))
            .exec(self.db())
            .await?;
        Ok(())
    }

    /// Ids of the live probes of a workspace's location heard from at `since` or later.
    pub async fn probes_heard_since(
        &self,
        workspace_id: &str,
        location: &str,
        since: i64,
    ) -> Result<Vec<String>, StoreError> {
        Ok(probe::Entity::find()
            .filter(probe::Column::WorkspaceId.eq(workspace_id))
            .filter(probe::Column::Location.eq(location))
            .filter(probe::Column::RevokedAt.is_null())
            .filter(probe::Column::LastContactAt.gte(since))
            .all(self.db())
            .await?
            .into_iter()
            .map(|p| p.id)
            .collect())
    }

    /// The workspace's monitors that check from `location` (they name it in their
    /// regions) and are not paused, in id order.
    pub async fn monitors_at_location(
        &self,
        workspace_id: &str,
        location: &str,
    ) -> Result<Vec<MonitorRow>, StoreError> {
        let quoted = serde_json::to_string(location).unwrap_or_default();
        let rows: Vec<MonitorRow> = super::monitors::monitor_live::Entity::find()
            .filter(super::monitors::monitor_live::Column::WorkspaceId.eq(workspace_id))
            .filter(super::monitors::monitor_live::Column::Regions.contains(&quoted))
            .order_by_asc(super::monitors::monitor_live::Column::Id)
            .all(self.db())
            .await?
            .owned();
        Ok(rows
            .into_iter()
            .filter(|m| m.status != MonitorState::Paused)
            .filter(|m| m.region_list().iter().any(|r| r == location))
            .collect())
    }
}

/// Locations' states.
impl Store {
    /// Every probe that is not revoked, in every workspace (for the locations' pass).
    pub async fn all_live_probes(&self) -> Result<Vec<ProbeRow>, StoreError> {
        Ok(probe::Entity::find()
            .filter(probe::Column::RevokedAt.is_null())
            .order_by_asc(probe::Column::Id)
            .all(self.db())
            .await?
            .owned())
    }

    /// Every location's stored state.
    pub async fn all_locations(&self) -> Result<Vec<LocationRow>, StoreError> {
        Ok(location::Entity::find()
            .order_by_asc(location::Column::WorkspaceId)
            .order_by_asc(location::Column::Name)
            .all(self.db())
            .await?
            .owned())
    }

    /// A workspace's locations' stored states.
    pub async fn locations_of(&self, workspace_id: &str) -> Result<Vec<LocationRow>, StoreError> {
        Ok(location::Entity::find()
            .filter(location::Column::WorkspaceId.eq(workspace_id))
            .order_by_asc(location::Column::Name)
            .all(self.db())
            .await?
            .owned())
    }

    /// Note a location online for the first time (nothing is told: it never was offline).
    pub async fn location_seen(
        &self,
        workspace_id: &str,
        name: &str,
        now: i64,
    ) -> Result<(), StoreError> {
        let row = location::ActiveModel {
            workspace_id: Set(workspace_id.to_string()),
            name: Set(name.to_string()),
            offline_since: Set(None),
            changed_at: Set(now),
        };
        location::Entity::insert(row)
            .on_conflict(
                sea_orm::sea_query::OnConflict::columns([
                    location::Column::WorkspaceId,
                    location::Column::Name,
                ])
                .do_nothing()
                .to_owned(),
            )
            .exec_without_returning(self.db())
            .await?;
        Ok(())
    }

    /// Forget a location whose probes were all revoked (taken down on purpose: nobody is
    /// told).
    pub async fn forget_location(&self, workspace_id: &str, name: &str) -> Result<(), StoreError> {
        location::Entity::delete_many()
            .filter(location::Column::WorkspaceId.eq(workspace_id))
            .filter(location::Column::Name.eq(name))
            .exec(self.db())
            .await?;
        Ok(())
    }
}

impl Tx {
    /// Forget an offline location whose probes were all revoked. False when it is not
    /// offline any more (another node moved it).
    pub async fn forget_offline_location(
        &self,
        workspace_id: &str,
        name: &str,
    ) -> Result<bool, StoreError> {
        Ok(location::Entity::delete_many()
            .filter(location::Column::WorkspaceId.eq(workspace_id))
            .filter(location::Column::Name.eq(name))
            .filter(location::Column::OfflineSince.is_not_null())
            .exec(self.conn())
            .await?
            .rows_affected
            == 1)
    }

    /// Move a location from online to offline since `since` (`Some`), or back online
    /// (`None`). False when it is not in the state it was read in (another node or an
    /// earlier pass moved it): the caller then tells nobody.
    pub async fn move_location(
        &self,
        workspace_id: &str,
        name: &str,
        since: Option<i64>,
        now: i64,
    ) -> Result<bool, StoreError> {
        let mut update = location::Entity::update_many()
            .col_expr(location::Column::OfflineSince, Expr::value(since))
            .col_expr(location::Column::ChangedAt, Expr::value(now))
            .filter(location::Column::WorkspaceId.eq(workspace_id))
            .filter(location::Column::Name.eq(name));
        update = if since.is_some() {
            update.filter(location::Column::OfflineSince.is_null())
        } else {
            update.filter(location::Column::OfflineSince.is_not_null())
        };
        Ok(update.exec(self.conn()).await?.rows_affected == 1)
    }

    /// The highest stored sequence number of each of these probes, their rows locked
    /// until the transaction ends on PostgreSQL (two nodes storing one probe's resent
    /// batch take turns, and the second sees the first's mark). Taken before the
    /// monitors' locks, in id order.
    pub async fn acked_seqs(
        &self,
        mut ids: Vec<String>,
    ) -> Result<HashMap<String, i64>, StoreError> {
        ids.sort_unstable();
        let mut query = probe::Entity::find()
            .filter(probe::Column::Id.is_in(ids))
            .order_by_asc(probe::Column::Id);
        if self.conn().get_database_backend() == sea_orm::DbBackend::Postgres {
            query = query.lock_exclusive();
        }
        Ok(query
            .all(self.conn())
            .await?
            .into_iter()
            .map(|p| (p.id, p.acked_seq))
            .collect())
    }

    /// Move a probe's highest stored sequence number on to `seq`.
    pub async fn set_acked_seq(&self, id: &str, seq: i64) -> Result<(), StoreError> {
        probe::Entity::update_many()
            .col_expr(probe::Column::AckedSeq, Expr::value(seq))
            .filter(probe::Column::Id.eq(id))
            .filter(probe::Column::AckedSeq.lt(seq))
            .exec(self.conn())
            .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_have_their_own_shape() {
        let t = generate_token();
        assert!(is_well_formed_token(&t), "{t}");
        assert!(!crate::ids::is_well_formed_secret(&t));
        assert!(!is_well_formed_token(&crate::store::keys::generate_secret()));
        assert!(!is_well_formed_token("tpb_short"));
    }
}
