//! `tocsin bench --serve`: a real `tocsin serve` process of its own, measured from outside,
//! the way an operator sees it. A fresh data directory (or a fresh PostgreSQL database),
//! monitors created one by one through the API, the loopback target counting the requests
//! it answers, and the server's CPU time and memory read from `/proc`. Everything the
//! server does for a check is inside the figure: scheduling, the plugin, the request, the
//! recorder, the incident engine, the API's own background work.

use super::{BENCH_KEY, Target, measure};
use anyhow::Context;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// What one `--serve` run came to.
#[derive(Debug, Clone)]
pub struct ServeReport {
    pub monitors: usize,
    pub interval: u32,
    pub backend: &'static str,
    pub window: Duration,
    /// Creating the monitors through the API, one request each (or, preloaded, inserting
    /// them into the database before the server started).
    pub create_time: Duration,
    /// Preloaded: from starting the server process to its answering `/readyz`, and to the
    /// target's first request from it.
    pub preloaded: Option<(Duration, Option<Duration>)>,
    pub due_per_sec: f64,
    /// Requests the target answered per second (each is one check).
    pub done_per_sec: f64,
    /// The server process's CPU per check, and in cores.
    pub cpu_per_check: Option<Duration>,
    pub cores: f64,
    /// The PostgreSQL server's CPU per check (every `postgres` process), when on it.
    pub database_cpu_per_check: Option<Duration>,
    pub rss: Option<u64>,
    /// The most the server process's RSS reached (`VmHWM`), at the end (after both of
    /// the benchmark's scrapes of `/metrics`) and before its first scrape.
    pub rss_peak: Option<u64>,
    pub rss_peak_unscraped: Option<u64>,
    /// The first scrape of `/metrics`: how long it took and how many bytes it carried.
    pub scrape: (Duration, usize),
    /// The scrapes after the measured window, shortest first (on SQLite, with the labels
    /// the first one kept, no monitor having changed since).
    pub scrapes_again: Vec<Duration>,
    /// Schedule lag over the window, from the server's own histogram (bucket bounds).
    pub lag_p50: Option<f64>,
    pub lag_p99: Option<f64>,
    /// Results shed by the server's recorder during the window.
    pub shed: u64,
    /// The same command's reference, measured in the benchmark's own process once the
    /// server has stopped: CPU per check of the http check done natively and through the
    /// plugin. This machine's speed varies by half from one day to the next, so the
    /// server's CPU per check is also given as a multiple of the native check.
    pub reference: Option<Reference>,
}

/// The http check's CPU per check in the benchmark's own process (see
/// [`ServeReport::reference`]).
#[derive(Debug, Clone, Copy)]
pub struct Reference {
    pub native_cpu: Duration,
    pub plugin_cpu: Duration,
}

impl ServeReport {
    /// The server's CPU per check over the native check's, in the same command.
    pub fn native_multiple(&self) -> Option<f64> {
        let reference = self.reference?;
        let per_check = self.cpu_per_check?;
        (!reference.native_cpu.is_zero())
            .then(|| per_check.as_secs_f64() / reference.native_cpu.as_secs_f64())
    }
}

/// Fewest checks per side in the reference: `/proc`'s CPU times tick every 10 ms, so
/// fewer would round a check's cost to whole ticks.
const REFERENCE_MIN: usize = 1_000;

/// The `tocsin serve` child.
pub(super) struct Serve {
    child: Child,
    pub(super) base: String,
}

