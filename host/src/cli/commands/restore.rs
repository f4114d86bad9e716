//! `tocsin restore`: replace the SQLite database with a backup.

use super::Flags;
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct Args {
    /// The backup to restore.
    file: PathBuf,
    #[command(flatten)]
    flags: Flags,
}

pub fn exec(file: Option<&Path>, args: Args) -> anyhow::Result<()> {
    let config = super::configured(file, &args.flags)?;
    super::runtime()?.block_on(crate::cli::backup::restore(&config, &args.file))
}
