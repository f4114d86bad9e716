//! Checks never wait on the database. While the result writer is stalled (a slow disk, a
//! busy machine, PostgreSQL away) results wait in a bounded buffer; past the bound new ones
//! are shed and counted, and the scheduler keeps running every round. Below the bound
//! nothing is lost. Real store (SQLite), real plugin runtime and http plugin, a real
//! loopback target.

mod support;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tocsin::clock::{Clock, SharedClock, SystemClock};
use tocsin::engine::recorder::RecorderOptions;
use tocsin::engine::{CheckRecord, EngineContext, Recorder};
use tocsin::plans::Plan;
use tocsin::plugins::PluginHost;
use tocsin::scheduler::Scheduler;
use tocsin::store::monitors::MonitorRow;
use tocsin::store::{Page, Store};

async fn store_with_monitors(
    dir: &std::path::Path,
    count: usize,
    config: &str,
    interval_secs: i32,
) -> (Store, Vec<String>) {
    let store = Store::connect(&format!("sqlite://{}", dir.join("t.db").display()))
        .await
        .expect("store");
    store.migrate().await.expect("migrate");
    let now = SystemClock.now_ms();
    let ws = store
        .create_workspace("Buffer", Plan::Enterprise, now)
        .await
        .expect("workspace");
    let mut ids = Vec::new();
    for i in 0..count {
        let id = format!("mon_{i:026}");
        store
            .insert_monitor(MonitorRow {
                config: config.to_string(),
                interval_secs,
                timeout_secs: 1,
                ..support::rows::monitor(&id, &ws.id, now)
            })
            .await
            .expect("insert");
        ids.push(id);
    }
    (store, ids)
}

/// A store with one monitor checked every minute, and that monitor as stored.
async fn store_with_one_monitor(dir: &std::path::Path) -> (Store, MonitorRow) {
    let (store, ids) = store_with_monitors(dir, 1, "{}", 60).await;
    let monitor = store
        .monitor_by_id(&ids[0])
        .await
        .expect("read")
        .expect("monitor");
    (store, monitor)
}

fn result(monitor_id: &str, workspace_id: &str, at: i64) -> CheckRecord {
    CheckRecord {
        monitor_id: monitor_id.into(),
        workspace_id: workspace_id.into(),
        checked_at: at,
        ok: true,
        reason: None,
        status_code: Some(200),
        response_time_ms: Some(3),
        region: "local".into(),
        details: "{}".into(),
        confirmation: None,
        probe: None,
    }
}

#[tokio::test]
async fn a_full_buffer_sheds_and_counts_and_below_it_nothing_is_lost() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, monitor) = store_with_one_monitor(dir.path()).await;
    let engine = EngineContext::new("http://127.0.0.1");

    // A writer that is fast enough: every result handed over is written.
    let (recorder, task) = Recorder::spawn_with(
        store.clone(),
        engine.clone(),
        RecorderOptions {
            buffer: 100,
            write_delay: Duration::ZERO,
        },
    );
    let now = SystemClock.now_ms();
    for i in 0..60 {
        recorder.record(result(&monitor.id, &monitor.workspace_id, now + i));
    }
    let stats = recorder.stats();
    drop(recorder);
    task.await.expect("writer drains");
    assert_eq!(stats.shed.load(Ordering::Relaxed), 0);
    assert_eq!(stats.records.load(Ordering::Relaxed), 60);
    let (rows, total) = store
        .list_checks(
            &monitor.id,
            None,
            None,
            Page {
                page: 1,
                limit: 100,
            },
        )
        .await
        .expect("checks");
    assert_eq!((rows.len(), total), (60, 60));

    // A writer stalled for an hour: the buffer takes 100, the rest are shed at once
    // (`record` does not wait: this test would hang if it did).
    let shed_metric_before = tocsin::telemetry::global().recorder_shed.get();
    let (recorder, task) = Recorder::spawn_with(
        store.clone(),
        engine,
        RecorderOptions {
            buffer: 100,
            write_delay: Duration::from_secs(3600),
        },
    );
    let stats = recorder.stats();
    for i in 0..1000 {
        recorder.record(result(&monitor.id, &monitor.workspace_id, now + 1000 + i));
    }
    assert_eq!(stats.accepted.load(Ordering::Relaxed), 100);
    assert_eq!(stats.shed.load(Ordering::Relaxed), 900);
    assert_eq!(
        tocsin::telemetry::global().recorder_shed.get() - shed_metric_before,
        900
    );
    // The writer takes a batch from the buffer (and sleeps on it): room for 100 more.
    tokio::time::sleep(Duration::from_millis(200)).await;
    for i in 0..150 {
        recorder.record(result(&monitor.id, &monitor.workspace_id, now + 3000 + i));
    }
    assert_eq!(stats.accepted.load(Ordering::Relaxed), 200);
    assert_eq!(stats.shed.load(Ordering::Relaxed), 950);
    assert_eq!(
        stats.records.load(Ordering::Relaxed),
        0,
        "nothing written yet"
    );
    task.abort();
    let (_, total) = store
        .list_checks(&monitor.id, None, None, Page { page: 1, limit: 1 })
        .await
        .expect("checks");
    assert_eq!(total, 60, "the stalled writer wrote nothing");
}

