//! `GET /metrics`: the Prometheus text format (0.0.4), encoded by `prometheus-client`.
//!
//! Server series come from the process's counters ([`crate::telemetry`]); per-monitor
//! series are assembled at each scrape from one query of the monitors (names, types,
//! tags, states), the counters the recorder keeps per monitor, and the uptime windows a
//! background task refreshes every minute from the daily counts. With the `key` setting a
//! scrape shows the key's workspace's monitors; with `public`, every workspace's.

use super::AppState;
use super::error::ApiError;
use crate::config::MetricsAccess;
use crate::store::metrics::{DayCount, MonitorMetricRow};
use crate::store::{MonitorState, Store};
use crate::telemetry::{self, MonitorLive, RESPONSE_BUCKETS, RequestLabels, RouteLabels};
use axum::extract::{MatchedPath, Request, State};
use axum::http::header::{AUTHORIZATION, CONTENT_TYPE};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::Registry;
use std::collections::HashMap;
use std::sync::Mutex;

const DAY_MS: i64 = 86_400_000;
/// How often the uptime windows are read again.
pub const UPTIME_REFRESH: std::time::Duration = std::time::Duration::from_secs(60);
/// How often in the server's first minute.
const UPTIME_EARLY_REFRESH: std::time::Duration = std::time::Duration::from_secs(5);

/// The metrics of the server and its monitors.
#[utoipa::path(get, path = "/metrics", tag = "health",
    security((), ("bearer" = [])),
    responses(
        (status = 200, description = "Prometheus text format 0.0.4", content_type = "text/plain", body = String),
        (status = 401, description = "`metrics = \"key\"` and no valid API key", body = super::error::ErrorBody),
        (status = 404, description = "`metrics = \"off\"`", body = super::error::ErrorBody),
    ))]
pub async fn metrics(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let workspace = match state.config.metrics {
        MetricsAccess::Off => {
            return Err(ApiError::new(
                StatusCode::NOT_FOUND,
                "NOT_FOUND",
                "Metrics are turned off on this server (metrics = \"off\")",
            ));
        }
        MetricsAccess::Public => None,
        MetricsAccess::Key => {
            let header = headers
                .get(AUTHORIZATION)
                .map(|v| v.to_str().map(str::to_owned));
            Some(
                super::auth::authenticate(&state, header)
                    .await?
                    .workspace_id,
            )
        }
    };
    let kuma = state.config.metrics_kuma_names;
    let rows = state
        .store
        .monitor_metric_rows(workspace.as_deref(), kuma)
        .await?;
    let t = telemetry::global();
    let live = t.monitors.read(rows.iter().map(|r| r.id.as_str()));
    if workspace.is_none() && t.monitors.len() > rows.len() {
        let ids: std::collections::HashSet<&str> = rows.iter().map(|r| r.id.as_str()).collect();
        t.monitors.retain(|id| ids.contains(id));
    }
    let now_ms = state.clock.now_ms();
    let uptime = UPTIME.read(rows.iter().map(|r| r.id.as_str()), now_ms);
    let outbox = state.store.pending_delivery_count().await?;
    let scrape = Scrape {
        monitors: rows,
        live,
        uptime,
        now_ms,
        kuma,
        instances: state.plugins.instances(),
        outbox,
    };
    let body = tokio::task::spawn_blocking(move || scrape.encode())
        .await
        .map_err(|_| ApiError::internal("encoding the metrics failed"))?
        .map_err(|_| ApiError::internal("encoding the metrics failed"))?;
    Ok((
        StatusCode::OK,
        [(
            CONTENT_TYPE,
            prometheus_client::encoding::prometheus_text::CONTENT_TYPE,
        )],
        body,
    )
        .into_response())
}

