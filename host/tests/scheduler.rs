//! The scheduler with many monitors: every monitor runs once per interval, none is skipped
//! or doubled, and the checks are spread over the interval instead of firing together.
//! Real store (SQLite), real plugin runtime and http plugin, a real loopback target.

mod support;

use support::target;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tocsin::clock::{SharedClock, SystemClock};
use tocsin::engine::{EngineContext, Recorder};
use tocsin::plans::Plan;
use tocsin::plugins::PluginHost;
use tocsin::scheduler::Scheduler;
use tocsin::store::Store;
use tocsin::store::monitors::MonitorRow;

const MONITORS: usize = 1000;
const INTERVAL_SECS: i32 = 3;
const RUN: Duration = Duration::from_millis(7500);

/// A scheduler on a store, with the built-in plugins and a result writer.
struct Running {
    stop: tokio::sync::watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
    recorder: tokio::task::JoinHandle<()>,
}

impl Running {
    /// Start the scheduler, shaped by `shape` (e.g. to claim rounds as a node).
    async fn start(
        store: &Store,
        clock: &SharedClock,
        shape: impl FnOnce(Scheduler) -> Scheduler,
    ) -> Running {
        let mut host = PluginHost::new(None, &Default::default()).expect("plugin host");
        assert!(
            host.load_all(PluginHost::builtin_sources())
                .await
                .is_empty()
        );
        let (recorder_handle, recorder) =
            Recorder::spawn(store.clone(), EngineContext::new("http://127.0.0.1"));
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let scheduler = shape(Scheduler::new(
            store.clone(),
            Arc::new(host),
            recorder_handle,
            "local".into(),
            vec!["local".into()],
            clock.clone(),
        ));
        let task = tokio::spawn(scheduler.run(stopped));
        Running {
            stop,
            task,
            recorder,
        }
    }

