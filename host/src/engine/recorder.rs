//! Writes check results in batches. Each batch is one transaction: the results, every
//! affected monitor's counters and state, the incidents they open or resolve, and the
//! notifications those cause. A crash loses either all of it or none.

use super::certificates;
use super::context::{EngineContext, Retries, Retry};
use super::degraded;
use super::flapping;
use super::health::{self, Health};
use super::hold::Hold;
use super::holds;
use super::incidents::{self, Ctx};
use super::maintenance::Calendar;
use super::policy::{self, Rules};
use crate::ids::{self, prefix};
use crate::outbox::events;
use crate::store::live::Seen;
use crate::store::status_pages::day_counts;
use crate::store::{
    CheckRow, IncidentRow, IncidentState, MonitorRow, MonitorState, State as _, Store, StoreError,
    Tx,
};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use tokio::sync::{Notify, mpsc, oneshot};

/// Most records written in one transaction.
const MAX_BATCH: usize = 1000;
/// How long the writer waits for more results before writing a batch. It bounds the delay
/// it adds to an alert; it turns hundreds of one-result transactions a second into tens.
const BATCH_LINGER: std::time::Duration = std::time::Duration::from_millis(20);
/// How long a batch of passes only waits for more: such a batch can resolve an incident
/// (a recovery notice comes at most this much later) but never opens one. Each batch
/// rewrites a page of the results index, the monitors' rows and the day's uptime for each
/// of its monitors, and a page rewritten by one larger transaction is written once: at
/// 250 checks/s a second's batch cost a tenth less CPU per check than a 200 ms one
/// (docs/performance.md, "Checks started in groups").
const QUIET_LINGER: std::time::Duration = std::time::Duration::from_millis(1000);
/// Results waiting to be written, by default, before new ones are shed (see
/// [`RecorderOptions::buffer`]).
pub const DEFAULT_BUFFER: usize = crate::config::DEFAULT_RECORDER_BUFFER as usize;
/// Shedding is logged at most this often (the count is exact; the log says how many).
const SHED_LOG_EVERY_MS: i64 = 10_000;

/// The result of one check, as the scheduler hands it over.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
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
    /// Set when this record settles a request for regional confirmation.
    #[serde(skip)]
    pub confirmation: Option<Confirmation>,
    /// Set when a probe sent this record: it is stored only if its sequence number is
    /// above the probe's highest stored one, which moves in the same transaction, so a
    /// batch the probe sends again is stored once.
    #[serde(skip)]
    pub probe: Option<ProbeSeq>,
}

/// Which probe sent a record, and its place in that probe's sequence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeSeq {
    pub probe_id: String,
    pub seq: i64,
}

/// How a record relates to a request to confirm a failure from another region.
#[derive(Debug, Clone)]
pub enum Confirmation {
    /// This check, run in another region, answers request `request_id` about `original`.
    Answer {
        request_id: String,
        original: Box<CheckRecord>,
    },
    /// Nobody answered request `request_id` by its deadline: this record, the original
    /// failure, counts as it is.
    Expired { request_id: String },
    /// This check answers request `request_id`, which was settled before it came (a
    /// probe's late answer): kept as history only.
    Late { request_id: String },
    /// This record, a probe's failure, is not counted yet: a request to confirm it from
    /// another region is written in its place, in the transaction that stores the probe's
    /// sequence number (so a resent batch asks once).
    Ask(Box<Ask>),
}

/// A request to write in the recorder's transaction, about the record that carries it.
#[derive(Debug, Clone)]
pub struct Ask {
    pub id: String,
    pub round: i64,
    pub target_region: String,
    pub deadline_at: i64,
}

/// Add `"confirmation": note` to a record's details.
pub fn annotate(record: &CheckRecord, note: Value) -> CheckRecord {
    let mut details: Map<String, Value> = serde_json::from_str(&record.details).unwrap_or_default();
    details.insert("confirmation".into(), note);
    CheckRecord {
        details: Value::Object(details).to_string(),
        confirmation: None,
        ..record.clone()
    }
}

