//! Regional confirmation: a monitor with `regionalConfirmation` does not count a failure
//! until a node of another of its regions has checked again and failed too. The request
//! travels through the database (`check_confirmations`), so it works across processes and
//! survives restarts: whoever settles it first, the answering node or (past the deadline)
//! any node, does so in the recorder's transaction.

use super::{ScheduledMonitor, run_check};
use crate::clock::SharedClock;
use crate::engine::Recorder;
use crate::engine::recorder::{CheckRecord, Confirmation, annotate};
use crate::ids;
use crate::plugins::PluginHost;
use crate::store::Store;
use crate::store::confirmations::NewConfirmation;
use std::collections::HashSet;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::sync::watch;

/// How often a node looks for requests addressed to its region.
const POLL: Duration = Duration::from_millis(200);
/// How often the set of regions with a live node is re-read.
const LIVE_REFRESH: Duration = Duration::from_secs(2);
/// Added to twice the monitor's timeout to make a request's deadline: time to be noticed,
/// claimed and checked, with room for one node of the region to die and another to retry.
pub const DEADLINE_MARGIN_MS: i64 = 5_000;

/// The regions that have a live node, and the private locations with a probe heard from
/// recently, as last read from the database.
#[derive(Clone, Default)]
pub struct LiveRegions(Arc<RwLock<Live>>);

#[derive(Default)]
struct Live {
    /// Regions of nodes.
    nodes: HashSet<String>,
    /// (workspace, location): a location's probes are a workspace's own.
    locations: HashSet<(String, String)>,
}

impl LiveRegions {
    fn set(&self, live: Live) {
        if let Ok(mut guard) = self.0.write() {
            *guard = live;
        }
    }

    /// Read them now, the locations of one workspace only.
    pub async fn read_for(
        store: &Store,
        workspace_id: &str,
        now: i64,
    ) -> Result<LiveRegions, crate::store::StoreError> {
        let live = LiveRegions::default();
        live.refresh(store, Some(workspace_id), now).await?;
        Ok(live)
    }

    async fn refresh(
        &self,
        store: &Store,
        workspace_id: Option<&str>,
        now: i64,
    ) -> Result<(), crate::store::StoreError> {
        let nodes = store
            .live_nodes(now)
            .await?
            .into_iter()
            .map(|n| n.region)
            .collect();
        let probes = match workspace_id {
            Some(w) => store.probes_of(w).await?,
            None => store.all_live_probes().await?,
        };
        // Probes of earlier releases do not answer: their locations are never asked.
        let locations = probes
            .into_iter()
            .filter(|p| p.answers_confirmations)
            .filter(|p| {
                p.last_contact_at
                    .is_some_and(|t| now - t <= crate::store::probes::PROBE_SILENCE_MS)
            })
            .map(|p| (p.workspace_id, p.location))
            .collect();
        self.set(Live { nodes, locations });
        Ok(())
    }

    /// The region to ask about a failure of a monitor of `workspace_id` seen in
    /// `failed_in`: the next of the monitor's regions after it (in the monitor's order,
    /// wrapping) that has a live node, or that is a location of the workspace with a probe
    /// online. An offline location is never asked.
    pub fn pick(
        &self,
        workspace_id: &str,
        monitor_regions: &[String],
        failed_in: &str,
    ) -> Option<String> {
        let live = self.0.read().ok()?;
        let start = monitor_regions
            .iter()
            .position(|r| r == failed_in)
            .map_or(0, |i| i + 1);
        let n = monitor_regions.len();
        (0..n)
            .map(|k| &monitor_regions[(start + k) % n])
            .find(|r| {
                r.as_str() != failed_in
                    && (live.nodes.contains(r.as_str())
                        || live
                            .locations
                            .contains(&(workspace_id.to_string(), r.to_string())))
            })
            .cloned()
    }
}

