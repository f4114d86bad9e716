//! The `tocsin` command line: one module per subcommand, each with its clap arguments and
//! its `exec`, in the manner of cargo's own commands. [`run`] parses the line and hands
//! it to the subcommand; what several share (the configuration flags, the API's address
//! and key, logging, a runtime) is here.

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use std::path::{Path, PathBuf};

use crate::config::{Config, LogFormat, Overrides};

mod apply;
mod backup;
mod bench;
mod bench_target;
mod completions;
mod doctor;
mod export;
mod import;
mod key;
mod man;
mod migrate;
mod plugin;
mod probe;
mod restore;
mod serve;
mod user;
mod webhook;
mod workspace;

#[derive(Parser)]
#[command(
    name = "tocsin",
    version,
    about = "Uptime monitoring and alerting with WebAssembly plugins"
)]
pub struct Cli {
    /// Configuration file (TOML). Default: tocsin.toml in the working directory, if present.
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

/// The subcommands, in the order `tocsin --help` lists them.
#[derive(Subcommand)]
enum Command {
    /// Run the server: API, scheduler and plugins.
    Serve(Flags),
    /// Run checks in a private location for a server: only outbound HTTPS, no database,
    /// results buffered on disk while the server cannot be reached.
    Probe(probe::Args),
    /// Apply database migrations and exit.
    Migrate(Flags),
    /// Check the configuration, database, SMTP relay, Telegram bot, ICMP, plugins, clock
    /// and disk; print ok/warn/fail with a fix for each. Exits 1 when something fails.
    Doctor(Flags),
    /// Copy the SQLite database to FILE while the server runs (a consistent snapshot).
    Backup(backup::Args),
    /// Replace the SQLite database with a backup (stop the server first). The file must be
    /// an intact Tocsin database of this version's schema or an older one.
    Restore(restore::Args),
    /// Make a workspace match a configuration file (YAML, TOML or JSON; a folder applies
    /// all of its files): monitors, alert policies, channels, status pages and maintenance
    /// windows, over a running server's API. Prints the plan, then carries it out.
    Apply(apply::Args),
    /// Write a workspace's monitors, alert policies, channels, status pages and
    /// maintenance windows as a file `tocsin apply` takes back unchanged.
    Export(export::Args),
    /// Bring monitors, channels, alert policies, maintenance and status pages from Uptime
    /// Kuma (a backup or kuma.db), Gatus (config.yaml) or Healthchecks (its API's checks)
    /// to a running server over its API. Prints the
    /// plan and what cannot be imported, with the reason; --dry-run changes nothing.
    Import(import::Args),
    /// Manage workspaces in the configured database (works while the server is stopped).
    #[command(subcommand)]
    Workspace(workspace::Command),
    /// Manage API keys in the configured database (works while the server is stopped).
    #[command(subcommand)]
    Key(key::Command),
    /// Manage people's accounts in the configured database (works while the server is
    /// stopped).
    #[command(subcommand)]
    User(user::Command),
    /// Help for webhook receivers: check a signature, send a signed test event.
    #[command(subcommand)]
    Webhook(webhook::Command),
    /// Help for plugin authors: check a component, start a new one.
    #[command(subcommand)]
    Plugin(plugin::Command),
    /// Measure checks/s, schedule lag, CPU, memory, database writes and API throughput
    /// against a loopback target, with a native baseline for the plugin cost.
    Bench(bench::Args),
    /// Print the shell completion script for SHELL (bash, zsh, fish, elvish, powershell).
    Completions(completions::Args),
    /// Write the manual pages (tocsin.1 and one per subcommand) into DIR.
    Man(man::Args),
    /// The benchmark's loopback target (started by `tocsin bench`).
    #[command(hide = true)]
    BenchTarget,
}

/// Parse the command line and run the subcommand.
pub fn run() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let file = cli.config.as_deref();
    match cli.command {
        Command::Serve(flags) => serve::exec(file, &flags),
        Command::Probe(args) => probe::exec(file, &args),
        Command::Migrate(flags) => migrate::exec(file, &flags),
        Command::Doctor(flags) => doctor::exec(file, &flags),
        Command::Backup(args) => backup::exec(file, args),
        Command::Restore(args) => restore::exec(file, args),
        Command::Apply(args) => apply::exec(args),
        Command::Export(args) => export::exec(args),
        Command::Import(args) => import::exec(args),
        Command::Workspace(cmd) => workspace::exec(file, cmd),
        Command::Key(cmd) => key::exec(file, cmd),
        Command::User(cmd) => user::exec(file, cmd),
        Command::Webhook(cmd) => webhook::exec(cmd),
        Command::Plugin(cmd) => plugin::exec(file, cmd),
        Command::Bench(args) => bench::exec(&args),
        Command::Completions(args) => completions::exec(&args),
        Command::Man(args) => man::exec(&args),
        Command::BenchTarget => bench_target::exec(),
    }
}

/// Flags that override the file and the environment.
#[derive(Args, Clone, Default)]
pub struct Flags {
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

/// Where the API is, and the key that acts on it.
#[derive(Args, Clone)]
pub struct RemoteFlags {
    /// The server's address.
    #[arg(long, env = "TOCSIN_URL", default_value = "http://127.0.0.1:8080")]
    url: String,
    /// An API key of the workspace (write or admin role).
    #[arg(long, env = "TOCSIN_API_KEY", hide_env_values = true)]
    key: Option<String>,
}

impl RemoteFlags {
    fn key(&self) -> anyhow::Result<&str> {
        self.key
            .as_deref()
            .context("an API key is needed: --key or TOCSIN_API_KEY")
    }
}

/// The configuration from `file`, the environment and `flags`, with logging set up as it
/// says: what every command that works on the server's data starts with.
fn configured(file: Option<&Path>, flags: &Flags) -> anyhow::Result<Config> {
    let config = Config::load(file, &flags.overrides()).context("invalid configuration")?;
    init_logging(config.log_format, &config.log_filter);
    Ok(config)
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

/// The runtime a server-side command runs on.
fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}

/// The runtime a client of the API runs on.
fn current_thread() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}