impl Serve {
    /// Start `tocsin serve` on `data_dir` (and its `tocsin.toml`, if it has one).
    pub(super) fn start(
        data_dir: &Path,
        cache: &Path,
        database_url: &str,
    ) -> anyhow::Result<Serve> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let exe = std::env::current_exe().context("cannot find the tocsin binary")?;
        let child = Command::new(exe)
            .arg("serve")
            .env("TOCSIN_LISTEN", format!("127.0.0.1:{port}"))
            .env("TOCSIN_DATA_DIR", data_dir)
            .env("TOCSIN_DATABASE_URL", database_url)
            .env("TOCSIN_PLUGIN_CACHE_DIR", cache)
            .env("TOCSIN_BOOTSTRAP_KEY", BENCH_KEY)
            .env("TOCSIN_BOOTSTRAP_PLAN", "enterprise")
            .env("TOCSIN_MIN_INTERVAL", "1")
            .env("TOCSIN_RATE_LIMIT_PER_MINUTE", "1000000000")
            .env("TOCSIN_RATE_LIMIT_BURST", "1000000000")
            .env("TOCSIN_LOG", "warn")
            .current_dir(data_dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .context("cannot start tocsin serve")?;
        Ok(Serve {
            child,
            base: format!("http://127.0.0.1:{port}"),
        })
    }

    pub(super) fn pid(&self) -> String {
        self.child.id().to_string()
    }