/// Ask another region about `record` (a failure), or count it as it is when no other
/// region of the monitor has a live node or the request cannot be written.
pub async fn request_or_record(
    store: &Store,
    recorder: &Recorder,
    live: &LiveRegions,
    monitor: &ScheduledMonitor,
    all_regions: &[String],
    round: i64,
    record: CheckRecord,
) {
    let regions = if monitor.regions.is_empty() {
        all_regions
    } else {
        &monitor.regions
    };
    let Some(target) = live.pick(&record.workspace_id, regions, &record.region) else {
        let note = serde_json::json!({"status": "unavailable"});
        recorder.record(annotate(&record, note));
        return;
    };
    let timeout_ms = i64::try_from(monitor.timeout.as_millis()).unwrap_or(60_000);
    let id = ids::new_id(ids::prefix::CONFIRMATION);
    let written = match serde_json::to_string(&record) {
        Ok(original) => store
            .request_confirmation(NewConfirmation {
                id: &id,
                monitor_id: &record.monitor_id,
                round,
                from_region: &record.region,
                target_region: &target,
                requested_at: record.checked_at,
                deadline_at: record.checked_at + 2 * timeout_ms + DEADLINE_MARGIN_MS,
                original,
            })
            .await
            .map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    match written {
        Ok(true) => {
            tracing::debug!(monitor = %record.monitor_id, from = %record.region, to = %target, "failure sent for confirmation");
        }
        Ok(false) => {
            // This round already has a request: this result is one check too many.
            tracing::debug!(monitor = %record.monitor_id, round, "round already awaits confirmation");
        }
        Err(e) => {
            tracing::warn!(monitor = %record.monitor_id, error = %e, "cannot ask for confirmation; the failure counts as it is");
            recorder.record(annotate(
                &record,
                serde_json::json!({"status": "unavailable"}),
            ));
        }
    }
}

/// Answers requests addressed to this node's region and settles those nobody answered.
pub struct Confirmer {
    pub store: Store,
    pub plugins: Arc<PluginHost>,
    pub recorder: Recorder,
    pub region: String,
    pub node_id: String,
    pub clock: SharedClock,
    pub live: LiveRegions,
    /// The scheduler's check slots: confirming checks take one like any other check.
    pub permits: Arc<tokio::sync::Semaphore>,
}

impl Confirmer {
    /// Run until `shutdown` turns true.
    pub async fn run(self, mut shutdown: watch::Receiver<bool>) {
        let mut poll = tokio::time::interval(POLL);
        poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut last_refresh: Option<tokio::time::Instant> = None;
        // Requests this node is answering or has handed to the recorder.
        let in_hand: Arc<std::sync::Mutex<HashSet<String>>> = Arc::default();
        loop {
            tokio::select! {
                _ = poll.tick() => {}
                _ = shutdown.changed() => if *shutdown.borrow() { break } else { continue },
            }
            if last_refresh.is_none_or(|t| t.elapsed() >= LIVE_REFRESH) {
                last_refresh = Some(tokio::time::Instant::now());
                if let Err(e) = self
                    .live
                    .refresh(&self.store, None, self.clock.now_ms())
                    .await
                {
                    tracing::warn!(error = %e, "cannot read the live nodes and probes");
                }
            }
            if let Err(e) = self.pass(&in_hand).await {
                tracing::warn!(error = %e, "regional confirmation pass failed; retrying");
            }
        }
    }

    async fn pass(
        &self,
        in_hand: &Arc<std::sync::Mutex<HashSet<String>>>,
    ) -> Result<(), crate::store::StoreError> {
        let now = self.clock.now_ms();
        for request in self
            .store
            .claim_confirmations(&self.region, &self.node_id, now)
            .await?
        {
            let Ok(original) = serde_json::from_str::<CheckRecord>(&request.original) else {
                tracing::warn!(request = %request.id, "unreadable confirmation request; left to expire");
                continue;
            };
            if !hold(in_hand, &request.id) {
                continue;
            }
            let (store, plugins, recorder) = (
                self.store.clone(),
                self.plugins.clone(),
                self.recorder.clone(),
            );
            let (region, clock, in_hand) =
                (self.region.clone(), self.clock.clone(), in_hand.clone());
            let permits = self.permits.clone();
            tokio::spawn(async move {
                let Ok(_permit) = permits.acquire_owned().await else {
                    return;
                };
                let row = store.monitor_by_id(&request.monitor_id).await;
                if let Ok(Some(row)) = row {
                    let monitor = ScheduledMonitor::from_row(&row);
                    let mut answer =
                        run_check(&plugins, &monitor, &region, 2, clock.now_ms()).await;
                    answer.confirmation = Some(Confirmation::Answer {
                        request_id: request.id.clone(),
                        original: Box::new(original),
                    });
                    recorder.record(answer);
                }
                // A deleted monitor's request simply expires.
                release(&in_hand, &request.id);
            });
        }
        for request in self.store.expired_confirmations(now).await? {
            let Ok(mut original) = serde_json::from_str::<CheckRecord>(&request.original) else {
                // Nothing to count; drop it so it does not hold a place in every later pass.
                tracing::warn!(request = %request.id, "dropping an unreadable confirmation request");
                self.store.drop_confirmation(&request.id).await?;
                continue;
            };
            if !hold(in_hand, &request.id) {
                continue;
            }
            original.confirmation = Some(Confirmation::Expired {
                request_id: request.id.clone(),
            });
            self.recorder.record_waiting(original).await;
            // Kept a little while, so the next passes do not hand it over again before the
            // recorder has settled it.
            let in_hand = in_hand.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_secs(5)).await;
                release(&in_hand, &request.id);
            });
        }
        Ok(())
    }
}

