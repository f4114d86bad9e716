//! `tocsin plugin`: the plugin author's tools (check, catalogue, new) and the packager's
//! precompile, which alone needs the server's configuration.

use anyhow::Context;
use std::path::{Path, PathBuf};

#[derive(clap::Subcommand)]
pub enum Command {
    /// Load a component, describe it, and with --config run one check (or one test delivery).
    Check {
        /// The component (.wasm).
        file: PathBuf,
        /// A configuration (JSON object) to validate and run one call with.
        #[arg(value_name = "CONFIG")]
        with_config: Option<String>,
        /// Time budget of the call, in seconds.
        #[arg(long, default_value_t = 10)]
        timeout: u64,
    },
    /// Print the built-in catalogue (Markdown, generated from the plugins' schemas), or
    /// rewrite its generated parts in the documentation with --update.
    Catalogue {
        /// A file whose generated parts to rewrite in place (docs/plugins.md, README.md);
        /// repeat for several.
        #[arg(long, value_name = "FILE")]
        update: Vec<PathBuf>,
        /// Where compiled plugins are kept between runs.
        #[arg(long, value_name = "DIR")]
        cache_dir: Option<PathBuf>,
    },
    /// Compile the plugins of `plugins_dir` (and any built-in this machine cannot run as the
    /// build compiled it) into the compile cache, so the server's first start compiles
    /// nothing. Run it where the server runs, after installing or adding plugins.
    Precompile,
    /// Create a monitor plugin project to start from.
    New {
        /// rust, python or js.
        #[arg(long)]
        lang: String,
        /// The monitor type it provides, e.g. `dns`.
        #[arg(long)]
        name: String,
        /// Where to create it (default: a folder named after the plugin).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
}

pub fn exec(file: Option<&Path>, cmd: Command) -> anyhow::Result<()> {
    if matches!(cmd, Command::Precompile) {
        // Precompiling needs the server's configuration (plugins_dir, plugin_cache_dir).
        let config = super::configured(file, &super::Flags::default())?;
        return crate::cli::plugin_tools::precompile(&config);
    }
    helper(cmd)
}

/// Plugin helpers need neither configuration nor database.
fn helper(cmd: Command) -> anyhow::Result<()> {
    match cmd {
        Command::Check {
            file,
            with_config,
            timeout,
        } => {
            let runtime = super::runtime()?;
            let (report, ok) = runtime.block_on(crate::cli::plugin_tools::check(
                &file,
                with_config.as_deref(),
                std::time::Duration::from_secs(timeout.clamp(1, 60)),
            ));
            print!("{report}");
            if ok { Ok(()) } else { std::process::exit(1) }
        }
        Command::Catalogue { update, cache_dir } => {
            use crate::cli::catalogue;
            let runtime = super::runtime()?;
            let plugins = runtime.block_on(catalogue::builtin_descriptions(cache_dir))?;
            let blocks = catalogue::blocks(&plugins);
            if update.is_empty() {
                print!("{}", catalogue::render(&blocks));
            }
            for file in update {
                let text = std::fs::read_to_string(&file)
                    .with_context(|| format!("cannot read {}", file.display()))?;
                let (new, replaced) = catalogue::update(&text, &blocks)
                    .map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
                if replaced.is_empty() {
                    anyhow::bail!("{} holds no generated catalogue part", file.display());
                }
                if new != text {
                    std::fs::write(&file, new)
                        .with_context(|| format!("cannot write {}", file.display()))?;
                }
                println!("{}: {}", file.display(), replaced.join(", "));
            }
            Ok(())
        }
        Command::Precompile => unreachable!("precompile is answered with the configuration"),
        Command::New { lang, name, dir } => {
            let dir = dir.unwrap_or_else(|| PathBuf::from(&name));
            let files = crate::cli::plugin_tools::scaffold(&lang, &name, &dir)
                .map_err(anyhow::Error::msg)?;
            for f in files {
                println!("created {}", f.display());
            }
            Ok(())
        }
    }
}
