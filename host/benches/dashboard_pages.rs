//! How long the dashboard's pages take on the server at 10,000 monitors with 30 days of
//! history: a real `tocsin serve` on SQLite, checking its monitors against a target in
//! this process while the pages are asked for by a signed-in owner. Run with
//! `cargo bench -p tocsin --bench dashboard_pages`.
//!
//! The history is written into the database before the server starts: every monitor has
//! 30 days of daily rollups (what the 30-day chart and the uptime by day read), the
//! overview's first page (the first 50 by name) has the last 24 hours of checks at its
//! interval (the sparklines and heartbeat bars), and the monitor whose page is timed is a
//! 20 s monitor with all 30 days of its checks (129,600). Each page is asked for 3 times to
//! warm up, then 20 times; the figures are the wall time of the whole answer on loopback
//! (median and 95th percentile), and `/healthz` asked the same way is the baseline. The
//! checks the server made meanwhile are counted at the target.

#[path = "support/mod.rs"]
mod support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tocsin::store::status_pages::{DayCounts, day_of};
use tocsin::store::{CheckRow, MonitorRow, MonitorState, Store};

const KEY: &str = "tcs_BenchAdminKey000000000000000000000000001";
const MONITORS: usize = 10_000;
/// The overview's page (the server's `PAGE_SIZE`).
const FIRST_PAGE: usize = 50;
const DAY_MS: i64 = 86_400_000;
const DAYS: i64 = 30;
const WARM: usize = 3;
const TIMED: usize = 20;

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(run());
}

/// A response time that moves with the time of day, as real ones do.
fn response_ms(at: i64, salt: usize) -> i32 {
    let minute_of_day = (at % DAY_MS) / 60_000;
    40 + i32::try_from((minute_of_day * 7 + salt as i64 * 13) % 90).unwrap_or(0)
}

/// One timed check of `monitor` at `at`: up, except one in 500.
fn check(monitor: &MonitorRow, at: i64, n: usize) -> CheckRow {
    let ok = !(n + 1).is_multiple_of(500);
    CheckRow {
        id: tocsin::ids::new_id(tocsin::ids::prefix::CHECK),
        monitor_id: monitor.id.clone(),
        workspace_id: monitor.workspace_id.clone(),
        checked_at: at,
        ok,
        reason: (!ok).then(|| "HTTP 503".to_string()),
        status_code: Some(if ok { 200 } else { 503 }),
        response_time_ms: Some(response_ms(at, n)),
        region: "default".into(),
        details: "{}".into(),
        counted: true,
        maintenance: false,
    }
}

async fn seed(dir: &std::path::Path, template: &MonitorRow, now: i64) -> String {
    let url = format!("sqlite://{}", dir.join("tocsin.db").display());
    let store = Store::connect(&url).await.expect("the server's database");
    let mut rows = Vec::with_capacity(MONITORS);
    for n in 0..MONITORS {
        let mut row = MonitorRow::new(
            &tocsin::ids::new_id(tocsin::ids::prefix::MONITOR),
            &template.workspace_id,
            &template.kind,
            now - DAYS * DAY_MS,
        );
        row.name = format!("service {n:05}");
        row.config.clone_from(&template.config);
        row.regions.clone_from(&template.regions);
        row.interval_secs = if n == 0 { 20 } else { 60 };
        row.timeout_secs = 10;
        row.status = MonitorState::Up;
        // Spread over the minute, so the checks after the restart are too.
        row.last_checked_at = Some(now - 1_000 - (n as i64 * 997) % 59_000);
        row.last_response_time_ms = Some(response_ms(now, n));
        row.consecutive_successes = 100;
        rows.push(row);
    }
    let charted = rows[0].clone();
    let first_page: Vec<MonitorRow> = rows[1..FIRST_PAGE].to_vec();
    let ids: Vec<String> = rows.iter().map(|r| r.id.clone()).collect();
    store.insert_monitors(rows).await.expect("monitors");

    // 30 days of rollups for every monitor (today's is the recorder's).
    let today = day_of(now);
    let mut counts = BTreeMap::new();
    for (n, id) in ids.iter().enumerate() {
        let per_day = if n == 0 { 4_320 } else { 1_440 };
        for day in (today - i32::try_from(DAYS).unwrap_or(30))..today {
            let down = i32::from((n + day as usize).is_multiple_of(17));
            counts.insert(
                (id.clone(), day),
                DayCounts {
                    total: per_day,
                    up: per_day - down,
                    response_ms_sum: i64::from(per_day) * i64::from(response_ms(n as i64, n)),
                    response_count: per_day,
                },
            );
        }
    }
    let tx = store.begin_write().await.expect("a transaction");
    tx.add_daily_uptime(&counts).await.expect("rollups");
    tx.commit().await.expect("committed");

    // The checks: 30 days every 20 s for the charted monitor, 24 hours every 60 s for the
    // rest of the first page.
    let mut checks = Vec::new();
    let mut written = 0usize;
    let mut flush = |checks: &mut Vec<CheckRow>| {
        let batch = std::mem::take(checks);
        written += batch.len();
        let store = store.clone();
        async move {
            let tx = store.begin_write().await.expect("a transaction");
            tx.insert_checks(batch).await.expect("checks");
            tx.commit().await.expect("committed");
        }
    };
    let mut at = now - DAYS * DAY_MS;
    let mut n = 0;
    while at < now {
        checks.push(check(&charted, at, n));
        at += 20_000;
        n += 1;
        if checks.len() >= 20_000 {
            flush(&mut checks).await;
        }
    }
    for (i, m) in first_page.iter().enumerate() {
        let mut at = now - DAY_MS;
        let mut n = i;
        while at < now {
            checks.push(check(m, at, n));
            at += 60_000;
            n += 1;
        }
        if checks.len() >= 20_000 {
            flush(&mut checks).await;
        }
    }
    flush(&mut checks).await;
    println!(
        "seeded {MONITORS} monitors, {} daily rollups and {written} checks",
        counts.len()
    );
    store.close().await;
    charted.id
}

