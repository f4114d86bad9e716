//! `tocsin bench --probe-ingest`: one `tocsin serve` process taking results from probes
//! in a private location, as fast as they can post them. The monitors are inserted into a
//! fresh database before the server starts, all in one private location, so the server
//! checks none of them itself; `--probes` clients in this process create their probes
//! through the API, fetch their share of the monitors and post batches of 500 results
//! each, one request at a time per probe (as `tocsin probe` does), for the warm-up and
//! the measured window. The server's CPU per stored result is read from `/proc` and set
//! against, in the same command, a fresh `tocsin serve` checking 5,000 http monitors at
//! 20 s itself (its CPU per check), and the http check's native CPU in this process.

use super::serve::Serve;
use super::{BENCH_KEY, Target, measure};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The private location the monitors check from.
const LOCATION: &str = "bench-location";
/// Results a request carries.
const BATCH: usize = 500;

/// What one `--probe-ingest` run came to.
#[derive(Debug, Clone)]
pub struct IngestReport {
    pub probes: usize,
    pub monitors: usize,
    pub window: Duration,
    /// Results stored per second over the window.
    pub per_sec: f64,
    /// The server process's CPU per stored result, and in cores.
    pub cpu_per_result: Option<Duration>,
    pub cores: f64,
    /// Requests answered 409/503 (the server asking to send again), over the window.
    pub refused: u64,
    /// The http check's native CPU per check in this process, after the server stopped.
    pub native_cpu: Duration,
    /// A `tocsin serve` of its own checking [`LOCAL_MONITORS`] http monitors itself at a
    /// 20 s interval, in the same command: its CPU per check (scheduling, plugin, request,
    /// recorder), what a result costs the server when it runs the check.
    pub local_cpu: Option<Duration>,
}

/// The local run's size: the side-by-side table's 5,000 monitors at 20 s.
pub const LOCAL_MONITORS: usize = 5_000;

impl IngestReport {
    /// Results stored per second per core the server used.
    pub fn per_core(&self) -> Option<f64> {
        (self.cores > 0.0).then(|| self.per_sec / self.cores)
    }

    /// The server's CPU per remote result over its CPU per check it runs itself, in the
    /// same command.
    pub fn local_multiple(&self) -> Option<f64> {
        let cpu = self.cpu_per_result?;
        let local = self.local_cpu.filter(|l| !l.is_zero())?;
        Some(cpu.as_secs_f64() / local.as_secs_f64())
    }

    /// The server's CPU per remote result over the native check's, in the same command.
    pub fn native_multiple(&self) -> Option<f64> {
        let cpu = self.cpu_per_result?;
        (!self.native_cpu.is_zero()).then(|| cpu.as_secs_f64() / self.native_cpu.as_secs_f64())
    }
}

/// Insert `n` http monitors of the private location into a fresh database.
async fn preload(
    n: usize,
    target: &Target,
    database_url: &str,
    cache: &Path,
) -> anyhow::Result<()> {
    let (store, workspace_id, now) = super::serve::fresh_store(database_url, cache).await?;
    let regions = serde_json::to_string(&[LOCATION])?;
    for chunk in (0..n).collect::<Vec<_>>().chunks(20_000) {
        let rows = chunk
            .iter()
            .map(|i| crate::store::MonitorRow {
                name: format!("remote {i}"),
                config: json!({"url": target.url("/ok"), "method": "GET"}).to_string(),
                interval_secs: 60,
                timeout_secs: 10,
                regions: regions.clone(),
                status: crate::store::MonitorState::Up,
                ..crate::store::MonitorRow::new(
                    &crate::ids::new_id(crate::ids::prefix::MONITOR),
                    &workspace_id,
                    "http",
                    now,
                )
            })
            .collect();
        store.insert_monitors(rows).await?;
    }
    store.close().await;
    Ok(())
}

/// One probe's client: its token, its share of the monitors and its count.
struct Client {
    token: String,
    instance: String,
    monitors: Vec<String>,
    seq: i64,
}

