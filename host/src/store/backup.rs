//! The schema version a database is at, and backups of a SQLite database: a consistent copy taken while the server runs (`VACUUM
//! INTO` reads one snapshot of the database; writers carry on beside it), and the checks a
//! copy must pass before it replaces the live database: it is a SQLite file, intact, a
//! Tocsin database, and of a schema this build knows.

use super::{Store, StoreError};
use sea_orm::{ConnectionTrait, DbBackend, Statement};
use std::path::{Path, PathBuf};
use tocsin_migrations::{Migrator, MigratorTrait};

/// What a backup holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackupSummary {
    /// Migrations applied to it, oldest first.
    pub migrations: Vec<String>,
    pub workspaces: u64,
    pub monitors: u64,
    pub check_results: u64,
}

/// Why a file cannot be restored.
#[derive(Debug, thiserror::Error)]
pub enum RestoreRefusal {
    #[error("{0} cannot be opened as a SQLite database: {1}")]
    NotSqlite(String, String),
    #[error("{0} is damaged (SQLite's integrity check says: {1})")]
    Damaged(String, String),
    #[error("{0} is not a Tocsin database (it has no migration history)")]
    NotTocsin(String),
    #[error(
        "{file} was written by a newer Tocsin (its schema has {unknown}, which this version does not know); upgrade Tocsin first"
    )]
    Newer { file: String, unknown: String },
}

/// The names of the migrations this build applies, oldest first.
pub fn known_migrations() -> Vec<String> {
    Migrator::migrations()
        .iter()
        .map(|m| m.name().to_string())
        .collect()
}

impl Store {
    /// Migrations applied to this database, oldest first (without applying any).
    pub async fn applied_migrations(&self) -> Result<Vec<String>, StoreError> {
        let rows = self
            .db
            .query_all_raw(Statement::from_string(
                self.backend(),
                "SELECT version FROM seaql_migrations ORDER BY version",
            ))
            .await?;
        Ok(rows
            .iter()
            .filter_map(|r| r.try_get_by_index::<String>(0).ok())
            .collect())
    }

    /// The database server's clock (Unix ms); None on SQLite, which has no clock of its own.
    pub async fn database_clock_ms(&self) -> Result<Option<i64>, StoreError> {
        if self.backend() != DbBackend::Postgres {
            return Ok(None);
        }
        let row = self
            .db
            .query_one_raw(Statement::from_string(
                DbBackend::Postgres,
                "SELECT (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::bigint",
            ))
            .await?;
        Ok(row.and_then(|r| r.try_get_by_index::<i64>(0).ok()))
    }

    /// The SQLite file behind this store, if it is one.
    pub fn sqlite_file(url: &str) -> Option<PathBuf> {
        super::sqlite_path(url)
    }

    /// Copy the database into `to` (which must not exist), consistently, while others
    /// write. Without `with_history`, the copy leaves out raw check results (daily uptime
    /// counts, incidents and everything else stay). SQLite only.
    pub async fn backup_into(&self, to: &Path, with_history: bool) -> Result<(), StoreError> {
        if self.backend() != DbBackend::Sqlite {
            return Err(StoreError::Invalid(
                "backup copies SQLite databases; on PostgreSQL use pg_dump (docs/operations.md)"
                    .into(),
            ));
        }
        let target = to.to_string_lossy().replace('\'', "''");
        self.db
            .execute_unprepared(&format!("VACUUM INTO '{target}'"))
            .await?;
        if !with_history {
            let copy = Store::connect(&format!("sqlite://{}", to.display())).await?;
            copy.db
                .execute_unprepared("DELETE FROM check_results")
                .await?;
            copy.db.execute_unprepared("VACUUM").await?;
            copy.close().await;
        }
        Ok(())
    }
}

/// Open `file` read-only and say what it holds, or why it cannot be restored.
pub async fn inspect(file: &Path) -> Result<BackupSummary, RestoreRefusal> {
    let name = file.display().to_string();
    let url = format!("sqlite://{}?mode=ro", file.display());
    let db = sea_orm::Database::connect(
        sea_orm::ConnectOptions::new(url)
            .sqlx_logging(false)
            .to_owned(),
    )
    .await
    .map_err(|e| RestoreRefusal::NotSqlite(name.clone(), e.to_string()))?;
    let result = inspect_open(&db, &name).await;
    let _ = db.close().await;
    result
}

async fn inspect_open(
    db: &sea_orm::DatabaseConnection,
    name: &str,
) -> Result<BackupSummary, RestoreRefusal> {
    let not_sqlite = |e: sea_orm::DbErr| RestoreRefusal::NotSqlite(name.to_string(), e.to_string());
    let text = |sql: &str| Statement::from_string(DbBackend::Sqlite, sql.to_string());
    let check = db
        .query_one_raw(text("PRAGMA quick_check"))
        .await
        .map_err(not_sqlite)?
        .and_then(|row| row.try_get_by_index::<String>(0).ok())
        .unwrap_or_default();
    if check != "ok" {
        return Err(RestoreRefusal::Damaged(name.to_string(), check));
    }
    let has_history = db
        .query_one_raw(text(
            "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'seaql_migrations'",
        ))
        .await
        .map_err(not_sqlite)?
        .and_then(|row| row.try_get_by_index::<i64>(0).ok())
        .unwrap_or(0);
    if has_history == 0 {
        return Err(RestoreRefusal::NotTocsin(name.to_string()));
    }
    let migrations: Vec<String> = db
        .query_all_raw(text(
            "SELECT version FROM seaql_migrations ORDER BY version",
        ))
        .await
        .map_err(not_sqlite)?
        .iter()
        .filter_map(|row| row.try_get_by_index::<String>(0).ok())
        .collect();
    let known = known_migrations();
    if let Some(unknown) = migrations.iter().find(|m| !known.contains(m)) {
        return Err(RestoreRefusal::Newer {
            file: name.to_string(),
            unknown: unknown.clone(),
        });
    }
    if !migrations.iter().any(|m| m == &known[0]) {
        return Err(RestoreRefusal::NotTocsin(name.to_string()));
    }
    let count = |table: &str| {
        let sql = format!("SELECT COUNT(*) FROM {table}");
        async move {
            db.query_one_raw(text(&sql))
                .await
                .ok()
                .flatten()
                .and_then(|row| row.try_get_by_index::<i64>(0).ok())
                .map_or(0, |n| u64::try_from(n).unwrap_or(0))
        }
    };
    Ok(BackupSummary {
        migrations,
        workspaces: count("workspaces").await,
        monitors: count("monitors").await,
        check_results: count("check_results").await,
    })
}
