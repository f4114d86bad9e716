//! When each monitor is due, and running its checks. Monitors live in a heap keyed by their
//! next due time; each fires at a fixed rate from a phase derived from its id, so thousands
//! of monitors with one interval spread over that interval instead of firing together.
//! Changes reach the scheduler through the store's change feed.

pub mod claims;
pub mod confirm;
pub mod stats;

use crate::clock::SharedClock;
use crate::engine::context::Retry;
use crate::engine::{CheckRecord, Recorder};
use crate::plugins::{CheckRequest, PluginHost, limits};
use crate::store::{MonitorChange, Store};
use crate::store::{MonitorRow, MonitorState};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Semaphore, broadcast, watch};
use tokio::time::Instant;

/// Checks running at once. Each holds a plugin instance while it waits on the network.
pub const MAX_CONCURRENT_CHECKS: usize = crate::plugins::limits::CHECK_INSTANCES as usize;
/// Checks of one workspace running (or waiting for a slot) at once.
pub const MAX_CHECKS_PER_WORKSPACE: usize = crate::plugins::limits::CHECKS_PER_WORKSPACE as usize;

/// After a restart, overdue monitors are spread over at most this long.
const RESTART_SPREAD: Duration = Duration::from_secs(30);
/// New and resumed monitors get their first check within this long (less for shorter
/// intervals), so a script that creates thousands at once does not fire them together.
const FIRST_CHECK_SPREAD: Duration = Duration::from_secs(5);
/// Changes from the feed taken together (read in one query).
const CHANGE_BATCH: usize = 1_000;
/// Monitors read per query when the scheduler loads them all.
const RELOAD_PAGE: u64 = 5_000;
/// Monitors per query of a clustered node's periodic re-read (ids and edit times only).
const STAMP_PAGE: u64 = 20_000;
/// With several nodes, how often a node reads the monitors other nodes changed.
const CLUSTER_SYNC: Duration = Duration::from_secs(2);
/// With several nodes, how often a node re-reads every monitor (to notice deletions).
const CLUSTER_FULL_SYNC: Duration = Duration::from_secs(60);
/// Checks due within a window of a wake-up start with it, up to that much early. Each
/// wake-up of the checks' thread costs a context switch and finds the caches cold, and
/// checks started together share the event loop's wake-ups while their exchanges run: at
/// 250 checks a second, starting each on its own cost a third more CPU per check than
/// starting them in 50 ms groups, and at 25 a second, 500 ms groups cost two fifths less
/// than 50 ms ones (docs/performance.md, "Checks started in groups"). The window is sized
/// for about [`GROUP`] checks at the rate checks were started in the last second, between
/// these bounds. Intervals are whole seconds, so a check never comes round again within
/// the window.
const FIRE_AHEAD_MIN: Duration = Duration::from_millis(50);
const FIRE_AHEAD_MAX: Duration = Duration::from_millis(500);
/// Checks a group aims at.
const GROUP: f64 = 12.0;
/// Changes are read from this long before the last read, so clocks a little apart between
/// nodes, and transactions that commit late, miss nothing.
const CLUSTER_SYNC_OVERLAP_MS: i64 = 10_000;

/// What the scheduler keeps per monitor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduledMonitor {
    pub id: String,
    pub workspace_id: String,
    pub kind: String,
    pub config: String,
    pub interval: Duration,
    /// After a failing check that opened no incident, the next comes this long after it
    /// (`retryInterval`); None: at the interval's rhythm.
    pub retry: Option<Duration>,
    pub timeout: Duration,
    /// Regions the monitor's checks rotate over; empty means every configured region.
    pub regions: Vec<String>,
    /// Where its rounds start within the interval (`phase`), in milliseconds.
    pub phase_ms: i64,
    /// The first bytes of a SHA-256 of its id ([`id_hash`]): its phase, its bucket and its
    /// first check's spread all come from it, computed once.
    pub id_hash: u64,
    /// Its bucket of the claims several nodes share the checks by ([`claims::bucket_of`]).
    pub bucket: i32,
    /// A failure is checked again from another region before it counts.
    pub regional_confirmation: bool,
    /// When the row was last edited (Unix ms): a clustered node's periodic re-read fetches
    /// again only the monitors whose edit time differs.
    pub updated_at: i64,
}

impl ScheduledMonitor {
    pub fn from_row(row: &MonitorRow) -> ScheduledMonitor {
        let id_hash = id_hash(&row.id);
        let interval = crate::ids::Interval::of_hash(id_hash, row.interval_secs);
        ScheduledMonitor {
            id: row.id.clone(),
            workspace_id: row.workspace_id.clone(),
            kind: row.kind.clone(),
            config: row.config.clone(),
            interval: interval.every,
            retry: row
                .retry_interval_secs
                .and_then(|r| u64::try_from(r).ok())
                .filter(|r| *r > 0)
                .map(Duration::from_secs),
            timeout: Duration::from_secs(u64::try_from(row.timeout_secs).unwrap_or(10).max(1)),
            regions: row.region_list(),
            phase_ms: interval.phase_ms(),
            id_hash,
            bucket: claims::bucket_of_hash(id_hash),
            regional_confirmation: row.regional_confirmation,
            updated_at: row.updated_at,
        }
    }
}

pub use crate::ids::{id_hash, phase, phase_of};

