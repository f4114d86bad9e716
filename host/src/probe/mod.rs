//! `tocsin probe`: the same binary run in a private location. It only calls out: it asks
//! the server (over HTTPS) which monitors its location checks, runs them with the same
//! embedded plugins, egress policy and limits as a node, keeps every result in a buffer on
//! disk ([`buffer`]) and sends them back in order, in batches. While the server cannot be
//! reached it keeps checking and buffering; when it returns the buffer is sent. Each
//! result carries the probe's sequence number, and the server stores a result only above
//! the last one it stored, so a batch sent twice is stored once.
//!
//! Three tasks: the assignments (a long poll that answers when they change), one timer per
//! monitor at its rounds (rounds rotate over the monitor's regions, as on a node; the
//! probe runs its location's), and the sender.

pub mod buffer;

use crate::api::probes::{Assignment, Assignments, MAX_RESULTS, ProbeResult, ResultsStored};
use crate::plugins::PluginHost;
use crate::scheduler::{ScheduledMonitor, next_round_start, region_for_round, round_of, run_check};
use anyhow::{Context, bail};
use buffer::{Buffer, Limits};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Notify, Semaphore, watch};

/// Results sent in one request at most.
const BATCH: usize = 500;
/// Bytes of results sent in one request at most (the server takes bodies up to 1 MiB).
const BATCH_BYTES: usize = 768 * 1024;
/// Seconds the server may hold a request for assignments.
const LONG_POLL_SECS: u64 = 20;
/// Longest pause between attempts while the server cannot be reached.
const MAX_BACKOFF: Duration = Duration::from_secs(10);
/// Checks run at once at most.
const MAX_CONCURRENT_CHECKS: usize = 256;

/// How a probe runs.
#[derive(Debug, Clone)]
pub struct ProbeOptions {
    /// The server, `https://...` (plain `http://` only on loopback).
    pub server_url: String,
    /// `tpb_...`, from `POST /v1/probes`.
    pub token: String,
    /// Where the buffer is kept.
    pub data_dir: std::path::PathBuf,
    pub limits: Limits,
    /// Trusted roots for the server's certificate: the system's, and `tls_extra_roots`
    /// for a server behind a private CA.
    pub roots: Vec<rustls::pki_types::CertificateDer<'static>>,
}

/// Whether `url` may carry a probe's token: https, or http to a loopback address.
pub fn check_server_url(url: &str) -> anyhow::Result<reqwest::Url> {
    let parsed = reqwest::Url::parse(url).with_context(|| format!("`{url}` is not a URL"))?;
    let host = parsed.host_str().unwrap_or_default();
    let loopback = host == "localhost"
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    if !parsed.username().is_empty() || parsed.password().is_some() {
        bail!(
            "the server URL must not carry a user or password: the probe's token is its credential"
        );
    }
    match parsed.scheme() {
        "https" => Ok(parsed),
        "http" if loopback => Ok(parsed),
        "http" => bail!(
            "the server URL must be https: the probe sends its token and receives monitors' secrets (plain http only to a loopback address)"
        ),
        other => bail!("the server URL must be https, not {other}"),
    }
}

/// What the tasks share.
struct Shared {
    /// The data directory: the buffer and the last assignments.
    dir: std::path::PathBuf,
    http: reqwest::Client,
    base: reqwest::Url,
    token: String,
    buffer: Mutex<Buffer>,
    /// Results waiting: wakes the sender.
    queued: Notify,
    /// Checks run, for the rate the probe reports.
    checks: AtomicU64,
    /// Set when the server refused the token: the probe stops.
    refused: watch::Sender<Option<String>>,
    /// Set once the server answered for assignments (and told the last sequence number it
    /// stored): the sender waits for it.
    aligned: watch::Sender<bool>,
    /// When the rate was last measured, and the count then.
    rate: Mutex<(std::time::Instant, u64, f64)>,
}

impl Shared {
    fn url(&self, path: &str) -> reqwest::Url {
        let mut url = self.base.clone();
        let base = url.path().trim_end_matches('/').to_string();
        url.set_path(&format!("{base}{path}"));
        url
    }

