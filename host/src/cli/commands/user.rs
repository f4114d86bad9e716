//! `tocsin user`: create an account with a role in a workspace, in the configured
//! database.

use super::Flags;
use crate::config::Config;
use std::path::Path;

#[derive(clap::Subcommand)]
pub enum Command {
    /// Create an account with a role in a workspace (or give an existing account that
    /// role). Prints the account id, and a link to set the password unless one is read
    /// from standard input.
    Create {
        #[arg(long)]
        email: String,
        #[arg(long, value_name = "ws_...")]
        workspace: String,
        /// owner, admin, member or viewer.
        #[arg(long, default_value = "member")]
        role: String,
        /// Display name (default: the part of the address before `@`).
        #[arg(long)]
        name: Option<String>,
        /// Read the password from the first line of standard input.
        #[arg(long)]
        password_stdin: bool,
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
    let Command::Create {
        email,
        workspace,
        role,
        name,
        password_stdin,
        ..
    } = cmd;
    let password = if password_stdin {
        let mut line = String::new();
        std::io::stdin().read_line(&mut line)?;
        Some(line.trim_end_matches(['\r', '\n']).to_string())
    } else {
        None
    };
    let store = crate::app::open_store(config).await?;
    let now = chrono::Utc::now().timestamp_millis();
    let result = crate::cli::users::create_user(
        &store,
        &config.public_url,
        crate::cli::users::NewUser {
            email: &email,
            name: name.as_deref(),
            workspace_id: &workspace,
            role: &role,
            password: password.as_deref(),
        },
        now,
    )
    .await;
    store.close().await;
    let created = result?;
    println!("{}", created.user_id);
    if let Some(link) = created.password_link {
        println!("Set the password here (the link works once, for 24 hours):\n\n    {link}");
    }
    Ok(())
}
