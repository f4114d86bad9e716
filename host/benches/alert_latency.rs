//! Time from the check result that crosses the failure threshold to the signed webhook
//! arriving at a receiver on loopback. Run with `cargo bench -p tocsin --bench alert_latency`.
//!
//! Real components in one process: SQLite store, the engine's batch writer, the outbox
//! worker, the webhook channel plugin and the host's HTTP client; the receiver is an axum
//! server. Each of 20 monitors fails once (threshold 1) and the arrival is timed.

use std::sync::Arc;
use std::time::{Duration, Instant};
use tocsin::clock::{SharedClock, SystemClock};
use tocsin::engine::{CheckRecord, EngineContext, Recorder};
use tocsin::outbox::worker::{DeliverySettings, OutboxWorker};
use tocsin::plans::Plan;
use tocsin::plugins::PluginHost;
use tocsin::store::Store;
use tocsin::store::alerting::PolicyRow;
use tocsin::store::monitors::MonitorRow;
use tokio::sync::mpsc;

const SAMPLES: usize = 20;

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(run());
}

async fn run() {
    // The receiver reports the monitor id of each arrival.
    let (arrived_tx, mut arrived) = mpsc::unbounded_channel::<(String, Instant)>();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/hook", listener.local_addr().expect("addr"));
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |body: String| {
            let tx = arrived_tx.clone();
            async move {
                let at = Instant::now();
                let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
                let _ = tx.send((v["monitor"]["id"].as_str().unwrap_or("").to_string(), at));
                "ok"
            }
        }),
    );
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });

    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::connect(&format!("sqlite://{}", dir.path().join("b.db").display()))
        .await
        .expect("store");
    store.migrate().await.expect("migrate");
    let clock: SharedClock = Arc::new(SystemClock);
    let ws = store
        .create_workspace("Bench", Plan::Enterprise, clock.now_ms())
        .await
        .expect("workspace");
    let now = clock.now_ms();
    store
        .insert_alert_policy(PolicyRow {
            name: "bench".into(),
            failure_threshold: 1,
            channels: serde_json::json!([{"type": "webhook", "url": url}]).to_string(),
            ..PolicyRow::new("pol_bench", &ws.id, now)
        })
        .await
        .expect("policy");
    for i in 0..SAMPLES {
        store
            .insert_monitor(MonitorRow {
                name: format!("m{i}"),
                config: r#"{"url":"http://127.0.0.1:9/","method":"GET"}"#.into(),
                alert_policy_id: Some("pol_bench".into()),
                status: tocsin::store::MonitorState::Up,
                consecutive_successes: 1,
                ..MonitorRow::new(&format!("mon_{i:026}"), &ws.id, "http", now)
            })
            .await
            .expect("monitor");
    }

    let mut host = PluginHost::new(None, &Default::default()).expect("plugins");
    host.load_all(PluginHost::builtin_sources()).await;
    let plugins = Arc::new(host);
    let ctx = EngineContext::new("http://127.0.0.1");
    let (recorder, _writer) = Recorder::spawn(store.clone(), ctx.clone());
    let (_stop, stopped) = tokio::sync::watch::channel(false);
    let worker = OutboxWorker {
        store: store.clone(),
        plugins,
        wakeup: ctx.outbox_wakeup.clone(),
        settings: Arc::new(DeliverySettings {
            schedule: vec![Duration::from_secs(10)],
            telegram: Default::default(),
            allow_insecure_webhooks: true,
            plugin_settings: Default::default(),
        }),
        clock: clock.clone(),
        work: ctx.work.clone(),
    };
    tokio::spawn(worker.run(stopped));

    let mut latencies = Vec::with_capacity(SAMPLES);
    for i in 0..SAMPLES {
        let id = format!("mon_{i:026}");
        let started = Instant::now();
        recorder.record(CheckRecord {
            monitor_id: id.clone(),
            workspace_id: ws.id.clone(),
            checked_at: clock.now_ms(),
            ok: false,
            reason: Some("Connection refused".into()),
            status_code: None,
            response_time_ms: None,
            region: "local".into(),
            details: "{}".into(),
            confirmation: None,
            probe: None,
        });
        let arrival = tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                match arrived.recv().await {
                    Some((m, at)) if m == id => return at,
                    Some(_) => continue,
                    None => panic!("receiver stopped"),
                }
            }
        })
        .await
        .expect("the webhook arrives");
        latencies.push(arrival.duration_since(started));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    latencies.sort_unstable();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "check crossing the threshold -> webhook at the receiver: median {:.1} ms, min {:.1} ms, max {:.1} ms ({SAMPLES} incidents)",
        ms(latencies[SAMPLES / 2]),
        ms(latencies[0]),
        ms(latencies[SAMPLES - 1])
    );
}