    fn refuse(&self, why: String) {
        // A probe refused for good keeps no monitor's secrets on disk.
        let _ = std::fs::remove_file(self.dir.join(ASSIGNMENTS_FILE));
        self.refused.send_replace(Some(why));
    }

    /// Checks a second over the last measured stretch (at least 10 s).
    fn checks_per_second(&self) -> f64 {
        let mut r = self.rate.lock().unwrap_or_else(|e| e.into_inner());
        let now = std::time::Instant::now();
        let count = self.checks.load(Ordering::Relaxed);
        let took = now.duration_since(r.0).as_secs_f64();
        if took >= 10.0 {
            r.2 = (count - r.1) as f64 / took;
            *r = (now, count, r.2);
        }
        r.2
    }
}

/// The `data` of the API's success envelope.
#[derive(serde::Deserialize)]
struct Data<T> {
    data: T,
}

/// The `data` of a success envelope.
async fn read_json<T: serde::de::DeserializeOwned>(r: reqwest::Response) -> anyhow::Result<T> {
    let bytes = r.bytes().await?;
    Ok(serde_json::from_slice::<Data<T>>(&bytes)?.data)
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// Run the probe until SIGINT or SIGTERM, or until the server refuses its token.
pub async fn run(plugins: Arc<PluginHost>, options: ProbeOptions) -> anyhow::Result<()> {
    let base = check_server_url(&options.server_url)?;
    let buffer = Buffer::open(&options.data_dir, options.limits).with_context(|| {
        format!(
            "cannot open the probe's buffer in {}",
            options.data_dir.display()
        )
    })?;
    let instance = instance_id(&options.data_dir).with_context(|| {
        format!(
            "cannot keep the probe's id in {}",
            options.data_dir.display()
        )
    })?;
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        crate::api::probes::INSTANCE_HEADER,
        reqwest::header::HeaderValue::from_str(&instance).context("the probe's id")?,
    );
    let http = reqwest::Client::builder()
        .default_headers(headers)
        .tls_certs_only(
            options
                .roots
                .iter()
                .filter_map(|c| reqwest::Certificate::from_der(c).ok()),
        )
        // A redirect must not carry the token, or the results, anywhere else.
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("tocsin-probe/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(Duration::from_secs(10))
        .timeout(Duration::from_secs(LONG_POLL_SECS + 30))
        .build()
        .context("cannot build the HTTP client")?;
    let (refused, refusal) = watch::channel(None);
    let mut refusal: watch::Receiver<Option<String>> = refusal;
    let shared = Arc::new(Shared {
        dir: options.data_dir.clone(),
        http,
        base,
        token: options.token,
        buffer: Mutex::new(buffer),
        queued: Notify::new(),
        checks: AtomicU64::new(0),
        refused,
        aligned: watch::channel(false).0,
        rate: Mutex::new((std::time::Instant::now(), 0, 0.0)),
    });
    tracing::info!(server = %shared.base.host_str().unwrap_or_default(), pending = shared.lock().len(), "probe starting");
    let (assigned_tx, assigned_rx) = watch::channel::<Option<Arc<Assignments>>>(None);
    let mut poll = tokio::spawn(poll_assignments(shared.clone(), assigned_tx));
    let mut runner = tokio::spawn(run_monitors(shared.clone(), plugins, assigned_rx));
    let mut sender = tokio::spawn(send_results(shared.clone()));
    let ended = tokio::select! {
        _ = crate::app::shutdown_signal() => None,
        // A task ends only when the server refused the token, or when it failed.
        ended = &mut poll => Some(format!("the probe's assignment task ended: {ended:?}")),
        ended = &mut runner => Some(format!("the probe's check task ended: {ended:?}")),
        ended = &mut sender => Some(format!("the probe's sending task ended: {ended:?}")),
        _ = refusal.wait_for(Option::is_some) => Some(String::new()),
    };
    let refused = shared.refused.borrow().clone();
    let outcome = match (refused, ended) {
        (Some(why), _) => Err(anyhow::anyhow!("the server refused this probe: {why}")),
        (None, Some(why)) => Err(anyhow::anyhow!(why)),
        (None, None) => Ok(()),
    };
    poll.abort();
    runner.abort();
    sender.abort();
    let pending = shared.lock().len();
    tracing::info!(pending, "probe stopped; pending results stay in the buffer");
    outcome
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Buffer> {
        self.buffer.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The running probe's id, kept in its data directory so a restart is the same probe.
fn instance_id(dir: &std::path::Path) -> std::io::Result<String> {
    let path = dir.join("probe-instance");
    if let Ok(text) = std::fs::read_to_string(&path) {
        let id = text.trim();
        if !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Ok(id.to_string());
        }
    }
    std::fs::create_dir_all(dir)?;
    let id = crate::ids::random_base62(24);
    std::fs::write(&path, format!("{id}\n"))?;
    Ok(id)
}

/// Where the last assignments are kept, so a probe restarted while the server is away
/// checks on. They hold the monitors' secrets: readable by the probe's user alone.
const ASSIGNMENTS_FILE: &str = "probe-assignments.json";

fn load_assignments(dir: &std::path::Path) -> Option<Assignments> {
    let text = std::fs::read(dir.join(ASSIGNMENTS_FILE)).ok()?;
    serde_json::from_slice(&text).ok()
}

fn save_assignments(dir: &std::path::Path, a: &Assignments) -> std::io::Result<()> {
    use std::io::Write;
    let tmp = dir.join(format!("{ASSIGNMENTS_FILE}.tmp"));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut f = options.open(&tmp)?;
    f.write_all(&serde_json::to_vec(a).unwrap_or_default())?;
    f.sync_all()?;
    std::fs::rename(tmp, dir.join(ASSIGNMENTS_FILE))
}

/// Keep the assignments current: a long poll, answered as soon as they change.
async fn poll_assignments(shared: Arc<Shared>, tx: watch::Sender<Option<Arc<Assignments>>>) {
    let mut etag: Option<String> = None;
    if let Some(kept) = load_assignments(&shared.dir) {
        tracing::info!(
            monitors = kept.monitors.len(),
            "checking the assignments kept from the last run until the server answers"
        );
        tx.send_replace(Some(Arc::new(kept)));
    }
    let mut backoff = Duration::from_millis(500);
    loop {
        let mut url = shared.url("/v1/probe/assignments");
        {
            let mut q = url.query_pairs_mut();
            q.append_pair("wait", &LONG_POLL_SECS.to_string());
            // It answers confirmation requests (`confirm`).
            q.append_pair("confirm", "true");
            if let Some(e) = &etag {
                q.append_pair("etag", e);
            }
        }
        let answer = shared.http.get(url).bearer_auth(&shared.token).send().await;
        match answer {
            Ok(r) if r.status() == reqwest::StatusCode::NO_CONTENT => {
                backoff = Duration::from_millis(500);
            }
            Ok(r) if r.status().is_success() => match read_json::<Assignments>(r).await {
                Ok(a) => {
                    if let Err(e) = shared.lock().continue_after(a.last_sequence) {
                        tracing::error!(error = %e, "cannot write the probe's buffer");
                    }
                    shared.aligned.send_replace(true);
                    tracing::info!(monitors = a.monitors.len(), location = %a.location, "assignments received");
                    etag = Some(a.etag.clone());
                    if let Err(e) = save_assignments(&shared.dir, &a) {
                        tracing::warn!(error = %e, "cannot keep the assignments on disk");
                    }
                    tx.send_replace(Some(Arc::new(a)));
                    backoff = Duration::from_millis(500);
                    continue;
                }
                Err(e) => tracing::warn!(error = %e, "the server's assignments did not parse"),
            },
            Ok(r) if r.status() == reqwest::StatusCode::UNAUTHORIZED => {
                shared.refuse(error_text(r).await);
                return;
            }
            Ok(r) => {
                let why = error_text(r).await;
                tracing::warn!(error = %why, "the server refused the request for assignments");
            }
            Err(e) => {
                tracing::warn!(error = %e, retry_in_ms = backoff.as_millis() as u64, "cannot reach the server for assignments; checking on with the last ones");
            }
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

async fn error_text(r: reqwest::Response) -> String {
    let status = r.status();
    let body = r.text().await.unwrap_or_default();
    let message = serde_json::from_str::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| {
            v.pointer("/error/message")
                .and_then(|m| m.as_str())
                .map(str::to_owned)
        })
        .unwrap_or(body);
    format!("{status}: {message}")
}

/// One timer per assigned monitor; started, stopped and restarted as the assignments
/// change.
async fn run_monitors(
    shared: Arc<Shared>,
    plugins: Arc<PluginHost>,
    mut rx: watch::Receiver<Option<Arc<Assignments>>>,
) {
    let permits = Arc::new(Semaphore::new(MAX_CONCURRENT_CHECKS));
    let mut running: HashMap<String, (Assignment, tokio::task::JoinHandle<()>)> = HashMap::new();
    // Confirmation requests taken up (kept while the server still lists them).
    let mut confirming: HashSet<String> = HashSet::new();
    loop {
        let current = rx.borrow_and_update().clone();
        if let Some(a) = current {
            confirming.retain(|id| a.confirm.iter().any(|c| &c.request_id == id));
            for c in &a.confirm {
                let Some(m) = a.monitors.iter().find(|m| m.id == c.monitor_id) else {
                    continue;
                };
                if !confirming.insert(c.request_id.clone()) {
                    continue;
                }
                tokio::spawn(confirm_once(
                    shared.clone(),
                    plugins.clone(),
                    permits.clone(),
                    a.location.clone(),
                    m.clone(),
                    c.request_id.clone(),
                ));
            }
            let wanted: HashMap<&str, &Assignment> =
                a.monitors.iter().map(|m| (m.id.as_str(), m)).collect();
            running.retain(|id, (had, task)| {
                let keep = wanted.get(id.as_str()).is_some_and(|w| *w == had);
                if !keep {
                    task.abort();
                }
                keep
            });
            for m in &a.monitors {
                if running.contains_key(&m.id) {
                    continue;
                }
                let task = tokio::spawn(monitor_loop(
                    shared.clone(),
                    plugins.clone(),
                    permits.clone(),
                    a.location.clone(),
                    m.clone(),
                ));
                running.insert(m.id.clone(), (m.clone(), task));
            }
        }
        if rx.changed().await.is_err() {
            break;
        }
    }
    for (_, (_, task)) in running {
        task.abort();
    }
}

fn scheduled(m: &Assignment) -> ScheduledMonitor {
    let id_hash = crate::ids::id_hash(&m.id);
    let interval = crate::ids::Interval::of_hash(id_hash, m.interval_secs);
    ScheduledMonitor {
        id: m.id.clone(),
        workspace_id: String::new(),
        kind: m.kind.clone(),
        config: m.config.to_string(),
        interval: interval.every,
        retry: m
            .retry_interval_secs
            .and_then(|r| u64::try_from(r).ok())
            .filter(|r| *r > 0)
            .map(Duration::from_secs),
        timeout: Duration::from_secs(u64::try_from(m.timeout_secs).unwrap_or(10).max(1)),
        regions: m.regions.clone(),
        phase_ms: interval.phase_ms(),
        id_hash,
        bucket: 0,
        regional_confirmation: false,
        updated_at: 0,
    }
}

/// Check a monitor again at once to answer a confirmation request (a failure seen in
/// another region).
async fn confirm_once(
    shared: Arc<Shared>,
    plugins: Arc<PluginHost>,
    permits: Arc<Semaphore>,
    location: String,
    assignment: Assignment,
    request_id: String,
) {
    let Ok(_permit) = permits.acquire().await else {
        return;
    };
    let monitor = scheduled(&assignment);
    let record = run_check(&plugins, &monitor, &location, 2, now_ms()).await;
    shared.checks.fetch_add(1, Ordering::Relaxed);
    keep(&shared, &record, Some(&request_id));
}

/// Check one monitor at its rounds (those of this location), and sooner after a failure
/// when it has a retry interval.
async fn monitor_loop(
    shared: Arc<Shared>,
    plugins: Arc<PluginHost>,
    permits: Arc<Semaphore>,
    location: String,
    assignment: Assignment,
) {
    let monitor = scheduled(&assignment);
    let every = i64::try_from(monitor.interval.as_millis()).unwrap_or(i64::MAX);
    let mut retry_at: Option<i64> = None;
    loop {
        let now = now_ms();
        let due = match retry_at.take() {
            Some(at) => at,
            None => {
                // The next round of this location.
                let mut at = next_round_start(now, monitor.phase_ms, every);
                for _ in 0..monitor.regions.len().max(1) {
                    let round = round_of(at, monitor.phase_ms, every);
                    if region_for_round(&monitor.regions, &[], round) == Some(location.as_str()) {
                        break;
                    }
                    at += every;
                }
                at
            }
        };
        tokio::time::sleep(Duration::from_millis(u64::try_from(due - now).unwrap_or(0))).await;
        let Ok(_permit) = permits.acquire().await else {
            return;
        };
        let started = now_ms();
        let record = run_check(&plugins, &monitor, &location, 1, started).await;
        shared.checks.fetch_add(1, Ordering::Relaxed);
        if !record.ok
            && let Some(retry) = monitor.retry
        {
            retry_at = Some(started + i64::try_from(retry.as_millis()).unwrap_or(every));
        }
        keep(&shared, &record, None);
    }
}

/// Append a check's result to the buffer (with the confirmation request it answers, if
/// any) and wake the sender.
fn keep(shared: &Shared, record: &crate::engine::recorder::CheckRecord, confirms: Option<&str>) {
    let result = ProbeResult {
        seq: 0,
        monitor_id: record.monitor_id.clone(),
        checked_at_ms: record.checked_at,
        ok: record.ok,
        reason: record.reason.as_deref().map(without_nul),
        status_code: record.status_code,
        response_time_ms: record.response_time_ms,
        details: serde_json::from_str::<serde_json::Value>(&record.details)
            .ok()
            .map(details_without_nul)
            .and_then(|d| match d {
                serde_json::Value::Object(m) => Some(m),
                _ => None,
            }),
        confirms: confirms.map(str::to_string),
    };
    let kept = shared.lock().push(record.checked_at, now_ms(), |seq| {
        serde_json::to_string(&ProbeResult {
            seq,
            ..result.clone()
        })
        .unwrap_or_default()
    });
    match kept {
        Ok(_) => shared.queued.notify_one(),
        Err(e) => {
            tracing::error!(monitor = %record.monitor_id, error = %e, "cannot write a result to the probe's buffer; it is lost")
        }
    }
}

/// `text` without NUL characters (the API refuses them: a DNS TXT record may hold one).
fn without_nul(text: &str) -> String {
    text.replace('\0', "\u{fffd}")
}

fn details_without_nul(v: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::String(s) => Value::String(without_nul(&s)),
        Value::Array(items) => Value::Array(items.into_iter().map(details_without_nul).collect()),
        Value::Object(m) => Value::Object(
            m.into_iter()
                .map(|(k, v)| (without_nul(&k), details_without_nul(v)))
                .collect(),
        ),
        other => other,
    }
}

/// Send what the buffer holds, oldest first, in batches; wait for more.
async fn send_results(shared: Arc<Shared>) {
    // Nothing is sent before the server said which sequence number it stored last: a
    // probe whose buffer was lost numbers on from there.
    let mut aligned = shared.aligned.subscribe();
    if aligned.wait_for(|a| *a).await.is_err() {
        return;
    }
    let mut backoff = Duration::from_millis(500);
    loop {
        let batch = {
            let mut b = shared.lock();
            if let Err(e) = b.shed_beyond_limits(now_ms()) {
                tracing::error!(error = %e, "cannot write the probe's buffer");
            }
            let mut batch = b.first(BATCH.min(MAX_RESULTS));
            let mut bytes = 0;
            let fits = batch
                .iter()
                .take_while(|p| {
                    bytes += p.json.len() + 1;
                    bytes <= BATCH_BYTES
                })
                .count();
            batch.truncate(fits.max(1));
            batch
        };
        if batch.is_empty() {
            // Woken by a new result, or once a second to report how the probe is doing.
            let _ = tokio::time::timeout(Duration::from_secs(1), shared.queued.notified()).await;
            continue;
        }
        match post(&shared, &batch).await {
            Sent::Stored(last) if last >= batch[0].seq => {
                if let Err(e) = shared.lock().ack(last) {
                    tracing::error!(error = %e, "cannot write the probe's buffer");
                }
                backoff = Duration::from_millis(500);
                continue;
            }
            Sent::Stored(last) => {
                tracing::warn!(
                    last,
                    first = batch[0].seq,
                    "the server stored none of the batch; sending again"
                );
            }
            Sent::Refused(seqs) => {
                match shared.lock().drop_refused(&seqs) {
                    Ok(n) => tracing::warn!(
                        dropped = n,
                        "the server refused results for monitors this probe no longer checks; they are dropped"
                    ),
                    Err(e) => tracing::error!(error = %e, "cannot write the probe's buffer"),
                }
                continue;
            }
            Sent::Unauthorized(why) => {
                shared.refuse(why);
                return;
            }
            Sent::Failed(why) => {
                tracing::warn!(error = %why, pending = shared.lock().len(), retry_in_ms = backoff.as_millis() as u64, "cannot send results; they stay in the buffer");
            }
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

enum Sent {
    Stored(i64),
    Refused(Vec<i64>),
    Unauthorized(String),
    Failed(String),
}

async fn post(shared: &Shared, batch: &[buffer::Pending]) -> Sent {
    // What waits besides this batch: 0 once it is stored, when the probe keeps up.
    let (buffered, shed, lag) = {
        let b = shared.lock();
        (
            b.len().saturating_sub(batch.len()),
            b.shed(),
            b.lag_ms(now_ms()),
        )
    };
    let mut body = format!(
        r#"{{"version":{},"buffered":{},"shed":{},"lagMs":{},"checksPerSecond":{},"results":["#,
        serde_json::Value::from(env!("CARGO_PKG_VERSION")),
        buffered,
        shed,
        lag.map_or("null".to_string(), |l| l.to_string()),
        shared.checks_per_second(),
    );
    for (i, p) in batch.iter().enumerate() {
        if i > 0 {
            body.push(',');
        }
        body.push_str(&p.json);
    }
    body.push_str("]}");
    let answer = shared
        .http
        .post(shared.url("/v1/probe/results"))
        .bearer_auth(&shared.token)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body)
        .send()
        .await;
    let r = match answer {
        Ok(r) => r,
        Err(e) => return Sent::Failed(e.to_string()),
    };
    let status = r.status();
    if status.is_success() {
        return match read_json::<ResultsStored>(r).await {
            Ok(body) => Sent::Stored(body.last_sequence),
            Err(e) => Sent::Failed(format!("the answer did not parse: {e}")),
        };
    }
    if status == reqwest::StatusCode::UNAUTHORIZED {
        return Sent::Unauthorized(error_text(r).await);
    }
    let text = r.text().await.unwrap_or_default();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    let code = v.pointer("/error/code").and_then(|c| c.as_str());
    if code == Some("PROBE_RESULT_REFUSED") {
        let seqs: Vec<i64> = v
            .pointer("/error/details")
            .and_then(|d| d.as_array())
            .map(|d| {
                d.iter()
                    .filter_map(|e| {
                        e.get("field")?
                            .as_str()?
                            .strip_prefix("results.")?
                            .parse()
                            .ok()
                    })
                    .collect()
            })
            .unwrap_or_default();
        if !seqs.is_empty() {
            return Sent::Refused(seqs);
        }
    }
    // Anything else (busy, stopping, a proxy's error page, an invalid batch) is sent again
    // later: a result is forgotten only once stored or refused by name.
    Sent::Failed(format!(
        "{status}: {}",
        text.chars().take(500).collect::<String>()
    ))
}
