//! `tocsin bench`: the scheduler, plugins and store under load, measured in one process.
//!
//! For each monitor count it starts a loopback target (`tocsin bench-target`, a child
//! process so its CPU is counted apart), creates the monitors in a fresh database, and:
//! 1. runs the same http checks natively (the host's HTTP code, no plugin) and through
//!    the `http` plugin, interleaved, for the CPU cost of each and their ratio;
//! 2. runs the real scheduler and recorder for a while and reports checks/s achieved
//!    against due, schedule lag, CPU per check, memory and database writes;
//! 3. optionally loads `GET /v1/monitors` and `GET /v1/incidents` with `wrk`.

pub mod api_load;
mod ingest;
pub mod measure;
mod pieces;
pub mod serve;
pub mod target;

use crate::clock::{SharedClock, SystemClock};
use crate::config::{Config, Overrides};
use crate::engine::recorder::RecorderOptions;
use crate::engine::{EngineContext, Recorder};
use crate::ids::{self, prefix};
use crate::plans::Plan;
use crate::plugins::state::{CallContext, Grants};
use crate::plugins::wit::http::Request;
use crate::plugins::{CheckRequest, PluginHost};
use crate::scheduler::Scheduler;
use crate::store::{MonitorRow, MonitorState, Store};
use anyhow::Context;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// The benchmark's admin key (a throwaway database).
const BENCH_KEY: &str = "tcs_BenchAdminKey000000000000000000000000001";

/// What to run.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// Monitor counts, one run each.
    pub monitors: Vec<usize>,
    /// Seconds between checks of each monitor.
    pub interval: u32,
    /// Scheduler run measured, after the warm-up.
    pub duration: Duration,
    /// Scheduler run before measuring.
    pub warmup: Duration,
    /// `postgres://...` to run on PostgreSQL (a fresh database is created and dropped);
    /// default SQLite in a temporary directory.
    pub database_url: Option<String>,
    /// Share of monitors whose target fails (they open incidents), in percent.
    pub failing_percent: f64,
    /// Every monitor's `retryInterval`; the failing ones then never reach their threshold
    /// within the run, so they are re-checked at this pace throughout.
    pub retry_interval: Option<u32>,
    /// Checks per side for the native-versus-plugin comparison.
    pub baseline_checks: usize,
    /// Load the API with `wrk` for this long per route (zero: skip).
    pub api_duration: Duration,
    /// The result writer's buffer, and a delay before each batch (a slow database).
    pub recorder: RecorderOptions,
    /// Skip the API phase (`GET /metrics` and the `wrk` load), e.g. at a million monitors.
    pub skip_api: bool,
    /// Measure a `tocsin serve` process of its own instead (monitors created through the
    /// API, checks counted by the target).
    pub serve: bool,
    /// With `serve`: the monitors inserted into the database before the server starts,
    /// not created through its API.
    pub preload: bool,
    /// Only measure a plugin check's pieces apart (`baseline_checks` calls of each).
    pub plugin_pieces: bool,
    /// Only measure a server taking probes' results: this many probes share the monitors
    /// of one private location.
    pub probe_ingest: Option<usize>,
}

/// The figures of one run.
#[derive(Debug, Clone)]
pub struct BenchReport {
    pub monitors: usize,
    pub interval: u32,
    pub window: Duration,
    pub backend: &'static str,
    pub due_per_sec: f64,
    /// Checks that ran and handed their result over (written, waiting, or shed).
    pub done_per_sec: f64,
    /// Results shed because the writer's buffer was full, and those still waiting at the
    /// end of the window.
    pub shed_per_sec: f64,
    pub queued_at_end: u64,
    /// The delay added before each batch write (zero: none).
    pub db_delay: Duration,
    pub lag_p50: Option<Duration>,
    pub lag_p95: Option<Duration>,
    pub lag_p99: Option<Duration>,
    pub lag_max: Duration,
    /// Server process CPU per check during the run (scheduler, plugin, HTTP, database).
    pub cpu_per_check: Option<Duration>,
    /// Server process CPU over the window, in cores (1.0 = one core busy).
    pub cores: f64,
    /// The target's CPU per check (not part of the server's cost).
    pub target_cpu_per_check: Option<Duration>,
    /// On PostgreSQL: its server's CPU per check (every `postgres` process).
    pub database_cpu_per_check: Option<Duration>,
    pub rss: Option<u64>,
    pub peak_rss: Option<u64>,
    pub rows_per_sec: f64,
    pub transactions_per_sec: f64,
    /// Native and plugin check cost (CPU per check) and their ratio.
    pub native_cpu: Duration,
    pub plugin_cpu: Duration,
    pub native_wall: Duration,
    pub plugin_wall: Duration,
    pub seed_time: Duration,
    /// From the scheduler's start (reading every monitor) to the first check's result.
    pub first_check: Option<Duration>,
    pub api: Vec<api_load::ApiLoad>,
    /// `GET /metrics` with every monitor in the database.
    pub scrape: Option<ScrapeFigures>,
}

