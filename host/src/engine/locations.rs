//! Private locations going offline and coming back. A location is online while one of
//! its probes was heard from in the last 45 seconds. When all of them go silent the
//! location is `offline`: its monitors keep their states (marked stale) and open no
//! incident, and the channels that its monitors alert are told once, with a
//! `location.offline` delivery; `location.online` follows when a probe is heard again.
//! Each move is a conditional update in the transaction that queues its deliveries, so a
//! second node or a restart never tells twice and a crash between the two loses neither.

use super::policy::load_rules;
use crate::clock::SharedClock;
use crate::outbox::events::kind;
use crate::outbox::{self, Origin, Target};
use crate::store::probes::{LocationRow, PROBE_SILENCE_MS, ProbeRow};
use crate::store::{Store, StoreError};
use serde_json::json;
use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;
use tokio::sync::{Notify, watch};

/// How often the pass looks.
const EVERY: Duration = Duration::from_secs(5);
/// How long a node runs its passes without a failure before it may call a location
/// offline: longer than a probe's silence, so probes that could not call while the server
/// (or its database) was away have called again.
const STEADY_BEFORE_OFFLINE: Duration = Duration::from_millis(PROBE_SILENCE_MS as u64 + 10_000);

/// The locations that are offline, as this node's last pass read them: a monitor that
/// checks only from them is `stale` (its state is the last one its probes reported).
#[derive(Clone, Default)]
pub struct OfflineLocations {
    offline: Arc<RwLock<HashSet<(String, String)>>>,
    /// One more at every change (pages rendered with `stale` are kept per version).
    version: Arc<AtomicU64>,
}

impl OfflineLocations {
    fn set(&self, rows: &[LocationRow]) {
        let offline: HashSet<(String, String)> = rows
            .iter()
            .filter(|l| l.offline_since.is_some())
            .map(|l| (l.workspace_id.clone(), l.name.clone()))
            .collect();
        let mut guard = self.offline.write().unwrap_or_else(PoisonError::into_inner);
        if *guard != offline {
            *guard = offline;
            self.version.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Changes whenever the set does.
    pub fn version(&self) -> u64 {
        self.version.load(Ordering::Relaxed)
    }

    /// Whether a monitor of `workspace_id` that checks from `regions` (its own list; empty
    /// is every public region) can get no result now: every region it names is an offline
    /// location.
    pub fn stale(&self, workspace_id: &str, regions: &[String]) -> bool {
        if regions.is_empty() {
            return false;
        }
        let offline = self.offline.read().unwrap_or_else(PoisonError::into_inner);
        !offline.is_empty()
            && regions
                .iter()
                .all(|r| offline.contains(&(workspace_id.to_string(), r.clone())))
    }
}

/// What the pass knows of one location of one workspace from its probes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Heard {
    /// Probes that are not revoked.
    pub probes: usize,
    /// Of those, heard from in the last 45 seconds.
    pub online: usize,
    /// The last time any of them was heard from.
    pub last_contact_at: Option<i64>,
}

impl Heard {
    /// When the location went offline: 45 s after its last contact.
    pub fn offline_since(&self) -> Option<i64> {
        (self.online == 0).then(|| self.last_contact_at.map(|t| t + PROBE_SILENCE_MS))?
    }
}

/// Group probes by (workspace, location).
pub fn heard(probes: &[ProbeRow], now: i64) -> BTreeMap<(String, String), Heard> {
    let mut out: BTreeMap<(String, String), Heard> = BTreeMap::new();
    for p in probes {
        let h = out
            .entry((p.workspace_id.clone(), p.location.clone()))
            .or_insert(Heard {
                probes: 0,
                online: 0,
                last_contact_at: None,
            });
        h.probes += 1;
        if p.last_contact_at
            .is_some_and(|t| now - t <= PROBE_SILENCE_MS)
        {
            h.online += 1;
        }
        h.last_contact_at = h.last_contact_at.max(p.last_contact_at);
    }
    out
}

/// What a pass does to one location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Move {
    /// Online for the first time: noted, nobody told.
    First,
    /// All its probes went silent: told `location.offline`.
    Offline(i64),
    /// A probe was heard again: told `location.online`.
    Online,
    /// Its probes were all revoked while it was online: forgotten, nobody told.
    Forget,
    /// Its probes were all revoked while it was offline: forgotten, and told
    /// `location.online` with status `unknown`, which closes the alert about it.
    Retire,
}

/// The moves the probes call for, given the stored states.
pub fn moves(
    heard: &BTreeMap<(String, String), Heard>,
    stored: &[LocationRow],
    may_mark_offline: bool,
) -> Vec<((String, String), Move)> {
    let mut out = Vec::new();
    let known: BTreeMap<(String, String), &LocationRow> = stored
        .iter()
        .map(|l| ((l.workspace_id.clone(), l.name.clone()), l))
        .collect();
    for (key, h) in heard {
        match (known.get(key), h.online > 0) {
            (None, true) => out.push((key.clone(), Move::First)),
            (Some(l), true) if l.offline_since.is_some() => out.push((key.clone(), Move::Online)),
            (Some(l), false) if l.offline_since.is_none() && may_mark_offline => {
                let since = h.offline_since().unwrap_or(l.changed_at);
                out.push((key.clone(), Move::Offline(since)));
            }
            _ => {}
        }
    }
    for (key, l) in &known {
        if !heard.contains_key(key) {
            let m = if l.offline_since.is_some() {
                Move::Retire
            } else {
                Move::Forget
            };
            out.push((key.clone(), m));
        }
    }
    out
}

