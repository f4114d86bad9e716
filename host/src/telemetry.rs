//! What the server counts for `GET /metrics`: checks due and done, schedule lag, plugin
//! calls, deliveries, the result writer, API requests, and per monitor the last results
//! (response-time histogram, checks by outcome, the last region, the certificate's expiry).
//!
//! One set per process, like a metrics library's default registry: the scheduler, the
//! plugin runtime, the recorder and the outbox count into it and nothing reads it but the
//! `/metrics` route. Counting costs an atomic add (a map lookup for labelled series).
//! Counters start at zero with the process, as Prometheus expects of counters.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use std::sync::{Arc, LazyLock, Mutex};

/// Response-time bucket bounds, in seconds (per monitor: few buckets, because a server
/// with 100,000 monitors exposes each of them 100,000 times).
pub const RESPONSE_BUCKETS: [f64; 4] = [0.1, 0.25, 1.0, 5.0];

/// Schedule-lag bucket bounds, in seconds.
const LAG_BUCKETS: [f64; 10] = [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0, 30.0];

/// Batch-write bucket bounds, in seconds.
const WRITE_BUCKETS: [f64; 10] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0];

/// API request bucket bounds, in seconds.
const REQUEST_BUCKETS: [f64; 8] = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0];

/// A check's outcome.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OutcomeLabels {
    /// `up` or `down`.
    pub outcome: &'static str,
}

/// One plugin call.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PluginCallLabels {
    pub plugin: String,
    /// `check`, `deliver` or `validate`.
    pub call: &'static str,
    /// `ok`, or why the call failed: `deadline`, `memory`, `trap`, `instantiate`.
    pub result: &'static str,
}

/// One delivery attempt.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DeliveryLabels {
    pub channel_type: String,
    /// `delivered`, `retrying` (will be tried again) or `failed` (given up).
    pub outcome: &'static str,
}

/// One API request.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    /// The route's pattern (`/v1/monitors/{id}`), not the path, so ids do not multiply
    /// series; `unmatched` for requests no route took.
    pub route: String,
    pub method: String,
    pub status: u16,
}

/// A request's route, for its duration.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RouteLabels {
    pub route: String,
}

/// The process's counters.
pub struct Telemetry {
    /// Check rounds that came due on this node.
    pub checks_due: Counter,
    /// Rounds skipped because the monitor's previous check still waited for a slot.
    pub checks_skipped: Counter,
    /// Checks that ran, by outcome.
    pub checks_done: Family<OutcomeLabels, Counter>,
    /// From a check's due time to its start.
    pub schedule_lag: Histogram,
    pub plugin_calls: Family<PluginCallLabels, Counter>,
    pub deliveries: Family<DeliveryLabels, Counter>,
    /// Recorder transactions committed, and the results they held.
    pub recorder_batches: Counter,
    pub recorder_records: Counter,
    /// Attempts to write a batch that failed (it is kept and written again).
    pub recorder_write_errors: Counter,
    pub recorder_write_seconds: Histogram,
    /// Results dropped because the recorder's buffer was full.
    pub recorder_shed: Counter,
    /// Results waiting to be written.
    pub recorder_queued: Gauge,
    /// Stored lists (a monitor's tags, regions or dependencies, a flap state's changes)
    /// that did not read as a list: read as empty, logged and counted here.
    pub unreadable_fields: Counter,
    pub requests: Family<RequestLabels, Counter>,
    pub request_seconds: Family<RouteLabels, Histogram>,
    /// Per monitor, what its last checks gave.
    pub monitors: MonitorBoard,
}

/// The process's telemetry.
pub fn global() -> &'static Telemetry {
    static TELEMETRY: LazyLock<Telemetry> = LazyLock::new(Telemetry::new);
    &TELEMETRY
}

impl Telemetry {
    fn new() -> Telemetry {
        Telemetry {
            checks_due: Counter::default(),
            checks_skipped: Counter::default(),
            checks_done: Family::default(),
            schedule_lag: Histogram::new(LAG_BUCKETS),
            plugin_calls: Family::default(),
            deliveries: Family::default(),
            recorder_batches: Counter::default(),
            recorder_records: Counter::default(),
            recorder_write_errors: Counter::default(),
            recorder_write_seconds: Histogram::new(WRITE_BUCKETS),
            recorder_shed: Counter::default(),
            recorder_queued: Gauge::default(),
            unreadable_fields: Counter::default(),
            requests: Family::default(),
            request_seconds: Family::new_with_constructor(request_histogram),
            monitors: MonitorBoard::default(),
        }
    }

    /// Count one plugin call.
    pub fn plugin_call(&self, plugin: &str, call: &'static str, result: &'static str) {
        self.plugin_calls
            .get_or_create(&PluginCallLabels {
                plugin: plugin.to_string(),
                call,
                result,
            })
            .inc();
    }

    /// Count one delivery attempt.
    pub fn delivery(&self, channel_type: &str, outcome: &'static str) {
        self.deliveries
            .get_or_create(&DeliveryLabels {
                channel_type: channel_type.to_string(),
                outcome,
            })
            .inc();
    }
}

fn request_histogram() -> Histogram {
    Histogram::new(REQUEST_BUCKETS)
}