/// What one `GET /metrics` costs at this size.
#[derive(Debug, Clone)]
pub struct ScrapeFigures {
    /// The median and slowest of [`SCRAPES`] scrapes, one after another.
    pub median: Duration,
    pub slowest: Duration,
    pub bytes: usize,
    pub samples: usize,
    /// Reading the uptime windows of every monitor (the background task's minute).
    pub uptime_refresh: Duration,
    /// Of one scrape: reading the monitors and counters, and encoding the text.
    pub read: Duration,
    pub encode: Duration,
    /// Reading and encoding with `metrics_histograms = false`, and its size.
    pub without_histograms: Duration,
    pub without_histograms_bytes: usize,
}

/// Scrapes timed per run.
const SCRAPES: usize = 5;

impl BenchReport {
    /// Plugin CPU per check over native CPU per check.
    pub fn plugin_ratio(&self) -> f64 {
        self.plugin_cpu.as_secs_f64() / self.native_cpu.as_secs_f64().max(1e-9)
    }
}

/// Run every size in `opts` and return the reports (also printed as they finish).
pub async fn run(opts: &BenchOptions) -> anyhow::Result<Vec<BenchReport>> {
    crate::crypto::install_provider();
    let mut target = Target::start()?;
    let cache = std::env::temp_dir().join(format!("tocsin-bench-cache-{}", std::process::id()));
    let mut reports = Vec::new();
    let result = async {
        if let Some(probes) = opts.probe_ingest {
            for &n in &opts.monitors {
                let report = ingest::run_one(opts, n, probes, &target, &cache).await?;
                ingest::print(&report);
            }
            return anyhow::Ok(());
        }
        if opts.plugin_pieces {
            let p = pieces::run(&target, &cache, opts.baseline_checks).await?;
            pieces::print(&p);
            return anyhow::Ok(());
        }
        for &n in &opts.monitors {
            if opts.serve {
                let report = serve::run_one(opts, n, &target, &cache).await?;
                serve::print_report(&report);
                continue;
            }
            let report = run_one(opts, n, &target, &cache).await?;
            print_report(&report);
            reports.push(report);
        }
        anyhow::Ok(())
    }
    .await;
    target.stop();
    let _ = std::fs::remove_dir_all(&cache);
    result?;
    Ok(reports)
}

/// The loopback target child process.
struct Target {
    child: Child,
    port: u16,
}