fn hold(in_hand: &std::sync::Mutex<HashSet<String>>, id: &str) -> bool {
    in_hand.lock().is_ok_and(|mut s| s.insert(id.to_string()))
}

fn release(in_hand: &std::sync::Mutex<HashSet<String>>, id: &str) {
    if let Ok(mut s) = in_hand.lock() {
        s.remove(id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nodes(regions: &[&str]) -> Live {
        Live {
            nodes: regions.iter().map(|r| r.to_string()).collect(),
            locations: HashSet::new(),
        }
    }

    #[test]
    fn picks_the_next_live_region_after_the_failing_one() {
        let live = LiveRegions::default();
        let regions: Vec<String> = ["eu", "us", "ap"].map(String::from).to_vec();
        assert_eq!(live.pick("wsp_a", &regions, "eu"), None, "nobody alive");
        live.set(nodes(&["eu", "us", "ap"]));
        assert_eq!(live.pick("wsp_a", &regions, "eu").as_deref(), Some("us"));
        assert_eq!(live.pick("wsp_a", &regions, "ap").as_deref(), Some("eu"));
        live.set(nodes(&["eu", "ap"]));
        assert_eq!(live.pick("wsp_a", &regions, "eu").as_deref(), Some("ap"));
        live.set(nodes(&["eu"]));
        assert_eq!(
            live.pick("wsp_a", &regions, "eu"),
            None,
            "never the failing region itself"
        );
    }

    #[test]
    fn a_location_is_asked_only_while_its_workspaces_probe_is_online() {
        let live = LiveRegions::default();
        let regions: Vec<String> = ["eu", "office", "lab"].map(String::from).to_vec();
        let mut l = nodes(&["eu"]);
        l.locations.insert(("wsp_a".into(), "lab".into()));
        live.set(l);
        // office is offline: lab, online, is asked about a failure in eu.
        assert_eq!(live.pick("wsp_a", &regions, "eu").as_deref(), Some("lab"));
        // lab's probes are wsp_a's: another workspace's lab is not online.
        assert_eq!(live.pick("wsp_b", &regions, "eu"), None);
        // A probe's failure in lab is asked of a node region.
        assert_eq!(live.pick("wsp_a", &regions, "lab").as_deref(), Some("eu"));
    }
}
