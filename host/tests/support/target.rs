//! An axum server on loopback that plays the monitored service.

#![allow(dead_code)]

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use std::sync::Arc;
use std::sync::atomic::{AtomicU16, AtomicU64, Ordering};
use std::time::Duration;

/// Knobs the tests turn while the target runs.
#[derive(Default)]
pub struct Knobs {
    /// Status of `/status`.
    pub status: AtomicU16,
    /// Requests seen on `/status`.
    pub hits: AtomicU64,
    /// `/status` answers 503 to this many requests first, whatever `status` says.
    pub fail_next: AtomicU64,
    /// `/status` waits this many milliseconds before it answers.
    pub delay_ms: AtomicU64,
}

/// A running target; it stops when dropped (from any context).
pub struct Target {
    pub base: String,
    pub knobs: Arc<Knobs>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for Target {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

impl Target {
    pub fn start() -> Target {
        let knobs = Arc::new(Knobs {
            status: AtomicU16::new(200),
            hits: AtomicU64::new(0),
            fail_next: AtomicU64::new(0),
            delay_ms: AtomicU64::new(0),
        });
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind target");
        std_listener.set_nonblocking(true).expect("nonblocking");
        let addr = std_listener.local_addr().expect("addr");
        let app = Router::new()
            .route("/ok", get(|| async { "all ok" }))
            .route("/status", any(status))
            .route(
                "/slow",
                get(|| async {
                    tokio::time::sleep(Duration::from_secs(5)).await;
                    "finally"
                }),
            )
            .route("/loop", get(|| async { redirect("/loop") }))
            .route("/redirect/{n}", get(chain))
            .route("/echo", any(echo))
            .route("/away/{code}", any(away))
            .route("/headers", any(headers_seen))
            .route("/fails-in/{region}", get(fails_in))
            .with_state(knobs.clone());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(std_listener).expect("listener");
                let _ = axum::serve(listener, app)
                    .with_graceful_shutdown(async {
                        let _ = stopped.await;
                    })
                    .await;
            });
            // Requests still sleeping (e.g. /slow) are dropped with the runtime.
            runtime.shutdown_background();
        });
        Target {
            base: format!("http://{addr}"),
            knobs,
            stop: Some(stop),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Requests `/status` has seen.
    pub fn hits(&self) -> u64 {
        self.knobs.hits.load(Ordering::SeqCst)
    }

    pub fn port(&self) -> u16 {
        self.base
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .expect("port")
    }

    pub fn set_status(&self, status: u16) {
        self.knobs.status.store(status, Ordering::SeqCst);
    }

    /// Make `/status` answer `ms` milliseconds late (0: at once).
    pub fn set_delay_ms(&self, ms: u64) {
        self.knobs.delay_ms.store(ms, Ordering::SeqCst);
    }

    /// Answer the next `n` requests to `/status` with 503.
    pub fn fail_next(&self, n: u64) {
        self.knobs.fail_next.store(n, Ordering::SeqCst);
    }
}

fn redirect(to: &str) -> Response {
    (StatusCode::FOUND, [(header::LOCATION, to.to_string())]).into_response()
}

async fn status(State(k): State<Arc<Knobs>>) -> Response {
    k.hits.fetch_add(1, Ordering::SeqCst);
    let delay = k.delay_ms.load(Ordering::SeqCst);
    if delay > 0 {
        tokio::time::sleep(Duration::from_millis(delay)).await;
    }
    let failing = k
        .fail_next
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok();
    let code = if failing {
        StatusCode::SERVICE_UNAVAILABLE
    } else {
        StatusCode::from_u16(k.status.load(Ordering::SeqCst)).unwrap_or(StatusCode::OK)
    };
    (code, "status page").into_response()
}

async fn chain(Path(n): Path<u32>) -> Response {
    if n == 0 {
        "end of chain".into_response()
    } else {
        redirect(&format!("/redirect/{}", n - 1))
    }
}

/// Answers with the method, the `x-probe` header and the body it got.
async fn echo(method: axum::http::Method, headers: HeaderMap, body: String) -> String {
    let probe = headers
        .get("x-probe")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("-");
    format!("{method} {probe} {body}")
}

/// Redirects with status `code` to the URL in the `to` query parameter.
async fn away(
    Path(code): Path<u16>,
    axum::extract::Query(q): axum::extract::Query<std::collections::HashMap<String, String>>,
) -> Response {
    let code = StatusCode::from_u16(code).unwrap_or(StatusCode::FOUND);
    let to = q.get("to").cloned().unwrap_or_else(|| "/".into());
    (code, [(header::LOCATION, to)]).into_response()
}

/// Answers with the method, the body and every request header it got, as JSON.
async fn headers_seen(method: axum::http::Method, headers: HeaderMap, body: String) -> Response {
    let seen: serde_json::Map<String, serde_json::Value> = headers
        .iter()
        .map(|(n, v)| {
            (
                n.as_str().to_string(),
                serde_json::Value::from(String::from_utf8_lossy(v.as_bytes()).into_owned()),
            )
        })
        .collect();
    axum::Json(serde_json::json!({"method": method.as_str(), "body": body, "headers": seen}))
        .into_response()
}

/// Fails (503) for probes of `region`, as told by the region in their `User-Agent`, and
/// answers 200 to everyone else: a failure only one region sees.
async fn fails_in(Path(region): Path<String>, headers: HeaderMap) -> Response {
    let agent = headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if agent.contains(&format!("region {region})")) {
        (StatusCode::SERVICE_UNAVAILABLE, "not from here").into_response()
    } else {
        "ok from here".into_response()
    }
}