    pub(super) async fn wait_ready(&mut self, client: &reqwest::Client) -> anyhow::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            if let Some(status) = self.child.try_wait()? {
                anyhow::bail!("tocsin serve exited while starting: {status}");
            }
            let ready = client
                .get(format!("{}/readyz", self.base))
                .send()
                .await
                .is_ok_and(|r| r.status().is_success());
            if ready {
                return Ok(());
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "tocsin serve was not ready within 120 s"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Create `n` http monitors through the API, 16 requests at a time.
async fn create_monitors(
    client: &reqwest::Client,
    base: &str,
    target: &Target,
    n: usize,
    interval: u32,
    failing_percent: f64,
) -> anyhow::Result<()> {
    use futures::StreamExt;
    let failing = ((n as f64) * failing_percent / 100.0).round() as usize;
    let timeout = interval.min(10);
    let mut created = 0usize;
    let mut stream = futures::stream::iter(0..n)
        .map(|i| {
            let body = serde_json::json!({
                "name": format!("bench {i}"),
                "type": "http",
                "url": target.url(if i < failing { "/fail" } else { "/ok" }),
                "method": "GET",
                "interval": interval,
                "timeout": timeout,
            });
            let request = client
                .post(format!("{base}/v1/monitors"))
                .bearer_auth(BENCH_KEY)
                .header("content-type", "application/json")
                .body(body.to_string());
            async move {
                let r = request.send().await?;
                let status = r.status();
                if status.is_success() {
                    anyhow::Ok(())
                } else {
                    anyhow::bail!("creating a monitor: {status} {}", r.text().await?)
                }
            }
        })
        .buffer_unordered(16);
    while let Some(r) = stream.next().await {
        r?;
        created += 1;
        if created.is_multiple_of(20_000) {
            eprintln!("  {created} of {n} monitors created");
        }
    }
    Ok(())
}

/// Scrapes timed after the measured window.
const SCRAPES_AGAIN: usize = 5;

/// The server's schedule-lag histogram (cumulative counts by upper bound in seconds), its
/// count of shed results, and the exposition's size, from `GET /metrics`, with the time
/// from the request to the body's last byte (reading the text here is not the server's).
async fn scrape(
    client: &reqwest::Client,
    base: &str,
) -> anyhow::Result<(Vec<(f64, u64)>, u64, usize, Duration)> {
    let started = Instant::now();
    let body = client
        .get(format!("{base}/metrics"))
        .bearer_auth(BENCH_KEY)
        .send()
        .await?
        .error_for_status()?
        .bytes()
        .await?;
    let took = started.elapsed();
    let text = std::str::from_utf8(&body)?;
    let mut buckets = Vec::new();
    let mut shed = 0;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("tocsin_schedule_lag_seconds_bucket{le=\"") {
            let Some((le, count)) = rest.split_once("\"} ") else {
                continue;
            };
            let le = if le == "+Inf" {
                f64::INFINITY
            } else {
                le.parse().unwrap_or(f64::INFINITY)
            };
            buckets.push((le, count.trim().parse().unwrap_or(0)));
        } else if let Some(count) = line.strip_prefix("tocsin_recorder_shed_total ") {
            shed = count.trim().parse().unwrap_or(0);
        }
    }
    Ok((buckets, shed, text.len(), took))
}

/// The bucket bound under which share `q` of the window's checks started.
fn quantile(before: &[(f64, u64)], after: &[(f64, u64)], q: f64) -> Option<f64> {
    let delta: Vec<(f64, u64)> = after
        .iter()
        .map(|(le, n)| {
            let was = before.iter().find(|(b, _)| b == le).map_or(0, |(_, n)| *n);
            (*le, n.saturating_sub(was))
        })
        .collect();
    let total = delta.last()?.1;
    if total == 0 {
        return None;
    }
    let wanted = (total as f64 * q).ceil() as u64;
    delta.iter().find(|(_, n)| *n >= wanted).map(|(le, _)| *le)
}

/// Insert `n` monitors straight into a fresh database, as `tocsin serve` would find them
/// after a restart, and compile the plugins into `cache`, as a previous start would have;
/// returns how long the insert took.
async fn preload(
    opts: &super::BenchOptions,
    n: usize,
    target: &Target,
    database_url: &str,
    cache: &Path,
) -> anyhow::Result<Duration> {
    let (store, workspace_id, now) = fresh_store(database_url, cache).await?;
    let took = super::seed_monitors(&store, &workspace_id, opts, n, target, now).await;
    store.close().await;
    took
}

/// A fresh benchmark database, migrated, with its workspace and the benchmark's admin key
/// (the built-in plugins compiled into `cache` first, so the server finds them there):
/// the store, the workspace's id and now.
pub(super) async fn fresh_store(
    database_url: &str,
    cache: &Path,
) -> anyhow::Result<(crate::store::Store, String, i64)> {
    let mut config = super::bench_config(cache, database_url)?;
    config.plugin_cache_dir = cache.to_path_buf();
    drop(crate::app::load_plugins(&config).await?);
    let store = crate::store::Store::connect(database_url).await?;
    store.migrate().await?;
    let now = crate::clock::Clock::now_ms(&crate::clock::SystemClock);
    let ws = store
        .bootstrap(crate::plans::Plan::Enterprise, Some(BENCH_KEY.into()), now)
        .await?
        .context("the benchmark database is not empty")?;
    Ok((store, ws.workspace_id, now))
}

/// How long after `since` the target answered its first request beyond `before` (None
/// when none came within two minutes).
async fn first_request_since(
    client: &reqwest::Client,
    target: &Target,
    before: u64,
    since: Instant,
) -> anyhow::Result<Option<Duration>> {
    while since.elapsed() < Duration::from_secs(120) {
        if target.count(client).await? > before {
            return Ok(Some(since.elapsed()));
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(None)
}

/// Run one size against a `tocsin serve` of its own.
pub(super) async fn run_one(
    opts: &super::BenchOptions,
    n: usize,
    target: &Target,
    cache: &Path,
) -> anyhow::Result<ServeReport> {
    let data_dir = std::env::temp_dir().join(format!("tocsin-bench-{}", ulid::Ulid::new()));
    std::fs::create_dir_all(&data_dir)?;
    let db = super::BenchDb::create(opts.database_url.as_deref(), &data_dir).await?;
    let postgres = db.postgres.is_some();
    let result = async {
        let client = reqwest::Client::new();
        let (mut serve, create_time, preloaded) = if opts.preload {
            let create_time = preload(opts, n, target, &db.url, cache).await?;
            let before = target.count(&client).await?;
            let spawned = Instant::now();
            let mut serve = Serve::start(&data_dir, cache, &db.url)?;
            serve.wait_ready(&client).await?;
            let ready = spawned.elapsed();
            let first = first_request_since(&client, target, before, spawned).await?;
            (serve, create_time, Some((ready, first)))
        } else {
            let mut serve = Serve::start(&data_dir, cache, &db.url)?;
            serve.wait_ready(&client).await?;
            let created = Instant::now();
            create_monitors(
                &client,
                &serve.base,
                target,
                n,
                opts.interval,
                opts.failing_percent,
            )
            .await?;
            (serve, created.elapsed(), None)
        };
        tokio::time::sleep(opts.warmup).await;

        let rss_peak_unscraped = measure::memory_of(&serve.pid()).1;
        let (lag_before, shed_before, scrape_bytes, scrape_time) =
            scrape(&client, &serve.base).await?;
        let count_before = target.count(&client).await?;
        let cpu_before = measure::cpu_time(&serve.pid());
        let db_before = postgres.then(measure::postgres_cpu);
        let started = Instant::now();
        tokio::time::sleep(opts.duration).await;
        let cpu = measure::cpu_time(&serve.pid())
            .zip(cpu_before)
            .map(|(a, b)| a.saturating_sub(b));
        let db_cpu = db_before.map(|b| measure::postgres_cpu().saturating_sub(b));
        let count = target.count(&client).await? - count_before;
        let window = started.elapsed();
        let rss = measure::memory_of(&serve.pid()).0;
        let (lag_after, shed_after, _, first_again) = scrape(&client, &serve.base).await?;
        // One scrape moves by a second with what else the machine does: take five.
        let mut scrapes_again = vec![first_again];
        for _ in 1..SCRAPES_AGAIN {
            scrapes_again.push(scrape(&client, &serve.base).await?.3);
        }
        scrapes_again.sort();
        let rss_peak = measure::memory_of(&serve.pid()).1;
        if let Some(status) = serve.child.try_wait()? {
            anyhow::bail!("tocsin serve exited during the run: {status}");
        }
        let per_check = |total: Option<Duration>| {
            total
                .filter(|_| count > 0)
                .map(|t| t / u32::try_from(count).unwrap_or(u32::MAX))
        };
        let secs = window.as_secs_f64();
        anyhow::Ok(ServeReport {
            monitors: n,
            interval: opts.interval,
            backend: if postgres { "PostgreSQL" } else { "SQLite" },
            window,
            create_time,
            preloaded,
            due_per_sec: n as f64 / f64::from(opts.interval),
            done_per_sec: count as f64 / secs,
            cpu_per_check: per_check(cpu),
            cores: cpu.map_or(0.0, |c| c.as_secs_f64() / secs),
            database_cpu_per_check: per_check(db_cpu),
            rss,
            rss_peak,
            rss_peak_unscraped,
            scrape: (scrape_time, scrape_bytes),
            scrapes_again,
            lag_p50: quantile(&lag_before, &lag_after, 0.50),
            lag_p99: quantile(&lag_before, &lag_after, 0.99),
            shed: shed_after.saturating_sub(shed_before),
            reference: None,
        })
    }
    .await;
    // The server has stopped (dropped with the block above): measure the reference on a
    // machine otherwise as busy as during the window, less the server.
    let result = match result {
        Ok(report) => super::reference_checks(
            target,
            cache,
            &db.url,
            opts.baseline_checks.max(REFERENCE_MIN),
        )
        .await
        .map(|(native_cpu, plugin_cpu)| ServeReport {
            reference: Some(Reference {
                native_cpu,
                plugin_cpu,
            }),
            ..report
        }),
        Err(e) => Err(e),
    };
    db.remove().await;
    let _ = std::fs::remove_dir_all(&data_dir);
    result
}

/// Print one `--serve` run.
pub fn print_report(r: &ServeReport) {
    let us = |d: Option<Duration>| super::us(d);
    let secs = |s: Option<f64>| s.map_or("-".into(), |s| format!("{:.3} s", s));
    let how = if r.preloaded.is_some() {
        "inserted into the database before the server started"
    } else {
        "created through the API"
    };
    println!(
        "\n== tocsin serve: {} http monitors every {} s on {} ({:.0} s measured; monitors {how} in {:.1} s)",
        r.monitors,
        r.interval,
        r.backend,
        r.window.as_secs_f64(),
        r.create_time.as_secs_f64()
    );
    if let Some((ready, first)) = r.preloaded {
        println!(
            "start-up        ready after {:.2} s; first check {} after the process started (plugins already compiled)",
            ready.as_secs_f64(),
            first.map_or("none within 120 s".into(), |f| format!(
                "{:.2} s",
                f.as_secs_f64()
            ))
        );
    }
    println!(
        "checks/s        {:.0} answered by the target of {:.0} due ({:.1} %)",
        r.done_per_sec,
        r.due_per_sec,
        100.0 * r.done_per_sec / r.due_per_sec.max(1e-9)
    );
    println!(
        "schedule lag    p50 ≤ {}  p99 ≤ {} (the server's histogram buckets)",
        secs(r.lag_p50),
        secs(r.lag_p99)
    );
    println!(
        "serve CPU       {} per check, {:.2} cores; RSS {}, peak {} ({} per monitor)",
        us(r.cpu_per_check),
        r.cores,
        super::mib(r.rss),
        super::mib(r.rss_peak),
        r.rss
            .filter(|_| r.monitors > 0)
            .map_or("-".into(), |b| format!(
                "{:.2} KiB",
                b as f64 / 1024.0 / r.monitors as f64
            ))
    );
    println!(
        "                peak before the first scrape of /metrics {}",
        super::mib(r.rss_peak_unscraped)
    );
    println!(
        "/metrics        first scrape {:.2} s, {:.1} MiB of text; the next {} after the window: median {:.2} s ({:.2}-{:.2} s)",
        r.scrape.0.as_secs_f64(),
        r.scrape.1 as f64 / (1024.0 * 1024.0),
        r.scrapes_again.len(),
        r.scrapes_again
            .get(r.scrapes_again.len() / 2)
            .map_or(0.0, Duration::as_secs_f64),
        r.scrapes_again.first().map_or(0.0, Duration::as_secs_f64),
        r.scrapes_again.last().map_or(0.0, Duration::as_secs_f64),
    );
    if r.database_cpu_per_check.is_some() {
        println!(
            "PostgreSQL CPU  {} per check (every postgres process); together {}",
            us(r.database_cpu_per_check),
            us(r.cpu_per_check
                .zip(r.database_cpu_per_check)
                .map(|(a, b)| a + b))
        );
    }
    if r.shed > 0 {
        println!("results shed    {}", r.shed);
    }
    if let Some(reference) = r.reference {
        println!(
            "reference       the same http check in this command, 32 at a time: native {}, through the plugin {}; serve's CPU per check is {} the native check's",
            us(Some(reference.native_cpu)),
            us(Some(reference.plugin_cpu)),
            r.native_multiple()
                .map_or("-".into(), |m| format!("{m:.2}×"))
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(cpu_per_check: Option<Duration>, reference: Option<Reference>) -> ServeReport {
        ServeReport {
            monitors: 10,
            interval: 20,
            backend: "SQLite",
            window: Duration::from_secs(60),
            create_time: Duration::ZERO,
            preloaded: None,
            due_per_sec: 0.5,
            done_per_sec: 0.5,
            cpu_per_check,
            cores: 0.0,
            database_cpu_per_check: None,
            rss: None,
            rss_peak: None,
            rss_peak_unscraped: None,
            scrape: (Duration::ZERO, 0),
            scrapes_again: Vec::new(),
            lag_p50: None,
            lag_p99: None,
            shed: 0,
            reference,
        }
    }

    #[test]
    fn the_server_is_read_against_the_same_commands_native_check() {
        let reference = Reference {
            native_cpu: Duration::from_micros(150),
            plugin_cpu: Duration::from_micros(235),
        };
        let r = report(Some(Duration::from_micros(600)), Some(reference));
        assert!((r.native_multiple().expect("a multiple") - 4.0).abs() < 1e-9);
        // No reference, no checks counted, or a native check that rounded to nothing: no
        // figure rather than a wrong one.
        assert_eq!(
            report(Some(Duration::from_micros(600)), None).native_multiple(),
            None
        );
        assert_eq!(report(None, Some(reference)).native_multiple(), None);
        let zero = Reference {
            native_cpu: Duration::ZERO,
            ..reference
        };
        assert_eq!(
            report(Some(Duration::from_micros(600)), Some(zero)).native_multiple(),
            None
        );
    }
}
