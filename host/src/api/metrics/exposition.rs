//! The exposition of one scrape: the server's counters, then every monitor's series
//! (and Uptime Kuma's names when asked), encoded by `prometheus-client`.

use crate::store::MonitorState;
use crate::store::metrics::MonitorMetricRow;
use crate::telemetry::{self, MonitorLive, RESPONSE_BUCKETS};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::Registry;

const DAY_MS: i64 = 86_400_000;

/// Everything one scrape shows.
#[derive(Debug)]
pub(super) struct Scrape {
    pub(super) monitors: Vec<MonitorMetricRow>,
    pub(super) live: Vec<Option<MonitorLive>>,
    pub(super) uptime: Vec<(Option<f64>, Option<f64>)>,
    pub(super) now_ms: i64,
    pub(super) kuma: bool,
    pub(super) histograms: bool,
    pub(super) instances: [(&'static str, usize, usize); 3],
    pub(super) outbox: u64,
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
        prometheus_client::encoding::prometheus_text::encode(out, &registry)
    }
}

/// The one label of a monitor's series besides their own.
fn id_label(m: &MonitorMetricRow) -> [(&'static str, &str); 1] {
    [("monitor_id", m.id.as_str())]
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

impl Collector for Scrape {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        // Server-wide gauges.
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

        // Each monitor's names once, on its info series; every other series carries only
        // `monitor_id` (join with `* on (monitor_id) group_left (monitor, tags)
        // tocsin_monitor_info`). Repeating five labels on every line made a scrape at
        // 100,000 monitors twice as large (docs/performance.md).
        let mut e = encoder.encode_descriptor(
            "tocsin_monitor",
            "One series per monitor, 1, labelled with its workspace, name, type and tags",
            None,
            MetricType::Info,
        )?;
        for m in &self.monitors {
            let tags = tag_text(&m.tags);
            e.encode_info(&[
                ("workspace", m.workspace_id.as_str()),
                ("monitor_id", m.id.as_str()),
                ("monitor", m.name.as_str()),
                ("type", m.kind.as_str()),
                ("tags", tags.as_str()),
            ])?;
        }

        let mut e = encoder.encode_descriptor(
            "tocsin_monitor_status",
            "0 down, 1 up, 2 pending (not passed yet), 3 paused",
            None,
            MetricType::Gauge,
        )?;
        for m in &self.monitors {
            e.encode_family(&id_label(m))?
                .encode_gauge(&status_value(m.status))?;
        }
        let mut e = encoder.encode_descriptor(
            "tocsin_monitor_response_time_seconds",
            "Response time of the last check, labelled with the region it ran in",
            None,
            MetricType::Gauge,
        )?;
        for (m, live) in self.monitors.iter().zip(&self.live) {
            if let Some(ms) = m.last_response_time_ms {
                let region = live
                    .as_ref()
                    .and_then(|l| l.region.as_deref())
                    .unwrap_or("");
                e.encode_family(&[("monitor_id", m.id.as_str()), ("region", region)])?
                    .encode_gauge(&(f64::from(ms) / 1000.0))?;
            }
        }
        if self.histograms {
            let mut e = encoder.encode_descriptor(
                "tocsin_monitor_response_seconds",
                "Response times of the checks since the server started",
                None,
                MetricType::Histogram,
            )?;
            for (m, live) in self.monitors.iter().zip(&self.live) {
                let Some(live) = live else { continue };
                let mut buckets: Vec<(f64, u64)> = RESPONSE_BUCKETS
                    .iter()
                    .zip(live.buckets)
                    .map(|(b, n)| (*b, n))
                    .collect();
                let within: u64 = live.buckets.iter().sum();
                buckets.push((f64::INFINITY, live.timed - within));
                e.encode_family(&id_label(m))?
                    .encode_histogram::<NoLabelSet>(
                        live.response_ms_sum as f64 / 1000.0,
                        live.timed,
                        &buckets,
                        None,
                    )?;
            }
        }
        let mut e = encoder.encode_descriptor(
            "tocsin_monitor_checks",
            "Checks since the server started, by outcome",
            None,
            MetricType::Counter,
        )?;
        for (m, live) in self.monitors.iter().zip(&self.live) {
            let Some(live) = live else { continue };
            for (outcome, n) in [("up", live.up), ("down", live.down)] {
                e.encode_family(&[("monitor_id", m.id.as_str()), ("outcome", outcome)])?
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
            for (m, u) in self.monitors.iter().zip(&self.uptime) {
                let value = if pick == 0 { u.0 } else { u.1 };
                if let Some(v) = value {
                    e.encode_family(&[("monitor_id", m.id.as_str()), ("window", window)])?
                        .encode_gauge(&v)?;
                }
            }
        }
        let mut e = encoder.encode_descriptor(
            "tocsin_monitor_certificate_expires_timestamp_seconds",
            "When the certificate the last check saw expires (Unix time); days left: (x - time()) / 86400",
            None,
            MetricType::Gauge,
        )?;
        for (m, live) in self.monitors.iter().zip(&self.live) {
            if let Some(at) = live.as_ref().and_then(|l| l.certificate_expires_ms) {
                e.encode_family(&id_label(m))?
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
        let targets: Vec<KumaLabels> = self.monitors.iter().map(KumaLabels::of).collect();
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
