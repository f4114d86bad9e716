//! When each monitor is due, and running its checks. Monitors live in a heap keyed by their
//! next due time; each fires at a fixed rate from a phase derived from its id, so thousands
//! of monitors with one interval spread over that interval instead of firing together.
//! Changes reach the scheduler through the store's change feed.

use crate::clock::SharedClock;
use crate::engine::{CheckRecord, Recorder};
use crate::plugins::{CheckRequest, PluginHost};
use crate::store::monitors::{MonitorRow, status};
use crate::store::{MonitorChange, Store};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Semaphore, broadcast, watch};
use tokio::time::Instant;

/// Checks running at once. Each holds a plugin instance while it waits on the network.
pub const MAX_CONCURRENT_CHECKS: usize = crate::plugins::limits::POOL_INSTANCES as usize;

/// After a restart, overdue monitors are spread over at most this long.
const RESTART_SPREAD: Duration = Duration::from_secs(30);
/// New and resumed monitors get their first check within this long (less for shorter
/// intervals), so a script that creates thousands at once does not fire them together.
const FIRST_CHECK_SPREAD: Duration = Duration::from_secs(5);

/// What the scheduler keeps per monitor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduledMonitor {
    pub id: String,
    pub workspace_id: String,
    pub kind: String,
    pub config: String,
    pub interval: Duration,
    pub timeout: Duration,
}

impl ScheduledMonitor {
    fn from_row(row: &MonitorRow) -> ScheduledMonitor {
        ScheduledMonitor {
            id: row.id.clone(),
            workspace_id: row.workspace_id.clone(),
            kind: row.kind.clone(),
            config: row.config.clone(),
            interval: Duration::from_secs(u64::try_from(row.interval_secs).unwrap_or(60).max(1)),
            timeout: Duration::from_secs(u64::try_from(row.timeout_secs).unwrap_or(10).max(1)),
        }
    }
}

/// A monitor's fixed offset within its interval.
pub fn phase(id: &str, interval: Duration) -> Duration {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    id.hash(&mut h);
    let ms = u64::try_from(interval.as_millis())
        .unwrap_or(u64::MAX)
        .max(1);
    Duration::from_millis(h.finish() % ms)
}

/// Whether this node's region runs a monitor limited to `regions` (JSON list; empty = all).
pub fn runs_in_region(regions_json: &str, region: &str) -> bool {
    let regions: Vec<String> = serde_json::from_str(regions_json).unwrap_or_default();
    regions.is_empty() || regions.iter().any(|r| r == region)
}

struct Slot {
    monitor: Arc<ScheduledMonitor>,
    generation: u64,
    due: Instant,
}

/// Runs every active monitor of this node's region at its interval.
pub struct Scheduler {
    store: Store,
    plugins: Arc<PluginHost>,
    recorder: Recorder,
    region: String,
    clock: SharedClock,
    permits: Arc<Semaphore>,
    slots: HashMap<String, Slot>,
    heap: BinaryHeap<Reverse<(Instant, u64, String)>>,
    next_generation: u64,
}

impl Scheduler {
    pub fn new(
        store: Store,
        plugins: Arc<PluginHost>,
        recorder: Recorder,
        region: String,
        clock: SharedClock,
    ) -> Scheduler {
        Scheduler {
            store,
            plugins,
            recorder,
            region,
            clock,
            permits: Arc::new(Semaphore::new(MAX_CONCURRENT_CHECKS)),
            slots: HashMap::new(),
            heap: BinaryHeap::new(),
            next_generation: 0,
        }
    }

    /// Run until `shutdown` turns true.
    pub async fn run(mut self, mut shutdown: watch::Receiver<bool>) {
        let mut changes = self.store.subscribe_monitor_changes();
        self.reload_all().await;
        loop {
            let next_due = self.heap.peek().map(|Reverse((due, _, _))| *due);
            let sleep = tokio::time::sleep_until(
                next_due.unwrap_or_else(|| Instant::now() + Duration::from_secs(3600)),
            );
            tokio::select! {
                _ = sleep => self.fire_due(),
                change = changes.recv() => match change {
                    Ok(MonitorChange::Upserted(id)) => self.reload_one(&id).await,
                    Ok(MonitorChange::Deleted(id)) => { self.slots.remove(&id); }
                    Err(broadcast::error::RecvError::Lagged(_)) => self.reload_all().await,
                    Err(broadcast::error::RecvError::Closed) => break,
                },
                _ = shutdown.changed() => if *shutdown.borrow() { break },
            }
        }
    }

