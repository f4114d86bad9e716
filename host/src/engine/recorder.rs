//! Writes check results in batches: each batch is one transaction that inserts the results
//! and moves every affected monitor's counters and state.

use super::health::{self, Health, Thresholds};
use crate::ids::{self, prefix};
use crate::store::checks::CheckRow;
use crate::store::{Store, StoreError};
use sea_orm::TransactionTrait;
use std::collections::HashMap;
use tokio::sync::mpsc;

/// Most records written in one transaction.
const MAX_BATCH: usize = 1000;
/// Records waiting to be written before check tasks wait for the writer.
const QUEUE_CAPACITY: usize = 20_000;

/// The result of one check, as the scheduler hands it over.
#[derive(Debug, Clone)]
pub struct CheckRecord {
    pub monitor_id: String,
    pub workspace_id: String,
    pub checked_at: i64,
    pub ok: bool,
    pub reason: Option<String>,
    pub status_code: Option<u16>,
    pub response_time_ms: Option<u32>,
    pub region: String,
    /// JSON object text.
    pub details: String,
}

/// Sends records to the writer task.
#[derive(Clone)]
pub struct Recorder {
    tx: mpsc::Sender<CheckRecord>,
}

impl Recorder {
    /// Start the writer task.
    pub fn spawn(store: Store) -> (Recorder, tokio::task::JoinHandle<()>) {
        let (tx, rx) = mpsc::channel(QUEUE_CAPACITY);
        let task = tokio::spawn(write_loop(store, rx));
        (Recorder { tx }, task)
    }

    /// Queue a record; waits when the writer is behind.
    pub async fn record(&self, record: CheckRecord) {
        if self.tx.send(record).await.is_err() {
            tracing::warn!("check result dropped: the result writer has stopped");
        }
    }
}

async fn write_loop(store: Store, mut rx: mpsc::Receiver<CheckRecord>) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    while rx.recv_many(&mut batch, MAX_BATCH).await > 0 {
        let mut attempt = 0;
        loop {
            match write_batch(&store, &batch).await {
                Ok(()) => break,
                Err(e) if attempt < 3 => {
                    attempt += 1;
                    tracing::warn!(error = %e, attempt, "writing check results failed; retrying");
                    tokio::time::sleep(std::time::Duration::from_millis(200 * attempt)).await;
                }
                Err(e) => {
                    tracing::error!(error = %e, count = batch.len(), "check results lost after retries");
                    break;
                }
            }
        }
        batch.clear();
    }
}

/// Write one batch: results plus monitor health, atomically.
pub async fn write_batch(store: &Store, batch: &[CheckRecord]) -> Result<(), StoreError> {
    let txn = store.db().begin().await?;
    let ids: Vec<String> = {
        let mut ids: Vec<String> = batch.iter().map(|r| r.monitor_id.clone()).collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    };
    let monitors = Store::monitors_by_ids(&txn, ids).await?;
    let mut healths: HashMap<String, Health> = monitors
        .into_iter()
        .filter(|m| m.status != crate::store::monitors::status::PAUSED)
        .map(|m| {
            (
                m.id,
                Health {
                    consecutive_failures: m.consecutive_failures,
                    consecutive_successes: m.consecutive_successes,
                    status: m.status,
                },
            )
        })
        .collect();

    let mut rows = Vec::with_capacity(batch.len());
    let mut last: HashMap<String, (i64, Option<i32>)> = HashMap::new();
    for record in batch {
        // Results of monitors deleted or paused while their check ran are dropped.
        let Some(h) = healths.get_mut(&record.monitor_id) else {
            continue;
        };
        *h = health::apply(h, record.ok, Thresholds::default());
        let rt = record
            .response_time_ms
            .map(|v| i32::try_from(v).unwrap_or(i32::MAX));
        last.insert(record.monitor_id.clone(), (record.checked_at, rt));
        rows.push(CheckRow {
            id: ids::new_id(prefix::CHECK),
            monitor_id: record.monitor_id.clone(),
            workspace_id: record.workspace_id.clone(),
            checked_at: record.checked_at,
            ok: record.ok,
            reason: record.reason.clone(),
            status_code: record.status_code.map(i32::from),
            response_time_ms: rt,
            region: record.region.clone(),
            details: record.details.clone(),
        });
    }
    Store::insert_checks(&txn, rows).await?;
    for (id, (checked_at, rt)) in &last {
        if let Some(h) = healths.get(id) {
            Store::save_monitor_health(&txn, id, h, *checked_at, *rt).await?;
        }
    }
    txn.commit().await?;
    Ok(())
}