/// The writer lingers for a batch without taking each result as it comes; a small buffer
/// still never fills while it does, because half a buffer waiting wakes it.
#[tokio::test]
async fn a_small_buffer_does_not_fill_while_the_writer_lingers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, monitor) = store_with_one_monitor(dir.path()).await;
    let (recorder, task) = Recorder::spawn_with(
        store.clone(),
        EngineContext::new("http://127.0.0.1"),
        RecorderOptions {
            buffer: 100,
            write_delay: Duration::ZERO,
        },
    );
    let stats = recorder.stats();
    let now = SystemClock.now_ms();
    // 200 passes in five bursts of 40, well inside one linger (200 ms).
    for burst in 0..5 {
        for i in 0..40 {
            recorder.record(result(
                &monitor.id,
                &monitor.workspace_id,
                now + burst * 40 + i,
            ));
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(stats.shed.load(Ordering::Relaxed), 0, "results were shed");
    drop(recorder);
    task.await.expect("writer drains");
    assert_eq!(stats.records.load(Ordering::Relaxed), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_writer_does_not_slow_the_checks() {
    const MONITORS: usize = 200;
    let target = support::target::Target::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let config = format!(
        r#"{{"url":"{}","method":"GET","headers":{{}},"body":null,"followRedirects":true,"maxRedirects":10,"expectedStatusCode":200,"expectedStatusRange":false,"bodyContains":null,"bodyNotContains":null,"maxResponseTimeMs":null}}"#,
        target.url("/ok")
    );
    let (store, _) = store_with_monitors(dir.path(), MONITORS, &config, 1).await;
    let mut host = PluginHost::new(None, &Default::default()).expect("plugin host");
    assert!(
        host.load_all(PluginHost::builtin_sources())
            .await
            .is_empty()
    );
    // The buffer holds about half a round; the writer never writes.
    let (recorder, writer) = Recorder::spawn_with(
        store.clone(),
        EngineContext::new("http://127.0.0.1"),
        RecorderOptions {
            buffer: 100,
            write_delay: Duration::from_secs(3600),
        },
    );
    let stats = recorder.stats();
    let clock: SharedClock = Arc::new(SystemClock);
    let scheduler = Scheduler::new(
        store.clone(),
        Arc::new(host),
        recorder,
        "local".into(),
        vec!["local".into()],
        clock,
    );
    let lag = scheduler.stats();
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let task = tokio::spawn(scheduler.run(stopped));
    // New monitors get their first check within a second at this interval; then one
    // round a second each. Wait for 10 rounds' worth of checks, at most 60 s.
    let wanted = (MONITORS * 10) as u64;
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while stats.accepted.load(Ordering::Relaxed) + stats.shed.load(Ordering::Relaxed) < wanted
        && std::time::Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    stop.send(true).expect("stop");
    task.await.expect("scheduler ends");
    writer.abort();
    let handed = stats.accepted.load(Ordering::Relaxed) + stats.shed.load(Ordering::Relaxed);
    assert!(
        handed >= wanted,
        "checks stalled with the writer: {handed} results of {wanted}"
    );
    // With the writer stalled, no check waited for it: no round was skipped for a busy
    // slot, and what did not fit (the buffer and the one batch the writer holds) was shed.
    assert_eq!(lag.skipped(), 0, "rounds skipped");
    let accepted = stats.accepted.load(Ordering::Relaxed);
    assert!(
        (100..=100 + 1000).contains(&accepted),
        "accepted {accepted}"
    );
    assert_eq!(stats.shed.load(Ordering::Relaxed), handed - accepted);
    assert!(stats.shed.load(Ordering::Relaxed) >= wanted - 1100);
}
