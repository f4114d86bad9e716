//! `tocsin import`: monitors, channels, alert policies and maintenance from another
//! monitoring tool, a client of a running server's API.

use super::RemoteFlags;
use crate::declared::apply::remote::Remote;
use crate::declared::import::{self, ImportOptions, Source};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// What the file comes from.
    #[arg(value_enum)]
    source: SourceArg,
    /// kuma: a 1.x backup (.json) or a 2.x kuma.db. gatus: its config.yaml. healthchecks: the JSON of its `GET /api/v3/checks/`.
    file: PathBuf,
    /// Print the plan, what would not be imported and why, and change nothing.
    #[arg(long)]
    dry_run: bool,
    /// Uptime Kuma's kuma.db: also the check history of each monitor it creates, oldest
    /// first (checks older than the server keeps are left out).
    #[arg(long)]
    with_history: bool,
    /// The server's shortest interval (its min_interval): shorter ones are raised to it,
    /// and the import says so.
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    min_interval: u32,
    #[command(flatten)]
    remote: RemoteFlags,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum SourceArg {
    /// Uptime Kuma: a 1.x JSON backup, or a 2.x kuma.db (SQLite) read directly.
    Kuma,
    /// Gatus's config.yaml: endpoints, external endpoints, alerting, maintenance.
    Gatus,
    /// Healthchecks' checks as its API lists them.
    Healthchecks,
}

pub fn exec(args: Args) -> anyhow::Result<()> {
    let source = match args.source {
        SourceArg::Kuma => Source::Kuma,
        SourceArg::Gatus => Source::Gatus,
        SourceArg::Healthchecks => Source::Healthchecks,
    };
    let options = ImportOptions {
        dry_run: args.dry_run,
        min_interval: args.min_interval,
        environment: true,
        with_history: args.with_history,
    };
    let remote = Remote::new(&args.remote.url, args.remote.key()?)?;
    let text =
        super::current_thread()?.block_on(import::import(source, &args.file, &remote, &options))?;
    print!("{text}");
    Ok(())
}