/// Turn records that settle confirmation requests into what is stored, each with whether it
/// counts towards the monitor's health (exactly one record counts per settled round).
async fn settle(txn: &Tx, batch: &[CheckRecord]) -> Result<Vec<(CheckRecord, bool)>, StoreError> {
    let mut out = Vec::with_capacity(batch.len());
    for record in batch {
        let Some(link) = &record.confirmation else {
            out.push((record.clone(), true));
            continue;
        };
        let request_id = match link {
            Confirmation::Ask(ask) => {
                // The original is kept in the request without its probe's sequence
                // number (not serialised): it is counted once, when the request settles.
                let original = serde_json::to_string(&CheckRecord {
                    confirmation: None,
                    probe: None,
                    ..record.clone()
                })
                .map_err(|e| StoreError::Corrupt(format!("a check as JSON: {e}")))?;
                let asked = txn
                    .request_confirmation(crate::store::confirmations::NewConfirmation {
                        id: &ask.id,
                        monitor_id: &record.monitor_id,
                        round: ask.round,
                        from_region: &record.region,
                        target_region: &ask.target_region,
                        requested_at: record.checked_at,
                        deadline_at: ask.deadline_at,
                        original,
                    })
                    .await?;
                if !asked {
                    // The round already awaits confirmation: one check too many.
                    tracing::debug!(monitor = %record.monitor_id, round = ask.round, "round already awaits confirmation");
                }
                continue;
            }
            Confirmation::Answer { request_id, .. }
            | Confirmation::Expired { request_id }
            | Confirmation::Late { request_id } => request_id,
        };
        let won = txn.settle_confirmation(request_id).await?;
        match link {
            // Settled already (it expired meanwhile): this check is kept as history only.
            Confirmation::Answer { original, .. } if !won => out.push((
                annotate(
                    record,
                    serde_json::json!({"status": "late", "of": original.region}),
                ),
                false,
            )),
            Confirmation::Answer { original, .. } if record.ok => {
                out.push((
                    annotate(
                        original,
                        serde_json::json!({"status": "unconfirmed", "by": record.region}),
                    ),
                    false,
                ));
                out.push((
                    annotate(
                        record,
                        serde_json::json!({"status": "cleared", "of": original.region}),
                    ),
                    true,
                ));
            }
            Confirmation::Answer { original, .. } => {
                out.push((
                    annotate(
                        original,
                        serde_json::json!({"status": "confirmed", "by": record.region}),
                    ),
                    true,
                ));
                out.push((
                    annotate(
                        record,
                        serde_json::json!({"status": "confirming", "of": original.region}),
                    ),
                    false,
                ));
            }
            Confirmation::Expired { .. } if won => {
                out.push((
                    annotate(record, serde_json::json!({"status": "expired"})),
                    true,
                ));
            }
            Confirmation::Expired { .. } | Confirmation::Ask(_) => {}
            Confirmation::Late { .. } => out.push((
                annotate(record, serde_json::json!({"status": "late"})),
                false,
            )),
        }
    }
    Ok(out)
}

/// How the recorder buffers results on their way to the database.
#[derive(Debug, Clone)]
pub struct RecorderOptions {
    /// Results waiting to be written before new ones are shed. A check never waits for the
    /// database: while the writer is behind (a slow disk, a busy machine, PostgreSQL away)
    /// results wait here, and past this many each new one is dropped, counted
    /// (`tocsin_recorder_shed_total`) and logged, so the checks keep their rate.
    pub buffer: usize,
    /// Slept before every batch is written: the benchmark's stand-in for a slow database.
    pub write_delay: std::time::Duration,
}

impl Default for RecorderOptions {
    fn default() -> RecorderOptions {
        RecorderOptions {
            buffer: DEFAULT_BUFFER,
            write_delay: std::time::Duration::ZERO,
        }
    }
}

/// Sends records to the writer task.
#[derive(Clone)]
pub struct Recorder {
    tx: mpsc::Sender<(CheckRecord, Option<oneshot::Sender<()>>)>,
    /// Where committed batches ask for fast re-checks.
    retries: Retries,
    stats: Arc<RecorderStats>,
    /// Wakes the lingering writer: a failure, a caller waiting for the commit, a full
    /// batch or half the buffer waiting. Other records do not wake it while it lingers.
    hurry: Arc<Hurry>,
}

/// The writer's wake-up, which also wakes it when the last [`Recorder`] is dropped (after
/// its sender): at shutdown a lingering batch is written at once, not a second later.
struct Hurry(Arc<Notify>);

impl Drop for Hurry {
    fn drop(&mut self) {
        self.0.notify_one();
    }
}

