//! `tocsin apply`: make a workspace match a file, a client of a running server's API.

use super::RemoteFlags;
use crate::declared::apply::{self as declared, ApplyOptions};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// The file or folder to apply (repeatable).
    #[arg(
        short = 'f',
        long = "file",
        value_name = "FILE|DIR",
        required_unless_present = "schema"
    )]
    files: Vec<PathBuf>,
    /// Print the plan (create, change with each field's old and new value, delete) and
    /// change nothing.
    #[arg(long)]
    dry_run: bool,
    /// Delete what the file no longer declares: only objects apply created (their
    /// managedBy is the file's), unless --prune-unmanaged.
    #[arg(long)]
    prune: bool,
    /// With --prune, also delete undeclared objects that apply did not create.
    #[arg(long, requires = "prune")]
    prune_unmanaged: bool,
    /// Print the file's JSON Schema (for editors) and exit.
    #[arg(long)]
    schema: bool,
    #[command(flatten)]
    remote: RemoteFlags,
}

pub fn exec(args: Args) -> anyhow::Result<()> {
    if args.schema {
        println!("{}", serde_json::to_string_pretty(&declared::schema())?);
        return Ok(());
    }
    let options = ApplyOptions {
        dry_run: args.dry_run,
        prune: args.prune,
        prune_unmanaged: args.prune_unmanaged,
        adopt_by_name: true,
    };
    let doc = declared::load(&args.files)?;
    let text = super::current_thread()?.block_on(declared::apply(
        &args.remote.url,
        args.remote.key()?,
        &doc,
        &options,
    ))?;
    print!("{text}");
    Ok(())
}