    async fn reload_all(&mut self) {
        let rows = match self.store.active_monitors().await {
            Ok(rows) => rows,
            Err(e) => {
                tracing::error!(error = %e, "scheduler could not load monitors; retrying later");
                return;
            }
        };
        let now = Instant::now();
        let now_ms = self.clock.now_ms();
        let mut seen = std::collections::HashSet::new();
        for row in rows {
            if !runs_in_region(&row.regions, &self.region) {
                continue;
            }
            seen.insert(row.id.clone());
            if self.slots.contains_key(&row.id) {
                continue;
            }
            let m = ScheduledMonitor::from_row(&row);
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
                phase(&m.id, m.interval.min(RESTART_SPREAD))
            } else {
                due_in
            };
            self.insert(m, now + due_in);
        }
        self.slots.retain(|id, _| seen.contains(id));
        tracing::info!(monitors = self.slots.len(), region = %self.region, "scheduler loaded monitors");
    }

    async fn reload_one(&mut self, id: &str) {
        let row = match self.store.monitor_by_id(id).await {
            Ok(row) => row,
            Err(e) => {
                tracing::error!(monitor = id, error = %e, "scheduler could not load a changed monitor");
                return;
            }
        };
        let Some(row) =
            row.filter(|r| r.status != status::PAUSED && runs_in_region(&r.regions, &self.region))
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
            None => now + phase(&m.id, m.interval.min(FIRST_CHECK_SPREAD)),
        };
        self.insert(m, due);
    }

    fn insert(&mut self, monitor: ScheduledMonitor, due: Instant) {
        self.next_generation += 1;
        let generation = self.next_generation;
        let id = monitor.id.clone();
        self.heap.push(Reverse((due, generation, id.clone())));
        self.slots.insert(
            id,
            Slot {
                monitor: Arc::new(monitor),
                generation,
                due,
            },
        );
    }

    fn fire_due(&mut self) {
        let now = Instant::now();
        while let Some(Reverse((due, generation, _))) = self.heap.peek() {
            if *due > now {
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
            // Fixed rate; after a stall, skip missed rounds instead of bursting through them.
            let mut next = due + interval;
            if next <= now {
                next = now + interval;
            }
            slot.due = next;
            self.heap.push(Reverse((next, generation, id)));
            let lag = now.saturating_duration_since(due);
            let monitor = slot.monitor.clone();
            self.spawn_check(monitor, lag);
        }
    }

    fn spawn_check(&self, monitor: Arc<ScheduledMonitor>, lag: Duration) {
        let plugins = self.plugins.clone();
        let recorder = self.recorder.clone();
        let permits = self.permits.clone();
        let region = self.region.clone();
        let clock = self.clock.clone();
        if lag > Duration::from_secs(1) {
            tracing::debug!(monitor = %monitor.id, lag_ms = lag.as_millis() as u64, "check started late");
        }
        tokio::spawn(async move {
            let Ok(_permit) = permits.acquire_owned().await else {
                return;
            };
            let record = run_check(&plugins, &monitor, &region, clock.now_ms()).await;
            recorder.record(record).await;
        });
    }
}

/// Run one check of `monitor` and describe the result.
pub async fn run_check(
    plugins: &PluginHost,
    monitor: &ScheduledMonitor,
    region: &str,
    started_ms: i64,
) -> CheckRecord {
    let timeout_ms = u32::try_from(monitor.timeout.as_millis()).unwrap_or(u32::MAX);
    let outcome = match plugins.monitor(&monitor.kind) {
        None => Err(format!("No loaded plugin provides the monitor type `{}`", monitor.kind)),
        Some(plugin) => plugins
            .check(
                &plugin,
                CheckRequest {
                    config: monitor.config.clone(),
                    timeout_ms,
                    monitor_id: monitor.id.clone(),
                    region: region.to_string(),
                    settings: "{}".into(),
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
                Some(o.reason.unwrap_or_else(|| "Check failed".into()))
            },
            status_code: o.status_code,
            response_time_ms: o.response_time_ms,
            region: region.to_string(),
            details: if serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(
                &o.details,
            )
            .is_ok()
            {
                o.details
            } else {
                "{}".into()
            },
        },
        Err(reason) => CheckRecord {
            monitor_id: monitor.id.clone(),
            workspace_id: monitor.workspace_id.clone(),
            checked_at: started_ms,
            ok: false,
            reason: Some(reason),
            status_code: None,
            response_time_ms: None,
            region: region.to_string(),
            details: "{}".into(),
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
    fn region_filter() {
        assert!(runs_in_region("[]", "eu"));
        assert!(runs_in_region(r#"["eu","us"]"#, "eu"));
        assert!(!runs_in_region(r#"["us"]"#, "eu"));
    }
}