/// Middleware: count every request by its route's pattern, method and status.
pub async fn count_requests(req: Request, next: Next) -> Response {
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_string(), |m| m.as_str().to_string());
    let method = req.method().as_str().to_string();
    let started = std::time::Instant::now();
    let response = next.run(req).await;
    let t = telemetry::global();
    t.request_seconds
        .get_or_create(&RouteLabels {
            route: route.clone(),
        })
        .observe(started.elapsed().as_secs_f64());
    t.requests
        .get_or_create(&RequestLabels {
            route,
            method,
            status: response.status().as_u16(),
        })
        .inc();
    response
}

/// Uptime over the last day and the last 30 days, per monitor, from the daily counts: the
/// days before today are read once a day, today's every minute; the oldest day of a window
/// counts for the part of it inside the window (checks spread evenly over a day).
#[derive(Default)]
pub struct UptimeWindows {
    inner: Mutex<UptimeInner>,
}

#[derive(Default)]
struct UptimeInner {
    /// The UTC day `past` was read on.
    day: Option<i32>,
    past: HashMap<String, PastDays>,
    today: HashMap<String, (i64, i64)>,
}

/// Sums of (total, up) of the days before today.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct PastDays {
    yesterday: (i64, i64),
    /// The days today-29 to today-1 (yesterday included).
    month: (i64, i64),
    /// Day today-30, the window's oldest.
    edge: (i64, i64),
}

/// The uptime windows of this process.
pub static UPTIME: std::sync::LazyLock<UptimeWindows> =
    std::sync::LazyLock::new(UptimeWindows::default);

