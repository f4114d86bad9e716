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
                id: format!("mon_{i:026}"),
                workspace_id: ws.id.clone(),
                name: format!("m{i}"),
                kind: "http".into(),
                config: config.clone(),
                interval_secs: INTERVAL_SECS,
                timeout_secs: 2,
                alert_policy_id: None,
                regions: "[]".into(),
                status: tocsin::store::MonitorState::Pending,
                created_at: now,
                updated_at: now,
                last_checked_at: None,
                last_response_time_ms: None,
                consecutive_failures: 0,
                consecutive_successes: 0,
                region_cursor: 0,
                regional_confirmation: false,
                tags: "[]".into(),
                ping_token: None,
                depends_on: "[]".into(),
                snoozed_until: None,
                apply_key: None,
                managed_by: None,
            })
            .await
            .expect("insert");
    }

    let mut host = PluginHost::new(None, &Default::default()).expect("plugin host");
    assert!(
        host.load_all(PluginHost::builtin_sources())
            .await
            .is_empty()
    );
    let (recorder, recorder_task) =
        Recorder::spawn(store.clone(), EngineContext::new("http://127.0.0.1"));
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let scheduler = Scheduler::new(
        store.clone(),
        Arc::new(host),
        recorder,
        "local".into(),
        vec!["local".into()],
        clock.clone(),
    );
    let started = clock.now_ms();
    let task = tokio::spawn(scheduler.run(stopped));
    tokio::time::sleep(RUN).await;
    stop.send(true).expect("stop");
    task.await.expect("scheduler ends");
    // In-flight checks finish and the writer drains once every sender is gone.
    tokio::time::timeout(Duration::from_secs(15), recorder_task)
        .await
        .expect("writer drains")
        .expect("writer");

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
