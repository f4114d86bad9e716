//! `tocsin backup`: a consistent copy of the SQLite database while the server runs.

use super::Flags;
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct Args {
    /// Where to write the copy (must not exist).
    file: PathBuf,
    /// Leave raw check results out (daily uptime, incidents and settings stay).
    #[arg(long)]
    without_history: bool,
    #[command(flatten)]
    flags: Flags,
}

pub fn exec(file: Option<&Path>, args: Args) -> anyhow::Result<()> {
    let config = super::configured(file, &args.flags)?;
    super::runtime()?.block_on(crate::cli::backup::backup(
        &config,
        &args.file,
        !args.without_history,
    ))
}
