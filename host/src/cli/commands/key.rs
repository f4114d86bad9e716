//! `tocsin key`: create an API key in the configured database.

use super::Flags;
use crate::config::Config;
use crate::store::keys::Role;
use anyhow::Context;
use std::path::Path;

#[derive(clap::Subcommand)]
pub enum Command {
    /// Create an API key and print its secret (shown this once).
    Create {
        #[arg(long, value_name = "ws_...")]
        workspace: String,
        /// owner, admin, write or read (the operator's key may be an owner key).
        #[arg(long, default_value = "admin")]
        role: String,
        /// A name to tell the key apart.
        #[arg(long, default_value = "cli")]
        name: String,
        #[command(flatten)]
        flags: Flags,
    },
}

pub fn exec(file: Option<&Path>, cmd: Command) -> anyhow::Result<()> {
    let Command::Create { flags, .. } = &cmd;
    let config = super::configured(file, flags)?;
    super::runtime()?.block_on(run(&config, cmd))
}

async fn run(config: &Config, cmd: Command) -> anyhow::Result<()> {
    let store = crate::app::open_store(config).await?;
    let now = chrono::Utc::now().timestamp_millis();
    let result = match cmd {
        Command::Create {
            workspace,
            role,
            name,
            ..
        } => {
            let role = Role::parse(&role).with_context(|| {
                format!("unknown role `{role}`: use owner, admin, write or read")
            })?;
            anyhow::ensure!(
                store.workspace(&workspace).await?.is_some(),
                "no workspace with id `{workspace}`"
            );
            let (_, secret) = store
                .create_api_key(&workspace, name.trim(), role, None, now)
                .await?;
            println!("{secret}");
            Ok(())
        }
    };
    store.close().await;
    result
}