impl Target {
    fn start() -> anyhow::Result<Target> {
        let exe = std::env::current_exe().context("cannot find the tocsin binary")?;
        let mut child = Command::new(exe)
            .arg("bench-target")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .context("cannot start the benchmark target")?;
        let stdout = child.stdout.take().context("target stdout")?;
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line)?;
        let port = line
            .trim()
            .strip_prefix("PORT ")
            .and_then(|p| p.parse().ok())
            .with_context(|| format!("the target did not say its port: {line:?}"))?;
        Ok(Target { child, port })
    }

    fn pid(&self) -> String {
        self.child.id().to_string()
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Requests to `/ok` and `/fail` the target has answered.
    async fn count(&self, client: &reqwest::Client) -> anyhow::Result<u64> {
        let text = client
            .get(self.url("/count"))
            .send()
            .await?
            .error_for_status()?
            .text()
            .await?;
        text.trim()
            .parse()
            .with_context(|| format!("the target's count: {text:?}"))
    }

    fn stop(&mut self) {
        // Closing its stdin ends it; kill in case it is stuck.
        drop(self.child.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A database for one run, removed afterwards.
struct BenchDb {
    url: String,
    dir: Option<PathBuf>,
    postgres: Option<(sea_orm::DatabaseConnection, String)>,
}

impl BenchDb {
    async fn create(base: Option<&str>, data_dir: &Path) -> anyhow::Result<BenchDb> {
        use sea_orm::ConnectionTrait;
        match base {
            Some(base) if base.starts_with("postgres") => {
                let name = format!(
                    "tocsin_bench_{}",
                    ulid::Ulid::new().to_string().to_lowercase()
                );
                let admin = sea_orm::Database::connect(base)
                    .await
                    .context("cannot connect to the benchmark database")?;
                admin
                    .execute_unprepared(&format!("CREATE DATABASE \"{name}\""))
                    .await?;
                let cut = base
                    .rfind('/')
                    .filter(|i| *i > base.find("://").unwrap_or(0) + 2);
                let url = match cut {
                    Some(i) => format!("{}/{name}", &base[..i]),
                    None => format!("{base}/{name}"),
                };
                Ok(BenchDb {
                    url,
                    dir: None,
                    postgres: Some((admin, name)),
                })
            }
            Some(other) => anyhow::bail!("--database-url must be postgres://... ({other})"),
            None => Ok(BenchDb {
                url: format!("sqlite://{}", data_dir.join("tocsin.db").display()),
                dir: Some(data_dir.to_path_buf()),
                postgres: None,
            }),
        }
    }

    async fn remove(self) {
        use sea_orm::ConnectionTrait;
        if let Some((admin, name)) = self.postgres {
            let _ = admin
                .execute_unprepared(&format!("DROP DATABASE \"{name}\" WITH (FORCE)"))
                .await;
        }
        if let Some(dir) = self.dir {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

async fn run_one(
    opts: &BenchOptions,
    n: usize,
    target: &Target,
    cache: &Path,
) -> anyhow::Result<BenchReport> {
    let data_dir = std::env::temp_dir().join(format!("tocsin-bench-{}", ulid::Ulid::new()));
    std::fs::create_dir_all(&data_dir)?;
    let db = BenchDb::create(opts.database_url.as_deref(), &data_dir).await?;
    let result = run_on(opts, n, target, cache, &db.url).await;
    db.remove().await;
    let _ = std::fs::remove_dir_all(&data_dir);
    result
}

/// The benchmark's server configuration: defaults, `cache` as the data directory, the
/// benchmark's database.
fn bench_config(cache: &Path, database_url: &str) -> anyhow::Result<Config> {
    Ok(Config::build(
        None,
        &|_| None,
        &Overrides {
            data_dir: Some(cache.to_path_buf()),
            database_url: Some(database_url.to_string()),
            ..Overrides::default()
        },
    )?)
}

async fn run_on(
    opts: &BenchOptions,
    n: usize,
    target: &Target,
    cache: &Path,
    database_url: &str,
) -> anyhow::Result<BenchReport> {
    let clock: SharedClock = Arc::new(SystemClock);
    let store = Store::connect(database_url).await?;
    store.migrate().await?;
    let ws = store
        .bootstrap(Plan::Enterprise, Some(BENCH_KEY.into()), clock.now_ms())
        .await?
        .context("the benchmark database is not empty")?;

    let mut config = bench_config(cache, database_url)?;
    config.rate_limit_per_minute = u32::MAX / 2;
    config.rate_limit_burst = u32::MAX / 2;
    let plugins = Arc::new(crate::app::load_plugins(&config).await?);

    // 1. The same checks natively and through the plugin.
    let (native_cpu, native_wall, plugin_cpu, plugin_wall) =
        compare_native(&plugins, &target.url("/ok"), opts.baseline_checks).await?;

    let seed_time =
        seed_monitors(&store, &ws.workspace_id, opts, n, target, clock.now_ms()).await?;
    let run = run_checks(&store, &plugins, &clock, opts, target).await;

    // 3. The API with every monitor in the database.
    let wrk = !opts.api_duration.is_zero() && api_load::available();
    if !opts.api_duration.is_zero() && !wrk {
        eprintln!("wrk is not installed (apt-get install wrk): skipping the API load figures");
    }
    let (api, scrape) = if opts.skip_api {
        (Vec::new(), None)
    } else {
        load_api(
            store.clone(),
            plugins.clone(),
            config,
            clock,
            wrk.then_some(opts.api_duration),
        )
        .await?
    };
    let backend = store.backend_name();
    store.close().await;

    let CheckRun {
        window,
        first_check,
        handed,
        shed,
        queued_at_end,
        records,
        batches,
        cpu,
        target_cpu,
        database_cpu,
        lag_window,
        rss,
        peak_rss,
    } = run;
    let per_check = |total: Option<Duration>| {
        total
            .filter(|_| handed > 0)
            .map(|t| t / u32::try_from(handed).unwrap_or(u32::MAX))
    };
    let secs = window.as_secs_f64();
    Ok(BenchReport {
        monitors: n,
        interval: opts.interval,
        window,
        backend,
        due_per_sec: n as f64 / f64::from(opts.interval),
        first_check,
        done_per_sec: handed as f64 / secs,
        shed_per_sec: shed as f64 / secs,
        queued_at_end,
        db_delay: opts.recorder.write_delay,
        lag_p50: lag_window.quantile(0.50),
        lag_p95: lag_window.quantile(0.95),
        lag_p99: lag_window.quantile(0.99),
        lag_max: Duration::from_micros(lag_window.max_us),
        cpu_per_check: per_check(cpu),
        cores: cpu.map_or(0.0, |c| c.as_secs_f64() / secs),
        target_cpu_per_check: per_check(target_cpu),
        database_cpu_per_check: per_check(database_cpu),
        rss,
        peak_rss,
        rows_per_sec: records as f64 / secs,
        transactions_per_sec: batches as f64 / secs,
        native_cpu,
        plugin_cpu,
        native_wall,
        plugin_wall,
        seed_time,
        api,
        scrape,
    })
}

/// Monitors, as a server that has been running would have them: each last checked within
/// the past interval, so their next checks spread over the interval. Written just before
/// the scheduler starts, so none is overdue. Returns how long writing them took.
async fn seed_monitors(
    store: &Store,
    workspace_id: &str,
    opts: &BenchOptions,
    n: usize,
    target: &Target,
    now: i64,
) -> anyhow::Result<Duration> {
    let seeded = Instant::now();
    let interval_ms = i64::from(opts.interval) * 1000;
    let failing = ((n as f64) * opts.failing_percent / 100.0).round() as usize;
    // With fast re-checks, the failing monitors' policy waits for more failures than a run
    // makes, so every one of them is re-checked all along.
    let retrying_policy = match opts.retry_interval {
        Some(_) => Some(
            store
                .insert_alert_policy(crate::store::alerting::PolicyRow {
                    name: "bench: never down".into(),
                    failure_threshold: 100,
                    channels: "[]".into(),
                    ..crate::store::alerting::PolicyRow::new(
                        &ids::new_id(prefix::ALERT_POLICY),
                        workspace_id,
                        now,
                    )
                })
                .await?
                .id,
        ),
        None => None,
    };
    // In chunks, so a million monitors never sit in memory as rows at once.
    for chunk in (0..n).collect::<Vec<_>>().chunks(20_000) {
        let rows: Vec<MonitorRow> = chunk
            .iter()
            .copied()
            .map(|i| {
                let id = ids::new_id(prefix::MONITOR);
                let phase = crate::scheduler::phase(&id, Duration::from_millis(interval_ms as u64));
                let path = if i < failing { "/fail" } else { "/ok" };
                MonitorRow {
                    name: format!("bench {i}"),
                    config: serde_json::json!({"url": target.url(path), "method": "GET",
                    "followRedirects": true, "maxRedirects": 10, "expectedStatusCode": 200,
                    "expectedStatusRange": false, "headers": {}})
                    .to_string(),
                    interval_secs: i32::try_from(opts.interval).unwrap_or(60),
                    timeout_secs: 10.min(i32::try_from(opts.interval).unwrap_or(60)),
                    status: MonitorState::Up,
                    // Created one after another, as an import would.
                    created_at: now - i64::try_from(n - i).unwrap_or(0),
                    // The start of its last round, as if it had been running all along.
                    last_checked_at: Some(
                        crate::scheduler::next_round_start(
                            now,
                            i64::try_from(phase.as_millis()).unwrap_or(0),
                            interval_ms,
                        ) - interval_ms,
                    ),
                    // Failing ones have failed once already: their next check opens an
                    // incident, so the incident list has rows to page through (with fast
                    // re-checks, they stay short of their threshold instead).
                    consecutive_failures: i32::from(i < failing && retrying_policy.is_none()),
                    retry_interval_secs: opts
                        .retry_interval
                        .map(|r| i32::try_from(r).unwrap_or(i32::MAX)),
                    alert_policy_id: retrying_policy.clone().filter(|_| i < failing),
                    ..MonitorRow::new(&id, workspace_id, "http", now)
                }
            })
            .collect();
        store.insert_monitors(rows).await?;
    }
    Ok(seeded.elapsed())
}

/// What the measured window of the scheduler and recorder came to.
struct CheckRun {
    window: Duration,
    /// From the scheduler's start to the first check's result.
    first_check: Option<Duration>,
    /// Results handed to the recorder (queued or shed), and of those shed.
    handed: u64,
    shed: u64,
    queued_at_end: u64,
    records: u64,
    batches: u64,
    cpu: Option<Duration>,
    target_cpu: Option<Duration>,
    database_cpu: Option<Duration>,
    lag_window: crate::scheduler::stats::LagSnapshot,
    rss: Option<u64>,
    peak_rss: Option<u64>,
}

/// The scheduler and recorder on the real store: a warm-up, then the measured window.
async fn run_checks(
    store: &Store,
    plugins: &Arc<PluginHost>,
    clock: &SharedClock,
    opts: &BenchOptions,
    target: &Target,
) -> CheckRun {
    let engine = EngineContext::new("http://127.0.0.1");
    let (recorder, recorder_task) =
        Recorder::spawn_with(store.clone(), engine.clone(), opts.recorder.clone());
    let recorder_stats = recorder.stats();
    let handed_now = || {
        recorder_stats.accepted.load(Ordering::Relaxed)
            + recorder_stats.shed.load(Ordering::Relaxed)
    };
    let scheduler = Scheduler::new(
        store.clone(),
        plugins.clone(),
        recorder,
        "local".into(),
        vec!["local".into()],
        clock.clone(),
    );
    let lag = scheduler.stats();
    let (shutdown_tx, shutdown_rx) = watch::channel(false);
    let scheduler_started = Instant::now();
    let scheduler_task = tokio::spawn(scheduler.run(shutdown_rx.clone()));
    // Start-up: from the scheduler's start (it reads every monitor) to the first result.
    let mut first_check = None;
    while scheduler_started.elapsed() < opts.warmup {
        if first_check.is_none() && handed_now() > 0 {
            first_check = Some(scheduler_started.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    let lag_before = lag.snapshot();
    let records_before = recorder_stats.records.load(Ordering::Relaxed);
    let handed_before = handed_now();
    let shed_before = recorder_stats.shed.load(Ordering::Relaxed);
    let batches_before = recorder_stats.batches.load(Ordering::Relaxed);
    let cpu_before = measure::cpu_time("self");
    let target_before = measure::cpu_time(&target.pid());
    let database_before = (!store.is_sqlite()).then(measure::postgres_cpu);
    let started = Instant::now();
    tokio::time::sleep(opts.duration).await;
    let window = started.elapsed();
    let cpu = measure::cpu_time("self")
        .zip(cpu_before)
        .map(|(a, b)| a.saturating_sub(b));
    let target_cpu = measure::cpu_time(&target.pid())
        .zip(target_before)
        .map(|(a, b)| a.saturating_sub(b));
    let database_cpu = database_before.map(|b| measure::postgres_cpu().saturating_sub(b));
    let records = recorder_stats.records.load(Ordering::Relaxed) - records_before;
    let handed = handed_now() - handed_before;
    let shed = recorder_stats.shed.load(Ordering::Relaxed) - shed_before;
    let queued_at_end = recorder_stats
        .accepted
        .load(Ordering::Relaxed)
        .saturating_sub(recorder_stats.records.load(Ordering::Relaxed));
    let batches = recorder_stats.batches.load(Ordering::Relaxed) - batches_before;
    let lag_window = lag.snapshot().since(&lag_before);
    let (rss, peak_rss) = measure::memory();

    let _ = shutdown_tx.send(true);
    let _ = scheduler_task.await;
    // The writer drains what it holds; a deliberately slowed one is stopped instead.
    let mut recorder_task = recorder_task;
    if tokio::time::timeout(Duration::from_secs(15), &mut recorder_task)
        .await
        .is_err()
    {
        recorder_task.abort();
    }
    CheckRun {
        window,
        first_check,
        handed,
        shed,
        queued_at_end,
        records,
        batches,
        cpu,
        target_cpu,
        database_cpu,
        lag_window,
        rss,
        peak_rss,
    }
}

/// The http check's CPU per check natively and through the plugin, in this process: the
/// reference a `--serve` run is read against, in the same command.
async fn reference_checks(
    target: &Target,
    cache: &Path,
    database_url: &str,
    count: usize,
) -> anyhow::Result<(Duration, Duration)> {
    let config = bench_config(cache, database_url)?;
    let plugins = Arc::new(crate::app::load_plugins(&config).await?);
    let (native_cpu, _, plugin_cpu, _) =
        compare_native(&plugins, &target.url("/ok"), count).await?;
    Ok((native_cpu, plugin_cpu))
}

/// CPU and wall time per check, natively and through the `http` plugin, from interleaved
/// rounds of `count` checks each, 32 at a time: (native cpu, native wall, plugin cpu, plugin wall).
async fn compare_native(
    plugins: &Arc<PluginHost>,
    url: &str,
    count: usize,
) -> anyhow::Result<(Duration, Duration, Duration, Duration)> {
    let http = plugins
        .monitor("http")
        .context("the http plugin is not loaded")?;
    let config = http_config(url);
    let native = native_check(plugins, url);
    let wasm = {
        let plugins = plugins.clone();
        move || {
            let plugins = plugins.clone();
            let http = http.clone();
            let config = config.clone();
            async move {
                // The scheduler's path: an instance kept between one workspace's checks.
                let r = plugins
                    .check_for(BENCH_WORKSPACE, &http, bench_request(config))
                    .await;
                matches!(r, Ok(o) if o.ok)
            }
        }
    };
    // A warm-up round of each, then three measured rounds of each, alternating.
    let mut totals = [(Duration::ZERO, Duration::ZERO); 2];
    for round in 0..4 {
        let n = if round == 0 { count / 4 + 1 } else { count };
        let a = timed_batch(n, native.clone()).await?;
        let b = timed_batch(n, wasm.clone()).await?;
        if round > 0 {
            totals[0].0 += a.0;
            totals[0].1 += a.1;
            totals[1].0 += b.0;
            totals[1].1 += b.1;
        }
    }
    let per = |d: Duration| d / u32::try_from(count * 3).unwrap_or(u32::MAX).max(1);
    Ok((
        per(totals[0].0),
        per(totals[0].1),
        per(totals[1].0),
        per(totals[1].1),
    ))
}

/// The workspace the in-process checks are made for (instances are kept per workspace).
const BENCH_WORKSPACE: &str = "ws_bench";

/// The bench's check request for an http monitor configuration.
fn bench_request(config: String) -> CheckRequest {
    CheckRequest {
        config,
        timeout_ms: 10_000,
        monitor_id: "mon_bench".into(),
        region: "local".into(),
        settings: "{}".into(),
        attempt: 1,
    }
}

/// The bench's http monitor configuration for `url`.
fn http_config(url: &str) -> String {
    serde_json::json!({"url": url, "method": "GET", "followRedirects": true,
        "maxRedirects": 10, "expectedStatusCode": 200, "expectedStatusRange": false,
        "headers": {}})
    .to_string()
}

/// The http check done natively (the host's HTTP code, no plugin), as a future factory.
fn native_check(
    plugins: &Arc<PluginHost>,
    url: &str,
) -> impl Fn() -> std::pin::Pin<Box<dyn std::future::Future<Output = bool> + Send>> + Clone {
    let services = plugins.services();
    let url = url.to_string();
    move || {
        let services = services.clone();
        let url = url.clone();
        Box::pin(async move {
            let ctx = CallContext {
                plugin: Arc::from("native"),
                grants: Grants::of([crate::plugins::Capability::Http]),
                services,
                budget_deadline: std::time::Instant::now() + Duration::from_secs(10),
                budget: Duration::from_secs(10),
                region: Some(Arc::from("local")),
                attachments: std::sync::Arc::from([]),
            };
            let r = crate::plugins::http::send(
                &ctx,
                Request {
                    method: "GET".into(),
                    url,
                    headers: vec![],
                    body: None,
                    timeout_ms: 10_000,
                    follow_redirects: true,
                    max_redirects: 10,
                    max_body_bytes: 1 << 20,
                    version: crate::plugins::wit::http::HttpVersion::Any,
                },
            )
            .await;
            matches!(r, Ok(resp) if resp.status == 200)
        })
    }
}

/// Run `n` calls of `f`, 32 at a time; (process CPU, wall time). Fails if any call fails.
async fn timed_batch<F, Fut>(n: usize, f: F) -> anyhow::Result<(Duration, Duration)>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = bool> + Send + 'static,
{
    timed_batch_by(|| measure::cpu_time("self"), n, f).await
}

/// [`timed_batch`] with the process's CPU read by `clock`.
async fn timed_batch_by<F, Fut>(
    clock: fn() -> Option<Duration>,
    n: usize,
    f: F,
) -> anyhow::Result<(Duration, Duration)>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = bool> + Send + 'static,
{
    use futures::StreamExt;
    let cpu = clock();
    let started = Instant::now();
    let ok = futures::stream::iter((0..n).map(|_| tokio::spawn(f())))
        .buffer_unordered(32)
        .filter(|r| std::future::ready(matches!(r, Ok(true))))
        .count()
        .await;
    let wall = started.elapsed();
    let cpu = clock()
        .zip(cpu)
        .map_or(Duration::ZERO, |(a, b)| a.saturating_sub(b));
    anyhow::ensure!(ok == n, "{} of {n} baseline checks failed", n - ok);
    Ok((cpu, wall))
}

/// Serve the API on loopback, time `GET /metrics`, and load two list routes with `wrk`
/// (when `duration` is given).
async fn load_api(
    store: Store,
    plugins: Arc<PluginHost>,
    config: Config,
    clock: SharedClock,
    duration: Option<Duration>,
) -> anyhow::Result<(Vec<api_load::ApiLoad>, Option<ScrapeFigures>)> {
    let refresh_started = Instant::now();
    crate::api::metrics::UPTIME
        .refresh(&store, clock.now_ms())
        .await?;
    let uptime_refresh = refresh_started.elapsed();
    let limits = Arc::new(crate::api::ratelimit::Limits::new(
        config.rate_limit_per_minute,
        config.rate_limit_burst,
    ));
    let engine = EngineContext::new("http://127.0.0.1");
    let (recorder, _writer) = crate::engine::Recorder::spawn(store.clone(), engine.clone());
    let state = crate::api::AppState {
        store,
        plugins,
        config: Arc::new(config),
        clock,
        engine,
        recorder,
        limits,
        key_usage: Arc::default(),
        monitor_pages: Arc::default(),
        metrics_labels: Arc::default(),
        stopping: tokio::sync::watch::channel(false).1,
        accounts: Arc::new(crate::accounts::Services {
            sso: crate::accounts::oidc::Sso::new(Vec::new(), "http://127.0.0.1", &[])
                .map_err(anyhow::Error::msg)?,
            login: Default::default(),
            reset: Default::default(),
        }),
    };
    let direct = state.clone();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, crate::api::router(state, crate::web::routes()))
            .with_graceful_shutdown(async {
                let _ = stopped.await;
            })
            .await;
    });
    let scrape = time_scrapes(&base, &direct, uptime_refresh).await;
    if let Err(e) = &scrape {
        eprintln!("GET /metrics failed: {e:#}");
    }
    let mut out = Vec::new();
    let Some(duration) = duration else {
        let _ = stop.send(());
        let _ = server.await;
        return Ok((out, scrape.ok()));
    };
    for path in ["/v1/monitors?limit=100", "/v1/incidents?limit=100"] {
        let base = base.clone();
        let load = tokio::task::spawn_blocking(move || {
            api_load::run(&base, path, BENCH_KEY, 1, 16, duration)
        })
        .await??;
        out.push(load);
    }
    let _ = stop.send(());
    let _ = server.await;
    Ok((out, scrape.ok()))
}

/// Scrape `/metrics` [`SCRAPES`] times, one after another.
async fn time_scrapes(
    base: &str,
    direct: &crate::api::AppState,
    uptime_refresh: Duration,
) -> anyhow::Result<ScrapeFigures> {
    let client = reqwest::Client::new();
    let mut times = Vec::with_capacity(SCRAPES);
    let mut body = String::new();
    for _ in 0..SCRAPES {
        let started = Instant::now();
        let r = client
            .get(format!("{base}/metrics"))
            .bearer_auth(BENCH_KEY)
            .send()
            .await?;
        anyhow::ensure!(r.status().is_success(), "status {}", r.status());
        body = r.text().await?;
        times.push(started.elapsed());
    }
    times.sort();
    // The same exposition without HTTP, timed by its parts; and without the per-monitor
    // histograms.
    let (_, parts) = crate::api::metrics::render(direct, None)
        .await
        .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    let mut lean = direct.clone();
    let mut config = (*direct.config).clone();
    config.metrics_histograms = false;
    lean.config = Arc::new(config);
    let started = Instant::now();
    let (lean_body, _) = crate::api::metrics::render(&lean, None)
        .await
        .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    let without_histograms = started.elapsed();
    Ok(ScrapeFigures {
        read: parts.read,
        encode: parts.encode,
        without_histograms,
        without_histograms_bytes: lean_body.len(),
        median: times[SCRAPES / 2],
        slowest: times[SCRAPES - 1],
        bytes: body.len(),
        samples: body.lines().filter(|l| !l.starts_with('#')).count(),
        uptime_refresh,
    })
}

fn ms(d: Option<Duration>) -> String {
    d.map_or("-".into(), |d| format!("{:.1} ms", d.as_secs_f64() * 1e3))
}

fn us(d: Option<Duration>) -> String {
    d.map_or("-".into(), |d| format!("{:.0} µs", d.as_secs_f64() * 1e6))
}

fn mib(b: Option<u64>) -> String {
    b.map_or("-".into(), |b| format!("{:.0} MiB", b as f64 / 1048576.0))
}

/// Print one run's figures.
pub fn print_report(r: &BenchReport) {
    println!(
        "\n== {} http monitors every {} s on {} ({:.0} s measured; monitors created in {:.1} s)",
        r.monitors,
        r.interval,
        r.backend,
        r.window.as_secs_f64(),
        r.seed_time.as_secs_f64()
    );
    println!(
        "checks/s        {:.0} done of {:.0} due ({:.1} %)",
        r.done_per_sec,
        r.due_per_sec,
        100.0 * r.done_per_sec / r.due_per_sec.max(1e-9)
    );
    if r.shed_per_sec > 0.0 || !r.db_delay.is_zero() {
        println!(
            "results         {:.0}/s written, {:.0}/s shed (buffer full), {} waiting at the end; {} ms slept before each batch write",
            r.rows_per_sec,
            r.shed_per_sec,
            r.queued_at_end,
            r.db_delay.as_millis()
        );
    }
    println!(
        "schedule lag    p50 ≤ {}  p95 ≤ {}  p99 ≤ {}  max {}",
        ms(r.lag_p50),
        ms(r.lag_p95),
        ms(r.lag_p99),
        ms(Some(r.lag_max))
    );
    println!(
        "server CPU      {} per check, {:.2} cores (target: {} per check, not included)",
        us(r.cpu_per_check),
        r.cores,
        us(r.target_cpu_per_check)
    );
    if r.database_cpu_per_check.is_some() {
        println!(
            "PostgreSQL CPU  {} per check (every postgres process); with the server {}",
            us(r.database_cpu_per_check),
            us(r.cpu_per_check
                .zip(r.database_cpu_per_check)
                .map(|(a, b)| a + b))
        );
    }
    println!(
        "memory          RSS {}, peak {}; {} per monitor; first check {} after the scheduler started",
        mib(r.rss),
        mib(r.peak_rss),
        r.rss.map_or("-".into(), |b| format!(
            "{:.1} KiB",
            b as f64 / 1024.0 / r.monitors.max(1) as f64
        )),
        ms(r.first_check)
    );
    println!(
        "database        {:.0} check rows/s in {:.1} transactions/s",
        r.rows_per_sec, r.transactions_per_sec
    );
    println!(
        "plugin vs native (same http check, CPU per check): plugin {} / native {} = {:.2}x; wall {} / {}",
        us(Some(r.plugin_cpu)),
        us(Some(r.native_cpu)),
        r.plugin_ratio(),
        us(Some(r.plugin_wall)),
        us(Some(r.native_wall)),
    );
    if let Some(s) = &r.scrape {
        println!(
            "GET /metrics    median {}, slowest {} ({:.1} MiB, {} samples; read {}, encode {}); uptime windows read in {}",
            ms(Some(s.median)),
            ms(Some(s.slowest)),
            s.bytes as f64 / 1048576.0,
            s.samples,
            ms(Some(s.read)),
            ms(Some(s.encode)),
            ms(Some(s.uptime_refresh)),
        );
        println!(
            "                without per-monitor histograms: read and encoded in {} ({:.1} MiB)",
            ms(Some(s.without_histograms)),
            s.without_histograms_bytes as f64 / 1048576.0,
        );
    }
    for a in &r.api {
        println!(
            "API {:<26} {:.0} req/s, p50 {}, p99 {}, {} non-2xx of {}",
            a.path,
            a.requests_per_sec,
            ms(a.p50),
            ms(a.p99),
            a.errors,
            a.requests
        );
    }
}

/// The reports as a Markdown table (for docs/performance.md).
pub fn markdown(reports: &[BenchReport]) -> String {
    let mut out = String::from(
        "| monitors | due checks/s | done checks/s | lag p50 | lag p99 | server CPU/check | cores | RSS peak | rows/s | tx/s | plugin/native CPU | GET /v1/monitors | GET /v1/incidents |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in reports {
        let api = |i: usize| {
            r.api.get(i).map_or("-".into(), |a| {
                format!("{:.0} req/s, p99 {}", a.requests_per_sec, ms(a.p99))
            })
        };
        out.push_str(&format!(
            "| {} | {:.0} | {:.0} | ≤ {} | ≤ {} | {} | {:.2} | {} | {:.0} | {:.1} | {:.2}x | {} | {} |\n",
            r.monitors,
            r.due_per_sec,
            r.done_per_sec,
            ms(r.lag_p50),
            ms(r.lag_p99),
            us(r.cpu_per_check),
            r.cores,
            mib(r.peak_rss),
            r.rows_per_sec,
            r.transactions_per_sec,
            r.plugin_ratio(),
            api(0),
            api(1),
        ));
    }
    out
}