/// The round a check at `at_ms` belongs to: rounds start at the monitor's phase and last
/// one interval; a check is counted in the round it is closest to the start of, so a few
/// hundred milliseconds of lateness do not move it.
pub fn round_of(at_ms: i64, phase_ms: i64, interval_ms: i64) -> i64 {
    let interval_ms = interval_ms.max(1);
    (at_ms - phase_ms + interval_ms / 2).div_euclid(interval_ms)
}

/// The region that runs round `round` of a monitor limited to `regions` (empty: all).
pub fn region_for_round<'a>(
    regions: &'a [String],
    all: &'a [String],
    round: i64,
) -> Option<&'a str> {
    let list = if regions.is_empty() { all } else { regions };
    let n = i64::try_from(list.len()).ok().filter(|n| *n > 0)?;
    list.get(usize::try_from(round.rem_euclid(n)).ok()?)
        .map(String::as_str)
}

/// The first start of a round after `after_ms`.
pub fn next_round_start(after_ms: i64, phase_ms: i64, interval_ms: i64) -> i64 {
    let interval_ms = interval_ms.max(1);
    let k = (after_ms - phase_ms).div_euclid(interval_ms) + 1;
    phase_ms + k * interval_ms
}

/// Whether this node's region runs a monitor limited to `regions` (JSON list; empty = all).
pub fn runs_in_region(monitor_id: &str, regions_json: &str, region: &str) -> bool {
    let regions: Vec<String> =
        crate::store::monitors::read_list(monitor_id, "regions", regions_json);
    regions.is_empty() || regions.iter().any(|r| r == region)
}

struct Slot {
    monitor: Arc<ScheduledMonitor>,
    generation: u64,
    due: Instant,
    /// `due` on the wall clock, in Unix milliseconds.
    due_ms: i64,
    /// The check due is a fast re-check of a failure (`retryInterval`), not a round of
    /// the rhythm: it runs here, unclaimed, and the rhythm resumes after it.
    retry: bool,
    /// When its last check was started here (Unix ms; 0: none yet): a re-check asked for
    /// a failure older than that comes too late to be of use.
    fired_ms: i64,
}

/// Runs every active monitor of this node's region at its interval.
pub struct Scheduler {
    store: Store,
    plugins: Arc<PluginHost>,
    recorder: Recorder,
    region: String,
    /// Every configured region, for monitors that run in all of them.
    all_regions: Vec<String>,
    clock: SharedClock,
    permits: Arc<Semaphore>,
    slots: HashMap<String, Slot>,
    heap: BinaryHeap<Reverse<(Instant, u64, String)>>,
    next_generation: u64,
    /// With several nodes on one database: this node's id, and each round is claimed in
    /// the database before it runs, so one node of the region runs it.
    claim_as: Option<Arc<str>>,
    /// With several nodes, how often every monitor is re-read ([`CLUSTER_FULL_SYNC`]).
    full_sync: Duration,
    /// With several nodes: the task that claims rounds in batches (started by `run`).
    claimer: Option<claims::Claimer>,
    /// With several nodes: closed when the node stops, before it gives its slots back.
    claim_gate: Arc<claims::ClaimGate>,
    /// Regions with a live node, for monitors whose failures another region confirms.
    live: confirm::LiveRegions,
    /// With several nodes: when this node last read the monitors, wall clock ms.
    synced_at: i64,
    /// Schedule lag, for the benchmark and diagnosis.
    stats: Arc<stats::SchedulerStats>,
    /// Monitors with a check waiting for a slot: their next round is skipped (and
    /// counted) rather than queued behind it, so an overloaded node holds at most one
    /// waiting check per monitor instead of an ever longer queue.
    waiting: Arc<std::sync::Mutex<std::collections::HashSet<String>>>,
    /// Check slots per workspace ([`MAX_CHECKS_PER_WORKSPACE`] each).
    workspace_slots: Arc<std::sync::Mutex<HashMap<String, Arc<Semaphore>>>>,
    /// How fast checks start here, which sizes the groups they start in.
    pace: Pace,
    /// The recorder's requests for fast re-checks (taken by `run`).
    retries: Option<tokio::sync::mpsc::UnboundedReceiver<Retry>>,
}

/// Checks started per second, counted over whole seconds.
#[derive(Debug)]
struct Pace {
    since: Instant,
    started: u32,
    /// Checks a second over the last whole second counted; none yet at start, when the
    /// first checks come in a burst and groups stay small.
    per_second: Option<f64>,
}

impl Pace {
    fn new(now: Instant) -> Pace {
        Pace {
            since: now,
            started: 0,
            per_second: None,
        }
    }

    fn note(&mut self, now: Instant) {
        let counted = now.saturating_duration_since(self.since);
        if counted >= Duration::from_secs(1) {
            self.per_second = Some(f64::from(self.started) / counted.as_secs_f64());
            self.since = now;
            self.started = 0;
        }
    }

    /// How far ahead of its due time a check may start with this wake-up's group.
    fn window(&self) -> Duration {
        match self.per_second {
            None => FIRE_AHEAD_MIN,
            Some(rate) if rate * FIRE_AHEAD_MAX.as_secs_f64() <= GROUP => FIRE_AHEAD_MAX,
            Some(rate) => Duration::from_secs_f64(GROUP / rate).max(FIRE_AHEAD_MIN),
        }
    }
}

