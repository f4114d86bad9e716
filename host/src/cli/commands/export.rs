//! `tocsin export`: a workspace as a file `tocsin apply` takes back, a client of a running
//! server's API.

use super::RemoteFlags;
use crate::declared::apply::{self as declared, Format};
use anyhow::Context;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// Where to write (default: standard output). The extension picks the format.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// yaml, toml or json (default: from --output's extension, else yaml).
    #[arg(long)]
    format: Option<Format>,
    #[command(flatten)]
    remote: RemoteFlags,
}

pub fn exec(args: Args) -> anyhow::Result<()> {
    let remote = &args.remote;
    let exported =
        super::current_thread()?.block_on(declared::export(&remote.url, remote.key()?))?;
    let format = args
        .format
        .or_else(|| args.output.as_deref().and_then(declared::format_of))
        .unwrap_or(Format::Yaml);
    let text = exported.render(format)?;
    if format == Format::Json && !exported.variables.is_empty() {
        // JSON has no comments: the variables the secrets became are named here.
        eprintln!(
            "Secrets are written as ${{VARIABLE}}s; set these before `tocsin apply`: {}",
            exported.variables.join(", ")
        );
    }
    match args.output {
        Some(path) => std::fs::write(&path, text)
            .with_context(|| format!("cannot write {}", path.display()))?,
        None => print!("{text}"),
    }
    Ok(())
}
