//! `TOCSIN_WEBHOOK_SECRET=whsec_... cargo run -p tocsin-example-receiver`

use std::sync::Arc;
use tocsin_example_receiver::{Receiver, app};

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let secrets: Vec<String> = std::env::var("TOCSIN_WEBHOOK_SECRET")
        .unwrap_or_default()
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    if secrets.is_empty() {
        eprintln!("set TOCSIN_WEBHOOK_SECRET to the workspace's webhook secret (whsec_...)");
        std::process::exit(1);
    }
    let receiver = Arc::new(Receiver::new(secrets, |event| {
        // Do the real work here: page someone, open a ticket, ...
        println!(
            "accepted {} {}",
            event["webhookId"].as_str().unwrap_or(""),
            event["event"].as_str().unwrap_or("")
        );
    }));
    let host = std::env::var("HOST").unwrap_or_else(|_| "127.0.0.1".into());
    let port = std::env::var("PORT").unwrap_or_else(|_| "8000".into());
    let listener = tokio::net::TcpListener::bind(format!("{host}:{port}")).await?;
    println!("listening on http://{}", listener.local_addr()?);
    axum::serve(listener, app(receiver)).await
}
