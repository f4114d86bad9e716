//! Claims by slot. With several nodes on one database each round of a check is claimed
//! there before it runs, so one node of the region runs it. A claim covers a slot: every
//! round of one bucket of monitors (a sixteenth, by a hash of the id) that starts within
//! one second of the schedule. So a node writes at most [`BUCKETS`] claims a second
//! however many monitors it runs (it was one per round: 1,667 rows a second at 100,000
//! monitors on a 60 s interval, most of PostgreSQL's work per check), and a check whose
//! slot is already settled learns its answer without asking the database. A slot another
//! node holds is believed to be its for [`NOT_OURS_FOR`] only, then asked about again
//! (in the same batched statement), so a slot given back is taken within that.
//!
//! A node that stops normally closes its [`ClaimGate`] and gives back every slot from the
//! current second on, so the others take its buckets within [`NOT_OURS_FOR`]. A node
//! that dies keeps the slots it claimed until it is seen dead: the rest of the current
//! second of its buckets, the next second when it had started that second's first check
//! a moment early, and slots further ahead that the first rounds of a new monitor (not
//! yet on the shared rhythm) claimed. Once its heartbeat is older than
//! [`crate::store::cluster::NODE_TTL_MS`], any node may take those slots over; until
//! then the others carry on with every slot it does not hold.

use crate::clock::SharedClock;
use crate::store::Store;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
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
/// How long "another node holds it" is believed before the database is asked again. The
/// holder may leave (a normal stop gives its slots back) or be found dead, and the slot's
/// remaining rounds are then this node's to run. A slot this node holds stays its own.
const NOT_OURS_FOR: Duration = Duration::from_millis(250);

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

/// Stops a node's claims before it gives its slots back. Once closed, every claim is
/// answered "not ours" and no claim statement reaches the database, so none can land
/// after the node has left ([`crate::store::Store::leave`]).
#[derive(Default)]
pub struct ClaimGate {
    closed: AtomicBool,
    /// Held while a claim statement runs: closing waits for the one in flight.
    turn: tokio::sync::Mutex<()>,
}

impl ClaimGate {
    /// Close the gate, once any claim statement in flight has finished.
    pub async fn close(&self) {
        let _turn = self.turn.lock().await;
        self.closed.store(true, Ordering::SeqCst);
    }

    pub(super) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }
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
    gate: Arc<ClaimGate>,
}

impl Claimer {
    /// Start claiming `region`'s slots as `node_id`. `capacity` bounds the claims waiting
    /// (the checks running at once). Once `gate` is closed, no slot is this node's.
    pub fn spawn(
        store: Store,
        region: String,
        node_id: Arc<str>,
        clock: SharedClock,
        capacity: usize,
        gate: Arc<ClaimGate>,
    ) -> Claimer {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        let settled = Arc::new(Mutex::new(Settled::default()));
        tokio::spawn(run(
            store,
            region,
            node_id,
            clock,
            rx,
            settled.clone(),
            gate.clone(),
        ));
        Claimer { tx, settled, gate }
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
        if self.gate.is_closed() {
            return Ok(false);
        }
        let key = (bucket, slot_of(round, phase_ms, interval_ms));
        if let Some(ours) = lock(&self.settled).get(key, Instant::now()) {
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

/// Answers already settled, by slot: whether it is this node's, and when that was learned.
#[derive(Default)]
struct Settled {
    held: HashMap<(i32, i64), (bool, Instant)>,
    newest: i64,
}

fn lock(settled: &Mutex<Settled>) -> std::sync::MutexGuard<'_, Settled> {
    settled
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Settled {
    /// Whether slot `key` is this node's, if that is settled at `now`: a slot of its own
    /// stays settled; another node's only for [`NOT_OURS_FOR`].
    fn get(&self, key: (i32, i64), now: Instant) -> Option<bool> {
        match self.held.get(&key) {
            Some((true, _)) => Some(true),
            Some((false, at)) if now.saturating_duration_since(*at) < NOT_OURS_FOR => Some(false),
            _ => None,
        }
    }

    /// Answer `claim` from memory, or give it back (it was asked while the answer was
    /// on its way).
    fn answer(&self, claim: Claim) -> Option<Claim> {
        match self.get(claim.key, Instant::now()) {
            Some(ours) => {
                let _ = claim.answer.send(Ok(ours));
                None
            }
            None => Some(claim),
        }
    }

    fn remember(&mut self, key: (i32, i64), ours: bool, now: Instant) {
        self.held.insert(key, (ours, now));
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
    gate: Arc<ClaimGate>,
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
        // The node is stopping: it has given (or is giving) its slots back.
        let _turn = gate.turn.lock().await;
        if gate.is_closed() {
            for claim in batch {
                let _ = claim.answer.send(Ok(false));
            }
            continue;
        }
        match store
            .claim_slots(&region, &keys, &node_id, clock.now_ms())
            .await
        {
            Ok(held) => {
                let mut settled = lock(&settled);
                let now = Instant::now();
                for key in keys {
                    settled.remember(key, held.contains(&key), now);
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
        let now = Instant::now();
        let mut s = Settled::default();
        s.remember((0, 10), true, now);
        s.remember((1, 10), false, now);
        s.remember((0, 10 + REMEMBER_SLOTS), true, now);
        assert_eq!(s.get((0, 10), now), Some(true), "within the window");
        s.remember((0, 11 + REMEMBER_SLOTS), true, now);
        assert!(!s.held.contains_key(&(0, 10)), "forgotten past the window");
        assert!(!s.held.contains_key(&(1, 10)));
        assert_eq!(s.held.len(), 2);
    }

    #[test]
    fn another_nodes_slot_is_asked_about_again_its_own_is_not() {
        let then = Instant::now();
        let mut s = Settled::default();
        s.remember((0, 10), true, then);
        s.remember((1, 10), false, then);
        let soon = then + NOT_OURS_FOR - Duration::from_millis(1);
        assert_eq!(s.get((1, 10), soon), Some(false), "believed for a moment");
        let later = then + NOT_OURS_FOR;
        assert_eq!(
            s.get((1, 10), later),
            None,
            "the holder may have left: ask the database again"
        );
        assert_eq!(
            s.get((0, 10), then + Duration::from_secs(60)),
            Some(true),
            "a slot of this node's own stays settled"
        );
        assert_eq!(s.get((2, 10), then), None, "never asked");
    }
}
