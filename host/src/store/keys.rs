//! Workspaces and API keys: creation, the first-start bootstrap and authentication.

use super::Owned;
use super::entities::member;
use super::{Store, StoreError, Tx};
use crate::clock::Millis;
use crate::ids::{self, SECRET_PREFIX, SECRET_RANDOM_CHARS, is_well_formed_secret, prefix};
use crate::plans::{Counted, Plan};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DbBackend, EntityTrait, PaginatorTrait,
    QueryFilter, QueryOrder, QuerySelect,
};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

/// How long an authenticated key is trusted without asking the database again.
const KEY_CACHE_TTL: Duration = Duration::from_secs(1);
/// Keys remembered at most (the cache starts over past this).
const KEY_CACHE_MAX: usize = 10_000;

/// Keys authenticated recently, by their secret's hash. A client making many requests
/// with one key costs one key lookup a second instead of one per request. Revoking a key
/// forgets every entry at once, so the key gets 401 on its next request. Only live keys
/// are remembered: an unknown secret always asks the database.
///
/// On SQLite one server owns the database and hears of every revocation itself. On
/// PostgreSQL other nodes may revoke a key: a revocation sends a notification
/// (`NOTIFY tocsin_api_keys`) in its transaction, every node listens for it
/// ([`Store::listen_for_key_revocations`]), and the cache is used only while that
/// listener is connected. A node that loses the listener's connection forgets every key
/// and asks the database on every request until it is listening again.
pub(super) struct KeyCache {
    enabled: AtomicBool,
    entries: Mutex<KeyEntries>,
}

/// The remembered keys, and how many times they were all forgotten: a lookup that
/// started before a revocation must not put back what the revocation forgot.
#[derive(Default)]
struct KeyEntries {
    generation: u64,
    keys: HashMap<String, (Principal, Instant)>,
}

impl KeyCache {
    pub(super) fn new(enabled: bool) -> KeyCache {
        KeyCache {
            enabled: AtomicBool::new(enabled),
            entries: Mutex::default(),
        }
    }

    fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Acquire)
    }

    /// Turn the cache on or off; either way, what it remembered is forgotten.
    fn set_enabled(&self, on: bool) {
        self.forget_all();
        self.enabled.store(on, Ordering::Release);
    }

    /// Taken before a lookup and handed to [`KeyCache::put`] after it (no lock taken
    /// when the cache is off).
    fn generation(&self) -> u64 {
        if !self.enabled() {
            return 0;
        }
        self.entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .generation
    }

    fn get(&self, hash: &str) -> Option<Principal> {
        if !self.enabled() {
            return None;
        }
        let entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        entries
            .keys
            .get(hash)
            .filter(|(_, at)| at.elapsed() < KEY_CACHE_TTL)
            .map(|(p, _)| p.clone())
    }

    /// Remember a key looked up at `generation`, unless keys were forgotten since.
    fn put(&self, hash: String, principal: Principal, generation: u64) {
        if !self.enabled() {
            return;
        }
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if entries.generation != generation {
            return;
        }
        if entries.keys.len() >= KEY_CACHE_MAX {
            entries.keys.clear();
        }
        entries.keys.insert(hash, (principal, Instant::now()));
    }

    fn forget_all(&self) {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        entries.generation += 1;
        entries.keys.clear();
    }
}

/// What an API key may do, from most to least. A person's member role maps onto the
/// same scale ([`Role::of_member`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    /// GET only.
    Read,
    /// Everything but API keys and member changes.
    Write,
    /// Everything but what only owners do (grant or take the owner role, the two-factor
    /// requirement, owner keys).
    Admin,
    /// Everything. Only an owner (a person, or an owner key) makes an owner key.
    Owner,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Owner => "owner",
            Role::Admin => "admin",
            Role::Write => "write",
            Role::Read => "read",
        }
    }

    pub fn parse(text: &str) -> Option<Role> {
        match text {
            "owner" => Some(Role::Owner),
            "admin" => Some(Role::Admin),
            "write" => Some(Role::Write),
            "read" => Some(Role::Read),
            _ => None,
        }
    }

    /// The rights of a member role (owner, admin, member, viewer) as a key role.
    pub fn of_member(member_role: &str) -> Role {
        match member_role {
            "owner" => Role::Owner,
            "admin" => Role::Admin,
            "member" => Role::Write,
            _ => Role::Read,
        }
    }

    /// Whether this role has at least admin rights (keys, members, audit log).
    pub fn is_admin(self) -> bool {
        self >= Role::Admin
    }
}