impl UptimeWindows {
    /// Read what changed: every day before today when the day turned, today's always.
    pub async fn refresh(
        &self,
        store: &Store,
        now_ms: i64,
    ) -> Result<(), crate::store::StoreError> {
        let today = i32::try_from(now_ms.div_euclid(DAY_MS)).unwrap_or(i32::MAX);
        let stale = self.lock().day != Some(today);
        if stale {
            let rows = store.day_counts(today - 30, today - 1).await?;
            let past = fold_past(today, &rows);
            let mut inner = self.lock();
            inner.past = past;
            inner.day = Some(today);
        }
        let rows = store.day_counts(today, today).await?;
        let current: HashMap<String, (i64, i64)> = rows
            .into_iter()
            .map(|(id, c)| (id, (c.total, c.up)))
            .collect();
        self.lock().today = current;
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, UptimeInner> {
        match self.inner.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// (1 day, 30 days) ratios of the given monitors, None where nothing was checked.
    fn read<'a>(
        &self,
        ids: impl IntoIterator<Item = &'a str>,
        now_ms: i64,
    ) -> Vec<(Option<f64>, Option<f64>)> {
        let into_today = now_ms.rem_euclid(DAY_MS) as f64 / DAY_MS as f64;
        let inner = self.lock();
        ids.into_iter()
            .map(|id| {
                let today = inner.today.get(id).copied().unwrap_or_default();
                let past = inner.past.get(id).copied().unwrap_or_default();
                windows(today, past, into_today)
            })
            .collect()
    }
}

fn fold_past(today: i32, rows: &[(String, DayCount)]) -> HashMap<String, PastDays> {
    let mut past: HashMap<String, PastDays> = HashMap::new();
    for (id, c) in rows {
        let p = past.entry(id.clone()).or_default();
        let add = |s: &mut (i64, i64)| {
            s.0 += c.total;
            s.1 += c.up;
        };
        if c.day == today - 1 {
            add(&mut p.yesterday);
        }
        if c.day >= today - 29 {
            add(&mut p.month);
        } else if c.day == today - 30 {
            add(&mut p.edge);
        }
    }
    past
}

/// The two windows' ratios; `into_today` is the part of today gone (0..1).
fn windows(today: (i64, i64), past: PastDays, into_today: f64) -> (Option<f64>, Option<f64>) {
    let ratio = |total: f64, up: f64| (total > 0.0).then(|| (up / total).clamp(0.0, 1.0));
    let rest = 1.0 - into_today;
    let day = ratio(
        today.0 as f64 + rest * past.yesterday.0 as f64,
        today.1 as f64 + rest * past.yesterday.1 as f64,
    );
    let month = ratio(
        (today.0 + past.month.0) as f64 + rest * past.edge.0 as f64,
        (today.1 + past.month.1) as f64 + rest * past.edge.1 as f64,
    );
    (day, month)
}

/// Keep the uptime windows fresh until shutdown: every few seconds in the first minute
/// (so a fresh server's first checks show up soon), then every [`UPTIME_REFRESH`].
pub async fn refresh_uptime_loop(
    store: Store,
    clock: crate::clock::SharedClock,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) {
    let started = std::time::Instant::now();
    loop {
        if let Err(e) = UPTIME.refresh(&store, clock.now_ms()).await {
            tracing::warn!(error = %e, "could not read uptime counts for /metrics");
        }
        let pause = if started.elapsed() < UPTIME_REFRESH {
            UPTIME_EARLY_REFRESH
        } else {
            UPTIME_REFRESH
        };
        tokio::select! {
            _ = tokio::time::sleep(pause) => {}
            _ = shutdown.changed() => if *shutdown.borrow() { return },
        }
    }
}

/// Everything one scrape shows.
#[derive(Debug)]
struct Scrape {
    monitors: Vec<MonitorMetricRow>,
    live: Vec<Option<MonitorLive>>,
    uptime: Vec<(Option<f64>, Option<f64>)>,
    now_ms: i64,
    kuma: bool,
    instances: [(&'static str, usize, usize); 3],
    outbox: u64,
}

impl Scrape {
    fn encode(self) -> Result<String, std::fmt::Error> {
        let t = telemetry::global();
        let mut registry = Registry::default();
        registry.register(
            "tocsin_checks_due",
            "Check rounds that came due on this node",
            t.checks_due.clone(),
        );
        registry.register(
            "tocsin_checks_skipped",
            "Rounds skipped because the monitor's previous check still waited for a slot",
            t.checks_skipped.clone(),
        );
        registry.register(
            "tocsin_checks",
            "Check results written, by outcome",
            t.checks_done.clone(),
        );
        registry.register(
            "tocsin_schedule_lag_seconds",
            "From a check's due time to its start",
            t.schedule_lag.clone(),
        );
        registry.register(
            "tocsin_plugin_calls",
            "Plugin calls by plugin, kind of call and how they ended",
            t.plugin_calls.clone(),
        );
        registry.register(
            "tocsin_deliveries",
            "Delivery attempts by channel type and outcome",
            t.deliveries.clone(),
        );
        registry.register(
            "tocsin_recorder_batches",
            "Transactions of check results committed",
            t.recorder_batches.clone(),
        );
        registry.register(
            "tocsin_recorder_records",
            "Check results committed",
            t.recorder_records.clone(),
        );
        registry.register(
            "tocsin_recorder_write_errors",
            "Failed attempts to write a batch (it is kept and written again)",
            t.recorder_write_errors.clone(),
        );
        registry.register(
            "tocsin_recorder_batch_seconds",
            "Time to write one batch",
            t.recorder_write_seconds.clone(),
        );
        registry.register(
            "tocsin_http_requests",
            "API and page requests by route pattern, method and status",
            t.requests.clone(),
        );
        registry.register(
            "tocsin_http_request_seconds",
            "Time to answer a request, by route pattern",
            t.request_seconds.clone(),
        );
        registry.register(
            "tocsin_build",
            "The running version",
            Info::new(vec![("version", env!("CARGO_PKG_VERSION"))]),
        );
        registry.register_collector(Box::new(self));
        let mut out = String::new();
        prometheus_client::encoding::prometheus_text::encode(&mut out, &registry)?;
        Ok(out)
    }
}

fn status_value(s: MonitorState) -> i64 {
    match s {
        MonitorState::Down => 0,
        MonitorState::Up => 1,
        MonitorState::Pending => 2,
        MonitorState::Paused => 3,
    }
}

/// Tags as one label value: `a,b`.
fn tag_text(json: &str) -> String {
    serde_json::from_str::<Vec<String>>(json)
        .map(|t| t.join(","))
        .unwrap_or_default()
}

/// The labels of one monitor's series.
struct Labels<'a> {
    workspace: &'a str,
    id: &'a str,
    name: &'a str,
    kind: &'a str,
    tags: String,
    region: &'a str,
}

impl Labels<'_> {
    fn set(&self) -> [(&str, &str); 6] {
        [
            ("workspace", self.workspace),
            ("monitor_id", self.id),
            ("monitor", self.name),
            ("type", self.kind),
            ("tags", &self.tags),
            ("region", self.region),
        ]
    }
}

impl Collector for Scrape {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        // Server-wide gauges.
        let mut e = encoder.encode_descriptor(
            "tocsin_plugin_instances",
            "Plugin instances in use, by kind of call",
            None,
            MetricType::Gauge,
        )?;
        for (call, used, _) in &self.instances {
            e.encode_family(&[("call", *call)])?
                .encode_gauge(&(*used as i64))?;
        }
        let mut e = encoder.encode_descriptor(
            "tocsin_plugin_instances_max",
            "The most plugin instances a kind of call may use at once",
            None,
            MetricType::Gauge,
        )?;
        for (call, _, max) in &self.instances {
            e.encode_family(&[("call", *call)])?
                .encode_gauge(&(*max as i64))?;
        }
        ConstGauge::new(self.outbox as i64).encode(encoder.encode_descriptor(
            "tocsin_outbox_pending",
            "Deliveries waiting for an attempt",
            None,
            MetricType::Gauge,
        )?)?;
        let mut by_status = [0i64; 4];
        for m in &self.monitors {
            by_status[status_value(m.status) as usize] += 1;
        }
        let mut e = encoder.encode_descriptor(
            "tocsin_monitors",
            "Monitors by status",
            None,
            MetricType::Gauge,
        )?;
        for (status, n) in ["down", "up", "pending", "paused"].iter().zip(by_status) {
            e.encode_family(&[("status", *status)])?.encode_gauge(&n)?;
        }