/// Median and 95th percentile of `TIMED` loads of `path`, after `WARM`, and its size.
async fn time(
    client: &reqwest::Client,
    base: &str,
    cookie: &str,
    path: &str,
) -> (Duration, Duration, usize) {
    let mut took = Vec::with_capacity(TIMED);
    let mut bytes = 0;
    for i in 0..WARM + TIMED {
        let started = Instant::now();
        let r = client
            .get(format!("{base}{path}"))
            .header("cookie", cookie)
            .send()
            .await
            .expect("a page");
        assert_eq!(r.status(), 200, "{path}");
        let body = r.bytes().await.expect("its body");
        if i >= WARM {
            took.push(started.elapsed());
            bytes = body.len();
        }
    }
    took.sort();
    (took[TIMED / 2], took[TIMED * 95 / 100], bytes)
}

async fn run() {
    tocsin::crypto::install_provider();
    let hits = Arc::new(AtomicU64::new(0));
    let target_url = support::counting_target(hits.clone()).await;

    // A first start: the owner signs up, and one monitor made through the API is the
    // template of the 10,000 written into the database.
    let dir = tempfile::tempdir().expect("tempdir");
    let env = [("TOCSIN_MIN_INTERVAL", "1")];
    let (mut server, base) = support::serve(dir.path(), KEY, &env).await;
    let client = reqwest::Client::new();
    let cookie = support::owner_cookie(&client, &base, dir.path()).await;
    let made = support::create_monitor(
        &client,
        &base,
        KEY,
        serde_json::json!({"name": "template", "type": "http", "method": "GET", "url": target_url, "interval": 60, "timeout": 10}),
    )
    .await;
    let template_id = made["id"].as_str().expect("an id").to_string();
    let _ = std::process::Command::new("kill")
        .arg(server.id().to_string())
        .status();
    let _ = server.wait();

    // The template as stored (its workspace and its configuration as the API writes it).
    let url = format!("sqlite://{}", dir.path().join("tocsin.db").display());
    let store = Store::connect(&url).await.expect("database");
    let tx = store.begin_write().await.expect("a transaction");
    let template = tx
        .monitor_by_id(&template_id)
        .await
        .expect("read")
        .expect("the template");
    drop(tx);
    store.close().await;
    let now = i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("after 1970")
            .as_millis(),
    )
    .expect("a time");
    let started = Instant::now();
    let charted = seed(dir.path(), &template, now).await;
    println!("seeding took {:.1} s", started.elapsed().as_secs_f64());

    let (mut server, base) = support::serve(dir.path(), KEY, &env).await;
    // Let the checks settle into their schedule.
    tokio::time::sleep(Duration::from_secs(15)).await;
    let pages = [
        ("baseline: /healthz", "/healthz".to_string()),
        ("overview", "/".to_string()),
        ("overview, page 100", "/?page=100".to_string()),
        ("overview, search", "/?q=service%2009".to_string()),
        ("monitor page, 24 h", format!("/monitors/{charted}")),
        (
            "monitor page, 7 days",
            format!("/monitors/{charted}?range=7d"),
        ),
        (
            "monitor page, 30 days",
            format!("/monitors/{charted}?range=30d"),
        ),
        ("incidents", "/incidents".to_string()),
    ];
    let (hits0, timed_from) = (hits.load(Ordering::Relaxed), Instant::now());
    let (base_p50, _, _) = time(&client, &base, &cookie, "/healthz").await;
    println!("| page | median | p95 | median / baseline | bytes |");
    println!("|---|---:|---:|---:|---:|");
    for (name, path) in &pages {
        let (p50, p95, bytes) = time(&client, &base, &cookie, path).await;
        println!(
            "| {name} | {:.1} ms | {:.1} ms | {:.0}× | {bytes} |",
            p50.as_secs_f64() * 1e3,
            p95.as_secs_f64() * 1e3,
            p50.as_secs_f64() / base_p50.as_secs_f64().max(1e-9),
        );
    }
    println!(
        "the server checked {:.0} monitors a second meanwhile ({} due)",
        (hits.load(Ordering::Relaxed) - hits0) as f64 / timed_from.elapsed().as_secs_f64(),
        (MONITORS - 1) / 60 + 1,
    );
    let _ = server.kill();
    let _ = server.wait();
}