/// What the writer has done so far.
#[derive(Debug, Default)]
pub struct RecorderStats {
    /// Records handed to the recorder and queued.
    pub accepted: AtomicU64,
    /// Records dropped because the buffer was full.
    pub shed: AtomicU64,
    /// Records written (committed).
    pub records: AtomicU64,
    /// Transactions committed.
    pub batches: AtomicU64,
    /// Time spent writing, in microseconds.
    pub write_us: AtomicU64,
    /// When shedding was last logged (Unix ms), and the shed count then.
    shed_logged_at: AtomicI64,
    shed_logged: AtomicU64,
}

impl Recorder {
    /// Start the writer task with the default buffer.
    pub fn spawn(store: Store, ctx: EngineContext) -> (Recorder, tokio::task::JoinHandle<()>) {
        Recorder::spawn_with(store, ctx, RecorderOptions::default())
    }

    /// Start the writer task.
    pub fn spawn_with(
        store: Store,
        ctx: EngineContext,
        options: RecorderOptions,
    ) -> (Recorder, tokio::task::JoinHandle<()>) {
        let (tx, rx) = mpsc::channel(options.buffer.max(1));
        let stats = Arc::new(RecorderStats::default());
        let hurry = Arc::new(Notify::new());
        let retries = ctx.retries.clone();
        let task = tokio::spawn(write_loop(
            store,
            ctx,
            rx,
            hurry.clone(),
            stats.clone(),
            options.write_delay,
        ));
        let recorder = Recorder {
            tx,
            retries,
            stats,
            hurry: Arc::new(Hurry(hurry)),
        };
        (recorder, task)
    }

    /// The fast re-checks its batches ask for, for the scheduler to listen to.
    pub fn retries(&self) -> Retries {
        self.retries.clone()
    }

    /// The writer's counters.
    pub fn stats(&self) -> Arc<RecorderStats> {
        self.stats.clone()
    }

    /// Hand a record over without waiting. When the buffer is full (the database is far
    /// behind) the record is shed: counted, and logged at most every ten seconds.
    pub fn record(&self, record: CheckRecord) {
        let failed = !record.ok;
        match self.tx.try_send((record, None)) {
            Ok(()) => {
                self.stats.accepted.fetch_add(1, Ordering::Relaxed);
                self.queued(failed);
            }
            Err(mpsc::error::TrySendError::Full((record, _))) => self.shed(&record),
            Err(mpsc::error::TrySendError::Closed(_)) => {
                tracing::warn!("check result dropped: the result writer has stopped");
            }
        }
    }

    /// Hand a record over, waiting for room when the buffer is full: for the few results
    /// that come from the database's own bookkeeping (a missed heartbeat deadline, an
    /// expired confirmation request), which would not be produced again if shed.
    pub async fn record_waiting(&self, record: CheckRecord) {
        let failed = !record.ok;
        if self.tx.send((record, None)).await.is_err() {
            tracing::warn!("check result dropped: the result writer has stopped");
            return;
        }
        self.stats.accepted.fetch_add(1, Ordering::Relaxed);
        self.queued(failed);
    }

    /// Wake a lingering writer for a record it must not keep waiting (`urgent`), when a
    /// whole batch is waiting, or when the buffer is half full (a small `recorder_buffer`
    /// must not fill up while the writer lingers).
    fn queued(&self, urgent: bool) {
        let capacity = self.tx.max_capacity();
        let waiting = capacity - self.tx.capacity();
        if urgent || waiting >= MAX_BATCH.min(capacity / 2).max(1) {
            self.hurry.0.notify_one();
        }
    }

    fn shed(&self, record: &CheckRecord) {
        let total = self.stats.shed.fetch_add(1, Ordering::Relaxed) + 1;
        let t = crate::telemetry::global();
        t.recorder_shed.inc();
        t.recorder_queued
            .set(i64::try_from(self.tx.max_capacity()).unwrap_or(i64::MAX));
        let now = chrono::Utc::now().timestamp_millis();
        let last = self.stats.shed_logged_at.load(Ordering::Relaxed);
        if now - last >= SHED_LOG_EVERY_MS
            && self
                .stats
                .shed_logged_at
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            let before = self.stats.shed_logged.swap(total, Ordering::Relaxed);
            tracing::error!(
                shed = total - before,
                shed_total = total,
                buffer = self.tx.max_capacity(),
                example_monitor = %record.monitor_id,
                "check results are being dropped: the database is too slow or away and the result buffer is full"
            );
        }
    }

    /// Queue a record and wait until its batch is committed (it still shares a batch with
    /// others). False when the writer stopped first.
    pub async fn record_committed(&self, record: CheckRecord) -> bool {
        let (done, committed) = oneshot::channel();
        if self.tx.send((record, Some(done))).await.is_err() {
            tracing::warn!("check result dropped: the result writer has stopped");
            return false;
        }
        self.stats.accepted.fetch_add(1, Ordering::Relaxed);
        self.queued(true);
        committed.await.is_ok()
    }
}