impl Scheduler {
    pub fn new(
        store: Store,
        plugins: Arc<PluginHost>,
        recorder: Recorder,
        region: String,
        all_regions: Vec<String>,
        clock: SharedClock,
    ) -> Scheduler {
        let retries = Some(recorder.retries().listen());
        Scheduler {
            store,
            plugins,
            recorder,
            region,
            all_regions,
            clock,
            permits: Arc::new(Semaphore::new(MAX_CONCURRENT_CHECKS)),
            slots: HashMap::new(),
            heap: BinaryHeap::new(),
            next_generation: 0,
            claim_as: None,
            full_sync: CLUSTER_FULL_SYNC,
            claimer: None,
            claim_gate: Arc::default(),
            live: confirm::LiveRegions::default(),
            synced_at: 0,
            stats: Arc::default(),
            waiting: Arc::default(),
            workspace_slots: Arc::default(),
            pace: Pace::new(Instant::now()),
            retries,
        }
    }

    /// The check slots (a semaphore of [`MAX_CONCURRENT_CHECKS`]), for other work that runs
    /// checks and must share the same bound (regional confirmation).
    pub fn permits(&self) -> Arc<Semaphore> {
        self.permits.clone()
    }

    /// Figures the scheduler keeps while it runs (schedule lag).
    pub fn stats(&self) -> Arc<stats::SchedulerStats> {
        self.stats.clone()
    }

    /// Send failures of monitors with regional confirmation to a live region of `live`.
    pub fn confirming(mut self, live: confirm::LiveRegions) -> Scheduler {
        self.live = live;
        self
    }

    /// Claim every round in the database before running it, as node `node_id`: for
    /// several nodes sharing one (PostgreSQL) database. Rounds are claimed by slot (a
    /// bucket of monitors and a second of the schedule, [`claims`]). A node that loses
    /// the claim skips the round; one that dies simply stops claiming, and the others
    /// carry on from the next second.
    pub fn claiming(mut self, node_id: &str) -> Scheduler {
        self.claim_as = Some(Arc::from(node_id));
        self
    }

    /// The gate a stopping node closes before it gives its slots back: from then on none
    /// of its checks claims a slot or runs in one.
    pub fn claim_gate(&self) -> Arc<claims::ClaimGate> {
        self.claim_gate.clone()
    }

    /// With several nodes: re-read every monitor's id and edit time this often (default a
    /// minute), to drop those deleted on other nodes and take edits the short syncs
    /// missed.
    pub fn full_sync_every(mut self, every: Duration) -> Scheduler {
        self.full_sync = every;
        self
    }

