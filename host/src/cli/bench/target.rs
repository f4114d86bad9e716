//! The benchmark's monitored service: a small HTTP server on loopback, run in a child
//! process (`tocsin bench-target`) so its CPU time is counted apart from the server's.
//! `/ok` answers 200 with a short body; `/fail` answers 500; `/count` says how many
//! requests to those two it has answered.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};

/// Serve on an ephemeral loopback port, print `PORT <n>` on stdout, and run until stdin
/// closes (the parent exited or is done).
pub fn run() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        let answered: &'static AtomicU64 = Box::leak(Box::new(AtomicU64::new(0)));
        let app = axum::Router::new()
            .route(
                "/ok",
                axum::routing::get(move || async move {
                    answered.fetch_add(1, Ordering::Relaxed);
                    "all ok"
                }),
            )
            .route(
                "/fail",
                axum::routing::get(move || async move {
                    answered.fetch_add(1, Ordering::Relaxed);
                    (axum::http::StatusCode::INTERNAL_SERVER_ERROR, "failing")
                }),
            )
            .route(
                "/count",
                axum::routing::get(
                    move || async move { answered.load(Ordering::Relaxed).to_string() },
                ),
            );
        println!("PORT {port}");
        std::io::stdout().flush()?;
        let stdin_closed = tokio::task::spawn_blocking(|| {
            let mut sink = Vec::new();
            let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut sink);
        });
        axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = stdin_closed.await;
            })
            .await?;
        anyhow::Ok(())
    })
}