/// An authenticated caller: an API key, or a person signed in with a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The key's id, or the person's account id (rate limits count per person).
    pub key_id: String,
    /// The key's name, or the person's e-mail address.
    pub key_name: String,
    pub workspace_id: String,
    pub role: Role,
    /// Set when a person signed in (not an API key).
    pub session: Option<SessionPrincipal>,
    /// For a key: the member who made it (none for the operator's keys).
    pub made_by: Option<String>,
}

/// The signed-in side of a [`Principal`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionPrincipal {
    pub session_id: String,
    pub user_id: String,
    /// The person's membership in the selected workspace.
    pub member_id: String,
    /// The member role in the selected workspace: owner, admin, member or viewer.
    pub member_role: String,
}

impl Principal {
    /// Who acts, for the audit log.
    pub fn actor(&self, ip: Option<String>) -> super::audit::Actor {
        match &self.session {
            Some(s) => super::audit::Actor {
                kind: "user",
                id: s.user_id.clone(),
                name: self.key_name.clone(),
                ip,
            },
            None => super::audit::Actor {
                kind: "key",
                id: self.key_id.clone(),
                name: self.key_name.clone(),
                ip,
            },
        }
    }

    /// Whether this is a person with the owner role, or an owner key (one the first
    /// start made, or an owner made as `owner`; see [`Role::Owner`]).
    pub fn is_owner(&self) -> bool {
        match &self.session {
            Some(s) => s.member_role == "owner",
            None => self.role == Role::Owner,
        }
    }

    /// The member a key made by this caller answers to: the signed-in person's
    /// membership, or the member the calling key answers to (none for operator keys).
    pub fn maker(&self) -> Option<String> {
        match &self.session {
            Some(s) => Some(s.member_id.clone()),
            None => self.made_by.clone(),
        }
    }
}

/// A new random key secret.
pub fn generate_secret() -> String {
    format!("{SECRET_PREFIX}{}", ids::random_base62(SECRET_RANDOM_CHARS))
}

