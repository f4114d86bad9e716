//! The HTTP server loop: one task per connection, HTTP/1.1, with timeouts for slow and idle
//! clients so a client that trickles bytes (or never sends any) cannot hold a connection:
//! the request head must arrive within [`HEADER_TIMEOUT`] (an idle keep-alive connection
//! waiting for its next request counts as reading a head), and the body within
//! [`BODY_TIMEOUT`]. On shutdown, requests in flight finish and the rest close.

use axum::Router;
use axum::extract::ConnectInfo;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use std::time::Duration;
use tower::ServiceExt;

/// Time to receive a request's head, and the longest a kept-alive connection may idle.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// Time to receive a request's body.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long requests in flight get to finish on shutdown.
const DRAIN: Duration = Duration::from_secs(10);

/// Serve `router` on `listener` until `shutdown` completes.
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let router = router.layer(tower_http::timeout::RequestBodyTimeoutLayer::new(
        BODY_TIMEOUT,
    ));
    let graceful = GracefulShutdown::new();
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
        let _ = stream.set_nodelay(true);
        let service =
            router
                .clone()
                .map_request(move |mut req: hyper::Request<hyper::body::Incoming>| {
                    req.extensions_mut().insert(ConnectInfo(peer));
                    req
                });
        let service = TowerToHyperService::new(service);
        let mut http = hyper::server::conn::http1::Builder::new();
        http.timer(TokioTimer::new())
            .header_read_timeout(HEADER_TIMEOUT)
            .keep_alive(true);
        let connection = http.serve_connection(TokioIo::new(stream), service);
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
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
