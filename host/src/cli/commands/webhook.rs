//! `tocsin webhook`: help for webhook receivers (verify a signature, send a signed test,
//! print examples); needs neither configuration nor database.

use crate::cli::webhook_tools;
use anyhow::Context;
use std::path::PathBuf;

#[derive(clap::Subcommand)]
pub enum Command {
    /// Say whether a delivery's signature is valid, and why not.
    Verify {
        /// The workspace's webhook secret (whsec_...). Repeat to try several (rotation).
        #[arg(long, required = true)]
        secret: Vec<String>,
        /// The X-Service-Timestamp header's value.
        #[arg(long)]
        timestamp: String,
        /// The X-Service-Signature header's value (sha256=...).
        #[arg(long)]
        signature: String,
        /// File with the raw request body, or `-` for standard input.
        #[arg(long, value_name = "FILE")]
        body: PathBuf,
    },
    /// Send a signed test `incident.created` event to a URL, as the channel test does.
    SendTest {
        #[arg(long)]
        url: String,
        /// The secret to sign with (whsec_...).
        #[arg(long)]
        secret: String,
    },
    /// Print an example of every event kind, with headers (the examples of docs/webhooks.md).
    Examples,
}

/// Webhook helpers need neither configuration nor database.
pub fn exec(cmd: Command) -> anyhow::Result<()> {
    match cmd {
        Command::Verify {
            secret,
            timestamp,
            signature,
            body,
        } => {
            let bytes = if body.as_os_str() == "-" {
                let mut b = Vec::new();
                std::io::Read::read_to_end(&mut std::io::stdin(), &mut b)?;
                b
            } else {
                std::fs::read(&body).with_context(|| format!("cannot read {}", body.display()))?
            };
            let now = chrono::Utc::now().timestamp();
            let d = webhook_tools::diagnose(&secret, &timestamp, &signature, &bytes, now);
            for f in &d.findings {
                println!("{f}");
            }
            if d.valid {
                Ok(())
            } else {
                std::process::exit(1)
            }
        }
        Command::SendTest { url, secret } => {
            crate::crypto::install_provider();
            let now_ms = chrono::Utc::now().timestamp_millis();
            let (id, payload, headers) = webhook_tools::test_delivery(&secret, now_ms);
            let roots = crate::plugins::trust::load(None)?;
            // As deliveries go: no redirects, a 10 s deadline.
            let client = crate::plugins::http::build_client(
                &roots.certs,
                std::sync::Arc::new(crate::plugins::egress::EgressPolicy::default()),
            )?;
            let started = std::time::Instant::now();
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            let (status, answer) = runtime.block_on(async {
                let mut req = client
                    .post(&url)
                    .timeout(std::time::Duration::from_secs(10))
                    .body(payload);
                for (k, v) in &headers {
                    req = req.header(k, v);
                }
                let response = req
                    .send()
                    .await
                    .with_context(|| format!("cannot deliver to {url}"))?;
                let status = response.status();
                anyhow::Ok((status, response.text().await.unwrap_or_default()))
            })?;
            println!(
                "{} {} in {} ms (webhookId {id})",
                if status.is_success() {
                    "delivered:"
                } else {
                    "refused:"
                },
                status,
                started.elapsed().as_millis()
            );
            if !answer.is_empty() {
                println!("{}", answer.chars().take(500).collect::<String>());
            }
            if status.is_success() {
                Ok(())
            } else {
                std::process::exit(1)
            }
        }
        Command::Examples => {
            print!("{}", webhook_tools::examples_markdown());
            Ok(())
        }
    }
}