/// What the last checks of one monitor gave, since the process started.
#[derive(Debug, Clone, Default)]
pub struct MonitorLive {
    /// Checks per response-time bucket ([`RESPONSE_BUCKETS`], not cumulative); checks
    /// slower than the last bound are only in `timed`.
    pub buckets: [u64; RESPONSE_BUCKETS.len()],
    /// Checks that reported a response time, and the sum of those times in milliseconds.
    pub timed: u64,
    pub response_ms_sum: u64,
    pub up: u64,
    pub down: u64,
    /// Region of the last check.
    pub region: Option<Arc<str>>,
    /// When the certificate the last check saw expires (Unix ms).
    pub certificate_expires_ms: Option<i64>,
    /// The last stored check's response time, if it had one (as `monitor_health` holds
    /// it: checks that count, and those under maintenance).
    pub last_response_ms: Option<u32>,
}

/// Per monitor, [`MonitorLive`]. A scrape looks up every monitor four to six times, so
/// the map hashes with foldhash (seeded per process) rather than SipHash.
#[derive(Default)]
pub struct MonitorBoard {
    live: Mutex<foldhash::HashMap<String, MonitorLive>>,
}

/// One check result, as far as metrics need it.
pub struct Observation<'a> {
    pub monitor_id: &'a str,
    pub ok: bool,
    pub response_time_ms: Option<u32>,
    pub region: &'a str,
    /// The outcome's details (JSON object text).
    pub details: &'a str,
}

impl MonitorBoard {
    /// Count the results of a committed batch.
    pub fn observe<'a>(&self, results: impl IntoIterator<Item = Observation<'a>>) {
        let mut live = match self.live.lock() {
            Ok(l) => l,
            Err(poisoned) => poisoned.into_inner(),
        };
        for o in results {
            let entry = match live.get_mut(o.monitor_id) {
                Some(e) => e,
                None => live.entry(o.monitor_id.to_string()).or_default(),
            };
            if o.ok {
                entry.up += 1;
            } else {
                entry.down += 1;
            }
            if let Some(ms) = o.response_time_ms {
                entry.timed += 1;
                entry.response_ms_sum += u64::from(ms);
                let secs = f64::from(ms) / 1000.0;
                if let Some(i) = RESPONSE_BUCKETS.iter().position(|b| secs <= *b) {
                    entry.buckets[i] += 1;
                }
            }
            if entry.region.as_deref() != Some(o.region) {
                entry.region = Some(Arc::from(o.region));
            }
            // Only certificate checks carry one; most details are not parsed at all.
            if o.details.contains("\"certificate\"") {
                entry.certificate_expires_ms = certificate_expiry(o.details);
            }
        }
    }

    /// A copy of what is known of the given monitors, in their order.
    pub fn read<'a>(&self, ids: impl IntoIterator<Item = &'a str>) -> Vec<Option<MonitorLive>> {
        let live = match self.live.lock() {
            Ok(l) => l,
            Err(poisoned) => poisoned.into_inner(),
        };
        ids.into_iter().map(|id| live.get(id).cloned()).collect()
    }

    /// Each monitor's last response time as the recorder stored it (`None`: its last
    /// check had none), once its batch committed.
    pub fn set_last_responses(&self, lasts: impl IntoIterator<Item = (String, Option<u32>)>) {
        let mut live = match self.live.lock() {
            Ok(l) => l,
            Err(poisoned) => poisoned.into_inner(),
        };
        for (id, ms) in lasts {
            match live.get_mut(&id) {
                Some(e) => e.last_response_ms = ms,
                None => {
                    live.entry(id).or_default().last_response_ms = ms;
                }
            }
        }
    }

    /// Forget monitors that no longer exist (`keep` says which do).
    pub fn retain(&self, keep: impl Fn(&str) -> bool) {
        let mut live = match self.live.lock() {
            Ok(l) => l,
            Err(poisoned) => poisoned.into_inner(),
        };
        live.retain(|id, _| keep(id));
    }

    /// Monitors known.
    pub fn len(&self) -> usize {
        self.live.lock().map(|l| l.len()).unwrap_or(0)
    }

    /// Whether no monitor is known.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// `certificate.expiresAt` of an outcome's details, in Unix ms.
fn certificate_expiry(details: &str) -> Option<i64> {
    let value: serde_json::Value = serde_json::from_str(details).ok()?;
    let at = value.get("certificate")?.get("expiresAt")?.as_str()?;
    chrono::DateTime::parse_from_rfc3339(at)
        .ok()
        .map(|t| t.timestamp_millis())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_board_counts_outcomes_buckets_regions_and_certificates() {
        let board = MonitorBoard::default();
        let cert = r#"{"certificate":{"serial":"01","expiresAt":"2030-01-02T00:00:00.000Z"}}"#;
        board.observe([
            Observation {
                monitor_id: "mon_a",
                ok: true,
                response_time_ms: Some(40),
                region: "eu",
                details: "{}",
            },
            Observation {
                monitor_id: "mon_a",
                ok: false,
                response_time_ms: Some(3_000),
                region: "us",
                details: cert,
            },
            Observation {
                monitor_id: "mon_a",
                ok: false,
                response_time_ms: Some(60_000),
                region: "us",
                details: "{}",
            },
        ]);
        let got = board.read(["mon_a", "mon_b"]);
        let a = got[0].clone().expect("observed");
        assert_eq!((a.up, a.down, a.timed), (1, 2, 3));
        assert_eq!(a.response_ms_sum, 63_040);
        assert_eq!(a.buckets, [1, 0, 0, 1], "60 s is past the last bound");
        assert_eq!(a.region.as_deref(), Some("us"));
        assert_eq!(a.certificate_expires_ms, Some(1_893_542_400_000));
        assert!(got[1].is_none());
        board.retain(|id| id != "mon_a");
        assert!(board.is_empty());
    }
}
