//! Claims by slot. With several nodes on one database each round of a check is claimed
//! there before it runs, so one node of the region runs it. A claim covers a slot: every
//! round of one bucket of monitors (a sixteenth, by a hash of the id) that starts within
//! one second of the schedule. So a node writes at most [`BUCKETS`] claims a second
//! however many monitors it runs (it was one per round: 1,667 rows a second at 100,000
//! monitors on a 60 s interval, most of PostgreSQL's work per check), and a check whose
//! slot is already settled learns its answer without asking the database.
//!
//! A node that dies loses at most the slots it held: the rounds it had not run yet in
//! the current second of its buckets, and in the next second when it had started that
//! second's first check a moment early. From then on, the slots go to the nodes that
//! claim them.

use crate::clock::SharedClock;
use crate::store::Store;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

/// Buckets the monitors are shared out in. More buckets share a second among more nodes;
/// each costs a claim row a second per region.
pub const BUCKETS: u32 = 16;
/// The length of a slot of the schedule, in milliseconds.
pub const SLOT_MS: i64 = 1_000;
/// How long the first claim of a batch waits for others (the other buckets of the same
/// second, which come within milliseconds). Only a check whose slot is not settled yet
/// waits; the others of its slot are answered from memory.
const LINGER: Duration = Duration::from_millis(5);
/// Slots in one statement at most.
const MAX_BATCH: usize = 1_000;
/// How many seconds of answers are remembered behind the newest slot asked about. A check
/// later than this asks the database again, which still answers right.
const REMEMBER_SLOTS: i64 = 600;

/// The bucket of a monitor, the same on every node and every build (from a SHA-256 of its
/// id).
pub fn bucket_of(monitor_id: &str) -> i32 {
    bucket_of_hash(super::id_hash(monitor_id))
}

/// [`bucket_of`] from the id's hash ([`super::id_hash`]). It takes the hash's upper half,
/// so a monitor's bucket does not follow its phase (the lower half's remainder).
pub fn bucket_of_hash(id_hash: u64) -> i32 {
    i32::try_from((id_hash >> 32) % u64::from(BUCKETS)).unwrap_or(0)
}

/// The slot of round `round` of a monitor: the second of the schedule its start falls in.
/// It comes from the round alone, not from when a node fires it, so every node maps a
/// round to the same slot.
pub fn slot_of(round: i64, phase_ms: i64, interval_ms: i64) -> i64 {
    slot_at(phase_ms.saturating_add(round.saturating_mul(interval_ms.max(1))))
}

/// The slot of the schedule a wall-clock time falls in.
pub fn slot_at(ms: i64) -> i64 {
    ms.div_euclid(SLOT_MS)
}

/// One check's question: is slot `(bucket, slot)` ours?
struct Claim {
    key: (i32, i64),
    answer: oneshot::Sender<Result<bool, String>>,
}

/// The handle checks claim through; the claiming task ends when every handle is gone.
#[derive(Clone)]
pub struct Claimer {
    tx: mpsc::Sender<Claim>,
    /// Answers already settled: a check whose slot is in here is answered on its own
    /// thread, without waking the claiming task.
    settled: Arc<Mutex<Settled>>,
}

impl Claimer {
    /// Start claiming `region`'s slots as `node_id`. `capacity` bounds the claims waiting
    /// (the checks running at once).
    pub fn spawn(
        store: Store,
        region: String,
        node_id: Arc<str>,
        clock: SharedClock,
        capacity: usize,
    ) -> Claimer {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        let settled = Arc::new(Mutex::new(Settled::default()));
        tokio::spawn(run(store, region, node_id, clock, rx, settled.clone()));
        Claimer { tx, settled }
    }

    /// Whether this node runs the slot of bucket `bucket` that round `round` (of a monitor
    /// with this phase and interval) falls in; false: another node of the region does.
    /// Err when the database could not be asked.
    pub async fn claim(
        &self,
        bucket: i32,
        round: i64,
        phase_ms: i64,
        interval_ms: i64,
    ) -> Result<bool, String> {
        let key = (bucket, slot_of(round, phase_ms, interval_ms));
        if let Some(ours) = lock(&self.settled).get(key) {
            return Ok(ours);
        }
        let (answer, rx) = oneshot::channel();
        let claim = Claim { key, answer };
        self.tx
            .send(claim)
            .await
            .map_err(|_| "the claim task has stopped".to_string())?;
        rx.await
            .map_err(|_| "the claim task has stopped".to_string())?
    }
}