    /// Run until `shutdown` turns true.
    pub async fn run(mut self, mut shutdown: watch::Receiver<bool>) {
        let mut changes = self.store.subscribe_monitor_changes();
        let mut retries = self
            .retries
            .take()
            .unwrap_or_else(|| tokio::sync::mpsc::unbounded_channel().1);
        if let Some(node) = &self.claim_as {
            self.claimer = Some(claims::Claimer::spawn(
                self.store.clone(),
                self.region.clone(),
                node.clone(),
                self.clock.clone(),
                MAX_CONCURRENT_CHECKS,
                self.claim_gate.clone(),
            ));
        }
        self.reload_all(false).await;
        // Other nodes' API edits reach this node by re-reading the monitors.
        let mut sync = tokio::time::interval(if self.claim_as.is_some() {
            CLUSTER_SYNC
        } else {
            Duration::from_secs(3600)
        });
        sync.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        sync.tick().await;
        let mut full_sync_at = Instant::now() + self.full_sync;
        loop {
            let next_due = self.heap.peek().map(|Reverse((due, _, _))| *due);
            let sleep = tokio::time::sleep_until(
                next_due.unwrap_or_else(|| Instant::now() + Duration::from_secs(3600)),
            );
            tokio::select! {
                _ = sleep => self.fire_due(),
                Some(retry) = retries.recv() => self.retry_soon(&retry),
                _ = sync.tick() => if self.claim_as.is_some() {
                    if Instant::now() >= full_sync_at {
                        full_sync_at = Instant::now() + self.full_sync;
                        self.resync_all().await;
                    } else {
                        self.sync_changes().await;
                    }
                },
                change = changes.recv() => match change {
                    Ok(first) => {
                        // Take every change waiting as well, and read them in one query:
                        // a script creating thousands of monitors costs a few reads, not
                        // one each (and the feed never falls behind into a full reload).
                        let mut batch = vec![first];
                        let mut lagged = false;
                        while batch.len() < CHANGE_BATCH {
                            match changes.try_recv() {
                                Ok(change) => batch.push(change),
                                Err(broadcast::error::TryRecvError::Lagged(_)) => {
                                    lagged = true;
                                    break;
                                }
                                Err(_) => break,
                            }
                        }
                        if lagged {
                            self.reload_all(false).await;
                        } else {
                            self.apply_changes(batch).await;
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(_)) => self.reload_all(false).await,
                    Err(broadcast::error::RecvError::Closed) => break,
                },
                _ = shutdown.changed() => if *shutdown.borrow() { break },
            }
        }
    }

    /// Take the monitors changed since the last read (other nodes' API edits).
    async fn sync_changes(&mut self) {
        let now_ms = self.clock.now_ms();
        let rows = match self
            .store
            .monitors_updated_since(self.synced_at - CLUSTER_SYNC_OVERLAP_MS)
            .await
        {
            Ok(rows) => rows,
            Err(e) => {
                tracing::warn!(error = %e, "scheduler could not read changed monitors; retrying later");
                return;
            }
        };
        self.synced_at = now_ms;
        for row in rows {
            let unchanged = self
                .slots
                .get(&row.id)
                .is_some_and(|s| *s.monitor == ScheduledMonitor::from_row(&row));
            if !unchanged {
                let id = row.id.clone();
                self.apply(&id, Some(row));
            }
        }
    }

    async fn reload_all(&mut self, quiet: bool) {
        let synced_at = self.clock.now_ms();
        let mut seen = std::collections::HashSet::new();
        let mut after: Option<String> = None;
        loop {
            let rows = match self
                .store
                .active_monitors_after(after.as_deref(), RELOAD_PAGE)
                .await
            {
                Ok(rows) => rows,
                Err(e) => {
                    tracing::error!(error = %e, "scheduler could not load monitors; retrying later");
                    return;
                }
            };
            let last_page = rows.len() < RELOAD_PAGE as usize;
            after = rows.last().map(|r| r.id.clone());
            self.take_loaded(rows, &mut seen);
            if last_page {
                break;
            }
            // Checks of the monitors read so far start while the rest are read (a million
            // monitors take seconds to read).
            self.fire_due();
        }
        self.synced_at = synced_at;
        let before = self.slots.len();
        self.slots.retain(|id, _| seen.contains(id));
        if !quiet || self.slots.len() != before {
            tracing::info!(monitors = self.slots.len(), region = %self.region, "scheduler loaded monitors");
        }
    }

    /// A clustered node's periodic full re-read, for what the change feed and the short
    /// syncs missed (a monitor deleted or paused on another node, an edit read too early):
    /// the ids, types, regions and edit times of every active monitor, in pages, and the
    /// whole rows only of those new here or edited since they were read. At 100,000
    /// monitors re-reading every row took 20 queries of 5,000 wide rows, each about 300 ms
    /// on PostgreSQL, with due checks waiting behind each one (docs/performance.md).
    async fn resync_all(&mut self) {
        let synced_at = self.clock.now_ms();
        let mut seen = std::collections::HashSet::new();
        let mut stale: Vec<String> = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let stamps = match self
                .store
                .active_monitor_stamps_after(after.as_deref(), STAMP_PAGE)
                .await
            {
                Ok(stamps) => stamps,
                Err(e) => {
                    tracing::error!(error = %e, "scheduler could not re-read monitors; retrying later");
                    return;
                }
            };
            let last_page = stamps.len() < STAMP_PAGE as usize;
            after = stamps.last().map(|s| s.id.clone());
            for stamp in stamps {
                if !self.checks_here(&stamp.id, &stamp.kind, &stamp.regions) {
                    continue;
                }
                let current = self
                    .slots
                    .get(&stamp.id)
                    .is_some_and(|slot| slot.monitor.updated_at == stamp.updated_at);
                if !current {
                    stale.push(stamp.id.clone());
                }
                seen.insert(stamp.id);
            }
            if last_page {
                break;
            }
            self.fire_due();
        }
        if !stale.is_empty() {
            let rows = match self.store.monitors_by_id_any(stale.clone()).await {
                Ok(rows) => rows,
                Err(e) => {
                    tracing::error!(error = %e, "scheduler could not re-read monitors; retrying later");
                    return;
                }
            };
            // Those gone or paused between the two reads are dropped below.
            for id in &stale {
                seen.remove(id);
            }
            let rows = rows
                .into_iter()
                .filter(|r| r.status != MonitorState::Paused)
                .collect();
            self.take_loaded(rows, &mut seen);
        }
        self.synced_at = synced_at;
        self.slots.retain(|id, _| seen.contains(id));
    }

    /// Schedule one page of the monitors read by [`Scheduler::reload_all`].
    fn take_loaded(&mut self, rows: Vec<MonitorRow>, seen: &mut std::collections::HashSet<String>) {
        let now = Instant::now();
        let now_ms = self.clock.now_ms();
        for row in rows {
            if !self.runs_here(&row) {
                continue;
            }
            seen.insert(row.id.clone());
            let m = ScheduledMonitor::from_row(&row);
            if let Some(slot) = self.slots.get(&row.id) {
                // Edited elsewhere (another node's API): take the new settings, keeping the
                // rhythm as an edit here would.
                if *slot.monitor != m {
                    let due = if slot.monitor.interval == m.interval {
                        slot.due
                    } else {
                        slot.due.min(now + m.interval)
                    };
                    self.insert(m, due);
                }
                continue;
            }
            // Resume the rhythm: due one interval after the last check, and spread those
            // already overdue over a short window rather than firing them at once.
            let due_in = match row.last_checked_at {
                Some(last) => {
                    let wait =
                        last + i64::try_from(m.interval.as_millis()).unwrap_or(i64::MAX) - now_ms;
                    Duration::from_millis(u64::try_from(wait).unwrap_or(0)).min(m.interval)
                }
                None => Duration::ZERO,
            };
            let due_in = if due_in.is_zero() {
                phase_of(m.id_hash, m.interval.min(RESTART_SPREAD))
            } else {
                due_in
            };
            // Stopped while re-checking a failure fast: the re-check is still due (spread
            // like other overdue checks). With several nodes the one that saw the failure
            // is not known here, so the rhythm's next round decides instead.
            let retry_in = retry_pending(&row, &m)
                .filter(|_| self.claim_as.is_none())
                .map(|every| {
                    let last = row.last_checked_at.unwrap_or(now_ms);
                    let wait = last + i64::try_from(every.as_millis()).unwrap_or(i64::MAX) - now_ms;
                    match u64::try_from(wait) {
                        Ok(wait) if wait > 0 => Duration::from_millis(wait),
                        _ => phase_of(m.id_hash, every.min(RESTART_SPREAD)),
                    }
                });
            match retry_in {
                Some(retry_in) if retry_in < due_in => {
                    self.place(Arc::new(m), now + retry_in, true)
                }
                _ => self.insert(m, now + due_in),
            }
        }
    }

