//! The `tocsin` command.

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use tocsin::config::{Config, LogFormat, Overrides};

#[derive(Parser)]
#[command(
    name = "tocsin",
    version,
    about = "Uptime monitoring and alerting with WebAssembly plugins"
)]
struct Cli {
    /// Configuration file (TOML). Default: tocsin.toml in the working directory, if present.
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the server: API, scheduler and plugins.
    Serve(Flags),
    /// Apply database migrations and exit.
    Migrate(Flags),
}

/// Flags that override the file and the environment.
#[derive(Args, Clone, Default)]
struct Flags {
    /// Address to listen on, e.g. 127.0.0.1:8080.
    #[arg(long)]
    listen: Option<String>,
    /// Data directory (SQLite database, plugin cache, bootstrap key).
    #[arg(long, value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// Database URL: sqlite://PATH or postgres://...
    #[arg(long, value_name = "URL")]
    database_url: Option<String>,
    /// Probe region this node checks from.
    #[arg(long)]
    region: Option<String>,
    /// Shortest monitor interval accepted, in seconds.
    #[arg(long, value_name = "SECONDS")]
    min_interval: Option<u32>,
}

impl Flags {
    fn overrides(&self) -> Overrides {
        Overrides {
            listen: self.listen.clone(),
            data_dir: self.data_dir.clone(),
            database_url: self.database_url.clone(),
            region: self.region.clone(),
            min_interval: self.min_interval,
        }
    }
}

fn init_logging(format: LogFormat, filter: &str) {
    let filter = tracing_subscriber::EnvFilter::try_new(filter)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Json => builder.json().init(),
        LogFormat::Pretty => builder.init(),
    }
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let flags = match &cli.command {
        Command::Serve(f) | Command::Migrate(f) => f.clone(),
    };
    let config =
        Config::load(cli.config.as_deref(), &flags.overrides()).context("invalid configuration")?;
    init_logging(config.log_format, &config.log_filter);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        match cli.command {
            Command::Serve(_) => tocsin::app::serve(config).await,
            Command::Migrate(_) => {
                let store = tocsin::app::open_store(&config).await?;
                println!(
                    "Database is up to date ({})",
                    tocsin::app::redact(&config.database_url)
                );
                store.close().await;
                Ok(())
            }
        }
    })
}