    /// Stop it; in-flight checks finish and the writer drains once every sender is gone.
    async fn stop_and_drain(self) {
        self.stop.send(true).expect("stop");
        self.task.await.expect("scheduler ends");
        tokio::time::timeout(Duration::from_secs(15), self.recorder)
            .await
            .expect("writer drains")
            .expect("writer");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_monitors_run_once_per_interval_and_spread_out() {
    let target = target::Target::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::connect(&format!("sqlite://{}", dir.path().join("t.db").display()))
        .await
        .expect("store");
    store.migrate().await.expect("migrate");
    let clock: SharedClock = Arc::new(SystemClock);
    let ws = store
        .create_workspace("Load", Plan::Enterprise, clock.now_ms())
        .await
        .expect("workspace");
    let config = format!(
        r#"{{"url":"{}","method":"GET","headers":{{}},"body":null,"followRedirects":true,"maxRedirects":10,"expectedStatusCode":200,"expectedStatusRange":false,"bodyContains":"all ok","bodyNotContains":null,"maxResponseTimeMs":null}}"#,
        target.url("/ok")
    );
    for i in 0..MONITORS {
        let now = clock.now_ms();
        store
            .insert_monitor(MonitorRow {
                name: format!("m{i}"),
                config: config.clone(),
                interval_secs: INTERVAL_SECS,
                timeout_secs: 2,
                ..MonitorRow::new(&format!("mon_{i:026}"), &ws.id, "http", now)
            })
            .await
            .expect("insert");
    }

    let running = Running::start(&store, &clock, |s| s).await;
    let started = clock.now_ms();
    tokio::time::sleep(RUN).await;
    running.stop_and_drain().await;

    let mut rows: Vec<(String, i64, bool)> = Vec::new();
    for i in 0..MONITORS {
        let page = tocsin::store::Page {
            page: 1,
            limit: 1000,
        };
        let (checks, _) = store
            .list_checks(&format!("mon_{i:026}"), None, None, page)
            .await
            .expect("results");
        rows.extend(
            checks
                .into_iter()
                .map(|c| (c.monitor_id, c.checked_at, c.ok)),
        );
    }
    let failed: Vec<_> = rows.iter().filter(|r| !r.2).collect();
    assert!(failed.is_empty(), "{} checks failed", failed.len());

    // Once per interval: over 7.5 s at a 3 s interval every monitor ran 2 or 3 times.
    let mut per_monitor: HashMap<&str, Vec<i64>> = HashMap::new();
    for (id, at, _) in &rows {
        per_monitor.entry(id.as_str()).or_default().push(*at);
    }
    assert_eq!(per_monitor.len(), MONITORS, "every monitor was checked");
    for (id, times) in &mut per_monitor {
        assert!(
            (2..=3).contains(&times.len()),
            "{id} ran {} times",
            times.len()
        );
        times.sort_unstable();
        for pair in times.windows(2) {
            let gap = pair[1] - pair[0];
            assert!(
                (2_500..=3_500).contains(&gap),
                "{id}: checks {gap} ms apart at a 3 s interval"
            );
        }
    }

    // Spread: each second of the steady part of the run carries about a third of the monitors.
    let mut per_second = [0u32; 7];
    for (_, at, _) in &rows {
        let s = usize::try_from((at - started) / 1000).unwrap_or(usize::MAX);
        if s < per_second.len() {
            per_second[s] += 1;
        }
    }
    let expected = MONITORS as f64 / f64::from(INTERVAL_SECS as u32);
    for (second, count) in per_second.iter().enumerate().take(6) {
        let ratio = f64::from(*count) / expected;
        assert!(
            (0.5..=1.6).contains(&ratio),
            "second {second} had {count} checks (expected about {expected:.0}): {per_second:?}"
        );
    }
}

/// A clustered node's periodic re-read (ids and edit times, then whole rows only where
/// they changed): a monitor deleted on another node stops being checked here, and an edit
/// that the short syncs missed is taken, while an unchanged monitor keeps its rhythm.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clustered_node_drops_monitors_deleted_elsewhere_and_takes_missed_edits() {
    let target = target::Target::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite://{}", dir.path().join("t.db").display());
    let store = Store::connect(&url).await.expect("store");
    store.migrate().await.expect("migrate");
    // Another node: the same database, its own change feed (this node never hears of it).
    let other = Store::connect(&url).await.expect("second store");
    let clock: SharedClock = Arc::new(SystemClock);
    let ws = store
        .create_workspace("Cluster", Plan::Enterprise, clock.now_ms())
        .await
        .expect("workspace");
    let config = |path: &str| {
        format!(
            r#"{{"url":"{}","method":"GET","headers":{{}},"body":null,"followRedirects":true,"maxRedirects":10,"expectedStatusCode":200,"expectedStatusRange":false,"bodyContains":null,"bodyNotContains":null,"maxResponseTimeMs":null}}"#,
            target.url(path)
        )
    };
    let row = |id: &str, now: i64| MonitorRow {
        config: config("/ok"),
        interval_secs: 1,
        timeout_secs: 1,
        ..support::rows::monitor(id, &ws.id, now)
    };
    let (kept, deleted, edited) = (
        "mon_kept0000000000000000000000",
        "mon_deleted0000000000000000000",
        "mon_edited00000000000000000000",
    );
    for id in [kept, deleted, edited] {
        let mut monitor = row(id, clock.now_ms());
        if id == deleted {
            // The only monitor on the target's counted route.
            monitor.config = config("/status");
        }
        store.insert_monitor(monitor).await.expect("insert");
    }

    let running = Running::start(&store, &clock, |s| {
        s.claiming("node-a")
            .full_sync_every(Duration::from_millis(1500))
    })
    .await;
    tokio::time::sleep(Duration::from_millis(2500)).await;

    // On the other node: delete one, and edit another with an edit time older than the
    // short syncs look back (as an edit whose sync was missed).
    let changed_at = clock.now_ms();
    assert!(
        tocsin::engine::actions::delete_monitor(&other, &ws.id, deleted, changed_at)
            .await
            .expect("delete"),
        "deleted"
    );
    let mut edit = other
        .monitor(&ws.id, edited)
        .await
        .expect("read")
        .expect("exists");
    edit.config = config("/away/503");
    edit.updated_at = changed_at - 60_000;
    other.update_monitor(edit).await.expect("edit");

    // Re-read within 1.5 s, plus a check in flight; then run on for a few more rounds.
    let late = changed_at + 3_500;
    tokio::time::sleep(Duration::from_millis(3500)).await;
    let deleted_hits = target.hits();
    tokio::time::sleep(Duration::from_millis(3500)).await;
    running.stop_and_drain().await;

    let checks = |id: &'static str| {
        let store = store.clone();
        async move {
            let page = tocsin::store::Page {
                page: 1,
                limit: 1000,
            };
            let (rows, _) = store
                .list_checks(id, None, None, page)
                .await
                .expect("results");
            rows
        }
    };
    let kept_rows = checks(kept).await;
    assert!(
        kept_rows.iter().filter(|c| c.checked_at > late).count() >= 2,
        "the unchanged monitor kept running: {} checks",
        kept_rows.len()
    );
    assert!(
        kept_rows.iter().all(|c| c.ok),
        "the unchanged monitor passed"
    );
    let edited_rows = checks(edited).await;
    let after: Vec<_> = edited_rows.iter().filter(|c| c.checked_at > late).collect();
    assert!(
        after.len() >= 2 && after.iter().all(|c| !c.ok && c.status_code == Some(503)),
        "the missed edit was taken: {:?}",
        after
            .iter()
            .map(|c| (c.checked_at, c.ok, c.status_code))
            .collect::<Vec<_>>()
    );
    assert!(
        edited_rows
            .iter()
            .any(|c| c.checked_at < changed_at && c.ok),
        "it passed before the edit"
    );
    assert!(deleted_hits > 0, "the monitor to delete was checked first");
    assert_eq!(
        target.hits(),
        deleted_hits,
        "the monitor deleted on the other node was still checked here"
    );
}