    /// Apply changes from the feed, in order: deletions drop their monitor, and every
    /// created or edited monitor is read again (in one query for all of them).
    async fn apply_changes(&mut self, changes: Vec<MonitorChange>) {
        let mut changed: Vec<String> = Vec::new();
        for change in changes {
            match change {
                MonitorChange::Upserted(id) => changed.push(id),
                MonitorChange::Deleted(id) => {
                    changed.retain(|c| *c != id);
                    self.slots.remove(&id);
                }
            }
        }
        changed.sort_unstable();
        changed.dedup();
        if changed.is_empty() {
            return;
        }
        let rows = match self.store.monitors_by_id_any(changed.clone()).await {
            Ok(rows) => rows,
            Err(e) => {
                tracing::error!(monitors = changed.len(), error = %e, "scheduler could not load changed monitors");
                return;
            }
        };
        let mut rows: HashMap<String, MonitorRow> =
            rows.into_iter().map(|r| (r.id.clone(), r)).collect();
        for id in changed {
            let row = rows.remove(&id);
            self.apply(&id, row);
        }
    }

    /// Schedule, reschedule or drop monitor `id` given its stored row (None: deleted).
    fn apply(&mut self, id: &str, row: Option<MonitorRow>) {
        let Some(row) = row.filter(|r| r.status != MonitorState::Paused && self.runs_here(r))
        else {
            self.slots.remove(id);
            return;
        };
        let m = ScheduledMonitor::from_row(&row);
        let now = Instant::now();
        let due = match self.slots.get(id) {
            // Unchanged schedule: keep the rhythm. Changed interval: never wait longer than it.
            Some(slot) if slot.monitor.interval == m.interval => slot.due,
            Some(slot) => slot.due.min(now + m.interval),
            // New or resumed: check soon.
            None => now + phase_of(m.id_hash, m.interval.min(FIRST_CHECK_SPREAD)),
        };
        self.insert(m, due);
    }

    /// Whether this node checks the monitor: one of its regions, and a type the server
    /// checks (heartbeat monitors are pinged instead; see `engine::heartbeat`).
    fn runs_here(&self, row: &MonitorRow) -> bool {
        self.checks_here(&row.id, &row.kind, &row.regions)
    }

    /// [`Scheduler::runs_here`] from a monitor's type and regions (JSON array text).
    fn checks_here(&self, id: &str, kind: &str, regions: &str) -> bool {
        kind != crate::plugins::HEARTBEAT && runs_in_region(id, regions, &self.region)
    }

    /// Schedule `monitor` at `due`. A fast re-check already due then stays one (an edit
    /// that keeps the rhythm keeps it).
    fn insert(&mut self, monitor: ScheduledMonitor, due: Instant) {
        let retry = self
            .slots
            .get(&monitor.id)
            .is_some_and(|slot| slot.retry && slot.due == due && monitor.retry.is_some());
        self.place(Arc::new(monitor), due, retry);
    }

    /// A failing check asked for a fast re-check: bring the monitor's next check forward
    /// to `retryInterval` after it, unless a check has started since the failing one (a
    /// result written late, after an outage of the database, asks too late). The round
    /// after a re-check starts once the re-check's timeout has passed; with several
    /// nodes, where another node may run that round, a re-check that could not end
    /// before the next round starts is not made.
    fn retry_soon(&mut self, retry: &Retry) {
        let Some(slot) = self.slots.get(&retry.monitor_id) else {
            return; // deleted, paused or moved to another region since
        };
        let Some(every) = slot.monitor.retry else {
            return;
        };
        if slot.fired_ms > retry.checked_at {
            return;
        }
        let now_ms = self.clock.now_ms();
        let due_ms =
            (retry.checked_at + i64::try_from(every.as_millis()).unwrap_or(i64::MAX)).max(now_ms);
        if due_ms >= slot.due_ms {
            return;
        }
        // Alone, this node moves its own next round to after the re-check (`fire_due`).
        // With several nodes, another node may run that round: the re-check must end first.
        let timeout_ms = i64::try_from(slot.monitor.timeout.as_millis()).unwrap_or(i64::MAX);
        if self.claim_as.is_some() && due_ms.saturating_add(timeout_ms) > slot.due_ms {
            return;
        }
        let due =
            Instant::now() + Duration::from_millis(u64::try_from(due_ms - now_ms).unwrap_or(0));
        let monitor = slot.monitor.clone();
        self.place(monitor, due, true);
    }

    fn place(&mut self, monitor: Arc<ScheduledMonitor>, due: Instant, retry: bool) {
        let fired_ms = self.slots.get(&monitor.id).map_or(0, |slot| slot.fired_ms);
        self.next_generation += 1;
        let generation = self.next_generation;
        let id = monitor.id.clone();
        let ahead = due.saturating_duration_since(Instant::now());
        let due_ms = self.clock.now_ms() + i64::try_from(ahead.as_millis()).unwrap_or(0);
        self.heap.push(Reverse((due, generation, id.clone())));
        self.slots.insert(
            id,
            Slot {
                monitor,
                generation,
                due,
                due_ms,
                retry,
                fired_ms,
            },
        );
    }