        let labels: Vec<Labels> = self
            .monitors
            .iter()
            .zip(&self.live)
            .map(|(m, live)| Labels {
                workspace: &m.workspace_id,
                id: &m.id,
                name: &m.name,
                kind: &m.kind,
                tags: tag_text(&m.tags),
                region: live
                    .as_ref()
                    .and_then(|l| l.region.as_deref())
                    .unwrap_or(""),
            })
            .collect();

        let mut e = encoder.encode_descriptor(
            "tocsin_monitor_status",
            "0 down, 1 up, 2 pending (not passed yet), 3 paused",
            None,
            MetricType::Gauge,
        )?;
        for (m, l) in self.monitors.iter().zip(&labels) {
            e.encode_family(&l.set())?
                .encode_gauge(&status_value(m.status))?;
        }
        let mut e = encoder.encode_descriptor(
            "tocsin_monitor_response_time_seconds",
            "Response time of the last check",
            None,
            MetricType::Gauge,
        )?;
        for (m, l) in self.monitors.iter().zip(&labels) {
            if let Some(ms) = m.last_response_time_ms {
                e.encode_family(&l.set())?
                    .encode_gauge(&(f64::from(ms) / 1000.0))?;
            }
        }
        let mut e = encoder.encode_descriptor(
            "tocsin_monitor_response_seconds",
            "Response times of the checks since the server started",
            None,
            MetricType::Histogram,
        )?;
        for (live, l) in self.live.iter().zip(&labels) {
            let Some(live) = live else { continue };
            let mut buckets: Vec<(f64, u64)> = RESPONSE_BUCKETS
                .iter()
                .zip(live.buckets)
                .map(|(b, n)| (*b, n))
                .collect();
            let within: u64 = live.buckets.iter().sum();
            buckets.push((f64::INFINITY, live.timed - within));
            e.encode_family(&l.set())?.encode_histogram::<NoLabelSet>(
                live.response_ms_sum as f64 / 1000.0,
                live.timed,
                &buckets,
                None,
            )?;
        }
        let mut e = encoder.encode_descriptor(
            "tocsin_monitor_checks",
            "Checks since the server started, by outcome",
            None,
            MetricType::Counter,
        )?;
        for (live, l) in self.live.iter().zip(&labels) {
            let Some(live) = live else { continue };
            for (outcome, n) in [("up", live.up), ("down", live.down)] {
                let set = l.set();
                let with: [(&str, &str); 7] = [
                    set[0],
                    set[1],
                    set[2],
                    set[3],
                    set[4],
                    set[5],
                    ("outcome", outcome),
                ];
                e.encode_family(&with)?
                    .encode_counter::<NoLabelSet, _, u64>(&n, None)?;
            }
        }
        let mut e = encoder.encode_descriptor(
            "tocsin_monitor_uptime_ratio",
            "Share of checks that passed over the window (1d, 30d)",
            None,
            MetricType::Gauge,
        )?;
        for (window, pick) in [("1d", 0), ("30d", 1)] {
            for (u, l) in self.uptime.iter().zip(&labels) {
                let value = if pick == 0 { u.0 } else { u.1 };
                if let Some(v) = value {
                    let set = l.set();
                    let with: [(&str, &str); 7] = [
                        set[0],
                        set[1],
                        set[2],
                        set[3],
                        set[4],
                        set[5],
                        ("window", window),
                    ];
                    e.encode_family(&with)?.encode_gauge(&v)?;
                }
            }
        }
        let mut e = encoder.encode_descriptor(
            "tocsin_monitor_certificate_expires_timestamp_seconds",
            "When the certificate the last check saw expires (Unix time); days left: (x - time()) / 86400",
            None,
            MetricType::Gauge,
        )?;
        for (live, l) in self.live.iter().zip(&labels) {
            if let Some(at) = live.as_ref().and_then(|l| l.certificate_expires_ms) {
                e.encode_family(&l.set())?
                    .encode_gauge(&(at as f64 / 1000.0))?;
            }
        }
        if self.kuma {
            self.encode_kuma(&mut encoder)?;
        }
        Ok(())
    }
}