impl Recorder {
    /// Queue records in their order, if the buffer has room for all of them now, and wait
    /// until every one is committed (or, refused by the database, dropped and logged).
    /// A full buffer refuses them rather than waiting, so results sent from afar never
    /// crowd out the node's own checks.
    pub async fn record_all_committed(&self, records: Vec<CheckRecord>) -> Committed {
        if self.tx.capacity() < records.len() {
            return Committed::Full;
        }
        let mut commits = Vec::with_capacity(records.len());
        for record in records {
            let (done, committed) = oneshot::channel();
            match self.tx.try_send((record, Some(done))) {
                Ok(()) => {}
                Err(mpsc::error::TrySendError::Full(_)) => {
                    // Those queued before it are stored; the sender sends them all again
                    // and those come back as replays.
                    self.queued(true);
                    return Committed::Full;
                }
                Err(mpsc::error::TrySendError::Closed(_)) => return Committed::Stopped,
            }
            self.stats.accepted.fetch_add(1, Ordering::Relaxed);
            commits.push(committed);
        }
        self.queued(true);
        for committed in commits {
            if committed.await.is_err() {
                return Committed::Stopped;
            }
        }
        Committed::All
    }
}

/// What became of records handed over together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Committed {
    All,
    /// The buffer had no room: none or only the first were queued.
    Full,
    /// The writer stopped (the server is stopping).
    Stopped,
}

