//! `GET /metrics`: the Prometheus text format (0.0.4). The server's series are encoded by
//! `prometheus-client`; the per-monitor series, millions of lines on a large server, are
//! written in the same format by [`exposition`] itself.
//!
//! Server series come from the process's counters ([`crate::telemetry`]); per-monitor
//! series are assembled at each scrape from the monitors (names, types, tags, states, read
//! in pages while the text is encoded), the counters the recorder keeps per monitor, and
//! the uptime windows a background task refreshes every minute from the daily counts.
//! On SQLite the monitors' labels are kept from one scrape to the next while no monitor
//! was added, removed or relabelled ([`labels`]).
//! With the `key` setting a scrape shows the key's workspace's monitors; with `public`,
//! every workspace's.

use super::AppState;
use super::error::ApiError;
use super::session::ClientIp;
use crate::config::MetricsAccess;
use crate::telemetry::{self, RequestLabels, RouteLabels};
use axum::extract::{MatchedPath, Request, State};
use axum::http::header::{AUTHORIZATION, CONTENT_TYPE};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

mod exposition;
mod labels;
mod uptime;

use exposition::Scrape;
pub use labels::LabelCache;
pub use uptime::{UPTIME, UPTIME_REFRESH, UptimeWindows, refresh_uptime_loop};

/// The metrics of the server and its monitors.
#[utoipa::path(get, path = "/metrics", tag = "health",
    security((), ("bearer" = [])),
    responses(
        (status = 200, description = "Prometheus text format 0.0.4", content_type = "text/plain", body = String),
        (status = 401, description = "`metrics = \"key\"` and no valid API key", body = super::error::ErrorBody),
        (status = 404, description = "`metrics = \"off\"`", body = super::error::ErrorBody),
        (status = 429, description = "RATE_LIMITED: too many refused keys from this client address (`Retry-After`)", body = super::error::ErrorBody),
    ))]
pub async fn metrics(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
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
            match super::auth::authenticate(&state, header).await {
                Ok(principal) => Some(principal.workspace_id),
                // Guessing keys here costs the guesser as on `/v1`.
                Err(e) if e.status == StatusCode::UNAUTHORIZED => {
                    return Ok(super::auth::refused_credential(
                        &state,
                        &ip,
                        e.into_response(),
                    ));
                }
                Err(e) => return Err(e),
            }
        }
    };
    let scrape = prepare(&state, workspace.as_deref()).await?;
    // The text streams out while the rest is encoded: at 100,000 monitors it is over
    // 100 MiB, and encoding and sending then overlap instead of following each other.
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    tokio::task::spawn_blocking(move || {
        let started = std::time::Instant::now();
        let mut sink = ChunkSink {
            buf: String::with_capacity(CHUNK_BYTES),
            tx,
            sent: 0,
        };
        let done = scrape.encode_into(&mut sink).and_then(|()| sink.flush());
        match done {
            Ok(()) => tracing::debug!(
                encode_ms = started.elapsed().as_millis() as u64,
                bytes = sink.sent,
                "metrics scraped"
            ),
            // Either the client went away (nothing to tell) or encoding failed: end the
            // response with an error so the scraper records a failed scrape.
            Err(_) => {
                let _ = sink
                    .tx
                    .blocking_send(Err(std::io::Error::other("encoding the metrics failed")));
            }
        }
    });
    let chunks = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|chunk| (chunk, rx))
    });
    Ok((
        StatusCode::OK,
        [(
            CONTENT_TYPE,
            prometheus_client::encoding::prometheus_text::CONTENT_TYPE,
        )],
        axum::body::Body::from_stream(chunks),
    )
        .into_response())
}

/// Text handed to the response at a time.
const CHUNK_BYTES: usize = 1 << 20;

/// Where the encoder writes: chunks go to the response as they fill.
struct ChunkSink {
    buf: String,
    tx: tokio::sync::mpsc::Sender<Result<axum::body::Bytes, std::io::Error>>,
    sent: usize,
}

impl ChunkSink {
    fn flush(&mut self) -> std::fmt::Result {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = std::mem::replace(&mut self.buf, String::with_capacity(CHUNK_BYTES));
        self.sent += chunk.len();
        // A closed channel means the client went away: stop encoding.
        self.tx
            .blocking_send(Ok(axum::body::Bytes::from(chunk)))
            .map_err(|_| std::fmt::Error)
    }
}

impl std::fmt::Write for ChunkSink {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.buf.push_str(s);
        if self.buf.len() >= CHUNK_BYTES {
            self.flush()
        } else {
            Ok(())
        }
    }
}

/// Where a scrape's time went.
#[derive(Debug, Clone, Copy, Default)]
pub struct ScrapeTimings {
    /// Waiting for the store: the outbox's depth, and the pages of monitors read while
    /// the text is encoded.
    pub read: std::time::Duration,
    /// Encoding the text, the counters and uptime windows looked up as it goes.
    pub encode: std::time::Duration,
}

/// The exposition for `workspace`'s monitors (None: every workspace's), in one string,
/// with where its time went (for the benchmark).
pub async fn render(
    state: &AppState,
    workspace: Option<&str>,
) -> Result<(String, ScrapeTimings), ApiError> {
    let started = std::time::Instant::now();
    let scrape = prepare(state, workspace).await?;
    let before = started.elapsed();
    let read = scrape.read_nanos.clone();
    let encoding = std::time::Instant::now();
    let body = tokio::task::spawn_blocking(move || {
        let mut out = String::new();
        scrape.encode_into(&mut out).map(|()| out)
    })
    .await
    .map_err(|_| ApiError::internal("encoding the metrics failed"))?
    .map_err(|_| ApiError::internal("encoding the metrics failed"))?;
    let read_while_encoding =
        std::time::Duration::from_nanos(read.load(std::sync::atomic::Ordering::Relaxed));
    Ok((
        body,
        ScrapeTimings {
            read: before + read_while_encoding,
            encode: encoding.elapsed().saturating_sub(read_while_encoding),
        },
    ))
}

/// Monitors a scrape reads per query.
const SCRAPE_PAGE: u64 = 5_000;

/// What a scrape starts from; the monitors themselves are read while it is encoded.
async fn prepare(state: &AppState, workspace: Option<&str>) -> Result<Scrape, ApiError> {
    let outbox = state.store.pending_delivery_count().await?;
    // Read before the labels are, so labels kept under it are never newer than it says.
    let labels_version = state.store.monitor_labels_version().await?;
    Ok(Scrape {
        store: state.store.clone(),
        runtime: tokio::runtime::Handle::current(),
        workspace: workspace.map(str::to_owned),
        page: SCRAPE_PAGE,
        now_ms: state.clock.now_ms(),
        kuma: state.config.metrics_kuma_names,
        histograms: state.config.metrics_histograms,
        instances: state.plugins.instances(),
        outbox,
        read_nanos: Default::default(),
        labels: state.metrics_labels.clone(),
        labels_version,
    })
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
