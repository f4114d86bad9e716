//! A raw export of a monitor's checks (`GET /v1/monitors/{id}/checks?format=csv`) in
//! constant memory: the server's peak RSS while it streams a million checks, against the
//! same for a tenth of them in the same run, and rows per second. Run with
//! `cargo bench -p tocsin --bench check_export` (`EXPORT_ROWS=2000000` for more).
//!
//! A real `tocsin serve` on SQLite in a temporary directory; two heartbeat monitors whose
//! past checks are written straight into its database; each export read to its end by a
//! client on loopback while the server's RSS is sampled from `/proc` every 20 ms.

#[path = "support/mod.rs"]
mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tocsin::store::checks::CheckRow;

const KEY: &str = "tcs_BenchAdminKey000000000000000000000000001";
/// No export runs longer than this, whatever the machine.
const EXPORT_LIMIT: Duration = Duration::from_secs(600);
const STEP_MS: i64 = 60_000;

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(run());
}

/// The resident memory of process `pid`, in KiB.
fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// Write `n` checks of `monitor`, one a minute, ending a day before now.
async fn fill(url: &str, workspace: &str, monitor: &str, n: i64) {
    let store = tocsin::store::Store::connect(url).await.expect("store");
    let end = chrono::Utc::now().timestamp_millis() - 86_400_000;
    let start = end - n * STEP_MS;
    let mut i = 0;
    while i < n {
        let to = (i + 50_000).min(n);
        let rows: Vec<CheckRow> = (i..to)
            .map(|k| CheckRow {
                id: format!("chk_bench_{monitor}_{k:09}"),
                monitor_id: monitor.to_string(),
                workspace_id: workspace.to_string(),
                checked_at: start + k * STEP_MS,
                ok: k % 97 != 0,
                reason: (k % 97 == 0).then(|| "Missed ping".to_string()),
                status_code: None,
                response_time_ms: Some(20 + (k % 50) as i32),
                region: "local".into(),
                details: "{}".into(),
                counted: true,
                maintenance: false,
            })
            .collect();
        let tx = store.begin_write().await.expect("tx");
        tx.insert_checks(rows).await.expect("insert");
        tx.commit().await.expect("commit");
        i = to;
    }
    store.close().await;
}

/// Export every check of `monitor` as CSV: (rows, seconds, RSS before, peak RSS) in KiB.
async fn export(
    client: &reqwest::Client,
    base: &str,
    monitor: &str,
    pid: u32,
) -> (u64, f64, u64, u64) {
    let before = rss_kib(pid);
    let peak = Arc::new(AtomicU64::new(before));
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (peak, done) = (peak.clone(), done.clone());
        tokio::spawn(async move {
            while !done.load(Ordering::Relaxed) {
                peak.fetch_max(rss_kib(pid), Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    };
    let started = Instant::now();
    let url = format!(
        "{base}/v1/monitors/{monitor}/checks?format=csv&from=2000-01-01T00:00:00Z&to=2100-01-01T00:00:00Z"
    );
    let response = client
        .get(url)
        .bearer_auth(KEY)
        .timeout(EXPORT_LIMIT)
        .send()
        .await
        .expect("export");
    assert!(response.status().is_success(), "{}", response.status());
    let mut lines = 0u64;
    let mut response = response;
    while let Some(chunk) = response.chunk().await.expect("chunk") {
        lines += chunk.iter().filter(|b| **b == b'\n').count() as u64;
    }
    let seconds = started.elapsed().as_secs_f64();
    done.store(true, Ordering::Relaxed);
    let _ = sampler.await;
    (
        lines.saturating_sub(1),
        seconds,
        before,
        peak.load(Ordering::Relaxed),
    )
}

async fn run() {
    tocsin::crypto::install_provider();
    let rows: i64 = std::env::var("EXPORT_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let small = (rows / 10).max(1);
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut server, base) =
        support::serve(dir.path(), KEY, &[("TOCSIN_RETENTION_CHECKS_DAYS", "0")]).await;
    let client = reqwest::Client::new();
    let workspace: serde_json::Value = client
        .get(format!("{base}/v1/workspace"))
        .bearer_auth(KEY)
        .send()
        .await
        .expect("workspace")
        .json()
        .await
        .expect("json");
    let workspace = workspace["data"]["id"].as_str().expect("id").to_string();
    let mut monitors = Vec::new();
    for name in ["small", "large"] {
        let created = support::create_monitor(
            &client,
            &base,
            KEY,
            serde_json::json!({"name": name, "type": "heartbeat", "period": 86400}),
        )
        .await;
        monitors.push(created["id"].as_str().unwrap_or_default().to_string());
    }
    let url = format!("sqlite://{}", dir.path().join("tocsin.db").display());
    let filling = Instant::now();
    fill(&url, &workspace, &monitors[0], small).await;
    fill(&url, &workspace, &monitors[1], rows).await;
    println!(
        "wrote {} checks in {:.1} s",
        small + rows,
        filling.elapsed().as_secs_f64()
    );
    let pid = server.id();
    // The small one first (it warms the same caches), then the large.
    let (n_small, s_small, b_small, p_small) = export(&client, &base, &monitors[0], pid).await;
    let (n_large, s_large, b_large, p_large) = export(&client, &base, &monitors[1], pid).await;
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(n_small, small as u64, "every check of the small export");
    assert_eq!(n_large, rows as u64, "every check of the large export");
    let mib = |k: u64| k as f64 / 1024.0;
    for (label, n, s, b, p) in [
        ("baseline", n_small, s_small, b_small, p_small),
        ("export", n_large, s_large, b_large, p_large),
    ] {
        println!(
            "{label}: {n} rows in {s:.2} s, {:.0} rows/s; RSS {:.0} MiB before, peak {:.0} MiB (+{:.0} MiB)",
            n as f64 / s,
            mib(b),
            mib(p),
            mib(p.saturating_sub(b)),
        );
    }
    let growth = |b: u64, p: u64| p.saturating_sub(b).max(1) as f64;
    println!(
        "{}x the rows: {:.2}x the time, {:.2}x the peak RSS, {:.2}x the RSS growth (constant memory: growth does not follow rows)",
        rows / small,
        s_large / s_small,
        p_large as f64 / p_small.max(1) as f64,
        growth(b_large, p_large) / growth(b_small, p_small),
    );
}