/// One pass: move every location its probes call for. Returns how many deliveries were
/// queued.
///
/// `may_mark_offline` is false until this node has run its passes without a failure for
/// longer than a probe's silence: after a restart or a database outage the probes have
/// not been able to call, and their silence is the server's, not theirs.
pub async fn pass(
    store: &Store,
    offline: &OfflineLocations,
    now: i64,
    may_mark_offline: bool,
) -> Result<usize, StoreError> {
    let probes = store.all_live_probes().await?;
    let stored = store.all_locations().await?;
    let heard = heard(&probes, now);
    let mut queued = 0;
    let none = Heard {
        probes: 0,
        online: 0,
        last_contact_at: None,
    };
    for ((workspace_id, name), m) in moves(&heard, &stored, may_mark_offline) {
        let h = heard
            .get(&(workspace_id.clone(), name.clone()))
            .unwrap_or(&none);
        let done = match m {
            Move::First => store
                .location_seen(&workspace_id, &name, now)
                .await
                .map(|_| 0),
            Move::Forget => store.forget_location(&workspace_id, &name).await.map(|_| 0),
            Move::Offline(since) => {
                tell(store, &workspace_id, &name, Told::Offline(since), h, now).await
            }
            Move::Online => tell(store, &workspace_id, &name, Told::Online, h, now).await,
            Move::Retire => tell(store, &workspace_id, &name, Told::Retired, h, now).await,
        };
        // One location failing (a channel's row, a workspace gone) holds up no other.
        match done {
            Ok(n) => queued += n,
            Err(e) => {
                tracing::warn!(workspace = %workspace_id, location = %name, error = %e, "cannot move a location; retrying at the next pass")
            }
        }
    }
    offline.set(&store.all_locations().await?);
    Ok(queued)
}

/// What a location's channels are told.
#[derive(Debug, Clone, Copy)]
enum Told {
    /// `location.offline`, offline since then.
    Offline(i64),
    /// `location.online`: a probe is heard again.
    Online,
    /// `location.online` with status `unknown`: its last probe was revoked.
    Retired,
}

/// Move a location and queue its alert to the channels its monitors alert, in one
/// transaction.
async fn tell(
    store: &Store,
    workspace_id: &str,
    name: &str,
    told: Told,
    heard: &Heard,
    now: i64,
) -> Result<usize, StoreError> {
    let Some(workspace) = store.workspace(workspace_id).await? else {
        return Ok(0);
    };
    if let Told::Offline(_) = told
        && !store
            .probes_heard_since(workspace_id, name, now - PROBE_SILENCE_MS)
            .await?
            .is_empty()
    {
        // A probe called since the pass began: not offline after all.
        return Ok(0);
    }
    let monitors = store.monitors_at_location(workspace_id, name).await?;
    let mut policy_ids: Vec<String> = monitors
        .iter()
        .filter_map(|m| m.alert_policy_id.clone())
        .collect();
    policy_ids.sort_unstable();
    policy_ids.dedup();
    let tx = store.begin_write().await?;
    let moved = match told {
        Told::Offline(since) => {
            tx.move_location(workspace_id, name, Some(since), now)
                .await?
        }
        Told::Online => tx.move_location(workspace_id, name, None, now).await?,
        Told::Retired => tx.forget_offline_location(workspace_id, name).await?,
    };
    if !moved {
        return Ok(0);
    }
    let policies = tx.policies_by_ids(policy_ids).await?;
    let rules = load_rules(&tx, &policies).await?;
    let targets = distinct(rules.into_values().flat_map(|r| r.channels));
    let (event, status, offline_since) = match told {
        Told::Offline(since) => (kind::LOCATION_OFFLINE, "offline", Some(since)),
        Told::Online => (kind::LOCATION_ONLINE, "online", None),
        Told::Retired => (kind::LOCATION_ONLINE, "unknown", None),
    };
    let location = json!({
        "name": name,
        "status": status,
        "offlineSince": offline_since.map(crate::time::format_ms),
        "probes": heard.probes,
        "onlineProbes": heard.online,
        "lastContactAt": heard.last_contact_at.map(crate::time::format_ms),
        "monitors": monitors.len(),
    });
    let origin = Origin {
        workspace_id,
        incident_id: None,
        monitor_id: None,
    };
    for target in &targets {
        outbox::enqueue_raw(
            &tx,
            &origin,
            target,
            event,
            |delivery_id| {
                json!({
                    "event": event,
                    "timestamp": crate::time::format_ms(now),
                    "webhookId": delivery_id,
                    "location": location,
                    "workspace": {"id": workspace.id, "name": workspace.name},
                })
                .to_string()
            },
            now,
        )
        .await?;
    }
    tx.commit().await?;
    tracing::info!(workspace = %workspace_id, location = %name, status, channels = targets.len(), "location {status}");
    Ok(targets.len())
}

