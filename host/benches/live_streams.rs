//! What open dashboards cost the server: a real `tocsin serve` on SQLite checking 250 http
//! monitors every 5 s (50 checks/s against a target in this process), measured first with
//! no dashboard open, then with 500 open event streams (`GET /events` of one signed-in
//! owner, each told of every check), the same length of time each. Run with
//! `cargo bench -p tocsin --bench live_streams`.
//!
//! The server's CPU comes from /proc (its user and system time), its memory from VmRSS;
//! the figures are given against the run without streams, in the same process.

#[path = "support/mod.rs"]
mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

const KEY: &str = "tcs_BenchAdminKey000000000000000000000000001";
const MONITORS: usize = 250;
const INTERVAL_S: u64 = 5;
const STREAMS: usize = 500;
const WARMUP: Duration = Duration::from_secs(15);
const WINDOW: Duration = Duration::from_secs(30);

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(run());
}

/// The server's CPU time so far (user and system) and its resident memory.
fn server_usage(pid: u32) -> (Duration, u64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    let after_name = &stat[stat.rfind(')').expect("stat format") + 2..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    let ticks: u64 =
        fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime");
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    let rss_kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        .expect("VmRSS");
    // The kernel's USER_HZ is 100 on Linux.
    (Duration::from_millis(ticks * 10), rss_kib * 1024)
}

struct Window {
    cpu: Duration,
    checks: u64,
    rss: u64,
    events: u64,
}

async fn measure(pid: u32, hits: &AtomicU64, events: &AtomicU64) -> Window {
    let (cpu0, _) = server_usage(pid);
    let (hits0, events0) = (hits.load(Ordering::Relaxed), events.load(Ordering::Relaxed));
    tokio::time::sleep(WINDOW).await;
    let (cpu1, rss) = server_usage(pid);
    Window {
        cpu: cpu1 - cpu0,
        checks: hits.load(Ordering::Relaxed) - hits0,
        rss,
        events: events.load(Ordering::Relaxed) - events0,
    }
}

async fn run() {
    tocsin::crypto::install_provider();
    // The checks' target: counts what it is asked.
    let hits = Arc::new(AtomicU64::new(0));
    let target_url = support::counting_target(hits.clone()).await;

    let dir = tempfile::tempdir().expect("tempdir");
    let (mut server, base) = support::serve(
        dir.path(),
        KEY,
        &[
            ("TOCSIN_MIN_INTERVAL", "1"),
            // Every stream comes from this one address.
            ("TOCSIN_MAX_CONNECTIONS_PER_ADDRESS", "1000"),
        ],
    )
    .await;
    let pid = server.id();
    let client = reqwest::Client::new();

    // The owner's session, through the setup link.
    let cookie = support::owner_cookie(&client, &base, dir.path()).await;

    for n in 0..MONITORS {
        let r = client
            .post(format!("{base}/v1/monitors"))
            .bearer_auth(KEY)
            .json(&serde_json::json!({"name": format!("svc-{n}"), "type": "http", "method": "GET", "url": target_url, "interval": INTERVAL_S, "timeout": 5}))
            .send()
            .await
            .expect("create");
        assert_eq!(r.status(), 201, "monitor {n} was created");
    }
    let events = Arc::new(AtomicU64::new(0));
    tokio::time::sleep(WARMUP).await;
    let quiet = measure(pid, &hits, &events).await;

    // 500 dashboards open: each stream counts the `changes` events it is sent.
    let mut streams = Vec::with_capacity(STREAMS);
    for _ in 0..STREAMS {
        let response = client
            .get(format!("{base}/events"))
            .header("cookie", &cookie)
            .send()
            .await
            .expect("events");
        assert_eq!(response.status(), 200, "a stream opens");
        let events = events.clone();
        streams.push(tokio::spawn(async move {
            let mut response = response;
            while let Ok(Some(chunk)) = response.chunk().await {
                let n = chunk.windows(14).filter(|w| w == b"event: changes").count();
                events.fetch_add(n as u64, Ordering::Relaxed);
            }
        }));
    }
    tokio::time::sleep(Duration::from_secs(5)).await;
    let open = measure(pid, &hits, &events).await;
    for s in &streams {
        s.abort();
    }
    let _ = server.kill();
    let _ = server.wait();

    let per_check = |w: &Window| w.cpu.as_secs_f64() * 1e6 / w.checks.max(1) as f64;
    let secs = WINDOW.as_secs_f64();
    let extra_cpu = open.cpu.as_secs_f64() - quiet.cpu.as_secs_f64();
    println!(
        "{MONITORS} monitors @ {INTERVAL_S} s; {:.0} checks/s without streams, {:.0} with {STREAMS}",
        quiet.checks as f64 / secs,
        open.checks as f64 / secs
    );
    println!(
        "server CPU per check: {:.0} µs without streams, {:.0} µs with {STREAMS} open ({:.2}x)",
        per_check(&quiet),
        per_check(&open),
        per_check(&open) / per_check(&quiet)
    );
    println!(
        "{STREAMS} streams: {:.1} % of one core more ({:.1} µs of CPU per stream per second), \
         {:.0} events/s sent in all, RSS {:.0} MiB against {:.0} MiB ({:.1} KiB per stream)",
        extra_cpu * 100.0 / secs,
        extra_cpu * 1e6 / secs / STREAMS as f64,
        open.events as f64 / secs,
        open.rss as f64 / 1048576.0,
        quiet.rss as f64 / 1048576.0,
        (open.rss as f64 - quiet.rss as f64) / 1024.0 / STREAMS as f64
    );
}
