//! `tocsin man`: the manual pages.

use anyhow::Context;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    #[arg(long, value_name = "DIR", default_value = ".")]
    out: PathBuf,
}

pub fn exec(args: &Args) -> anyhow::Result<()> {
    let out = &args.out;
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    clap_mangen::generate_to(<super::Cli as clap::CommandFactory>::command(), out)
        .with_context(|| format!("cannot write manual pages into {}", out.display()))?;
    println!("Manual pages written to {}", out.display());
    Ok(())
}