    fn fire_due(&mut self) {
        let now = Instant::now();
        let fired_ms = self.clock.now_ms();
        self.pace.note(now);
        let horizon = now + self.pace.window();
        while let Some(Reverse((due, generation, _))) = self.heap.peek() {
            if *due > horizon {
                break;
            }
            let (due, generation) = (*due, *generation);
            let Some(Reverse((_, _, id))) = self.heap.pop() else {
                break;
            };
            let Some(slot) = self.slots.get_mut(&id) else {
                continue;
            };
            if slot.generation != generation {
                continue; // superseded by an edit
            }
            let interval = slot.monitor.interval;
            let interval_ms = i64::try_from(interval.as_millis())
                .unwrap_or(i64::MAX)
                .max(1);
            let phase_ms = slot.monitor.phase_ms;
            let round = round_of(slot.due_ms, phase_ms, interval_ms);
            // Fixed rate, drifting by at most an eighth of the interval per round towards
            // the round starts every node shares (so nodes converge on one rhythm without
            // a check ever coming much early or late). After a stall, skip missed rounds
            // instead of bursting through them.
            let lag_ms = i64::try_from(now.saturating_duration_since(due).as_millis()).unwrap_or(0);
            // When it actually starts (checks start up to a window early): a failure of a
            // check started before this one asks too late.
            slot.fired_ms = fired_ms;
            let retry = std::mem::take(&mut slot.retry);
            let next_ms = if retry {
                // After a fast re-check the rhythm resumes at its next round, one that
                // starts after this check's timeout, so the two never overlap.
                let timeout_ms = i64::try_from(slot.monitor.timeout.as_millis()).unwrap_or(0);
                next_round_start(slot.due_ms + lag_ms + timeout_ms, phase_ms, interval_ms)
            } else {
                let natural = slot.due_ms + interval_ms;
                let aligned =
                    next_round_start(slot.due_ms + interval_ms / 2, phase_ms, interval_ms);
                let max_shift = interval_ms / 8;
                let next_ms = natural + (aligned - natural).clamp(-max_shift, max_shift);
                if next_ms <= slot.due_ms + lag_ms {
                    next_round_start(slot.due_ms + lag_ms, phase_ms, interval_ms)
                } else {
                    next_ms
                }
            };
            let next =
                due + Duration::from_millis(u64::try_from(next_ms - slot.due_ms).unwrap_or(0));
            slot.due = next;
            slot.due_ms = next_ms;
            self.heap.push(Reverse((next, generation, id)));
            // Rounds rotate over the monitor's regions; this node runs its own region's.
            // A fast re-check runs where the failure was seen.
            let mine = retry
                || region_for_round(&slot.monitor.regions, &self.all_regions, round)
                    .is_none_or(|r| r == self.region);
            if mine {
                let monitor = slot.monitor.clone();
                self.pace.started += 1;
                self.spawn_check(monitor, round, due, !retry);
            }
        }
    }

    /// The check slots of one workspace.
    fn workspace_slots(&self, workspace_id: &str) -> Arc<Semaphore> {
        let mut slots = match self.workspace_slots.lock() {
            Ok(s) => s,
            Err(poisoned) => poisoned.into_inner(),
        };
        // Forget idle workspaces now and then (a full semaphore is a fresh one).
        if slots.len() > 10_000 {
            slots.retain(|_, s| s.available_permits() < MAX_CHECKS_PER_WORKSPACE);
        }
        slots
            .entry(workspace_id.to_string())
            .or_insert_with(|| Arc::new(Semaphore::new(MAX_CHECKS_PER_WORKSPACE)))
            .clone()
    }