/// Each channel once: a stored channel by its id, an inline one by its type and settings.
fn distinct(targets: impl IntoIterator<Item = Target>) -> Vec<Target> {
    let mut seen = HashSet::new();
    targets
        .into_iter()
        .filter(|t| {
            let key = match &t.channel_id {
                Some(id) => format!("id:{id}"),
                None => format!("{}:{}", t.kind, t.config),
            };
            seen.insert(key)
        })
        .collect()
}

/// Run the pass every 5 seconds until `shutdown` turns true.
pub async fn run(
    store: Store,
    clock: SharedClock,
    outbox: Arc<Notify>,
    offline: OfflineLocations,
    mut shutdown: watch::Receiver<bool>,
) {
    // Since when the passes have run without a failure (from the start).
    let mut steady_since = tokio::time::Instant::now();
    loop {
        let may_mark_offline = steady_since.elapsed() >= STEADY_BEFORE_OFFLINE;
        match pass(&store, &offline, clock.now_ms(), may_mark_offline).await {
            Ok(0) => {}
            Ok(_) => outbox.notify_one(),
            Err(e) => {
                steady_since = tokio::time::Instant::now();
                tracing::warn!(error = %e, "the locations' pass failed; retrying");
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(EVERY) => {}
            _ = shutdown.changed() => if *shutdown.borrow() { return },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(id: &str, location: &str, last: Option<i64>) -> ProbeRow {
        ProbeRow {
            id: id.into(),
            workspace_id: "wsp_a".into(),
            name: id.into(),
            location: location.into(),
            prefix: String::new(),
            secret_hash: id.into(),
            created_at: 0,
            created_by: None,
            revoked_at: None,
            last_contact_at: last,
            version: None,
            acked_seq: 0,
            buffered: 0,
            shed: 0,
            lag_ms: None,
            rate_milli: 0,
            instance: None,
            instance_seen_at: None,
            heartbeat_monitor_id: None,
            answers_confirmations: true,
        }
    }

    fn row(location: &str, offline_since: Option<i64>) -> LocationRow {
        LocationRow {
            workspace_id: "wsp_a".into(),
            name: location.into(),
            offline_since,
            changed_at: 0,
        }
    }

    fn key(location: &str) -> (String, String) {
        ("wsp_a".into(), location.into())
    }

    #[test]
    fn a_location_is_offline_only_when_every_probe_is_silent_and_only_after_it_was_online() {
        let now = 1_000_000;
        let probes = [
            probe("prb_1", "office", Some(now - 50_000)),
            probe("prb_2", "office", Some(now - 1_000)),
            probe("prb_3", "lab", Some(now - 46_000)),
            probe("prb_4", "never", None),
        ];
        let h = heard(&probes, now);
        assert_eq!(h[&key("office")].online, 1);
        assert_eq!(h[&key("lab")].offline_since(), Some(now - 1_000));
        // Nothing stored: the online one is noted, the never-heard and silent ones are not
        // told (they never were online).
        assert_eq!(moves(&h, &[], true), vec![(key("office"), Move::First)]);
        // Stored online: one probe left keeps office online; lab goes offline.
        let stored = [row("office", None), row("lab", None)];
        assert_eq!(
            moves(&h, &stored, true),
            vec![(key("lab"), Move::Offline(now - 1_000))]
        );
        // Just after a restart or a database outage, silence is the server's own.
        assert_eq!(moves(&h, &stored, false), vec![]);
        // Stored offline: office is back, lab stays offline (told once).
        let stored = [row("office", Some(5)), row("lab", Some(5))];
        assert_eq!(
            moves(&h, &stored, true),
            vec![(key("office"), Move::Online)]
        );
        // Every probe revoked: forgotten without a word while online; while offline, told
        // so that the alert about it closes.
        let stored = [row("gone", None), row("lost", Some(5))];
        let got = moves(&heard(&[], now), &stored, true);
        assert_eq!(
            got,
            vec![(key("gone"), Move::Forget), (key("lost"), Move::Retire)]
        );
    }

    #[test]
    fn each_channel_is_told_once() {
        let t = |id: Option<&str>, config: &str| Target {
            kind: "webhook".into(),
            config: config.into(),
            channel_id: id.map(str::to_string),
        };
        let got = distinct([
            t(Some("chn_1"), "{}"),
            t(Some("chn_1"), "{}"),
            t(None, "{\"url\":\"a\"}"),
            t(None, "{\"url\":\"a\"}"),
            t(None, "{\"url\":\"b\"}"),
        ]);
        assert_eq!(got.len(), 3);
    }
}