impl Scrape {
    /// Uptime Kuma's names and labels, so its Grafana dashboards work unchanged.
    fn encode_kuma(&self, encoder: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let targets: Vec<KumaLabels> = self.monitors.iter().map(|m| KumaLabels::of(m)).collect();
        let mut e = encoder.encode_descriptor(
            "monitor_status",
            "Monitor status (1 = UP, 0 = DOWN, 2 = PENDING, 3 = MAINTENANCE)",
            None,
            MetricType::Gauge,
        )?;
        for (m, k) in self.monitors.iter().zip(&targets) {
            // Kuma has no paused value; a paused monitor is not shown, as in Kuma.
            let value = match m.status {
                MonitorState::Down => 0,
                MonitorState::Up => 1,
                MonitorState::Pending => 2,
                MonitorState::Paused => continue,
            };
            e.encode_family(&k.set())?.encode_gauge(&value)?;
        }
        let mut e = encoder.encode_descriptor(
            "monitor_response_time",
            "Monitor response time (ms)",
            None,
            MetricType::Gauge,
        )?;
        for (m, k) in self.monitors.iter().zip(&targets) {
            if let Some(ms) = m.last_response_time_ms {
                e.encode_family(&k.set())?.encode_gauge(&i64::from(ms))?;
            }
        }
        let mut days = encoder.encode_descriptor(
            "monitor_cert_days_remaining",
            "The number of days remaining until the certificate expires",
            None,
            MetricType::Gauge,
        )?;
        for (live, k) in self.live.iter().zip(&targets) {
            if let Some(at) = live.as_ref().and_then(|l| l.certificate_expires_ms) {
                days.encode_family(&k.set())?
                    .encode_gauge(&(at - self.now_ms).div_euclid(DAY_MS))?;
            }
        }
        let mut valid = encoder.encode_descriptor(
            "monitor_cert_is_valid",
            "Is the certificate still valid? (1 = Yes, 0= No)",
            None,
            MetricType::Gauge,
        )?;
        for (live, k) in self.live.iter().zip(&targets) {
            if let Some(at) = live.as_ref().and_then(|l| l.certificate_expires_ms) {
                valid
                    .encode_family(&k.set())?
                    .encode_gauge(&i64::from(at > self.now_ms))?;
            }
        }
        Ok(())
    }
}