    /// Start a check of `monitor` for `round`, claiming the round first (`claim`) when
    /// several nodes share the checks; a fast re-check is this node's own.
    fn spawn_check(&self, monitor: Arc<ScheduledMonitor>, round: i64, due: Instant, claim: bool) {
        let telemetry = crate::telemetry::global();
        telemetry.checks_due.inc();
        let waiting = match self.waiting.lock() {
            Ok(mut w) => w.insert(monitor.id.clone()).then(|| WaitingGuard {
                set: self.waiting.clone(),
                id: monitor.id.clone(),
            }),
            Err(_) => None,
        };
        let Some(waiting) = waiting else {
            // The previous round is still waiting for a slot: this one is late before it
            // starts, so skip it.
            self.stats.record_skipped();
            telemetry.checks_skipped.inc();
            tracing::debug!(monitor = %monitor.id, "previous check still waiting for a slot; round skipped");
            return;
        };
        let workspace_slots = self.workspace_slots(&monitor.workspace_id);
        let plugins = self.plugins.clone();
        let store = self.store.clone();
        // A stopping node that gave its slots back runs no re-check either.
        if !claim && self.claim_gate.is_closed() {
            return;
        }
        let claimer = self.claimer.clone().filter(|_| claim);
        let recorder = self.recorder.clone();
        let permits = self.permits.clone();
        let region = self.region.clone();
        let clock = self.clock.clone();
        let live = self.live.clone();
        let all_regions = self.all_regions.clone();
        let stats = self.stats.clone();
        tokio::spawn(async move {
            // The workspace's share first, then a slot of the node.
            let Ok(_workspace_permit) = workspace_slots.acquire_owned().await else {
                return;
            };
            let Ok(_permit) = permits.acquire_owned().await else {
                return;
            };
            drop(waiting);
            // Lag: from when the check was due to when it could start (a permit free).
            let lag = due.elapsed();
            stats.record_lag(lag);
            telemetry.schedule_lag.observe(lag.as_secs_f64());
            if lag > Duration::from_secs(1) {
                tracing::debug!(monitor = %monitor.id, lag_ms = lag.as_millis() as u64, "check started late");
                warn_late(clock.now_ms(), lag);
            }
            if let Some(claimer) = claimer {
                let interval_ms = i64::try_from(monitor.interval.as_millis()).unwrap_or(i64::MAX);
                match claimer
                    .claim(monitor.bucket, round, monitor.phase_ms, interval_ms)
                    .await
                {
                    Ok(true) => {}
                    Ok(false) => return, // another node of the region runs this slot
                    Err(e) => {
                        // Without the database the result could not be recorded either.
                        tracing::warn!(monitor = %monitor.id, error = %e, "cannot claim a check; skipped");
                        return;
                    }
                }
            }
            let record = run_check(&plugins, &monitor, &region, 1, clock.now_ms()).await;
            if !record.ok && monitor.regional_confirmation {
                confirm::request_or_record(
                    &store,
                    &recorder,
                    &live,
                    &monitor,
                    &all_regions,
                    round,
                    record,
                )
                .await;
            } else {
                recorder.record(record);
            }
        });
    }
}

/// A stored monitor's fast re-check still to come: it has `retryInterval`, its last check
/// failed and no incident is open (its state is not down).
fn retry_pending(row: &MonitorRow, m: &ScheduledMonitor) -> Option<Duration> {
    (row.consecutive_failures > 0
        && matches!(
            row.status,
            MonitorState::Up | MonitorState::Degraded | MonitorState::Pending
        ))
    .then_some(m.retry)
    .flatten()
}

/// When checks starting late were last logged as a warning (Unix ms).
static LATE_WARNED_AT: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(0);

