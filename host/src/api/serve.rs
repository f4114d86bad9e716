//! The HTTP server loop: one task per connection, HTTP/1.1, with limits for slow, idle and
//! greedy clients, so a client that trickles bytes (or never sends any) cannot hold
//! connections:
//!
//! - the request head must arrive within [`HEADER_TIMEOUT`] (an idle keep-alive
//!   connection waiting for its next request counts as reading a head);
//! - the whole body must arrive within the body deadline (`request_body_timeout`, default
//!   [`BODY_TIMEOUT`]) counted from the end of the head, however steadily it trickles;
//!   past it the request is answered 408 `REQUEST_TIMEOUT` and the connection closed;
//! - one client address holds at most `max_connections_per_address` connections at once
//!   (default [`MAX_CONNECTIONS_PER_ADDRESS`]); a connection over it is answered 429
//!   `RATE_LIMITED` at once and closed, unread.
//!
//! On shutdown, requests in flight finish and the rest close.

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use std::collections::HashMap;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tower::ServiceExt;

/// Time to receive a request's head, and the longest a kept-alive connection may idle.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// Time to receive a request's whole body by default (`request_body_timeout`).
pub const BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// Connections one client address may hold open at once by default (declared with the
/// setting, `max_connections_per_address`).
pub use crate::config::DEFAULT_MAX_CONNECTIONS_PER_ADDRESS as MAX_CONNECTIONS_PER_ADDRESS;
/// How long requests in flight get to finish on shutdown.
const DRAIN: Duration = Duration::from_secs(10);

/// The limits the server loop applies to each connection.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    /// Time for a request's whole body, from the end of its head.
    pub body_deadline: Duration,
    /// Connections one client address may hold at once.
    pub per_address: u32,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            body_deadline: BODY_TIMEOUT,
            per_address: MAX_CONNECTIONS_PER_ADDRESS,
        }
    }
}

impl ConnectionLimits {
    /// The limits `config` sets.
    pub fn of(config: &crate::config::Config) -> ConnectionLimits {
        ConnectionLimits {
            body_deadline: config.request_body_timeout,
            per_address: config.max_connections_per_address,
        }
    }
}

/// Serve `router` on `listener` until `shutdown` completes.
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let graceful = GracefulShutdown::new();
    let open = OpenConnections::default();
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of file descriptors and the like: wait a moment, keep serving.
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        let Some(held) = open.take(peer.ip(), limits.per_address) else {
            // Best effort: a fresh socket's send buffer takes the answer without waiting.
            let _ = stream.try_write(&too_many_connections(limits.per_address));
            tracing::debug!(peer = %peer, "refused a connection over the per-address limit");
            continue;
        };
        let _ = stream.set_nodelay(true);
        let deadline = limits.body_deadline;
        let service = router
            .clone()
            .map_request(move |req: hyper::Request<Incoming>| {
                let expired = BodyDeadline {
                    passed: Arc::new(AtomicBool::new(false)),
                    after: deadline,
                };
                let (mut parts, body) = req.into_parts();
                parts.extensions.insert(ConnectInfo(peer));
                parts.extensions.insert(expired.clone());
                let body = DeadlineBody {
                    inner: body,
                    sleep: Box::pin(tokio::time::sleep(deadline)),
                    expired,
                    done: false,
                };
                hyper::Request::from_parts(parts, axum::body::Body::new(body))
            });
        let service = TowerToHyperService::new(service);
        let mut http = hyper::server::conn::http1::Builder::new();
        http.timer(TokioTimer::new())
            .header_read_timeout(HEADER_TIMEOUT)
            .keep_alive(true);
        let connection = http.serve_connection(TokioIo::new(stream), service);
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            let _held = held;
            if let Err(e) = connection.await {
                tracing::debug!(peer = %peer, error = %e, "connection ended with an error");
            }
        });
    }
    drop(listener);
    if tokio::time::timeout(DRAIN, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(
            "requests still running after {} s were cut off",
            DRAIN.as_secs()
        );
    }
    Ok(())
}

/// The raw answer to a connection over the per-address limit: 429 in the envelope.
fn too_many_connections(limit: u32) -> Vec<u8> {
    let body = serde_json::json!({
        "success": false,
        "error": {
            "code": "RATE_LIMITED",
            "message": format!("This client address holds {limit} connections already; close some and retry"),
            "statusCode": 429,
        },
        "meta": super::envelope::Meta::now(),
    })
    .to_string();
    format!(
        "HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\nretry-after: 1\r\n\
         connection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Connections open per client address.
#[derive(Clone, Default)]
struct OpenConnections(Arc<Mutex<HashMap<IpAddr, u32>>>);

/// One connection counted against its address until dropped.
struct Held {
    open: OpenConnections,
    ip: IpAddr,
}

impl OpenConnections {
    /// Count a connection from `ip`, unless it already holds `limit`.
    fn take(&self, ip: IpAddr, limit: u32) -> Option<Held> {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let n = map.entry(ip).or_insert(0);
        if *n >= limit {
            return None;
        }
        *n += 1;
        Some(Held {
            open: self.clone(),
            ip,
        })
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut map = self.open.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = map.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                map.remove(&self.ip);
            }
        }
    }
}

/// A request's body deadline, in its extensions: whether the body ran out of time, so the
/// answer can be 408 whatever the extractor made of the cut-off body.
#[derive(Debug, Clone)]
pub struct BodyDeadline {
    passed: Arc<AtomicBool>,
    /// The time the body had.
    pub after: Duration,
}

impl BodyDeadline {
    /// Whether the body was cut off by the deadline.
    pub fn passed(&self) -> bool {
        self.passed.load(Ordering::Relaxed)
    }
}

/// The body deadline passed (the error a cut-off body ends with).
#[derive(Debug, thiserror::Error)]
#[error("the request body did not arrive within {0:?}")]
struct BodyTooSlow(Duration);

/// A request body that fails once its deadline passes, however steadily bytes arrive.
struct DeadlineBody {
    inner: Incoming,
    sleep: Pin<Box<tokio::time::Sleep>>,
    expired: BodyDeadline,
    done: bool,
}

impl Body for DeadlineBody {
    type Data = hyper::body::Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        // What has arrived is handed on; the deadline matters only while waiting for more.
        if let Poll::Ready(frame) = Pin::new(&mut this.inner).poll_frame(cx) {
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        if this.sleep.as_mut().poll(cx).is_ready() {
            this.done = true;
            this.expired.passed.store(true, Ordering::Relaxed);
            return Poll::Ready(Some(Err(Box::new(BodyTooSlow(this.expired.after)))));
        }
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        self.done || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