async fn write_loop(
    store: Store,
    ctx: EngineContext,
    mut rx: mpsc::Receiver<(CheckRecord, Option<oneshot::Sender<()>>)>,
    hurry_signal: Arc<Notify>,
    stats: Arc<RecorderStats>,
    write_delay: std::time::Duration,
) {
    let mut queued = Vec::with_capacity(MAX_BATCH);
    let mut batch = Vec::with_capacity(MAX_BATCH);
    let mut waiting = Vec::new();
    while rx.recv_many(&mut queued, MAX_BATCH).await > 0 {
        // Let the batch fill for a moment: one transaction for many results costs far
        // less than one each (see docs/performance.md). A failure (it may open an
        // incident) or a caller waiting for the commit waits at most BATCH_LINGER; a
        // batch of passes only, which changes no incident but a recovery, waits longer.
        let started = tokio::time::Instant::now();
        let urgent = |q: &[(CheckRecord, Option<oneshot::Sender<()>>)]| {
            q.iter().any(|(r, done)| !r.ok || done.is_some())
        };
        let mut hurry = urgent(&queued);
        let linger = tokio::time::sleep(if hurry { BATCH_LINGER } else { QUIET_LINGER });
        tokio::pin!(linger);
        // While it lingers the writer waits on the timer and on `Recorder::hurry` only, so
        // a batch of passes costs one wake-up, not one per result.
        // Once every sender is gone (shutdown), nothing more is coming: no lingering.
        while queued.len() < MAX_BATCH && !rx.is_closed() {
            tokio::select! {
                _ = &mut linger => break,
                _ = hurry_signal.notified() => {}
            }
            let before = queued.len();
            take_waiting(&mut rx, &mut queued);
            if !hurry && urgent(&queued[before..]) {
                hurry = true;
                linger.as_mut().reset(started + BATCH_LINGER);
            }
        }
        take_waiting(&mut rx, &mut queued);
        for (record, done) in queued.drain(..) {
            batch.push(record);
            waiting.extend(done);
        }
        crate::telemetry::global()
            .recorder_queued
            .set(i64::try_from(rx.len()).unwrap_or(i64::MAX));
        if !write_delay.is_zero() {
            tokio::time::sleep(write_delay).await;
        }
        let started = std::time::Instant::now();
        write_resiliently(&store, &ctx, &batch).await;
        observe(&batch, started.elapsed());
        stats
            .records
            .fetch_add(batch.len() as u64, Ordering::Relaxed);
        stats.batches.fetch_add(1, Ordering::Relaxed);
        stats.write_us.fetch_add(
            u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
        batch.clear();
        for done in waiting.drain(..) {
            let _ = done.send(());
        }
    }
}

/// Move the records already waiting into `queued`, up to a batch, without waiting.
fn take_waiting(
    rx: &mut mpsc::Receiver<(CheckRecord, Option<oneshot::Sender<()>>)>,
    queued: &mut Vec<(CheckRecord, Option<oneshot::Sender<()>>)>,
) {
    while queued.len() < MAX_BATCH {
        match rx.try_recv() {
            Ok(item) => queued.push(item),
            Err(_) => break,
        }
    }
}

/// Count a written batch for `/metrics`.
fn observe(batch: &[CheckRecord], took: std::time::Duration) {
    let t = crate::telemetry::global();
    t.recorder_batches.inc();
    t.recorder_records.inc_by(batch.len() as u64);
    t.recorder_write_seconds.observe(took.as_secs_f64());
    let up = batch.iter().filter(|r| r.ok).count() as u64;
    let outcome = |outcome| crate::telemetry::OutcomeLabels { outcome };
    t.checks_done.get_or_create(&outcome("up")).inc_by(up);
    t.checks_done
        .get_or_create(&outcome("down"))
        .inc_by(batch.len() as u64 - up);
    t.monitors
        .observe(batch.iter().map(|r| crate::telemetry::Observation {
            monitor_id: &r.monitor_id,
            ok: r.ok,
            response_time_ms: r.response_time_ms,
            region: &r.region,
            details: &r.details,
        }));
}

/// Write a batch, whatever happens to the database meanwhile:
/// - while the database cannot be reached (or its disk is full), keep the batch and try
///   again (backing off up to 5 s), so results taken during an outage are recorded, late,
///   once it returns (new results wait in the recorder's buffer; past its bound they
///   are shed and counted, and the checks keep their rate);
/// - when the database answers but the batch is refused (a record it cannot store), write
///   the records one by one, so only the bad one is lost (and logged), no other result.
pub async fn write_resiliently(store: &Store, ctx: &EngineContext, batch: &[CheckRecord]) {
    let mut backoff = std::time::Duration::from_millis(200);
    loop {
        let Err(e) = write_batch(store, ctx, batch).await else {
            return;
        };
        crate::telemetry::global().recorder_write_errors.inc();
        if !e.is_unavailable() && store.ping().await {
            tracing::warn!(error = %e, count = batch.len(), "a batch of check results was refused; writing them one by one");
            break;
        }
        tracing::warn!(error = %e, retry_in_ms = backoff.as_millis() as u64, "the database is unavailable (unreachable or out of space); keeping check results until it is back");
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(std::time::Duration::from_secs(5));
    }
    if batch.len() == 1 {
        tracing::error!(monitor = %batch[0].monitor_id, "a check result the database refused was dropped");
        return;
    }
    for record in batch {
        let mut backoff = std::time::Duration::from_millis(200);
        loop {
            let Err(e) = write_batch(store, ctx, std::slice::from_ref(record)).await else {
                break;
            };
            // The database went away meanwhile: this record was not refused, keep it.
            if e.is_unavailable() || !store.ping().await {
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(std::time::Duration::from_secs(5));
                continue;
            }
            tracing::error!(monitor = %record.monitor_id, error = %e, "a check result the database refused was dropped");
            break;
        }
    }
}

/// Write one batch atomically: load what it needs, apply each record, persist the rest.
pub async fn write_batch(
    store: &Store,
    ctx: &EngineContext,
    batch: &[CheckRecord],
) -> Result<(), StoreError> {
    let txn = store.begin_write().await?;
    let (fresh, acked) = match unseen(&txn, batch).await? {
        Some((fresh, acked)) => (std::borrow::Cow::Owned(fresh), acked),
        None => (std::borrow::Cow::Borrowed(batch), HashMap::new()),
    };
    let batch = settle(&txn, &fresh).await?;
    let mut state = load(&txn, &batch).await?;
    let mut writes = Writes::default();
    for (record, counted) in &batch {
        apply(&txn, ctx, &mut state, &mut writes, record, *counted).await?;
    }
    let notified = writes.notified;
    let retries = std::mem::take(&mut writes.retries);
    let lasts: Vec<(String, Option<u32>)> = writes
        .last
        .iter()
        .map(|(id, (_, ms))| (id.clone(), ms.and_then(|ms| u32::try_from(ms).ok())))
        .collect();
    persist(&txn, &state, writes).await?;
    for (probe_id, seq) in &acked {
        txn.set_acked_seq(probe_id, *seq).await?;
    }
    txn.commit().await?;
    // `/metrics` shows the last response time as stored (docs: api/metrics/labels.rs).
    crate::telemetry::global()
        .monitors
        .set_last_responses(lasts);
    if notified {
        ctx.outbox_wakeup.notify_one();
    }
    ctx.retries.ask(retries);
    // A failure may open an incident, hold one or start flapping; a notification may
    // resolve one: the background passes look again.
    if notified || batch.iter().any(|(r, _)| !r.ok) {
        ctx.work.tell();
    }
    Ok(())
}

/// The records of `batch` not stored before: a probe's record whose sequence number is at
/// or below the probe's highest stored one (or one already in this batch) is a replay and
/// is left out. Also the highest sequence number of each probe in the batch, to store.
/// None when no record came from a probe (all are kept).
async fn unseen(
    txn: &Tx,
    batch: &[CheckRecord],
) -> Result<Option<(Vec<CheckRecord>, HashMap<String, i64>)>, StoreError> {
    let mut probes: Vec<String> = batch
        .iter()
        .filter_map(|r| r.probe.as_ref().map(|p| p.probe_id.clone()))
        .collect();
    if probes.is_empty() {
        return Ok(None);
    }
    probes.sort_unstable();
    probes.dedup();
    let stored = txn.acked_seqs(probes).await?;
    let mut highest: HashMap<String, i64> = HashMap::new();
    let mut fresh = Vec::with_capacity(batch.len());
    for record in batch {
        if let Some(p) = &record.probe {
            let floor = highest
                .get(&p.probe_id)
                .or_else(|| stored.get(&p.probe_id))
                .copied()
                .unwrap_or(0);
            if p.seq <= floor {
                continue;
            }
            highest.insert(p.probe_id.clone(), p.seq);
        }
        fresh.push(record.clone());
    }
    Ok(Some((fresh, highest)))
}

/// What a batch reads before deciding anything, inside its transaction.
struct BatchState {
    /// The batch's monitors that are not paused (locked on PostgreSQL).
    monitors: HashMap<String, MonitorRow>,
    /// Their health as the batch moves it on.
    healths: HashMap<String, Health>,
    /// Rules of their alert policies, by policy id.
    rules: HashMap<String, Rules>,
    /// Their unresolved incidents, by monitor id.
    open: HashMap<String, IncidentRow>,
    /// Names of their workspaces, by id.
    workspaces: HashMap<String, String>,
    /// Their workspaces' maintenance windows.
    calendar: Calendar,
}

async fn load(txn: &Tx, batch: &[(CheckRecord, bool)]) -> Result<BatchState, StoreError> {
    let mut ids: Vec<String> = batch.iter().map(|(r, _)| r.monitor_id.clone()).collect();
    ids.sort_unstable();
    ids.dedup();
    let monitors: HashMap<String, MonitorRow> = txn
        .monitors_by_ids(ids.clone())
        .await?
        .into_iter()
        .filter(|m| m.status != MonitorState::Paused)
        .map(|m| (m.id.clone(), m))
        .collect();
    let mut policy_ids: Vec<String> = monitors
        .values()
        .filter_map(|m| m.alert_policy_id.clone())
        .collect();
    policy_ids.sort_unstable();
    policy_ids.dedup();
    let policies = txn.policies_by_ids(policy_ids).await?;
    let rules = policy::load_rules(txn, &policies).await?;
    let open = txn.open_incidents_of(ids).await?;
    let mut ws_ids: Vec<String> = monitors.values().map(|m| m.workspace_id.clone()).collect();
    ws_ids.sort_unstable();
    ws_ids.dedup();
    let workspaces = txn.workspace_names(ws_ids.clone()).await?;
    let calendar = Calendar::of(&txn.maintenance_windows_of(ws_ids).await?);
    let healths = monitors
        .values()
        .map(|m| (m.id.clone(), Health::of(m)))
        .collect();
    Ok(BatchState {
        monitors,
        healths,
        rules,
        open,
        workspaces,
        calendar,
    })
}

/// What a batch writes once every record was applied.
#[derive(Default)]
struct Writes {
    /// Check rows that count towards health and uptime.
    counted: Vec<CheckRow>,
    /// Check rows kept as history only (a confirmation round's other checks).
    uncounted: Vec<CheckRow>,
    /// Per monitor: the last check's time and response time.
    last: HashMap<String, (i64, Option<i32>)>,
    /// Whether any outbox row was queued.
    notified: bool,
    /// Failing checks to re-check soon (`retryInterval`), asked for once committed.
    retries: Vec<Retry>,
}

/// Count one record: move its monitor's health on, open or resolve its incident, give
/// certificate notices. Incident changes and their outbox rows are written at once, in
/// the batch's transaction.
async fn apply(
    txn: &Tx,
    ctx: &EngineContext,
    state: &mut BatchState,
    writes: &mut Writes,
    record: &CheckRecord,
    counted: bool,
) -> Result<(), StoreError> {
    // Results of monitors deleted or paused while their check ran are dropped.
    let Some(m) = state.monitors.get(&record.monitor_id) else {
        return Ok(());
    };
    // Parents in this batch are judged by their health as the batch moved it on.
    let fresh: HashMap<String, (MonitorState, i32)> = holds::parents_of(m)
        .into_iter()
        .filter_map(|id| {
            let h = state.healths.get(&id)?;
            Some((id, (h.status, h.consecutive_failures)))
        })
        .collect();
    let Some(h) = state.healths.get_mut(&record.monitor_id) else {
        return Ok(());
    };
    if !counted {
        note(txn, record, false, h.status, false);
        writes.uncounted.push(check_row(record, false));
        return Ok(());
    }
    // Under maintenance a check is kept, marked, and counts for nothing: health, incidents,
    // notices and uptime wait for the window's end.
    if state.calendar.active(m, record.checked_at).is_some() {
        note(txn, record, true, h.status, false);
        writes
            .last
            .insert(record.monitor_id.clone(), last_of(record));
        writes.uncounted.push(CheckRow {
            maintenance: true,
            ..check_row(record, false)
        });
        return Ok(());
    }
    let no_policy = Rules::default();
    let r = m
        .alert_policy_id
        .as_ref()
        .and_then(|p| state.rules.get(p))
        .unwrap_or(&no_policy);
    let outcome = health::Outcome::of(record.ok, record.response_time_ms, m.degraded_after_ms);
    let next = health::count(h, outcome);
    let ictx = Ctx {
        public_url: &ctx.public_url,
        channels: &ctx.channels,
        workspace_id: &m.workspace_id,
        workspace_name: state
            .workspaces
            .get(&m.workspace_id)
            .map_or("", String::as_str),
        now: record.checked_at,
    };
    if !record.ok
        && next.consecutive_failures as u32 >= r.thresholds.failure
        && !state.open.contains_key(&m.id)
    {
        let details: Map<String, Value> = serde_json::from_str(&record.details).unwrap_or_default();
        let failure = events::failure_object(
            record.reason.as_deref().unwrap_or("Check failed"),
            record.status_code,
            record.response_time_ms,
            &record.region,
            &details,
        );
        let mut hold =
            holds::decide_in(txn, m, |id| fresh.get(id).copied(), record.checked_at).await?;
        let flap = flapping::note_change(txn, m, r, record.checked_at).await?;
        if let Some(f) = flap
            && !matches!(hold, Some(Hold::Dependency { .. }))
        {
            hold = Some(Hold::Flapping { since: f.since });
        }
        // Told that it started flapping unless its alerts are held for another reason (a
        // dependency down, a snooze).
        let tell_flapping = flap.filter(|_| matches!(hold, Some(Hold::Flapping { .. })));
        let inc = incidents::open(
            txn,
            &ictx,
            &m.id,
            events::monitor_object(m),
            m.alert_policy_id.as_deref(),
            r,
            failure,
            hold,
        )
        .await?;
        writes.notified |= inc.notified;
        if let Some(f) = tell_flapping
            && f.started.is_some()
            && holds::snooze_in(txn, m, record.checked_at).await?.is_none()
        {
            flapping::started(txn, &ictx, m, r, f, Some(&inc)).await?;
            writes.notified = true;
        }
        state.open.insert(m.id.clone(), inc);
    } else if record.ok
        && next.consecutive_successes as u32 >= r.thresholds.recovery
        && let Some(inc) = state.open.remove(&m.id)
    {
        let flap = flapping::note_change(txn, m, r, record.checked_at).await?;
        // The snooze matters unless the recovery is held for flapping and not told.
        let snoozed = match flap {
            Some(f) if f.started.is_none() => None,
            _ => holds::snooze_in(txn, m, record.checked_at).await?,
        };
        let hold = match (flap, snoozed) {
            (Some(f), _) => Some(Hold::Flapping { since: f.since }),
            (None, until) => until.map(|until| Hold::Snoozed { until }),
        };
        // Held for a dependency: nobody hears of it, its flapping included.
        let suppressed = inc.status == IncidentState::Suppressed;
        incidents::resolve(txn, &ictx, inc, r, None, hold).await?;
        if let Some(f) = flap
            && f.started.is_some()
            && snoozed.is_none()
            && !suppressed
        {
            flapping::started(txn, &ictx, m, r, f, None).await?;
        }
        writes.notified = true;
    }
    if let Some(notice) = certificates::notice_in(&record.details)
        && certificates::notify(txn, &ictx, m, r, state.open.get(&m.id), notice).await?
    {
        writes.notified = true;
    }
    let status = health::status_after(
        h.status,
        &next,
        outcome,
        state.open.contains_key(&m.id),
        r.thresholds.degraded,
    );
    let change = (h.status, status);
    writes.notified |= degraded::tell_change(
        txn,
        &ictx,
        m,
        r,
        change,
        record.response_time_ms,
        next.consecutive_slow,
    )
    .await?;
    // A failure the threshold has not yet turned into an incident: check again soon.
    if !record.ok && m.retry_interval_secs.is_some() && !state.open.contains_key(&m.id) {
        writes.retries.push(Retry {
            monitor_id: m.id.clone(),
            checked_at: record.checked_at,
        });
    }
    note(txn, record, false, status, status != h.status);
    *h = Health { status, ..next };
    writes
        .last
        .insert(record.monitor_id.clone(), last_of(record));
    writes.counted.push(check_row(record, true));
    Ok(())
}

/// Tell open dashboards of a stored check once the batch commits.
fn note(txn: &Tx, record: &CheckRecord, maintenance: bool, status: MonitorState, changed: bool) {
    if txn.listened() {
        txn.note(Seen::Check {
            workspace_id: record.workspace_id.clone(),
            monitor_id: record.monitor_id.clone(),
            checked_at: record.checked_at,
            ok: record.ok,
            response_time_ms: record.response_time_ms,
            reason: record.reason.clone(),
            maintenance,
            state: status.name(),
            changed,
        });
    }
}

/// Write the check rows, the daily rollup and each monitor's new health.
async fn persist(txn: &Tx, state: &BatchState, writes: Writes) -> Result<(), StoreError> {
    // Uptime counts the records that count; history rows do not.
    let daily = day_counts(&writes.counted);
    let mut rows = writes.counted;
    rows.extend(writes.uncounted);
    txn.insert_checks(rows).await?;
    txn.add_daily_uptime(&daily).await?;
    let healths: Vec<(&str, &Health, i64, Option<i32>, bool)> = writes
        .last
        .iter()
        .filter_map(|(id, (checked_at, rt))| {
            let was = state.monitors.get(id)?.status;
            let h = state.healths.get(id)?;
            Some((id.as_str(), h, *checked_at, *rt, h.status != was))
        })
        .collect();
    txn.save_monitor_healths(&healths).await?;
    Ok(())
}

/// A record's time and response time, as a monitor's "last check".
fn last_of(record: &CheckRecord) -> (i64, Option<i32>) {
    let rt = record
        .response_time_ms
        .map(|v| i32::try_from(v).unwrap_or(i32::MAX));
    (record.checked_at, rt)
}

fn check_row(record: &CheckRecord, counted: bool) -> CheckRow {
    CheckRow {
        id: ids::new_id(prefix::CHECK),
        monitor_id: record.monitor_id.clone(),
        workspace_id: record.workspace_id.clone(),
        checked_at: record.checked_at,
        ok: record.ok,
        reason: record.reason.clone(),
        status_code: record.status_code.map(i32::from),
        response_time_ms: record
            .response_time_ms
            .map(|v| i32::try_from(v).unwrap_or(i32::MAX)),
        region: record.region.clone(),
        details: record.details.clone(),
        counted,
        maintenance: false,
    }
}