/// The stored form of a secret: lowercase hex SHA-256.
pub fn hash_secret(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// A new workspace webhook signing secret.
pub fn generate_webhook_secret() -> String {
    format!("whsec_{}", ids::random_base62(32))
}

// Workspaces: tenants of the server.
own_row! {
    /// A workspace as stored.
    pub struct WorkspaceRow in workspace "workspaces" {
        key {
            pub id: String,
        }
        pub name: String,
        pub plan: String,
        pub webhook_secret: String,
        pub created_at: i64,
        pub updated_at: i64,
        /// Members must have two-factor authentication to use the workspace.
        pub require_two_factor: bool,
        /// IANA name (none: UTC): when "until 09:00" is for the one-click snooze.
        pub time_zone: Option<String>,
    }
}
// API keys. Only a SHA-256 hash of the secret is stored.
own_row! {
    /// An API key as stored (its secret only as a hash).
    pub struct ApiKeyRow in api_key "api_keys" {
        key {
            pub id: String,
        }
        pub workspace_id: String,
        pub name: String,
        pub role: String,
        pub prefix: String,
        pub secret_hash: String,
        pub created_at: i64,
        pub last_used_at: Option<i64>,
        pub revoked_at: Option<i64>,
        /// The member who made the key (none: the operator's, from the first start or
        /// the command line). The key never has more rights than that member has now.
        pub created_by: Option<String>,
    }
}

/// What the first start created.
#[derive(Debug, Clone)]
pub struct Bootstrap {
    pub workspace_id: String,
    pub key_secret: String,
}

impl Store {
    /// Create a workspace.
    pub async fn create_workspace(
        &self,
        name: &str,
        plan: Plan,
        now: Millis,
    ) -> Result<WorkspaceRow, StoreError> {
        let model = workspace::ActiveModel {
            id: Set(ids::new_id(prefix::WORKSPACE)),
            name: Set(name.to_string()),
            plan: Set(plan.as_str().to_string()),
            webhook_secret: Set(generate_webhook_secret()),
            require_two_factor: Set(false),
            time_zone: Set(None),
            created_at: Set(now),
            updated_at: Set(now),
        };
        Ok(self.insert_one(model).await?.into())
    }

    /// Rename a workspace, set its two-factor requirement and its time zone.
    pub async fn update_workspace(
        &self,
        id: &str,
        name: &str,
        require_two_factor: bool,
        time_zone: Option<&str>,
        now: Millis,
    ) -> Result<(), StoreError> {
        let tx = self.begin_write().await?;
        workspace::Entity::update_many()
            .col_expr(workspace::Column::Name, Expr::value(name))
            .col_expr(
                workspace::Column::RequireTwoFactor,
                Expr::value(require_two_factor),
            )
            .col_expr(workspace::Column::TimeZone, Expr::value(time_zone))
            .col_expr(workspace::Column::UpdatedAt, Expr::value(now))
            .filter(workspace::Column::Id.eq(id))
            .exec(tx.conn())
            .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Set a workspace's plan. Returns whether it exists.
    pub async fn set_workspace_plan(
        &self,
        id: &str,
        plan: Plan,
        now: Millis,
    ) -> Result<bool, StoreError> {
        let done = workspace::Entity::update_many()
            .col_expr(workspace::Column::Plan, Expr::value(plan.as_str()))
            .col_expr(workspace::Column::UpdatedAt, Expr::value(now))
            .filter(workspace::Column::Id.eq(id))
            .exec(self.db())
            .await?;
        Ok(done.rows_affected > 0)
    }

    /// Fetch a workspace.
    pub async fn workspace(&self, id: &str) -> Result<Option<WorkspaceRow>, StoreError> {
        Ok(workspace::Entity::find_by_id(id.to_string())
            .one(self.db())
            .await?
            .owned())
    }

    /// Create an API key; `secret` is generated when not given. Returns the key and its secret.
    pub async fn create_api_key(
        &self,
        workspace_id: &str,
        name: &str,
        role: Role,
        secret: Option<String>,
        now: Millis,
    ) -> Result<(ApiKeyRow, String), StoreError> {
        self.create_api_key_with_id(
            ids::new_id(prefix::API_KEY),
            workspace_id,
            name,
            role,
            secret,
            None,
            now,
        )
        .await
    }

    /// [`Store::create_api_key`] with the id chosen by the caller (who noted it for the
    /// audit log), made by member `made_by` (none: the operator's key).
    #[allow(clippy::too_many_arguments)]
    pub async fn create_api_key_with_id(
        &self,
        id: String,
        workspace_id: &str,
        name: &str,
        role: Role,
        secret: Option<String>,
        made_by: Option<String>,
        now: Millis,
    ) -> Result<(ApiKeyRow, String), StoreError> {
        let secret = secret.unwrap_or_else(generate_secret);
        if !is_well_formed_secret(&secret) {
            return Err(StoreError::Invalid(
                "an API key secret is `tcs_` followed by 40 letters and digits".into(),
            ));
        }
        let model = api_key::ActiveModel {
            id: Set(id),
            workspace_id: Set(workspace_id.to_string()),
            name: Set(name.to_string()),
            role: Set(role.as_str().to_string()),
            prefix: Set(secret.chars().take(8).collect()),
            secret_hash: Set(hash_secret(&secret)),
            created_at: Set(now),
            last_used_at: Set(None),
            revoked_at: Set(None),
            created_by: Set(made_by),
        };
        Ok((self.insert_one(model).await?.into(), secret))
    }

    /// On an empty database, create workspace "Default" and one admin key.
    /// Returns `None` when a workspace already exists.
    pub async fn bootstrap(
        &self,
        plan: Plan,
        secret: Option<String>,
        now: Millis,
    ) -> Result<Option<Bootstrap>, StoreError> {
        if workspace::Entity::find().count(self.db()).await? > 0 {
            return Ok(None);
        }
        let ws = self.create_workspace("Default", plan, now).await?;
        let (_, key_secret) = self
            .create_api_key(&ws.id, "bootstrap admin", Role::Owner, secret, now)
            .await?;
        Ok(Some(Bootstrap {
            workspace_id: ws.id,
            key_secret,
        }))
    }

    /// The live keys of a workspace, newest first.
    pub async fn list_api_keys(
        &self,
        workspace_id: &str,
        page: super::Page,
    ) -> Result<(Vec<ApiKeyRow>, u64), StoreError> {
        let select = api_key::Entity::find()
            .filter(api_key::Column::WorkspaceId.eq(workspace_id))
            .filter(api_key::Column::RevokedAt.is_null());
        let total = select.clone().count(self.db()).await?;
        let rows = select
            .order_by_desc(api_key::Column::CreatedAt)
            .order_by_desc(api_key::Column::Id)
            .offset(page.offset())
            .limit(page.limit)
            .all(self.db())
            .await?;
        Ok((rows.owned(), total))
    }

    /// A live key of the workspace, by id.
    pub async fn live_api_key(
        &self,
        workspace_id: &str,
        id: &str,
    ) -> Result<Option<ApiKeyRow>, StoreError> {
        Ok(api_key::Entity::find_by_id(id.to_string())
            .filter(api_key::Column::WorkspaceId.eq(workspace_id))
            .filter(api_key::Column::RevokedAt.is_null())
            .one(self.db())
            .await?
            .owned())
    }

    /// Revoke a live key of the workspace. Returns whether there was one.
    pub async fn revoke_api_key(
        &self,
        workspace_id: &str,
        id: &str,
        now: Millis,
    ) -> Result<bool, StoreError> {
        let tx = self.begin_write().await?;
        let done = api_key::Entity::update_many()
            .col_expr(api_key::Column::RevokedAt, Expr::value(now))
            .filter(api_key::Column::Id.eq(id))
            .filter(api_key::Column::WorkspaceId.eq(workspace_id))
            .filter(api_key::Column::RevokedAt.is_null())
            .exec(tx.conn())
            .await?;
        if self.backend() == DbBackend::Postgres {
            // Delivered to every node's listener when the revocation commits.
            tx.conn()
                .execute_unprepared(&format!("NOTIFY {REVOCATIONS}"))
                .await?;
        }
        let revoked = tx.commit_if(done.rows_affected > 0).await?;
        self.keys.forget_all();
        Ok(revoked)
    }

    /// Record when keys were last used (one statement per key, for a batch of uses).
    pub async fn touch_api_keys(&self, uses: &[(String, Millis)]) -> Result<(), StoreError> {
        for (id, at) in uses {
            api_key::Entity::update_many()
                .col_expr(api_key::Column::LastUsedAt, Expr::value(*at))
                .filter(api_key::Column::Id.eq(id.as_str()))
                .exec(self.db())
                .await?;
        }
        Ok(())
    }

    /// Find the live key behind a secret.
    pub async fn authenticate(&self, secret: &str) -> Result<Option<Principal>, StoreError> {
        if !is_well_formed_secret(secret) {
            return Ok(None);
        }
        let hash = hash_secret(secret);
        if let Some(principal) = self.keys.get(&hash) {
            return Ok(Some(principal));
        }
        let generation = self.keys.generation();
        let key = api_key::Entity::find()
            .filter(api_key::Column::SecretHash.eq(hash.as_str()))
            .filter(api_key::Column::RevokedAt.is_null())
            .one(self.db())
            .await?;
        let Some(key) = key else { return Ok(None) };
        let mut role = Role::parse(&key.role).ok_or_else(|| {
            StoreError::Corrupt(format!("key {} has unknown role {}", key.id, key.role))
        })?;
        if let Some(maker) = &key.created_by {
            // A key never has more rights than the member who made it has now, and
            // none once that member has left the workspace.
            let member = member::Entity::find_by_id(maker.clone())
                .filter(member::Column::WorkspaceId.eq(key.workspace_id.as_str()))
                .one(self.db())
                .await?;
            let Some(member) = member else {
                return Ok(None);
            };
            role = role.min(Role::of_member(&member.role));
        }
        let principal = Principal {
            key_id: key.id,
            key_name: key.name,
            workspace_id: key.workspace_id,
            role,
            session: None,
            made_by: key.created_by,
        };
        self.keys.put(hash, principal.clone(), generation);
        Ok(Some(principal))
    }

    /// Replace a workspace's webhook signing secret.
    pub async fn rotate_webhook_secret(
        &self,
        workspace_id: &str,
        now: i64,
    ) -> Result<Option<WorkspaceRow>, StoreError> {
        let Some(ws) = self.workspace(workspace_id).await? else {
            return Ok(None);
        };
        let mut active: workspace::ActiveModel = ws.into();
        active.webhook_secret = Set(generate_webhook_secret());
        active.updated_at = Set(now);
        Ok(Some(self.update_one(active).await?.into()))
    }
}

/// The channel PostgreSQL announces key revocations on.
const REVOCATIONS: &str = "tocsin_api_keys";
/// How long the revocation listener waits before trying to connect again.
const LISTEN_RETRY: Duration = Duration::from_secs(2);
/// How often the revocation listener looks whether its store is still there.
const LISTEN_LIVENESS: Duration = Duration::from_secs(5);

impl Store {
    /// On PostgreSQL, start listening for key revocations made by any node, and use the
    /// key cache while listening (see [`KeyCache`]). The task ends once every clone of
    /// the store is gone.
    pub(super) fn listen_for_key_revocations(&self, url: &str) {
        if self.backend() != DbBackend::Postgres {
            return;
        }
        tokio::spawn(listen_for_revocations(
            url.to_string(),
            Arc::downgrade(&self.keys),
        ));
    }
}

/// What the key cache is doing, for tests and diagnostics.
impl Store {
    /// Whether authenticated keys are remembered now (on PostgreSQL: while the revocation
    /// listener is connected).
    pub fn key_cache_on(&self) -> bool {
        self.keys.enabled()
    }

    /// How many times the key cache forgot everything (a revocation, here or on another
    /// node, or the listener's connection coming and going).
    pub fn key_cache_forgotten(&self) -> u64 {
        self.keys
            .entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .generation
    }
}

async fn listen_for_revocations(url: String, cache: Weak<KeyCache>) {
    let mut listener: Option<sqlx_postgres::PgListener> = None;
    let mut warned = false;
    loop {
        let Some(keys) = cache.upgrade() else { return };
        let Some(active) = listener.as_mut() else {
            let connected = match listener_on(&url).await {
                Ok(mut l) => l.listen(REVOCATIONS).await.map(|()| l),
                Err(e) => Err(e),
            };
            match connected {
                Ok(l) => {
                    listener = Some(l);
                    keys.set_enabled(true);
                    if warned {
                        tracing::info!("listening for API key revocations again; key cache on");
                        warned = false;
                    }
                }
                Err(e) => {
                    keys.set_enabled(false);
                    if !warned {
                        tracing::warn!(error = %e, "cannot listen for API key revocations; every request looks its key up until this recovers");
                        warned = true;
                    }
                    drop(keys);
                    tokio::time::sleep(LISTEN_RETRY).await;
                }
            }
            continue;
        };
        match tokio::time::timeout(LISTEN_LIVENESS, active.try_recv()).await {
            // Nothing heard: look again whether the store is still there.
            Err(_) => {}
            Ok(Ok(Some(_))) => keys.forget_all(),
            // The connection was lost (`None`) or failed: off until listening again, since
            // what was announced meanwhile is unknown.
            Ok(lost) => {
                keys.set_enabled(false);
                let error = lost
                    .err()
                    .map_or("connection lost".to_string(), |e| e.to_string());
                tracing::warn!(%error, "lost the API key revocation listener; every request looks its key up until it is back");
                warned = true;
                listener = None;
                drop(keys);
                tokio::time::sleep(LISTEN_RETRY).await;
            }
        }
    }
}

/// A listener on a connection of its own (not one of the store's pool), that reports a
/// lost connection at once instead of making it again itself.
pub(super) async fn listener_on(url: &str) -> Result<sqlx_postgres::PgListener, sqlx_core::Error> {
    let pool = sqlx_postgres::PgPoolOptions::new()
        .max_connections(1)
        .acquire_timeout(LISTEN_RETRY * 2)
        .max_lifetime(None)
        .idle_timeout(None)
        .connect(url)
        .await?;
    let mut listener = sqlx_postgres::PgListener::connect_with(&pool).await?;
    listener.eager_reconnect(false);
    Ok(listener)
}

/// Workspace reads inside a larger change.
impl Tx {
    /// Names of some workspaces, by id.
    pub async fn workspace_names(
        &self,
        ids: Vec<String>,
    ) -> Result<std::collections::HashMap<String, String>, StoreError> {
        Ok(workspace::Entity::find()
            .filter(workspace::Column::Id.is_in(ids))
            .all(self.conn())
            .await?
            .into_iter()
            .map(|w| (w.id, w.name))
            .collect())
    }

    /// A workspace's name ("" when it is gone).
    pub async fn workspace_name(&self, id: &str) -> Result<String, StoreError> {
        Ok(workspace::Entity::find_by_id(id.to_string())
            .one(self.conn())
            .await?
            .map(|w| w.name)
            .unwrap_or_default())
    }
}

/// What a workspace owns, counted for its plan's quota.
impl Store {
    pub async fn count_owned(&self, workspace_id: &str, what: Counted) -> Result<u64, StoreError> {
        use super::entities::{channel, member, monitor, status_page};
        let db = self.db();
        Ok(match what {
            Counted::Monitors => {
                monitor::Entity::find()
                    .filter(monitor::Column::WorkspaceId.eq(workspace_id))
                    .count(db)
                    .await?
            }
            Counted::Channels => {
                channel::Entity::find()
                    .filter(channel::Column::WorkspaceId.eq(workspace_id))
                    .count(db)
                    .await?
            }
            Counted::StatusPages => {
                status_page::Entity::find()
                    .filter(status_page::Column::WorkspaceId.eq(workspace_id))
                    .count(db)
                    .await?
            }
            Counted::Members => {
                member::Entity::find()
                    .filter(member::Column::WorkspaceId.eq(workspace_id))
                    .count(db)
                    .await?
            }
            Counted::ApiKeys => {
                api_key::Entity::find()
                    .filter(api_key::Column::WorkspaceId.eq(workspace_id))
                    .filter(api_key::Column::RevokedAt.is_null())
                    .count(db)
                    .await?
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_have_the_documented_shape() {
        let s = generate_secret();
        assert!(s.starts_with("tcs_"));
        assert_eq!(s.len(), 44);
        assert!(is_well_formed_secret(&s));
        assert!(!is_well_formed_secret("tcs_short"));
        assert!(!is_well_formed_secret(&s.replacen("tcs_", "tcx_", 1)));
        assert_eq!(hash_secret("a").len(), 64);
        assert!(generate_webhook_secret().starts_with("whsec_"));
    }

    #[test]
    fn roles_round_trip() {
        for r in [Role::Owner, Role::Admin, Role::Write, Role::Read] {
            assert_eq!(Role::parse(r.as_str()), Some(r));
        }
        assert_eq!(Role::parse("member"), None);
        assert!(Role::Owner > Role::Admin && Role::Admin > Role::Write && Role::Write > Role::Read);
        assert_eq!(Role::of_member("owner"), Role::Owner);
        assert_eq!(Role::of_member("admin"), Role::Admin);
        assert_eq!(Role::of_member("member"), Role::Write);
        assert_eq!(Role::of_member("viewer"), Role::Read);
    }

    #[test]
    fn a_lookup_from_before_a_revocation_is_not_remembered() {
        let key = Principal {
            key_id: "key_1".into(),
            key_name: "ci".into(),
            workspace_id: "ws_1".into(),
            role: Role::Write,
            session: None,
            made_by: None,
        };
        let cache = KeyCache::new(true);
        let before = cache.generation();
        cache.forget_all();
        cache.put("h".into(), key.clone(), before);
        assert_eq!(cache.get("h"), None, "put back after the revocation");
        cache.put("h".into(), key.clone(), cache.generation());
        assert_eq!(cache.get("h"), Some(key.clone()));
        let off = KeyCache::new(false);
        off.put("h".into(), key, off.generation());
        assert_eq!(off.get("h"), None, "no cache on PostgreSQL");
    }
}