/// Uptime Kuma's labels: name, type, and the target's URL, host name and port.
struct KumaLabels<'a> {
    name: &'a str,
    kind: &'a str,
    url: String,
    hostname: String,
    port: String,
}

impl<'a> KumaLabels<'a> {
    fn of(m: &'a MonitorMetricRow) -> KumaLabels<'a> {
        let config: serde_json::Value = m
            .config
            .as_deref()
            .and_then(|c| serde_json::from_str(c).ok())
            .unwrap_or_default();
        let text = |key: &str| match config.get(key) {
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(serde_json::Value::Number(n)) => n.to_string(),
            _ => String::new(),
        };
        let url = text("url");
        let hostname = [text("host"), text("hostname")]
            .into_iter()
            .find(|h| !h.is_empty())
            .unwrap_or_default();
        KumaLabels {
            name: &m.name,
            kind: &m.kind,
            url: if url.is_empty() {
                "https://".into()
            } else {
                url
            },
            hostname,
            port: text("port"),
        }
    }

    fn set(&self) -> [(&str, &str); 5] {
        [
            ("monitor_name", self.name),
            ("monitor_type", self.kind),
            ("monitor_url", &self.url),
            ("monitor_hostname", &self.hostname),
            ("monitor_port", &self.port),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uptime_windows_weigh_the_oldest_day_by_its_part_in_the_window() {
        let today = 20_000;
        let rows = vec![
            (
                "a".to_string(),
                DayCount {
                    day: today - 1,
                    total: 100,
                    up: 50,
                },
            ),
            (
                "a".to_string(),
                DayCount {
                    day: today - 2,
                    total: 100,
                    up: 100,
                },
            ),
            (
                "a".to_string(),
                DayCount {
                    day: today - 30,
                    total: 100,
                    up: 0,
                },
            ),
            (
                "a".to_string(),
                DayCount {
                    day: today - 31,
                    total: 100,
                    up: 0,
                },
            ),
        ];
        let past = fold_past(today, &rows);
        let a = past["a"];
        assert_eq!(a.yesterday, (100, 50));
        assert_eq!(a.month, (200, 150));
        assert_eq!(a.edge, (100, 0));
        // A quarter into today, with 25 of 25 up: 1d = (25 + 0.75*50) / (25 + 0.75*100).
        let (day, month) = windows((25, 25), a, 0.25);
        assert!((day.unwrap() - 62.5 / 100.0).abs() < 1e-9);
        assert!((month.unwrap() - 175.0 / 300.0).abs() < 1e-9);
        assert_eq!(windows((0, 0), PastDays::default(), 0.5), (None, None));
    }

    #[test]
    fn kuma_labels_come_from_the_target() {
        let row = MonitorMetricRow {
            id: "mon_1".into(),
            workspace_id: "ws_1".into(),
            name: "db".into(),
            kind: "tcp".into(),
            status: MonitorState::Up,
            last_response_time_ms: Some(3),
            tags: "[]".into(),
            config: Some(r#"{"host":"db.internal","port":5432}"#.into()),
        };
        let k = KumaLabels::of(&row);
        assert_eq!(k.hostname, "db.internal");
        assert_eq!(k.port, "5432");
        assert_eq!(k.url, "https://");
    }
}