async fn assignments(
    http: &reqwest::Client,
    base: &str,
    c: &Client,
) -> anyhow::Result<Vec<String>> {
    let r = http
        .get(format!("{base}/v1/probe/assignments"))
        .bearer_auth(&c.token)
        .header(crate::api::probes::INSTANCE_HEADER, &c.instance)
        .send()
        .await?;
    anyhow::ensure!(r.status().is_success(), "assignments: {}", r.status());
    let v: Value = serde_json::from_slice(&r.bytes().await?)?;
    Ok(v["data"]["monitors"]
        .as_array()
        .map(|l| {
            l.iter()
                .filter_map(|m| m["id"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default())
}

/// Post batches until `until`; count what was stored and what was refused.
async fn post_until(
    http: reqwest::Client,
    base: String,
    mut c: Client,
    until: Instant,
    stored: Arc<AtomicU64>,
    refused: Arc<AtomicU64>,
) -> anyhow::Result<()> {
    let mut next = 0usize;
    while Instant::now() < until && !c.monitors.is_empty() {
        let now = chrono::Utc::now().timestamp_millis();
        let results: Vec<Value> = (0..BATCH)
            .map(|i| {
                let monitor = &c.monitors[(next + i) % c.monitors.len()];
                json!({"seq": c.seq + 1 + i as i64, "monitorId": monitor, "checkedAtMs": now,
                    "ok": true, "statusCode": 200, "responseTimeMs": 3, "details": {}})
            })
            .collect();
        let body = json!({"version": "bench", "buffered": 0, "shed": 0, "lagMs": null,
            "checksPerSecond": 0.0, "results": results});
        let r = http
            .post(format!("{base}/v1/probe/results"))
            .bearer_auth(&c.token)
            .header(crate::api::probes::INSTANCE_HEADER, &c.instance)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_string())
            .send()
            .await?;
        match r.status().as_u16() {
            200 => {
                c.seq += BATCH as i64;
                next = (next + BATCH) % c.monitors.len();
                stored.fetch_add(BATCH as u64, Ordering::Relaxed);
            }
            409 | 503 => {
                refused.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            other => anyhow::bail!("results: {other}: {}", r.text().await.unwrap_or_default()),
        }
    }
    Ok(())
}

/// Run one size: `n` monitors split over `probes` probes.
pub(super) async fn run_one(
    opts: &super::BenchOptions,
    n: usize,
    probes: usize,
    target: &Target,
    cache: &Path,
) -> anyhow::Result<IngestReport> {
    let data_dir = std::env::temp_dir().join(format!("tocsin-bench-{}", ulid::Ulid::new()));
    std::fs::create_dir_all(&data_dir)?;
    std::fs::write(
        data_dir.join("tocsin.toml"),
        format!(
            "[[regions]]\nname = \"local\"\n\n[[regions]]\nname = \"{LOCATION}\"\nprivate = true\n"
        ),
    )?;
    let db = super::BenchDb::create(opts.database_url.as_deref(), &data_dir).await?;
    let result = async {
        preload(n, target, &db.url, cache).await?;
        let http = reqwest::Client::new();
        let mut serve = Serve::start(&data_dir, cache, &db.url)?;
        serve.wait_ready(&http).await?;
        let mut clients = Vec::new();
        for i in 0..probes {
            let r = http
                .post(format!("{}/v1/probes", serve.base))
                .bearer_auth(BENCH_KEY)
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(json!({"name": format!("bench probe {i}"), "location": LOCATION}).to_string())
                .send()
                .await?;
            anyhow::ensure!(
                r.status().as_u16() == 201,
                "creating a probe: {}",
                r.status()
            );
            let v: Value = serde_json::from_slice(&r.bytes().await?)?;
            clients.push(Client {
                token: v["data"]["token"].as_str().unwrap_or_default().to_string(),
                instance: format!("bench{i}"),
                monitors: Vec::new(),
                seq: 0,
            });
        }
        // Every probe heard from once, then each asks for its share.
        for c in &clients {
            assignments(&http, &serve.base, c).await?;
        }
        for c in &mut clients {
            c.monitors = assignments(&http, &serve.base, c).await?;
        }
        let shared: usize = clients.iter().map(|c| c.monitors.len()).sum();
        anyhow::ensure!(shared == n, "the probes share {shared} of {n} monitors");
        let stored = Arc::new(AtomicU64::new(0));
        let refused = Arc::new(AtomicU64::new(0));
        let started = Instant::now();
        let until = started + opts.warmup + opts.duration;
        let tasks: Vec<_> = clients
            .into_iter()
            .map(|c| {
                tokio::spawn(post_until(
                    http.clone(),
                    serve.base.clone(),
                    c,
                    until,
                    stored.clone(),
                    refused.clone(),
                ))
            })
            .collect();
        tokio::time::sleep(opts.warmup).await;
        let pid = serve.pid();
        let cpu_before = measure::cpu_time(&pid);
        let (stored_before, refused_before) = (
            stored.load(Ordering::Relaxed),
            refused.load(Ordering::Relaxed),
        );
        let window_start = Instant::now();
        for t in tasks {
            t.await??;
        }
        let window = window_start.elapsed();
        let cpu = measure::cpu_time(&pid)
            .zip(cpu_before)
            .map(|(after, before)| after.saturating_sub(before));
        let results = stored.load(Ordering::Relaxed) - stored_before;
        drop(serve);
        anyhow::Ok(IngestReport {
            probes,
            monitors: n,
            window,
            per_sec: results as f64 / window.as_secs_f64(),
            cpu_per_result: cpu
                .filter(|_| results > 0)
                .map(|c| c / u32::try_from(results).unwrap_or(u32::MAX)),
            cores: cpu.map_or(0.0, |c| c.as_secs_f64() / window.as_secs_f64()),
            refused: refused.load(Ordering::Relaxed) - refused_before,
            native_cpu: Duration::ZERO,
            local_cpu: None,
        })
    }
    .await;
    // Then the baselines: the same server checking for itself (a fresh one, 5,000 monitors
    // at 20 s, measured over the same window), and, every server stopped, the native check
    // on a machine otherwise as busy.
    let result = async {
        let report = result?;
        let local = super::BenchOptions {
            serve: true,
            preload: true,
            interval: 20,
            probe_ingest: None,
            ..opts.clone()
        };
        let local = super::serve::run_one(&local, LOCAL_MONITORS, target, cache).await?;
        let (native_cpu, _) =
            super::reference_checks(target, cache, &db.url, opts.baseline_checks.max(1_000))
                .await?;
        anyhow::Ok(IngestReport {
            native_cpu,
            local_cpu: local.cpu_per_check,
            ..report
        })
    }
    .await;
    db.remove().await;
    let _ = std::fs::remove_dir_all(&data_dir);
    result
}

/// Print one `--probe-ingest` run.
pub fn print(r: &IngestReport) {
    println!(
        "probe ingestion: {} probes, {} monitors in one private location, {:.1} s measured",
        r.probes,
        r.monitors,
        r.window.as_secs_f64()
    );
    println!("  results stored     {:.0}/s", r.per_sec);
    println!(
        "  server CPU         {:.2} cores, {} per result",
        r.cores,
        r.cpu_per_result
            .map_or("n/a".into(), |c| format!("{} µs", c.as_micros()))
    );
    if let Some(per_core) = r.per_core() {
        println!("  per core           {per_core:.0} results/s");
    }
    println!("  asked to resend    {} requests", r.refused);
    println!(
        "  native http check  {} µs CPU in this process (same command)",
        r.native_cpu.as_micros()
    );
    if let Some(m) = r.native_multiple() {
        println!("  a remote result costs the server {m:.2}× a native check");
    }
    if let Some(local) = r.local_cpu {
        println!(
            "  local check        {} µs of a server's CPU per check it runs itself ({LOCAL_MONITORS} http monitors at 20 s, same command)",
            local.as_micros()
        );
    }
    if let Some(m) = r.local_multiple() {
        println!("  a remote result costs the server {m:.2}× a check it runs itself");
    }
}
