//! How many heartbeat pings one node takes, against how many of the cheapest request
//! (`GET /healthz`) the same server answers in the same run. Run with
//! `cargo bench -p tocsin --bench heartbeat_pings`.
//!
//! A real `tocsin serve` on SQLite in a temporary directory; 100 heartbeat monitors; a
//! client on loopback with 32 requests in flight sends a fixed number of each. A ping
//! answers once its check is committed, so the figure includes the database write.

#[path = "support/mod.rs"]
mod support;

use futures::StreamExt;
use std::time::{Duration, Instant};

const KEY: &str = "tcs_BenchAdminKey000000000000000000000000001";
const MONITORS: usize = 100;
const REQUESTS: usize = 4000;
const IN_FLIGHT: usize = 32;
/// No phase runs longer than this, whatever the machine.
const PHASE_LIMIT: Duration = Duration::from_secs(120);

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(run());
}

/// Send `paths` (cycled to `REQUESTS`) with `IN_FLIGHT` at once; requests per second and
/// how many failed.
async fn drive(
    client: &reqwest::Client,
    base: &str,
    method: &str,
    paths: &[String],
) -> (f64, usize) {
    let started = Instant::now();
    let deadline = started + PHASE_LIMIT;
    let results: Vec<bool> = futures::stream::iter(0..REQUESTS)
        .map(|i| {
            let url = format!("{base}{}", paths[i % paths.len()]);
            let req = match method {
                "POST" => client.post(url),
                _ => client.get(url),
            };
            async move {
                if Instant::now() > deadline {
                    return false;
                }
                matches!(req.send().await, Ok(r) if r.status().is_success())
            }
        })
        .buffer_unordered(IN_FLIGHT)
        .collect()
        .await;
    let secs = started.elapsed().as_secs_f64();
    let failed = results.iter().filter(|ok| !**ok).count();
    (results.len() as f64 / secs, failed)
}

async fn run() {
    tocsin::crypto::install_provider();
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut server, base) = support::serve(dir.path(), KEY, &[]).await;
    let client = reqwest::Client::new();
    let mut pings = Vec::new();
    for n in 0..MONITORS {
        let created = support::create_monitor(
            &client,
            &base,
            KEY,
            serde_json::json!({"name": format!("job-{n}"), "type": "heartbeat", "period": 3600}),
        )
        .await;
        let Some(url) = created["pingUrl"].as_str() else {
            panic!("monitor {n} has no ping URL: {created}");
        };
        pings.push(url[url.find("/ping/").expect("path")..].to_string());
    }
    let health = vec!["/healthz".to_string()];
    // A short warm-up of each, then the measured runs.
    let _ = drive(&client, &base, "GET", &health).await;
    let (healthz, h_failed) = drive(&client, &base, "GET", &health).await;
    let (ping_rate, p_failed) = drive(&client, &base, "POST", &pings).await;
    let _ = server.kill();
    let _ = server.wait();
    println!(
        "heartbeat pings: {ping_rate:.0}/s ({p_failed} failed); GET /healthz baseline: \
         {healthz:.0}/s ({h_failed} failed); pings at {:.2}x the baseline \
         ({REQUESTS} requests each, {IN_FLIGHT} in flight, {MONITORS} monitors, SQLite)",
        ping_rate / healthz
    );
}
