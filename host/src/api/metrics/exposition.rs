//! The exposition of one scrape: the server's counters (encoded by `prometheus-client`),
//! then every monitor's series (and Uptime Kuma's names when asked), written straight out
//! in the same format.
//!
//! The monitors are read in pages of [`Scrape::page`] while their info series is encoded;
//! what the other series need of them (the id, the state, the last response time, and Uptime
//! Kuma's labels when asked) is kept in a compact table, and the counters and uptime
//! windows are looked up a slice at a time. A scrape of a million monitors so holds tens of
//! megabytes, not a copy of every row.

use crate::store::metrics::MonitorMetricRow;
use crate::store::{MonitorState, Store, StoreError};
use crate::telemetry::{self, MonitorLive, RESPONSE_BUCKETS};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::Registry;
use std::fmt::{self, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

const DAY_MS: i64 = 86_400_000;
/// Monitors whose counters and uptime windows are looked up under one lock.
const SLICE: usize = 4_096;
/// The per-monitor info series.
const INFO: &str = "tocsin_monitor_info";

/// Everything one scrape shows. Encoding reads the monitors from the store, so it runs on
/// a blocking thread of `runtime`.
pub(super) struct Scrape {
    pub(super) store: Store,
    pub(super) runtime: tokio::runtime::Handle,
    /// The workspace whose monitors are shown; None: every workspace's.
    pub(super) workspace: Option<String>,
    /// Monitors read per query.
    pub(super) page: u64,
    pub(super) now_ms: i64,
    pub(super) kuma: bool,
    pub(super) histograms: bool,
    pub(super) instances: [(&'static str, usize, usize); 3],
    pub(super) outbox: u64,
    /// Nanoseconds spent waiting for the store while encoding.
    pub(super) read_nanos: Arc<AtomicU64>,
    /// The labels kept between scrapes, and the count of label changes read before this
    /// one (None on PostgreSQL: nothing is kept).
    pub(super) labels: Arc<super::labels::LabelCache>,
    pub(super) labels_version: Option<i64>,
}

impl std::fmt::Debug for Scrape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scrape")
            .field("workspace", &self.workspace)
            .field("page", &self.page)
            .field("kuma", &self.kuma)
            .field("histograms", &self.histograms)
            .finish_non_exhaustive()
    }
}

/// Strings end to end in one buffer.
#[derive(Default, Clone)]
pub(super) struct Strings {
    text: String,
    ends: Vec<usize>,
}

impl Strings {
    pub(super) fn push(&mut self, s: &str) {
        self.text.push_str(s);
        self.ends.push(self.text.len());
    }

    pub(super) fn get(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.text[start..self.ends[i]]
    }
}

/// What the series after the info series need of each monitor, in the order read.
#[derive(Default)]
struct Table {
    ids: Strings,
    status: Vec<MonitorState>,
    response_ms: Vec<Option<i32>>,
    /// Uptime Kuma's five labels per monitor (see [`KumaLabels::set`]), when asked for.
    kuma: Strings,
    /// Built from kept labels: `response_ms` is as read then.
    kept: bool,
}

impl Table {
    fn len(&self) -> usize {
        self.status.len()
    }

    fn id(&self, i: usize) -> &str {
        self.ids.get(i)
    }

    fn kuma_set(&self, i: usize) -> [(&'static str, &str); 5] {
        let k = |j: usize| self.kuma.get(i * 5 + j);
        [
            ("monitor_name", k(0)),
            ("monitor_type", k(1)),
            ("monitor_url", k(2)),
            ("monitor_hostname", k(3)),
            ("monitor_port", k(4)),
        ]
    }
}

impl Scrape {
    /// Encode everything into `out`.
    pub(super) fn encode_into(self, out: &mut impl std::fmt::Write) -> Result<(), std::fmt::Error> {
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
            "tocsin_recorder_shed",
            "Check results dropped because the result buffer was full (the database far behind)",
            t.recorder_shed.clone(),
        );
        registry.register(
            "tocsin_recorder_queued",
            "Check results waiting to be written",
            t.recorder_queued.clone(),
        );
        registry.register(
            "tocsin_unreadable_fields",
            "Stored lists of a monitor (tags, regions, dependencies) that did not read as a list and were taken as empty",
            t.unreadable_fields.clone(),
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
        registry.register_collector(Box::new(ServerGauges {
            instances: self.instances,
            outbox: self.outbox,
        }));
        prometheus_client::encoding::prometheus_text::encode(out, &registry)?;
        self.encode_monitors(&mut Text { out })
    }
}

fn status_value(s: MonitorState) -> i64 {
    match s {
        MonitorState::Down => 0,
        MonitorState::Up => 1,
        MonitorState::Pending => 2,
        MonitorState::Paused => 3,
        MonitorState::Degraded => 4,
    }
}

/// Tags as one label value: `a,b`.
fn tag_text(json: &str) -> String {
    serde_json::from_str::<Vec<String>>(json)
        .map(|t| t.join(","))
        .unwrap_or_default()
}

impl Scrape {
    /// The next page of monitors after `after`, waited for on this blocking thread.
    fn read_page(&self, after: Option<&str>) -> Result<Vec<MonitorMetricRow>, StoreError> {
        let started = std::time::Instant::now();
        let rows = self.runtime.block_on(self.store.monitor_metric_page(
            self.workspace.as_deref(),
            after,
            self.page,
            self.kuma,
        ));
        self.read_nanos
            .fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
        rows
    }

    /// The info series, one per monitor; returns what the other series need of them.
    /// Each monitor's names once, on its info series; every other series carries only
    /// `monitor_id` (join with `* on (monitor_id) group_left (monitor, tags)
    /// tocsin_monitor_info`). Repeating five labels on every line made a scrape at
    /// 100,000 monitors twice as large (docs/performance.md).
    fn encode_info<W: Write>(&self, t: &mut Text<'_, W>) -> Result<Table, fmt::Error> {
        t.family(
            INFO,
            "One series per monitor, 1, labelled with its workspace, name, type and tags",
            "gauge",
        )?;
        let Some(version) = self.labels_version else {
            return self.read_info(t);
        };
        if let Some(kept) = self
            .labels
            .get(version, self.workspace.as_deref(), self.kuma)
        {
            t.out.write_str(&kept.info)?;
            return self.table_from(&kept);
        }
        // Read, and keep what was read unless a label changed meanwhile.
        let read_at = std::time::Instant::now();
        let mut info = String::new();
        let table = self.read_info(&mut Text { out: &mut info })?;
        t.out.write_str(&info)?;
        let started = std::time::Instant::now();
        let now = self
            .runtime
            .block_on(self.store.monitor_labels_version())
            .map_err(|error| {
                tracing::warn!(%error, "could not read the monitors for /metrics");
                std::fmt::Error
            })?;
        self.read_nanos
            .fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
        if now == Some(version) {
            self.labels.keep(super::labels::Labels {
                version,
                workspace: self.workspace.clone(),
                kuma: self.kuma,
                info,
                ids: table.ids.clone(),
                kuma_labels: table.kuma.clone(),
                response_ms: table.response_ms.clone(),
                read_at,
            });
        }
        Ok(table)
    }

    /// The table of a scrape from kept labels: the states read now (those not `up`), and
    /// each monitor's last response time from the counters of the checks made since the
    /// server started, or as kept for a monitor not checked since.
    fn table_from(&self, kept: &super::labels::Labels) -> Result<Table, fmt::Error> {
        let started = std::time::Instant::now();
        let not_up = self
            .runtime
            .block_on(self.store.monitors_not_up(self.workspace.as_deref()))
            .map_err(|error| {
                tracing::warn!(%error, "could not read the monitors' states for /metrics");
                std::fmt::Error
            })?;
        self.read_nanos
            .fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
        let n = kept.response_ms.len();
        let mut table = Table {
            ids: kept.ids.clone(),
            status: Vec::with_capacity(n),
            response_ms: Vec::with_capacity(n),
            kuma: kept.kuma_labels.clone(),
            kept: true,
        };
        // Both in id order: walk them side by side.
        let mut other = not_up.iter().peekable();
        for i in 0..n {
            let id = kept.ids.get(i);
            while other.next_if(|(o, _)| o.as_str() < id).is_some() {}
            let status = match other.next_if(|(o, _)| o.as_str() == id) {
                Some((_, s)) => *s,
                None => MonitorState::Up,
            };
            table.status.push(status);
        }
        table.response_ms.clone_from(&kept.response_ms);
        Ok(table)
    }

    /// [`Scrape::encode_info`]'s samples, written page by page as the monitors are read.
    fn read_info<W: Write>(&self, t: &mut Text<'_, W>) -> Result<Table, fmt::Error> {
        let mut table = Table::default();
        let mut after: Option<String> = None;
        loop {
            let rows = self.read_page(after.as_deref()).map_err(|error| {
                tracing::warn!(%error, "could not read the monitors for /metrics");
                std::fmt::Error
            })?;
            for m in &rows {
                let tags = tag_text(&m.tags);
                t.int(
                    INFO,
                    &[
                        ("workspace", m.workspace_id.as_str()),
                        ("monitor_id", m.id.as_str()),
                        ("monitor", m.name.as_str()),
                        ("type", m.kind.as_str()),
                        ("tags", tags.as_str()),
                    ],
                    1,
                )?;
                table.ids.push(&m.id);
                table.status.push(m.status);
                table.response_ms.push(m.last_response_time_ms);
                if self.kuma {
                    for label in KumaLabels::of(m).set() {
                        table.kuma.push(label.1);
                    }
                }
            }
            if (rows.len() as u64) < self.page {
                break;
            }
            after = rows.last().map(|m| m.id.clone());
        }
        Ok(table)
    }

    /// `f` for every monitor of `table` with its counters (None: no check since the
    /// server started), as [`Lives::gather`] read them.
    fn each_live(
        table: &Table,
        lives: &Lives,
        mut f: impl FnMut(usize, Option<&MonitorLive>) -> Result<(), std::fmt::Error>,
    ) -> Result<(), std::fmt::Error> {
        for i in 0..table.len() {
            f(i, lives.get(i))?;
        }
        Ok(())
    }
}

/// Each monitor's counters and uptime windows, looked up once per scrape (a slice at a
/// time under the lock) rather than once per series: at a million monitors each pass of
/// lookups was a few hundred milliseconds. Only monitors checked since the start have
/// counters, so those are kept apart and the rest cost four bytes.
struct Lives {
    /// Per monitor of the table, its place in `counters` (`u32::MAX`: none).
    at: Vec<u32>,
    counters: Vec<MonitorLive>,
    /// Per monitor, the 1 d and 30 d uptime ratios (NaN: nothing checked).
    uptime: Vec<[f64; 2]>,
}

impl Lives {
    fn gather(table: &Table, now_ms: i64) -> Lives {
        let board = &telemetry::global().monitors;
        let mut lives = Lives {
            at: Vec::with_capacity(table.len()),
            counters: Vec::new(),
            uptime: Vec::with_capacity(table.len()),
        };
        for start in (0..table.len()).step_by(SLICE) {
            let end = table.len().min(start + SLICE);
            for live in board.read((start..end).map(|i| table.id(i))) {
                match live {
                    Some(l) if lives.counters.len() < u32::MAX as usize => {
                        lives.at.push(lives.counters.len() as u32);
                        lives.counters.push(l);
                    }
                    _ => lives.at.push(u32::MAX),
                }
            }
            let windows = super::UPTIME.read((start..end).map(|i| table.id(i)), now_ms);
            lives.uptime.extend(
                windows
                    .into_iter()
                    .map(|(day, month)| [day.unwrap_or(f64::NAN), month.unwrap_or(f64::NAN)]),
            );
        }
        lives
    }

    fn get(&self, i: usize) -> Option<&MonitorLive> {
        self.counters.get(*self.at.get(i)? as usize)
    }

    /// The uptime ratio of monitor `i` over window 0 (1 d) or 1 (30 d).
    fn uptime(&self, i: usize, window: usize) -> Option<f64> {
        Some(self.uptime.get(i)?[window]).filter(|v| !v.is_nan())
    }
}

/// The server's gauges the registry does not keep: plugin instances and the outbox.
struct ServerGauges {
    instances: [(&'static str, usize, usize); 3],
    outbox: u64,
}

impl std::fmt::Debug for ServerGauges {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerGauges").finish_non_exhaustive()
    }
}

impl Collector for ServerGauges {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        type Pick = fn(&(&'static str, usize, usize)) -> usize;
        let pools: [(&str, &str, Pick); 2] = [
            (
                "tocsin_plugin_instances",
                "Plugin instances in use, by kind of call",
                |i| i.1,
            ),
            (
                "tocsin_plugin_instances_max",
                "The most plugin instances a kind of call may use at once",
                |i| i.2,
            ),
        ];
        for (name, help, pick) in pools {
            let mut e = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
            for i in &self.instances {
                e.encode_family(&[("call", i.0)])?
                    .encode_gauge(&(pick(i) as i64))?;
            }
        }
        ConstGauge::new(self.outbox as i64).encode(encoder.encode_descriptor(
            "tocsin_outbox_pending",
            "Deliveries waiting for an attempt",
            None,
            MetricType::Gauge,
        )?)
    }
}

/// The per-monitor series' text, written straight out in the format `prometheus-client`
/// writes (label values escaped alike, numbers by the same `itoa` and `dtoa`). A million
/// monitors are some six million samples, and encoding each through its generic label
/// sets was most of a scrape's encoding time (docs/performance.md, goal 5).
struct Text<'a, W: Write> {
    out: &'a mut W,
}

impl<W: Write> Text<'_, W> {
    /// A family's `# HELP` and `# TYPE` lines; `name` as its samples are named.
    fn family(&mut self, name: &str, help: &str, kind: &str) -> fmt::Result {
        debug_assert!(!help.contains(['\\', '\n']), "help text needs no escaping");
        for part in [
            "# HELP ",
            name,
            " ",
            help,
            "\n# TYPE ",
            name,
            " ",
            kind,
            "\n",
        ] {
            self.out.write_str(part)?;
        }
        Ok(())
    }

    /// A sample's name and labels, up to its value.
    fn start(&mut self, name: &str, labels: &[(&str, &str)]) -> fmt::Result {
        self.out.write_str(name)?;
        for (i, (key, value)) in labels.iter().enumerate() {
            self.out.write_str(if i == 0 { "{" } else { "," })?;
            self.out.write_str(key)?;
            self.out.write_str("=\"")?;
            self.escaped(value)?;
            self.out.write_str("\"")?;
        }
        if !labels.is_empty() {
            self.out.write_str("}")?;
        }
        Ok(())
    }

    /// A label value with `\`, `"` and line feeds escaped.
    fn escaped(&mut self, value: &str) -> fmt::Result {
        if !value.bytes().any(|b| matches!(b, b'\\' | b'"' | b'\n')) {
            return self.out.write_str(value);
        }
        let mut last = 0;
        for (at, byte) in value.bytes().enumerate() {
            let escape = match byte {
                b'\\' => "\\\\",
                b'"' => "\\\"",
                b'\n' => "\\n",
                _ => continue,
            };
            self.out.write_str(&value[last..at])?;
            self.out.write_str(escape)?;
            last = at + 1;
        }
        self.out.write_str(&value[last..])
    }

    fn value(&mut self, text: &str) -> fmt::Result {
        self.out.write_str(" ")?;
        self.out.write_str(text)?;
        self.out.write_str("\n")
    }

    fn int(&mut self, name: &str, labels: &[(&str, &str)], v: i64) -> fmt::Result {
        self.start(name, labels)?;
        self.value(itoa::Buffer::new().format(v))
    }

    fn count(&mut self, name: &str, labels: &[(&str, &str)], v: u64) -> fmt::Result {
        self.start(name, labels)?;
        self.value(itoa::Buffer::new().format(v))
    }

    fn float(&mut self, name: &str, labels: &[(&str, &str)], v: f64) -> fmt::Result {
        self.start(name, labels)?;
        let mut buffer = dtoa::Buffer::new();
        self.value(float_text(&mut buffer, v))
    }
}

/// A sample's value as `prometheus-client` writes it.
fn float_text(buffer: &mut dtoa::Buffer, v: f64) -> &str {
    if v.is_finite() {
        buffer.format_finite(v)
    } else if v.is_nan() {
        "NaN"
    } else if v.is_sign_positive() {
        "+Inf"
    } else {
        "-Inf"
    }
}

/// A histogram bound as an `le` label: the way Prometheus's Go client writes it (whole
/// numbers below a million as integers, the infinite bound `+Inf`).
fn bound_text(bound: f64) -> String {
    if bound == f64::INFINITY {
        "+Inf".into()
    } else if bound.fract() == 0.0 && bound.abs() < 1e6 {
        (bound as i64).to_string()
    } else {
        bound.to_string()
    }
}

impl Scrape {
    /// Every monitor's series, after the server's.
    fn encode_monitors<W: Write>(&self, t: &mut Text<'_, W>) -> fmt::Result {
        let mut table = self.encode_info(t)?;
        let lives = Lives::gather(&table, self.now_ms);
        if table.kept {
            // Kept labels hold the response times read then; checks made since are in
            // the process's counters.
            for (i, ms) in table.response_ms.iter_mut().enumerate() {
                if let Some(l) = lives.get(i) {
                    *ms = l
                        .last_response_ms
                        .map(|ms| i32::try_from(ms).unwrap_or(i32::MAX));
                }
            }
        }
        let board = &telemetry::global().monitors;
        if self.workspace.is_none() && board.len() > table.len() {
            // Forget the counters of monitors deleted since the server started.
            let ids: std::collections::HashSet<&str> =
                (0..table.len()).map(|i| table.id(i)).collect();
            board.retain(|id| ids.contains(id));
        }

        let mut by_status = [0i64; 5];
        for s in &table.status {
            by_status[status_value(*s) as usize] += 1;
        }
        t.family("tocsin_monitors", "Monitors by status", "gauge")?;
        for (status, n) in ["down", "up", "pending", "paused", "degraded"]
            .iter()
            .zip(by_status)
        {
            t.int("tocsin_monitors", &[("status", status)], n)?;
        }

        const STATUS: &str = "tocsin_monitor_status";
        t.family(
            STATUS,
            "0 down, 1 up, 2 pending (not passed yet), 3 paused, 4 degraded (up but slow)",
            "gauge",
        )?;
        for (i, s) in table.status.iter().enumerate() {
            t.int(STATUS, &[("monitor_id", table.id(i))], status_value(*s))?;
        }
        const RESPONSE: &str = "tocsin_monitor_response_time_seconds";
        t.family(
            RESPONSE,
            "Response time of the last check, labelled with the region it ran in",
            "gauge",
        )?;
        Self::each_live(&table, &lives, |i, live| {
            if let Some(ms) = table.response_ms[i] {
                let region = live.and_then(|l| l.region.as_deref()).unwrap_or("");
                t.float(
                    RESPONSE,
                    &[("monitor_id", table.id(i)), ("region", region)],
                    f64::from(ms) / 1000.0,
                )?;
            }
            Ok(())
        })?;
        if self.histograms {
            self.encode_histograms(t, &table, &lives)?;
        }
        const CHECKS: &str = "tocsin_monitor_checks_total";
        t.family(
            CHECKS,
            "Checks since the server started, by outcome",
            "counter",
        )?;
        Self::each_live(&table, &lives, |i, live| {
            let Some(live) = live else { return Ok(()) };
            for (outcome, n) in [("up", live.up), ("down", live.down)] {
                t.count(
                    CHECKS,
                    &[("monitor_id", table.id(i)), ("outcome", outcome)],
                    n,
                )?;
            }
            Ok(())
        })?;
        const UPTIME: &str = "tocsin_monitor_uptime_ratio";
        t.family(
            UPTIME,
            "Share of checks that passed over the window (1d, 30d)",
            "gauge",
        )?;
        for (window, pick) in [("1d", 0), ("30d", 1)] {
            for i in 0..table.len() {
                if let Some(v) = lives.uptime(i, pick) {
                    t.float(
                        UPTIME,
                        &[("monitor_id", table.id(i)), ("window", window)],
                        v,
                    )?;
                }
            }
        }
        const EXPIRES: &str = "tocsin_monitor_certificate_expires_timestamp_seconds";
        t.family(
            EXPIRES,
            "When the certificate the last check saw expires (Unix time); days left: (x - time()) / 86400",
            "gauge",
        )?;
        Self::each_live(&table, &lives, |i, live| {
            if let Some(at) = live.and_then(|l| l.certificate_expires_ms) {
                t.float(EXPIRES, &[("monitor_id", table.id(i))], at as f64 / 1000.0)?;
            }
            Ok(())
        })?;
        if self.kuma {
            self.encode_kuma(t, &table, &lives)?;
        }
        Ok(())
    }

    /// Each monitor's response times since the server started, as a histogram.
    fn encode_histograms<W: Write>(
        &self,
        t: &mut Text<'_, W>,
        table: &Table,
        lives: &Lives,
    ) -> fmt::Result {
        const NAME: &str = "tocsin_monitor_response_seconds";
        t.family(
            NAME,
            "Response times of the checks since the server started",
            "histogram",
        )?;
        // The bounds' labels once, not once per monitor.
        let bounds: Vec<String> = RESPONSE_BUCKETS
            .iter()
            .copied()
            .chain([f64::INFINITY])
            .map(bound_text)
            .collect();
        Self::each_live(table, lives, |i, live| {
            let Some(live) = live else { return Ok(()) };
            let id = table.id(i);
            let mut cumulative = 0;
            let within: u64 = live.buckets.iter().sum();
            let counts = live.buckets.iter().copied().chain([live.timed - within]);
            for (bound, n) in bounds.iter().zip(counts) {
                cumulative += n;
                t.count(
                    "tocsin_monitor_response_seconds_bucket",
                    &[("monitor_id", id), ("le", bound)],
                    cumulative,
                )?;
            }
            t.float(
                "tocsin_monitor_response_seconds_sum",
                &[("monitor_id", id)],
                live.response_ms_sum as f64 / 1000.0,
            )?;
            t.count(
                "tocsin_monitor_response_seconds_count",
                &[("monitor_id", id)],
                live.timed,
            )
        })
    }

    /// Uptime Kuma's names and labels, so its Grafana dashboards work unchanged.
    fn encode_kuma<W: Write>(
        &self,
        t: &mut Text<'_, W>,
        table: &Table,
        lives: &Lives,
    ) -> fmt::Result {
        t.family(
            "monitor_status",
            "Monitor status (1 = UP, 0 = DOWN, 2 = PENDING, 3 = MAINTENANCE)",
            "gauge",
        )?;
        for (i, s) in table.status.iter().enumerate() {
            // Kuma has no paused value; a paused monitor is not shown, as in Kuma.
            let value = match s {
                MonitorState::Down => 0,
                // Kuma has no degraded state: slow is up.
                MonitorState::Up | MonitorState::Degraded => 1,
                MonitorState::Pending => 2,
                MonitorState::Paused => continue,
            };
            t.int("monitor_status", &table.kuma_set(i), value)?;
        }
        t.family(
            "monitor_response_time",
            "Monitor response time (ms)",
            "gauge",
        )?;
        for (i, ms) in table.response_ms.iter().enumerate() {
            if let Some(ms) = ms {
                t.int("monitor_response_time", &table.kuma_set(i), i64::from(*ms))?;
            }
        }
        t.family(
            "monitor_cert_days_remaining",
            "The number of days remaining until the certificate expires",
            "gauge",
        )?;
        Self::each_live(table, lives, |i, live| {
            if let Some(at) = live.and_then(|l| l.certificate_expires_ms) {
                t.int(
                    "monitor_cert_days_remaining",
                    &table.kuma_set(i),
                    (at - self.now_ms).div_euclid(DAY_MS),
                )?;
            }
            Ok(())
        })?;
        t.family(
            "monitor_cert_is_valid",
            "Is the certificate still valid? (1 = Yes, 0= No)",
            "gauge",
        )?;
        Self::each_live(table, lives, |i, live| {
            if let Some(at) = live.and_then(|l| l.certificate_expires_ms) {
                t.int(
                    "monitor_cert_is_valid",
                    &table.kuma_set(i),
                    i64::from(at > self.now_ms),
                )?;
            }
            Ok(())
        })
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

    /// The labels in the order [`Table::kuma_set`] reads them.
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
    fn strings_end_to_end_come_back_apart() {
        let mut s = Strings::default();
        for x in ["mon_1", "", "ws ✓", "x"] {
            s.push(x);
        }
        assert_eq!(
            (0..4).map(|i| s.get(i)).collect::<Vec<_>>(),
            ["mon_1", "", "ws ✓", "x"]
        );
    }

    fn row(id: &str, ws: &str, status: MonitorState) -> crate::store::monitors::MonitorRow {
        crate::store::monitors::MonitorRow {
            name: format!("name of {id}"),
            config: r#"{"url":"http://127.0.0.1:9/x","method":"GET"}"#.into(),
            status,
            last_response_time_ms: Some(7),
            tags: r#"["a","b"]"#.into(),
            ..crate::store::monitors::MonitorRow::new(id, ws, "http", 1)
        }
    }

    /// A scrape of `workspace` reading `page` monitors per query, keeping labels in
    /// `labels` under `labels_version` (None: nothing kept).
    fn scrape_of(
        store: &Store,
        workspace: Option<&str>,
        page: u64,
        labels: Arc<super::super::LabelCache>,
        labels_version: Option<i64>,
    ) -> Scrape {
        Scrape {
            store: store.clone(),
            runtime: tokio::runtime::Handle::current(),
            workspace: workspace.map(str::to_owned),
            page,
            now_ms: 0,
            kuma: true,
            histograms: true,
            instances: [("check", 0, 1), ("notify", 0, 1), ("validate", 0, 1)],
            outbox: 0,
            read_nanos: Arc::default(),
            labels,
            labels_version,
        }
    }

    /// Encode a scrape of `workspace` reading `page` monitors per query.
    async fn scrape(store: &Store, workspace: Option<&str>, page: u64) -> String {
        encode(scrape_of(store, workspace, page, Arc::default(), None)).await
    }

    async fn encode(scrape: Scrape) -> String {
        tokio::task::spawn_blocking(move || {
            let mut out = String::new();
            scrape.encode_into(&mut out).map(|()| out)
        })
        .await
        .expect("joined")
        .expect("encoded")
    }

    /// Encode a scrape of every workspace as the server does, keeping labels in `labels`.
    async fn scrape_kept(store: &Store, labels: &Arc<super::super::LabelCache>) -> String {
        let version = store.monitor_labels_version().await.expect("version");
        encode(scrape_of(store, None, 2, labels.clone(), version)).await
    }

    #[tokio::test]
    async fn kept_labels_serve_scrapes_until_a_monitor_is_added_removed_or_relabelled() {
        let dir = tempfile::tempdir().expect("tempdir");
        let url = format!("sqlite://{}", dir.path().join("t.db").display());
        let store = Store::connect(&url).await.expect("store");
        store.migrate().await.expect("migrate");
        let ws = store
            .create_workspace("Kept", crate::plans::Plan::Business, 1)
            .await
            .expect("workspace");
        let states = [MonitorState::Up, MonitorState::Down, MonitorState::Paused];
        for (i, state) in states.into_iter().enumerate() {
            store
                .insert_monitor(row(&format!("mon_kept{i}"), &ws.id, state))
                .await
                .expect("insert");
        }
        store
            .insert_monitor(row("mon_keptslow", &ws.id, MonitorState::Degraded))
            .await
            .expect("insert");
        let labels: Arc<super::super::LabelCache> = Arc::default();
        let version = store.monitor_labels_version().await.expect("version");
        let first = scrape_kept(&store, &labels).await;
        assert!(
            labels
                .get(version.expect("SQLite counts"), None, true)
                .is_some(),
            "kept after the first scrape"
        );
        // Served from what was kept, the text is what a scrape reading everything writes.
        assert_eq!(scrape_kept(&store, &labels).await, first);
        assert!(
            first.contains("tocsin_monitor_status{monitor_id=\"mon_keptslow\"} 4\n")
                && first.contains("tocsin_monitors{status=\"degraded\"} 1\n"),
            "{first}"
        );
        assert_eq!(scrape(&store, None, 1_000).await, first);

        // A state changes: nothing is relabelled, and the scrape shows the state.
        let up = store
            .monitor_by_id("mon_kept0")
            .await
            .expect("read")
            .expect("row");
        let tx = store.begin_write().await.expect("tx");
        tx.set_monitor_state(up, MonitorState::Down, false, None)
            .await
            .expect("state");
        tx.commit().await.expect("commit");
        assert_eq!(
            store.monitor_labels_version().await.expect("version"),
            version
        );
        let downed = scrape_kept(&store, &labels).await;
        assert!(
            downed.contains("tocsin_monitor_status{monitor_id=\"mon_kept0\"} 0\n"),
            "{downed}"
        );
        assert_eq!(downed, scrape(&store, None, 1_000).await);

        // Renamed, added, removed: read again.
        let renamed = crate::store::monitors::MonitorRow {
            name: "Renamed".into(),
            ..store
                .monitor_by_id("mon_kept1")
                .await
                .expect("read")
                .expect("row")
        };
        store.update_monitor(renamed).await.expect("rename");
        let text = scrape_kept(&store, &labels).await;
        assert!(text.contains("monitor=\"Renamed\""), "{text}");
        assert_eq!(text, scrape(&store, None, 1_000).await);
        store
            .insert_monitor(row("mon_kept3", &ws.id, MonitorState::Pending))
            .await
            .expect("insert");
        crate::engine::actions::delete_monitor(&store, &ws.id, "mon_kept2", 2)
            .await
            .expect("delete");
        let text = scrape_kept(&store, &labels).await;
        assert_eq!(samples(&text, "tocsin_monitor_info").len(), 4, "{text}");
        assert!(text.contains("monitor_id=\"mon_kept3\""));
        assert!(!text.contains("monitor_id=\"mon_kept2\""));
        assert_eq!(text, scrape(&store, None, 1_000).await);

        // A check stored since the labels were read: its response time, from the counters
        // the recorder sets once its batch committed.
        telemetry::global()
            .monitors
            .set_last_responses([("mon_kept3".to_string(), Some(42))]);
        let text = scrape_kept(&store, &labels).await;
        assert!(
            text.contains(
                "tocsin_monitor_response_time_seconds{monitor_id=\"mon_kept3\",region=\"\"} 0.042\n"
            ),
            "{text}"
        );
    }

    /// The lines of `family` (its samples, names as written).
    fn samples<'a>(text: &'a str, family: &str) -> Vec<&'a str> {
        text.lines()
            .filter(|l| l.starts_with(&format!("{family}{{")))
            .collect()
    }

    #[tokio::test]
    async fn a_scrape_read_in_pages_shows_every_monitor_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let url = format!("sqlite://{}", dir.path().join("t.db").display());
        let store = Store::connect(&url).await.expect("store");
        store.migrate().await.expect("migrate");
        let one = store
            .create_workspace("One", crate::plans::Plan::Business, 1)
            .await
            .expect("workspace");
        let two = store
            .create_workspace("Two", crate::plans::Plan::Business, 1)
            .await
            .expect("workspace");
        let states = [MonitorState::Up, MonitorState::Down, MonitorState::Paused];
        for i in 0..7 {
            let ws = if i % 3 == 0 { &two.id } else { &one.id };
            store
                .insert_monitor(row(&format!("mon_p{i}"), ws, states[i % 3]))
                .await
                .expect("insert");
        }
        let paged = scrape(&store, None, 2).await;
        let whole = scrape(&store, None, 1_000).await;
        assert_eq!(paged, whole, "the pages change nothing in the text");
        for family in ["tocsin_monitor_info", "tocsin_monitor_status"] {
            let lines = samples(&paged, family);
            assert_eq!(lines.len(), 7, "{family}: {lines:?}");
            for i in 0..7 {
                let id = format!("monitor_id=\"mon_p{i}\"");
                assert_eq!(
                    lines.iter().filter(|l| l.contains(&id)).count(),
                    1,
                    "{family} shows mon_p{i} once"
                );
            }
        }
        assert!(
            paged.contains("tocsin_monitors{status=\"up\"} 3\n"),
            "{paged}"
        );
        assert!(paged.contains("tocsin_monitors{status=\"down\"} 2\n"));
        assert!(paged.contains("tocsin_monitors{status=\"paused\"} 2\n"));
        // Uptime Kuma's names carry the labels of the monitor on the same line.
        let kuma = samples(&paged, "monitor_response_time");
        assert_eq!(kuma.len(), 7);
        assert!(
            kuma.iter()
                .all(|l| l.contains("monitor_url=\"http://127.0.0.1:9/x\""))
        );
        assert!(
            kuma.iter()
                .any(|l| l.contains("monitor_name=\"name of mon_p4\"") && l.ends_with(" 7"))
        );
        // One workspace's scrape, in pages of one.
        let own = scrape(&store, Some(&one.id), 1).await;
        let lines = samples(&own, "tocsin_monitor_status");
        assert_eq!(lines.len(), 4, "{lines:?}");
        assert!(
            lines
                .iter()
                .all(|l| !l.contains("mon_p0") && !l.contains("mon_p3"))
        );
        assert!(own.contains("tocsin_monitors{status=\"up\"} 0\n"));
        assert!(own.contains("tocsin_monitors{status=\"paused\"} 2\n"));
    }

    /// Everything after the server's own series, byte for byte: two monitors of one
    /// workspace, one with results (a region, a certificate, response times in two
    /// buckets), one without, a name that needs escaping, Uptime Kuma's names on.
    #[tokio::test]
    async fn the_monitors_series_are_written_exactly() {
        let dir = tempfile::tempdir().expect("tempdir");
        let url = format!("sqlite://{}", dir.path().join("t.db").display());
        let store = Store::connect(&url).await.expect("store");
        store.migrate().await.expect("migrate");
        let ws = store
            .create_workspace("Gold", crate::plans::Plan::Business, 1)
            .await
            .expect("workspace");
        let mut one = row("mon_gold1", &ws.id, MonitorState::Up);
        one.name = "db \"primary\" \\ eu".into();
        one.last_response_time_ms = Some(120);
        store.insert_monitor(one).await.expect("insert");
        let mut two = row("mon_gold2", &ws.id, MonitorState::Down);
        two.tags = "[]".into();
        two.last_response_time_ms = None;
        two.config = r#"{"host":"db.internal","port":5432}"#.into();
        two.kind = "tcp".into();
        store.insert_monitor(two).await.expect("insert");
        let cert = r#"{"certificate":{"expiresAt":"2030-01-02T00:00:00.000Z"}}"#;
        telemetry::global().monitors.observe([
            telemetry::Observation {
                monitor_id: "mon_gold1",
                ok: true,
                response_time_ms: Some(120),
                region: "eu",
                details: cert,
            },
            telemetry::Observation {
                monitor_id: "mon_gold1",
                ok: false,
                response_time_ms: Some(30),
                region: "eu",
                details: "{}",
            },
        ]);
        let text = scrape(&store, Some(&ws.id), 1).await;
        let from = text
            .find("# HELP tocsin_plugin_instances ")
            .expect("gauges");
        let expected = concat!(
            "# HELP tocsin_plugin_instances Plugin instances in use, by kind of call\n",
            "# TYPE tocsin_plugin_instances gauge\n",
            "tocsin_plugin_instances{call=\"check\"} 0\n",
            "tocsin_plugin_instances{call=\"notify\"} 0\n",
            "tocsin_plugin_instances{call=\"validate\"} 0\n",
            "# HELP tocsin_plugin_instances_max The most plugin instances a kind of call may use at once\n",
            "# TYPE tocsin_plugin_instances_max gauge\n",
            "tocsin_plugin_instances_max{call=\"check\"} 1\n",
            "tocsin_plugin_instances_max{call=\"notify\"} 1\n",
            "tocsin_plugin_instances_max{call=\"validate\"} 1\n",
            "# HELP tocsin_outbox_pending Deliveries waiting for an attempt\n",
            "# TYPE tocsin_outbox_pending gauge\n",
            "tocsin_outbox_pending 0\n",
            "# HELP tocsin_monitor_info One series per monitor, 1, labelled with its workspace, name, type and tags\n",
            "# TYPE tocsin_monitor_info gauge\n",
            "tocsin_monitor_info{workspace=\"ws_gold\",monitor_id=\"mon_gold1\",monitor=\"db \\\"primary\\\" \\\\ eu\",type=\"http\",tags=\"a,b\"} 1\n",
            "tocsin_monitor_info{workspace=\"ws_gold\",monitor_id=\"mon_gold2\",monitor=\"name of mon_gold2\",type=\"tcp\",tags=\"\"} 1\n",
            "# HELP tocsin_monitors Monitors by status\n",
            "# TYPE tocsin_monitors gauge\n",
            "tocsin_monitors{status=\"down\"} 1\n",
            "tocsin_monitors{status=\"up\"} 1\n",
            "tocsin_monitors{status=\"pending\"} 0\n",
            "tocsin_monitors{status=\"paused\"} 0\n",
            "tocsin_monitors{status=\"degraded\"} 0\n",
            "# HELP tocsin_monitor_status 0 down, 1 up, 2 pending (not passed yet), 3 paused, 4 degraded (up but slow)\n",
            "# TYPE tocsin_monitor_status gauge\n",
            "tocsin_monitor_status{monitor_id=\"mon_gold1\"} 1\n",
            "tocsin_monitor_status{monitor_id=\"mon_gold2\"} 0\n",
            "# HELP tocsin_monitor_response_time_seconds Response time of the last check, labelled with the region it ran in\n",
            "# TYPE tocsin_monitor_response_time_seconds gauge\n",
            "tocsin_monitor_response_time_seconds{monitor_id=\"mon_gold1\",region=\"eu\"} 0.12\n",
            "# HELP tocsin_monitor_response_seconds Response times of the checks since the server started\n",
            "# TYPE tocsin_monitor_response_seconds histogram\n",
            "tocsin_monitor_response_seconds_bucket{monitor_id=\"mon_gold1\",le=\"0.1\"} 1\n",
            "tocsin_monitor_response_seconds_bucket{monitor_id=\"mon_gold1\",le=\"0.25\"} 2\n",
            "tocsin_monitor_response_seconds_bucket{monitor_id=\"mon_gold1\",le=\"1\"} 2\n",
            "tocsin_monitor_response_seconds_bucket{monitor_id=\"mon_gold1\",le=\"5\"} 2\n",
            "tocsin_monitor_response_seconds_bucket{monitor_id=\"mon_gold1\",le=\"+Inf\"} 2\n",
            "tocsin_monitor_response_seconds_sum{monitor_id=\"mon_gold1\"} 0.15\n",
            "tocsin_monitor_response_seconds_count{monitor_id=\"mon_gold1\"} 2\n",
            "# HELP tocsin_monitor_checks_total Checks since the server started, by outcome\n",
            "# TYPE tocsin_monitor_checks_total counter\n",
            "tocsin_monitor_checks_total{monitor_id=\"mon_gold1\",outcome=\"up\"} 1\n",
            "tocsin_monitor_checks_total{monitor_id=\"mon_gold1\",outcome=\"down\"} 1\n",
            "# HELP tocsin_monitor_uptime_ratio Share of checks that passed over the window (1d, 30d)\n",
            "# TYPE tocsin_monitor_uptime_ratio gauge\n",
            "# HELP tocsin_monitor_certificate_expires_timestamp_seconds When the certificate the last check saw expires (Unix time); days left: (x - time()) / 86400\n",
            "# TYPE tocsin_monitor_certificate_expires_timestamp_seconds gauge\n",
            "tocsin_monitor_certificate_expires_timestamp_seconds{monitor_id=\"mon_gold1\"} 1893542400.0\n",
            "# HELP monitor_status Monitor status (1 = UP, 0 = DOWN, 2 = PENDING, 3 = MAINTENANCE)\n",
            "# TYPE monitor_status gauge\n",
            "monitor_status{monitor_name=\"db \\\"primary\\\" \\\\ eu\",monitor_type=\"http\",monitor_url=\"http://127.0.0.1:9/x\",monitor_hostname=\"\",monitor_port=\"\"} 1\n",
            "monitor_status{monitor_name=\"name of mon_gold2\",monitor_type=\"tcp\",monitor_url=\"https://\",monitor_hostname=\"db.internal\",monitor_port=\"5432\"} 0\n",
            "# HELP monitor_response_time Monitor response time (ms)\n",
            "# TYPE monitor_response_time gauge\n",
            "monitor_response_time{monitor_name=\"db \\\"primary\\\" \\\\ eu\",monitor_type=\"http\",monitor_url=\"http://127.0.0.1:9/x\",monitor_hostname=\"\",monitor_port=\"\"} 120\n",
            "# HELP monitor_cert_days_remaining The number of days remaining until the certificate expires\n",
            "# TYPE monitor_cert_days_remaining gauge\n",
            "monitor_cert_days_remaining{monitor_name=\"db \\\"primary\\\" \\\\ eu\",monitor_type=\"http\",monitor_url=\"http://127.0.0.1:9/x\",monitor_hostname=\"\",monitor_port=\"\"} 21916\n",
            "# HELP monitor_cert_is_valid Is the certificate still valid? (1 = Yes, 0= No)\n",
            "# TYPE monitor_cert_is_valid gauge\n",
            "monitor_cert_is_valid{monitor_name=\"db \\\"primary\\\" \\\\ eu\",monitor_type=\"http\",monitor_url=\"http://127.0.0.1:9/x\",monitor_hostname=\"\",monitor_port=\"\"} 1\n",
        );
        let text = text[from..].replace(&ws.id, "ws_gold");
        assert_eq!(text, expected, "\n{text}");
    }

    #[test]
    fn histogram_bounds_are_written_as_prometheus_writes_them() {
        let written: Vec<String> = [0.1, 0.25, 1.0, 5.0, 2_500_000.5, f64::INFINITY]
            .into_iter()
            .map(bound_text)
            .collect();
        assert_eq!(written, ["0.1", "0.25", "1", "5", "2500000.5", "+Inf"]);
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
