//! Round claims, batched. With several nodes on one database each round of a check is
//! claimed there before it runs; a node at 1,000 checks a second would otherwise send
//! 1,000 single-row inserts a second. Claims that arrive within [`LINGER`] of each other
//! (or while the previous statement runs) go to the database as one insert, and each
//! waiting check learns whether its round is this node's.

use crate::clock::SharedClock;
use crate::store::Store;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

/// How long the first claim of a batch waits for others. A check starts at most this much
/// later than it would alone. Measured with `tocsin bench --serve` at 1,000 checks/s on
/// PostgreSQL (docs/performance.md): PostgreSQL's CPU per check was 287 µs with one insert
/// per check, 174 µs with 5 ms, 146 µs with 20 ms.
const LINGER: Duration = Duration::from_millis(20);
/// Claims in one statement at most.
const MAX_BATCH: usize = 1_000;

/// One check's question: is round `round` of `monitor_id` ours?
struct Claim {
    monitor_id: String,
    round: i64,
    answer: oneshot::Sender<Result<bool, String>>,
}

/// The handle checks claim through; the batching task ends when every handle is gone.
#[derive(Clone)]
pub struct Claimer {
    tx: mpsc::Sender<Claim>,
}

impl Claimer {
    /// Start claiming as `node_id`. `capacity` bounds the claims waiting (the checks
    /// running at once).
    pub fn spawn(store: Store, node_id: Arc<str>, clock: SharedClock, capacity: usize) -> Claimer {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        tokio::spawn(run(store, node_id, clock, rx));
        Claimer { tx }
    }

    /// Whether this node won round `round` of `monitor_id` (false: another node has it).
    /// Err when the database could not be asked.
    pub async fn claim(&self, monitor_id: &str, round: i64) -> Result<bool, String> {
        let (answer, rx) = oneshot::channel();
        let claim = Claim {
            monitor_id: monitor_id.to_string(),
            round,
            answer,
        };
        self.tx
            .send(claim)
            .await
            .map_err(|_| "the claim task has stopped".to_string())?;
        rx.await
            .map_err(|_| "the claim task has stopped".to_string())?
    }
}

async fn run(store: Store, node_id: Arc<str>, clock: SharedClock, mut rx: mpsc::Receiver<Claim>) {
    while let Some(first) = rx.recv().await {
        let mut batch = vec![first];
        let linger_until = Instant::now() + LINGER;
        while batch.len() < MAX_BATCH {
            match tokio::time::timeout_at(linger_until, rx.recv()).await {
                Ok(Some(claim)) => batch.push(claim),
                Ok(None) | Err(_) => break,
            }
        }
        let mut rounds: Vec<(String, i64)> = batch
            .iter()
            .map(|c| (c.monitor_id.clone(), c.round))
            .collect();
        rounds.sort_unstable();
        rounds.dedup();
        let won = store
            .claim_rounds(&rounds, &node_id, clock.now_ms())
            .await
            .map_err(|e| e.to_string());
        answer(batch, won);
    }
}

/// Tell each waiting check its answer. Of two claims of one round in a batch (which one
/// node does not make), only the first wins.
fn answer(batch: Vec<Claim>, won: Result<HashSet<(String, i64)>, String>) {
    match won {
        Ok(mut won) => {
            for c in batch {
                let ours = won.remove(&(c.monitor_id, c.round));
                let _ = c.answer.send(Ok(ours));
            }
        }
        Err(e) => {
            for c in batch {
                let _ = c.answer.send(Err(e.clone()));
            }
        }
    }
}