/// Answers already settled, by slot.
#[derive(Default)]
struct Settled {
    held: HashMap<(i32, i64), bool>,
    newest: i64,
}

fn lock(settled: &Mutex<Settled>) -> std::sync::MutexGuard<'_, Settled> {
    settled
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Settled {
    /// Whether slot `key` is this node's, if that is settled.
    fn get(&self, key: (i32, i64)) -> Option<bool> {
        self.held.get(&key).copied()
    }

    /// Answer `claim` from memory, or give it back (it was asked while the answer was
    /// on its way).
    fn answer(&self, claim: Claim) -> Option<Claim> {
        match self.get(claim.key) {
            Some(ours) => {
                let _ = claim.answer.send(Ok(ours));
                None
            }
            None => Some(claim),
        }
    }

    fn remember(&mut self, key: (i32, i64), ours: bool) {
        self.held.insert(key, ours);
        if key.1 > self.newest {
            self.newest = key.1;
            let oldest = self.newest - REMEMBER_SLOTS;
            self.held.retain(|(_, slot), _| *slot >= oldest);
        }
    }
}

async fn run(
    store: Store,
    region: String,
    node_id: Arc<str>,
    clock: SharedClock,
    mut rx: mpsc::Receiver<Claim>,
    settled: Arc<Mutex<Settled>>,
) {
    while let Some(first) = rx.recv().await {
        let Some(first) = lock(&settled).answer(first) else {
            continue;
        };
        let mut batch = vec![first];
        let linger_until = Instant::now() + LINGER;
        while batch.len() < MAX_BATCH {
            match tokio::time::timeout_at(linger_until, rx.recv()).await {
                Ok(Some(claim)) => batch.extend(lock(&settled).answer(claim)),
                Ok(None) | Err(_) => break,
            }
        }
        let mut keys: Vec<(i32, i64)> = batch.iter().map(|c| c.key).collect();
        keys.sort_unstable();
        keys.dedup();
        match store
            .claim_slots(&region, &keys, &node_id, clock.now_ms())
            .await
        {
            Ok(held) => {
                let mut settled = lock(&settled);
                for key in keys {
                    settled.remember(key, held.contains(&key));
                }
                drop(settled);
                for claim in batch {
                    let _ = claim.answer.send(Ok(held.contains(&claim.key)));
                }
            }
            Err(e) => {
                let e = e.to_string();
                for claim in batch {
                    let _ = claim.answer.send(Err(e.clone()));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_stable_and_spread() {
        assert_eq!(bucket_of("mon_a"), bucket_of("mon_a"));
        let mut counts = [0u32; BUCKETS as usize];
        for i in 0..16_000 {
            let b = bucket_of(&format!("mon_{i:026}"));
            assert!((0..BUCKETS as i32).contains(&b));
            counts[b as usize] += 1;
        }
        // 1,000 a bucket on average; a hash keeps each well within a fifth of it.
        assert!(counts.iter().all(|c| (800..1200).contains(c)), "{counts:?}");
    }

    #[test]
    fn a_round_falls_in_the_second_of_its_start() {
        // Phase 1,500 ms, 20 s interval: round 3 starts at 61,500 ms, in slot 61.
        assert_eq!(slot_of(3, 1_500, 20_000), 61);
        assert_eq!(slot_of(0, 999, 1_000), 0);
        assert_eq!(slot_of(1, 999, 1_000), 1);
        // Negative rounds (a clock before the epoch) stay ordered.
        assert_eq!(slot_of(-1, 0, 1_000), -1);
    }

    #[test]
    fn answers_are_forgotten_behind_the_newest_slot() {
        let mut s = Settled::default();
        s.remember((0, 10), true);
        s.remember((1, 10), false);
        s.remember((0, 10 + REMEMBER_SLOTS), true);
        assert_eq!(s.held.get(&(0, 10)), Some(&true), "within the window");
        s.remember((0, 11 + REMEMBER_SLOTS), true);
        assert!(!s.held.contains_key(&(0, 10)), "forgotten past the window");
        assert!(!s.held.contains_key(&(1, 10)));
        assert_eq!(s.held.len(), 2);
    }
}
