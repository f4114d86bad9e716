//! `tocsin backup FILE` and `tocsin restore FILE`: a consistent copy of the SQLite database
//! taken while the server runs, and putting one back while it is stopped, after checking
//! that it is an intact Tocsin database of a schema this version knows.

use crate::config::Config;
use crate::store::Store;
use crate::store::backup::{self, BackupSummary};
use anyhow::{Context, bail};
use std::path::{Path, PathBuf};

fn sqlite_file(config: &Config, what: &str) -> anyhow::Result<PathBuf> {
    Store::sqlite_file(&config.database_url).ok_or_else(|| {
        anyhow::anyhow!(
            "{what} works on SQLite databases; this configuration uses {}. On PostgreSQL, use pg_dump and pg_restore (docs/operations.md)",
            crate::app::redact(&config.database_url)
        )
    })
}

fn describe(s: &BackupSummary) -> String {
    format!(
        "{} workspaces, {} monitors, {} check results; schema {}",
        s.workspaces,
        s.monitors,
        s.check_results,
        s.migrations.last().map_or("-", String::as_str)
    )
}

/// `tocsin backup FILE [--without-history]`.
pub async fn backup(config: &Config, to: &Path, with_history: bool) -> anyhow::Result<()> {
    let live = sqlite_file(config, "backup")?;
    if !live.is_file() {
        bail!("there is no database at {} to back up", live.display());
    }
    if to.exists() {
        bail!("{} exists; choose a new file name", to.display());
    }
    let started = std::time::Instant::now();
    let store = Store::connect(&config.database_url)
        .await
        .context("cannot open the database")?;
    let result = store.backup_into(to, with_history).await;
    store.close().await;
    result.with_context(|| format!("cannot write the backup to {}", to.display()))?;
    let summary = backup::inspect(to)
        .await
        .context("the backup was written but cannot be read back")?;
    println!(
        "Backed up {} to {} in {:.1} s ({}{})",
        live.display(),
        to.display(),
        started.elapsed().as_secs_f64(),
        describe(&summary),
        if with_history {
            ""
        } else {
            ", check history left out"
        }
    );
    Ok(())
}

/// `tocsin restore FILE`: the server must be stopped.
pub async fn restore(config: &Config, from: &Path) -> anyhow::Result<()> {
    let live = sqlite_file(config, "restore")?;
    if !from.is_file() {
        bail!("{} is not a file", from.display());
    }
    let summary = backup::inspect(from).await?;
    let _lock = crate::app::lock_data_dir(&config.data_dir)?;
    if let Some(parent) = live.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    // The database being replaced is kept beside it, with its write-ahead log (which
    // belongs to it and must not be replayed into the restored file).
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
    let mut kept = None;
    if live.exists() {
        let old = with_suffix(&live, &format!(".before-restore-{stamp}"));
        std::fs::rename(&live, &old)
            .with_context(|| format!("cannot move {} aside", live.display()))?;
        for ext in ["-wal", "-shm"] {
            let side = with_suffix(&live, ext);
            if side.exists() {
                std::fs::rename(&side, with_suffix(&old, ext))?;
            }
        }
        kept = Some(old);
    }
    let partial = with_suffix(&live, ".restoring");
    std::fs::copy(from, &partial)
        .with_context(|| format!("cannot copy {} to {}", from.display(), partial.display()))?;
    std::fs::rename(&partial, &live)?;
    // An older backup is brought up to this version's schema now, not at the next start.
    let store = crate::app::open_store(config).await?;
    store.close().await;
    println!(
        "Restored {} from {} ({})",
        live.display(),
        from.display(),
        describe(&summary)
    );
    if let Some(old) = kept {
        println!("The database it replaced is kept as {}", old.display());
    }
    Ok(())
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}
