//! Persistence: sea-orm over SQLite (the embedded default) or PostgreSQL, with the same
//! migrations and queries on both. Everything the server keeps goes through here.

/// A table and the store's own row type from one field list: the sea-orm entity
/// (`$entity`, for the store's queries; the fields under `key` are the primary key) and
/// `$name`, with the same fields, converted both ways at the store's edge (its attributes, such as
/// documentation and derives, apply to both). What the store
/// hands out never is a sea-orm type, and a column is added in one place.
macro_rules! own_row {
    (
        $(#[$meta:meta])*
        pub struct $name:ident in $entity:ident $table:literal {
            key {
                $($(#[$key_meta:meta])* pub $key:ident: $key_ty:ty,)+
            }
            $($(#[$field_meta:meta])* pub $field:ident: $ty:ty,)*
        }
    ) => {
        pub(super) mod $entity {
            use sea_orm::entity::prelude::*;

            $(#[$meta])*
            #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
            #[sea_orm(table_name = $table)]
            pub struct Model {
                $($(#[$key_meta])* #[sea_orm(primary_key, auto_increment = false)] pub $key: $key_ty,)+
                $($(#[$field_meta])* pub $field: $ty,)*
            }

            #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
            pub enum Relation {}

            impl ActiveModelBehavior for ActiveModel {}
        }

        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq, Eq)]
        pub struct $name {
            $($(#[$key_meta])* pub $key: $key_ty,)+
            $($(#[$field_meta])* pub $field: $ty,)*
        }

        impl From<$entity::Model> for $name {
            fn from(m: $entity::Model) -> Self {
                $name { $($key: m.$key,)+ $($field: m.$field,)* }
            }
        }

        impl From<$name> for $entity::Model {
            fn from(r: $name) -> Self {
                Self { $($key: r.$key,)+ $($field: r.$field,)* }
            }
        }

        impl From<$name> for $entity::ActiveModel {
            fn from(r: $name) -> Self {
                sea_orm::IntoActiveModel::into_active_model($entity::Model::from(r))
            }
        }

        impl sea_orm::IntoActiveModel<$entity::ActiveModel> for $name {
            fn into_active_model(self) -> $entity::ActiveModel {
                self.into()
            }
        }
    };
}

/// What sea-orm read, as the store's own row types (see [`own_row!`]).
trait Owned<T> {
    fn owned(self) -> T;
}

impl<M, R: From<M>> Owned<Option<R>> for Option<M> {
    fn owned(self) -> Option<R> {
        self.map(R::from)
    }
}

impl<M, R: From<M>> Owned<Vec<R>> for Vec<M> {
    fn owned(self) -> Vec<R> {
        self.into_iter().map(R::from).collect()
    }
}

pub mod accounts;
pub mod alerting;
pub mod audit;
pub mod backup;
pub mod badges;
pub mod checks;
pub mod cluster;
pub mod confirmations;
pub mod deliveries;
mod entities;
pub mod flaps;
pub mod groups;
pub mod heartbeats;
pub mod holds;
pub mod incidents;
pub mod keys;
pub mod links;
pub mod live;
pub mod maintenance;
pub mod managed;
pub mod members;
pub mod metrics;
pub mod monitors;
pub mod notices;
mod pages;
pub mod probes;
pub mod reports;
pub mod retention;
pub mod states;
pub mod status_pages;
pub mod subscriptions;

pub use alerting::{ChannelRow, PolicyRow};
pub use checks::CheckRow;
pub use deliveries::{AttemptRow, DeliveryRow, Redelivery};
pub use incidents::{IncidentEventRow, IncidentRow};
pub use keys::{ApiKeyRow, WorkspaceRow};
pub use monitors::{Health, MonitorRow, MonitorStamp};
pub use states::{DeliveryState, IncidentState, MonitorState, State};
pub use status_pages::DailyUptimeRow;

use sea_orm::{
    ConnectOptions, ConnectionTrait, Database, DatabaseConnection, DatabaseTransaction, DbBackend,
    DbErr, SqliteTransactionMode, TransactionOptions, TransactionTrait,
};
use std::sync::atomic::Ordering;
use std::time::Duration;
use tocsin_migrations::{Migrator, MigratorTrait};
use tokio::sync::broadcast;

/// One row of a raw multi-row `VALUES` list: a bind parameter per entry of `types`,
/// numbered on from `first` (the parameters bound before it), each cast to its type where
/// one is given: `$n` on PostgreSQL, `?` on SQLite.
fn values_row(backend: DbBackend, first: usize, types: &[Option<&str>]) -> String {
    let mut row = String::from("(");
    for (k, ty) in types.iter().enumerate() {
        if k > 0 {
            row.push_str(", ");
        }
        let p = param(backend, first + k);
        match ty {
            Some(ty) => row.push_str(&format!("CAST({p} AS {ty})")),
            None => row.push_str(&p),
        }
    }
    row.push(')');
    row
}

/// The placeholder of a raw statement's bind parameter with `before` parameters bound
/// ahead of it: `$n` on PostgreSQL, `?` on SQLite.
fn param(backend: DbBackend, before: usize) -> String {
    match backend {
        DbBackend::Postgres => format!("${}", before + 1),
        _ => "?".to_string(),
    }
}

/// The advisory lock key start-up work runs under on PostgreSQL ("tocsin" in ASCII).
const STARTUP_LOCK: i64 = 0x746f_6373_696e;

/// What the database's driver reported; its type stays inside the store.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct DbFailure(DbErr);

/// A failure of the database.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Db(DbFailure),
    #[error("cannot create the data directory {path}: {source}")]
    DataDir {
        path: String,
        source: std::io::Error,
    },
    #[error("stored data is inconsistent: {0}")]
    Corrupt(String),
    #[error("invalid input: {0}")]
    Invalid(String),
}

impl From<DbErr> for StoreError {
    fn from(e: DbErr) -> Self {
        StoreError::Db(DbFailure(e))
    }
}

impl StoreError {
    /// The statement broke a unique constraint (the name or key is taken).
    pub fn is_unique_violation(&self) -> bool {
        matches!(
            self,
            StoreError::Db(DbFailure(e)) if matches!(e.sql_err(), Some(sea_orm::SqlErr::UniqueConstraintViolation(_)))
        )
    }

    /// The database error inside (other kinds cannot come from a transaction).
    fn into_db(self) -> DbErr {
        match self {
            StoreError::Db(DbFailure(e)) => e,
            other => DbErr::Custom(other.to_string()),
        }
    }

    /// The database cannot be used right now (unreachable, shutting down, out of
    /// connections, or out of disk space) as opposed to refusing this statement: the
    /// caller may try again later, and an API answers 503.
    pub fn is_unavailable(&self) -> bool {
        let StoreError::Db(DbFailure(e)) = self else {
            return false;
        };
        let runtime = match e {
            DbErr::ConnectionAcquire(_) | DbErr::Conn(_) => return true,
            DbErr::Exec(r) | DbErr::Query(r) => r,
            _ => return false,
        };
        let sea_orm::RuntimeErr::SqlxError(sqlx) = runtime else {
            return false;
        };
        use sea_orm::sqlx::Error as S;
        match sqlx.as_ref() {
            S::Io(_) | S::PoolTimedOut | S::PoolClosed | S::WorkerCrashed | S::Tls(_) => true,
            S::Database(db) => {
                let code = db.code().unwrap_or_default();
                if db
                    .try_downcast_ref::<sea_orm::sqlx::sqlite::SqliteError>()
                    .is_some()
                {
                    // SQLite's numeric codes, extended ones included: SQLITE_BUSY (5) after
                    // the busy timeout, SQLITE_IOERR (10), SQLITE_FULL (13).
                    code.parse::<u32>()
                        .is_ok_and(|c| matches!(c & 0xff, 5 | 10 | 13))
                } else {
                    // PostgreSQL's SQLSTATE: connection exceptions (08), shutdown (57P),
                    // disk full (53100).
                    code.starts_with("08") || code.starts_with("57P") || code == "53100"
                }
            }
            _ => false,
        }
    }
}

/// Something changed about a monitor; the scheduler listens for these.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MonitorChange {
    /// Created, edited, paused or resumed: reload it.
    Upserted(String),
    /// Deleted: stop checking it.
    Deleted(String),
}

/// The database handle shared by the whole server.
#[derive(Clone)]
pub struct Store {
    db: DatabaseConnection,
    /// Where write transactions run: on SQLite a pool of one connection of its own, on
    /// PostgreSQL the same pool as `db`.
    writer: DatabaseConnection,
    changes: broadcast::Sender<MonitorChange>,
    /// Committed changes, for open dashboards (see [`live`]).
    live: live::Feed,
    /// Keys authenticated in the last second (see [`keys::KeyCache`]).
    keys: std::sync::Arc<keys::KeyCache>,
    /// How many write transactions this process committed (see [`Store::commits`]).
    commits: Commits,
}

impl Store {
    /// Connect to `url` (`sqlite://path` or `postgres://...`), creating a SQLite file when needed.
    pub async fn connect(url: &str) -> Result<Store, StoreError> {
        if url.starts_with("sqlite:") {
            if let Some(parent) = sqlite_path(url).and_then(|p| p.parent().map(|p| p.to_path_buf()))
                && !parent.as_os_str().is_empty()
            {
                std::fs::create_dir_all(&parent).map_err(|source| StoreError::DataDir {
                    path: parent.display().to_string(),
                    source,
                })?;
            }
            // One writer at a time is SQLite's model; WAL lets readers run beside it.
            // Write transactions get a connection of their own: they queue for it in
            // the process instead of in SQLite's busy handler, and its page cache stays
            // valid from one batch of results to the next (a connection's cache is
            // dropped whenever another connection has written), so the recorder does not
            // read the pages it rewrites again from the file (docs/performance.md).
            let readers = Database::connect(sqlite_options(url, 8, false)).await?;
            if sqlite_in_memory(url) {
                // A second pool would open a second, empty database.
                return Ok(Store::with(readers.clone(), readers));
            }
            let writer = Database::connect(sqlite_options(url, 1, true)).await?;
            return Ok(Store::with(readers, writer));
        }
        let mut options = common_options(url);
        options.max_connections(16).min_connections(1);
        let db = Database::connect(options).await?;
        let mut store = Store::with(db.clone(), db.clone());
        store.listen_for_key_revocations(url);
        store.live = live::Feed::across_nodes(url, db);
        Ok(store)
    }

    fn with(db: DatabaseConnection, writer: DatabaseConnection) -> Store {
        let sqlite = db.get_database_backend() == DbBackend::Sqlite;
        let (changes, _) = broadcast::channel(4096);
        Store {
            db,
            writer,
            changes,
            live: live::Feed::new(),
            keys: std::sync::Arc::new(keys::KeyCache::new(sqlite)),
            commits: Commits::default(),
        }
    }

    /// Apply every pending migration. On PostgreSQL, nodes starting together take turns
    /// under an advisory lock (see [`Store::startup_lock`]): the first applies what is
    /// pending, the others then find nothing to do.
    pub async fn migrate(&self) -> Result<(), StoreError> {
        let lock = self.startup_lock().await?;
        let applied = Migrator::up(&self.db, None).await;
        if let Some(lock) = lock {
            lock.commit().await?;
        }
        Ok(applied?)
    }

    /// On PostgreSQL, wait for and take the start-up advisory lock: a transaction on its
    /// own connection that holds it until committed. Migrations and the first workspace's
    /// creation run under it, so several nodes started at once do each once. None on
    /// SQLite, where one node owns the file.
    pub async fn startup_lock(&self) -> Result<Option<Tx>, StoreError> {
        if self.backend() != DbBackend::Postgres {
            return Ok(None);
        }
        let lock = self.db.begin().await?;
        lock.execute_unprepared(&format!("SELECT pg_advisory_xact_lock({STARTUP_LOCK})"))
            .await?;
        Ok(Some(self.tx(lock)))
    }

    /// Insert one row in a transaction of its own. On SQLite, an `INSERT ... RETURNING`
    /// outside a transaction hands back its row before the implicit commit, and a commit
    /// that then fails (a full disk) went unnoticed: the API said 201 for a row that was
    /// never stored. An explicit COMMIT reports the failure.
    pub(in crate::store) async fn insert_one<A>(
        &self,
        model: A,
    ) -> Result<<A::Entity as sea_orm::EntityTrait>::Model, DbErr>
    where
        A: sea_orm::ActiveModelTrait + sea_orm::ActiveModelBehavior + Send,
        <A::Entity as sea_orm::EntityTrait>::Model: sea_orm::IntoActiveModel<A>,
    {
        let tx = self.begin_write().await.map_err(StoreError::into_db)?;
        let saved = model.insert(tx.conn()).await?;
        tx.commit().await.map_err(StoreError::into_db)?;
        Ok(saved)
    }

    /// Update one row in a transaction of its own (see [`Store::insert_one`]).
    pub(in crate::store) async fn update_one<A>(
        &self,
        model: A,
    ) -> Result<<A::Entity as sea_orm::EntityTrait>::Model, DbErr>
    where
        A: sea_orm::ActiveModelTrait + sea_orm::ActiveModelBehavior + Send,
        <A::Entity as sea_orm::EntityTrait>::Model: sea_orm::IntoActiveModel<A>,
    {
        let tx = self.begin_write().await.map_err(StoreError::into_db)?;
        let saved = model.update(tx.conn()).await?;
        tx.commit().await.map_err(StoreError::into_db)?;
        Ok(saved)
    }

    /// The connection pool.
    pub(in crate::store) fn db(&self) -> &DatabaseConnection {
        &self.db
    }

    /// The connection write transactions run on (see [`Store::begin_write`]).
    pub(in crate::store) fn writer(&self) -> &DatabaseConnection {
        &self.writer
    }

    /// Start a transaction that will write. On SQLite it takes the write lock at BEGIN
    /// (waiting up to the busy timeout): a deferred transaction that reads first and writes
    /// later fails at once with "database is locked" when another connection committed in
    /// between, which under concurrent checks and API calls turned into sporadic 500s.
    /// PostgreSQL ignores the mode.
    pub async fn begin_write(&self) -> Result<Tx, StoreError> {
        let txn = self
            .writer
            .begin_with_options(TransactionOptions {
                sqlite_transaction_mode: Some(SqliteTransactionMode::Immediate),
                ..Default::default()
            })
            .await?;
        Ok(self.tx(txn))
    }

    fn tx(&self, txn: DatabaseTransaction) -> Tx {
        Tx {
            txn,
            live: self.live.clone(),
            commits: self.commits.clone(),
            noted: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// Which database this is.
    pub(in crate::store) fn backend(&self) -> DbBackend {
        self.db.get_database_backend()
    }

    /// On SQLite, how many write transactions this server has committed so far: a
    /// value read before a read and still the same after it means nothing was written
    /// in between, so what the read found is still what the database holds (the
    /// monitor list's rendered pages are kept on that condition). Counted after each
    /// commit, never before. None on PostgreSQL, where other nodes write too.
    pub fn commits(&self) -> Option<u64> {
        self.is_sqlite()
            .then(|| self.commits.0.load(Ordering::Acquire))
    }

    /// Whether this is the embedded SQLite database (one node owns it).
    pub fn is_sqlite(&self) -> bool {
        self.backend() == DbBackend::Sqlite
    }

    /// The database's product name, for reports.
    pub fn backend_name(&self) -> &'static str {
        match self.backend() {
            DbBackend::Postgres => "PostgreSQL",
            DbBackend::Sqlite => "SQLite",
            _ => "MySQL",
        }
    }

    /// Whether the database answers.
    pub async fn ping(&self) -> bool {
        self.db.ping().await.is_ok()
    }

    /// Listen for monitor changes.
    pub fn subscribe_monitor_changes(&self) -> broadcast::Receiver<MonitorChange> {
        self.changes.subscribe()
    }

    /// Committed changes as they happen (see [`live`]).
    pub fn subscribe_changes(&self) -> broadcast::Receiver<live::Committed> {
        self.live.subscribe()
    }

    pub(crate) fn publish(&self, change: MonitorChange) {
        // No listener (e.g. the CLI) is fine.
        let _ = self.changes.send(change);
    }

    /// Close the pool.
    pub async fn close(self) {
        let _ = self.writer.close().await;
        let _ = self.db.close().await;
    }
}

/// Connection settings both databases share.
fn common_options(url: &str) -> ConnectOptions {
    let mut options = ConnectOptions::new(sqlite_create_mode(url));
    options
        .sqlx_logging(false)
        .connect_timeout(Duration::from_secs(5))
        // While the database is away, requests answer 503 after this long instead of
        // queueing for a connection.
        .acquire_timeout(Duration::from_secs(10));
    options
}

/// A pool of at most `connections` SQLite connections; `writer`: the write transactions'
/// own connection.
fn sqlite_options(url: &str, connections: u32, writer: bool) -> ConnectOptions {
    let mut options = common_options(url);
    options
        .max_connections(connections)
        .min_connections(1)
        .map_sqlx_sqlite_opts(move |o| {
            let o = o
                .journal_mode(sea_orm::sqlx::sqlite::SqliteJournalMode::Wal)
                .synchronous(sea_orm::sqlx::sqlite::SqliteSynchronous::Normal)
                .busy_timeout(Duration::from_secs(10))
                .foreign_keys(true)
                // 32 MiB of page cache per connection (the default is 2 MiB): a list's
                // COUNT over 100,000 monitors reads its index from memory instead of
                // the OS (docs/performance.md).
                .pragma("cache_size", "-32768")
                // Copy the write-ahead log back into the database every 10,000 pages
                // (about 40 MiB) instead of SQLite's 1,000. The recorder rewrites the
                // same pages (each monitor's row, its day's uptime, the results index)
                // batch after batch; a page rewritten ten times between two checkpoints
                // is copied back once, not ten times (docs/performance.md).
                .pragma("wal_autocheckpoint", "10000");
            if writer {
                // The writer's statements each change up to a batch of rows, and SQLite
                // keeps a copy of every page such a statement changes, to undo that
                // statement alone on an error. Past 64 KiB the copy went to a temporary
                // file: a third of the writer's file writes at 100,000 monitors. In memory
                // it is a few MiB for the length of one statement (docs/performance.md).
                o.pragma("temp_store", "memory")
            } else {
                o
            }
        })
        // A connection that comes back to the pool still inside a transaction (SQLite
        // rolls a transaction back by itself on some errors, such as a full disk, and
        // the driver's bookkeeping then disagrees with it) would hold the write lock for
        // ever: close it instead of handing it out.
        .map_sqlx_sqlite_before_acquire(|conn, _| {
            Box::pin(async move {
                use sqlx_core::transaction::TransactionManager;
                let depth = <sea_orm::sqlx::Sqlite as sea_orm::sqlx::Database>::TransactionManager::get_transaction_depth(conn);
                Ok(depth == 0)
            })
        });
    options
}

fn sqlite_path(url: &str) -> Option<std::path::PathBuf> {
    let rest = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))?;
    let path = rest.split('?').next().unwrap_or("");
    if path.is_empty() || path == ":memory:" {
        return None;
    }
    Some(std::path::PathBuf::from(path))
}

/// Whether a SQLite URL names an in-memory database rather than a file.
fn sqlite_in_memory(url: &str) -> bool {
    url.contains(":memory:") || url.contains("mode=memory")
}

/// SQLite URLs get `mode=rwc` so that a fresh data directory just works.
fn sqlite_create_mode(url: &str) -> String {
    if url.starts_with("sqlite:") && !url.contains("mode=") && !sqlite_in_memory(url) {
        if url.contains('?') {
            format!("{url}&mode=rwc")
        } else {
            format!("{url}?mode=rwc")
        }
    } else {
        url.to_string()
    }
}

/// The count behind [`Store::commits`], shared by the store's clones and transactions.
#[derive(Clone, Default)]
struct Commits(std::sync::Arc<std::sync::atomic::AtomicU64>);

impl Commits {
    fn count(&self) {
        self.0.fetch_add(1, Ordering::AcqRel);
    }

    /// Counts one commit when dropped: after the commit returns, and also when the
    /// request waiting on it goes away first (the database may still finish it, so a
    /// commit is never left uncounted; counting one too many costs nothing).
    fn on_drop(&self) -> CountOnDrop<'_> {
        CountOnDrop(self)
    }
}

struct CountOnDrop<'a>(&'a Commits);

impl Drop for CountOnDrop<'_> {
    fn drop(&mut self) {
        self.0.count();
    }
}

/// A write transaction: what is written through it commits together or not at all. The
/// engine writes a check's results, the incident changes they cause and the outbox rows
/// of their notifications through one `Tx`. Dropping it uncommitted rolls it back.
pub struct Tx {
    txn: DatabaseTransaction,
    live: live::Feed,
    commits: Commits,
    /// Changes told to open dashboards once this commits.
    noted: std::sync::Mutex<Vec<live::Seen>>,
}

impl Tx {
    /// Make everything written through this transaction durable.
    /// The audit entries the current request noted are written first, in this
    /// transaction (see [`audit`]); the changes it noted are told once it committed.
    pub async fn commit(self) -> Result<(), StoreError> {
        audit::flush(&self.txn).await?;
        let noted = self.noted.into_inner().unwrap_or_else(|e| e.into_inner());
        {
            let _counted = self.commits.on_drop();
            self.txn.commit().await?;
        }
        self.live.publish(noted);
        Ok(())
    }

    /// Tell open dashboards of `change` once this transaction commits.
    pub fn note(&self, change: live::Seen) {
        if self.live.listened() {
            self.noted
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(change);
        }
    }

    /// Whether a change noted now would be told to anyone (so a caller can skip
    /// building it).
    pub fn listened(&self) -> bool {
        self.live.listened()
    }

    /// Commit when the transaction `changed` something; otherwise roll it back and
    /// forget the request's audit notes, so a refused change (a delete of nothing) leaves
    /// no entry. Returns `changed`.
    pub async fn commit_if(self, changed: bool) -> Result<bool, StoreError> {
        if changed {
            self.commit().await?;
        } else {
            audit::discard();
            self.txn.rollback().await?;
        }
        Ok(changed)
    }

    pub(in crate::store) fn conn(&self) -> &DatabaseTransaction {
        &self.txn
    }
}

/// Paging parameters after validation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    /// 1-based page number.
    pub page: u64,
    pub limit: u64,
}

impl Page {
    pub fn offset(&self) -> u64 {
        (self.page - 1) * self.limit
    }
}

/// Sort direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    Asc,
    Desc,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_rows_number_their_parameters_on() {
        assert_eq!(
            values_row(DbBackend::Postgres, 5, &[Some("TEXT"), None]),
            "(CAST($6 AS TEXT), $7)"
        );
        assert_eq!(
            values_row(DbBackend::Sqlite, 5, &[Some("BIGINT"), None, None]),
            "(CAST(? AS BIGINT), ?, ?)"
        );
    }

    #[test]
    fn sqlite_urls_get_create_mode() {
        assert_eq!(
            sqlite_create_mode("sqlite://./data/t.db"),
            "sqlite://./data/t.db?mode=rwc"
        );
        assert_eq!(
            sqlite_create_mode("sqlite://x.db?mode=ro"),
            "sqlite://x.db?mode=ro"
        );
        assert_eq!(sqlite_create_mode("postgres://h/db"), "postgres://h/db");
        assert_eq!(
            sqlite_path("sqlite://./data/t.db?x=1"),
            Some("./data/t.db".into())
        );
        assert_eq!(sqlite_path("sqlite::memory:"), None);
    }

    /// On SQLite, write transactions take turns on their own connection while reads go on
    /// beside them, and a read sees what was committed.
    #[tokio::test]
    async fn writes_take_turns_and_reads_go_on_beside_them() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, Ordering};
        let dir = tempfile::tempdir().expect("test step");
        let url = format!("sqlite://{}", dir.path().join("t.db").display());
        let store = Store::connect(&url).await.expect("test step");
        let count = |store: Store| async move {
            let row = store
                .db
                .query_one_raw(sea_orm::Statement::from_string(
                    DbBackend::Sqlite,
                    "SELECT COUNT(*) AS n FROM t",
                ))
                .await
                .expect("test step")
                .expect("test step");
            row.try_get::<i64>("", "n").expect("test step")
        };
        let first = store.begin_write().await.expect("test step");
        first
            .conn()
            .execute_unprepared("CREATE TABLE t (v INTEGER); INSERT INTO t VALUES (1)")
            .await
            .expect("test step");
        first.commit().await.expect("test step");
        assert_eq!(count(store.clone()).await, 1);

        let held = store.begin_write().await.expect("test step");
        held.conn()
            .execute_unprepared("INSERT INTO t VALUES (2)")
            .await
            .expect("test step");
        let committed = Arc::new(AtomicBool::new(false));
        let second = tokio::spawn({
            let (store, committed) = (store.clone(), committed.clone());
            async move {
                let tx = store.begin_write().await.expect("test step");
                let after = committed.load(Ordering::SeqCst);
                tx.conn()
                    .execute_unprepared("INSERT INTO t VALUES (3)")
                    .await
                    .expect("test step");
                tx.commit().await.expect("test step");
                after
            }
        });
        // A reader is not held up by the open write, and does not see it.
        assert_eq!(count(store.clone()).await, 1);
        tokio::task::yield_now().await;
        committed.store(true, Ordering::SeqCst);
        held.commit().await.expect("test step");
        assert!(
            second.await.expect("test step"),
            "the second write began only after the first committed"
        );
        assert_eq!(count(store.clone()).await, 3);
        store.close().await;
    }
}

/// The store's promise, beyond `module-flow`'s (no entity named outside `store/`): no
/// public item of the store names sea-orm in its signature. The row types still aliased to
/// sea-orm models are listed; a new one fails here, and one turned into a type of the
/// store's own must leave the list.
#[cfg(test)]
mod boundary {
    const SEA_ORM: [&str; 6] = [
        "sea_orm",
        "entities",
        "::Model",
        "ActiveModel",
        "DbErr",
        "DatabaseConnection",
    ];

    /// Each public item's signature (up to its body or end; a public struct's or enum's
    /// whole body, for its fields and variants) in the store's files, but the entities
    /// themselves, tests and `own_row!`'s own definition. Attributes and private fields
    /// are left out.
    fn public_signatures() -> Vec<(String, String)> {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src/store");
        let mut found = Vec::new();
        for entry in std::fs::read_dir(dir).expect("store/") {
            let path = entry.expect("entry").path();
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
            let Some(name) = name.filter(|n| n.ends_with(".rs") && n != "entities.rs") else {
                continue;
            };
            let text = std::fs::read_to_string(&path).expect("read");
            let code = text.split("\n#[cfg(test)]").next().unwrap_or_default();
            let mut lines = code.lines();
            while let Some(line) = lines.next() {
                let line = line.trim();
                let public = line.starts_with("pub ") || line.starts_with("pub(crate) ");
                if !public || line.starts_with("pub mod ") || line.starts_with("pub use ") {
                    continue;
                }
                let mut signature = line.to_string();
                let whole_body = (line.starts_with("pub struct ") || line.starts_with("pub enum "))
                    && line.ends_with('{');
                let is_struct = line.starts_with("pub struct ");
                if whole_body && !line.contains('$') {
                    for next in lines.by_ref() {
                        if next == "}" || next == "    }" {
                            break;
                        }
                        let next_line = next.trim_start();
                        // Doc comments, attributes, and a struct's private fields.
                        let skip = next_line.starts_with("//")
                            || next_line.starts_with("#[")
                            || (is_struct && !next_line.starts_with("pub "));
                        if !skip {
                            signature.push(' ');
                            signature.push_str(next.trim());
                        }
                    }
                    found.push((name.clone(), own_head(&signature)));
                    continue;
                }
                if line.starts_with("pub struct ")
                    && let Some((head, rest)) = signature.split_once('(')
                    && !rest.starts_with("pub ")
                {
                    signature = format!("{head}(..);");
                }
                while !(signature.contains('{')
                    || signature.ends_with(';')
                    || signature.ends_with(','))
                {
                    match lines.next() {
                        Some(next) => {
                            signature.push(' ');
                            signature.push_str(next.trim());
                        }
                        None => break,
                    }
                }
                let head = signature.split('{').next().unwrap_or_default();
                found.push((name.clone(), own_head(head)));
            }
        }
        found
    }

    /// `own_row!`'s `pub struct X in entity "table" { .. }` without ` in entity "table"`: X
    /// and its fields are the store's own (the entity stays inside the store).
    fn own_head(signature: &str) -> String {
        match signature.split_once(" in ") {
            Some((own, rest)) if signature.starts_with("pub struct ") => {
                let body = rest.split_once('{').map_or("", |(_, body)| body);
                format!("{own} {{{body}")
            }
            _ => signature.to_string(),
        }
    }

    #[test]
    fn no_public_store_item_names_sea_orm() {
        let signatures = public_signatures();
        assert!(signatures.len() > 100, "{} items read", signatures.len());
        let named: Vec<String> = signatures
            .into_iter()
            .filter(|(_, signature)| SEA_ORM.iter().any(|word| signature.contains(word)))
            .map(|(file, signature)| format!("{file}: {signature}"))
            .collect();
        assert!(
            named.is_empty(),
            "public store items naming sea-orm: {named:#?}"
        );
    }
}