/// Say, at most once a minute, that checks start more than a second late: the node is at
/// its capacity (its check threads busy, or every slot taken by slow checks).
fn warn_late(now_ms: i64, lag: Duration) {
    use std::sync::atomic::Ordering;
    let last = LATE_WARNED_AT.load(Ordering::Relaxed);
    if now_ms - last >= 60_000
        && LATE_WARNED_AT
            .compare_exchange(last, now_ms, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    {
        tracing::warn!(
            lag_ms = u64::try_from(lag.as_millis()).unwrap_or(u64::MAX),
            "checks are starting more than a second late: this node is at its capacity; raise check_threads if its CPU has room, or add a node"
        );
    }
}

/// Marks a monitor's check as waiting for a slot until dropped.
struct WaitingGuard {
    set: Arc<std::sync::Mutex<std::collections::HashSet<String>>>,
    id: String,
}

impl Drop for WaitingGuard {
    fn drop(&mut self) {
        if let Ok(mut s) = self.set.lock() {
            s.remove(&self.id);
        }
    }
}

/// A plugin's details as stored: kept when they are one JSON object within the size
/// limit (checked without building the object), `{}` otherwise.
pub fn kept_details(details: String) -> String {
    if details.len() <= limits::MAX_DETAILS_BYTES
        && serde_json::from_str::<&serde_json::value::RawValue>(&details)
            .is_ok_and(|v| v.get().starts_with('{'))
    {
        details
    } else {
        "{}".into()
    }
}

/// Run one check of `monitor` and describe the result. `attempt` is 1 for the scheduled
/// check and 2 for a re-check from another region that confirms a failure.
pub async fn run_check(
    plugins: &PluginHost,
    monitor: &ScheduledMonitor,
    region: &str,
    attempt: u32,
    started_ms: i64,
) -> CheckRecord {
    let timeout_ms = u32::try_from(monitor.timeout.as_millis()).unwrap_or(u32::MAX);
    let outcome = match plugins.monitor(&monitor.kind) {
        None => Err(format!("No loaded plugin provides the monitor type `{}`", monitor.kind)),
        Some(plugin) => plugins
            .check_for(
                &monitor.workspace_id,
                &plugin,
                CheckRequest {
                    config: monitor.config.clone(),
                    timeout_ms,
                    monitor_id: monitor.id.clone(),
                    region: region.to_string(),
                    settings: "{}".into(),
                    attempt,
                },
            )
            .await
            .map_err(|e| {
                tracing::warn!(monitor = %monitor.id, plugin = %monitor.kind, error = %e, "plugin call failed");
                format!("Monitor plugin failed: {e}")
            }),
    };
    match outcome {
        Ok(o) => CheckRecord {
            monitor_id: monitor.id.clone(),
            workspace_id: monitor.workspace_id.clone(),
            checked_at: started_ms,
            ok: o.ok,
            reason: if o.ok {
                None
            } else {
                Some(crate::text::bounded(
                    o.reason.as_deref().unwrap_or("Check failed"),
                    crate::text::MAX_REASON_BYTES,
                ))
            },
            status_code: o.status_code,
            response_time_ms: o.response_time_ms,
            region: region.to_string(),
            confirmation: None,
            probe: None,
            details: kept_details(o.details),
        },
        Err(reason) => CheckRecord {
            monitor_id: monitor.id.clone(),
            workspace_id: monitor.workspace_id.clone(),
            checked_at: started_ms,
            ok: false,
            reason: Some(crate::text::bounded(&reason, crate::text::MAX_REASON_BYTES)),
            status_code: None,
            response_time_ms: None,
            region: region.to_string(),
            details: "{}".into(),
            confirmation: None,
            probe: None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_spread_over_the_interval() {
        let interval = Duration::from_secs(60);
        let mut buckets = [0u32; 6];
        for i in 0..6000 {
            let p = phase(&format!("mon_{i:026}"), interval);
            assert!(p < interval);
            buckets[(p.as_secs() / 10) as usize] += 1;
        }
        // Every 10-second bucket gets roughly a sixth of the monitors.
        assert!(
            buckets.iter().all(|b| (800..1200).contains(b)),
            "{buckets:?}"
        );
        assert_eq!(phase("mon_x", interval), phase("mon_x", interval));
    }

    #[test]
    fn rounds_rotate_over_regions_and_tolerate_lateness() {
        let (start, interval) = (400, 1000);
        // A check 300 ms late or early still counts in its round.
        assert_eq!(round_of(5_400, start, interval), 5);
        assert_eq!(round_of(5_700, start, interval), 5);
        assert_eq!(round_of(5_100, start, interval), 5);
        assert_eq!(next_round_start(5_400 + 500, start, interval), 6_400);
        assert_eq!(next_round_start(5_000, start, interval), 5_400);
        let all: Vec<String> = vec!["eu".into(), "us".into(), "ap".into()];
        let two: Vec<String> = vec!["us".into(), "ap".into()];
        let seq: Vec<&str> = (0..4)
            .filter_map(|r| region_for_round(&two, &all, r))
            .collect();
        assert_eq!(seq, ["us", "ap", "us", "ap"]);
        assert_eq!(region_for_round(&[], &all, 4), Some("us"));
        assert_eq!(region_for_round(&[], &[], 4), None);
    }

    #[test]
    fn groups_are_sized_by_the_pace_of_checks() {
        let start = Instant::now();
        let mut pace = Pace::new(start);
        // Nothing counted yet (a start, when first checks come in a burst): small groups.
        assert_eq!(pace.window(), FIRE_AHEAD_MIN);
        // 20 checks a second: the largest window, 10 checks.
        pace.started = 20;
        pace.note(start + Duration::from_secs(1));
        assert_eq!(pace.window(), FIRE_AHEAD_MAX);
        assert_eq!(pace.started, 0);
        // 25 checks a second (500 monitors at 20 s): groups of 12, about half a second.
        pace.started = 25;
        pace.note(start + Duration::from_millis(2_000));
        assert_eq!(pace.window(), Duration::from_millis(480));
        // 120 a second: a tenth of a second holds 12.
        pace.started = 120;
        pace.note(start + Duration::from_secs(3));
        assert_eq!(pace.window(), Duration::from_millis(100));
        // 1,667 a second (100,000 at 60 s): never below the smallest window.
        pace.started = 1_667;
        pace.note(start + Duration::from_secs(4));
        assert_eq!(pace.window(), FIRE_AHEAD_MIN);
        // Within a second nothing changes.
        pace.started = 1;
        pace.note(start + Duration::from_millis(4_500));
        assert_eq!(pace.window(), FIRE_AHEAD_MIN);
    }

    #[test]
    fn details_are_kept_only_as_one_object() {
        let kept = r#" {"status": 200, "headers": {"a": [1, "b"]}} "#;
        assert_eq!(kept_details(kept.into()), kept);
        for refused in ["[1, 2]", "\"text\"", "12", "{\"a\": 1", "{} {}", "", "null"] {
            assert_eq!(kept_details(refused.into()), "{}", "{refused}");
        }
        let big = format!(r#"{{"a": "{}"}}"#, "x".repeat(limits::MAX_DETAILS_BYTES));
        assert_eq!(kept_details(big), "{}");
    }

    #[test]
    fn a_failure_below_the_threshold_is_re_checked_after_a_restart() {
        let mut row = MonitorRow::new("mon_x", "ws_x", "http", 0);
        row.retry_interval_secs = Some(5);
        row.consecutive_failures = 1;
        row.status = MonitorState::Up;
        let retry = |row: &MonitorRow| retry_pending(row, &ScheduledMonitor::from_row(row));
        assert_eq!(retry(&row), Some(Duration::from_secs(5)));
        // Before its first success too.
        assert_eq!(
            retry(&MonitorRow {
                status: MonitorState::Pending,
                ..row.clone()
            }),
            Some(Duration::from_secs(5))
        );
        // Not once the incident is open, after a pass, or without the setting.
        for other in [
            MonitorRow {
                status: MonitorState::Down,
                ..row.clone()
            },
            MonitorRow {
                consecutive_failures: 0,
                ..row.clone()
            },
            MonitorRow {
                retry_interval_secs: None,
                ..row.clone()
            },
        ] {
            assert_eq!(retry(&other), None);
        }
    }

    #[test]
    fn region_filter() {
        assert!(runs_in_region("mon_a", "[]", "eu"));
        assert!(runs_in_region("mon_a", r#"["eu","us"]"#, "eu"));
        assert!(!runs_in_region("mon_a", r#"["us"]"#, "eu"));
    }
}
