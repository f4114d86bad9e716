//! `tocsin workspace`: create a workspace, change its plan, in the configured database.

use super::Flags;
use crate::config::Config;
use crate::plans::Plan;
use anyhow::Context;
use std::path::Path;

#[derive(clap::Subcommand)]
pub enum Command {
    /// Create a workspace and print its id.
    Create {
        #[arg(long)]
        name: String,
        /// free, pro, business or enterprise.
        #[arg(long, default_value = "free")]
        plan: String,
        #[command(flatten)]
        flags: Flags,
    },
    /// Change a workspace's plan.
    SetPlan {
        #[arg(long, value_name = "ws_...")]
        workspace: String,
        /// free, pro, business or enterprise.
        #[arg(long)]
        plan: String,
        #[command(flatten)]
        flags: Flags,
    },
}

pub fn exec(file: Option<&Path>, cmd: Command) -> anyhow::Result<()> {
    let (Command::Create { flags, .. } | Command::SetPlan { flags, .. }) = &cmd;
    let config = super::configured(file, flags)?;
    super::runtime()?.block_on(run(&config, cmd))
}

fn parse_plan(text: &str) -> anyhow::Result<Plan> {
    Plan::parse(text)
        .with_context(|| format!("unknown plan `{text}`: use free, pro, business or enterprise"))
}

async fn run(config: &Config, cmd: Command) -> anyhow::Result<()> {
    let store = crate::app::open_store(config).await?;
    let now = chrono::Utc::now().timestamp_millis();
    let result = match cmd {
        Command::Create { name, plan, .. } => {
            let plan = parse_plan(&plan)?;
            let name = name.trim();
            anyhow::ensure!(
                (1..=200).contains(&name.chars().count()),
                "the name must have 1 to 200 characters"
            );
            let ws = store.create_workspace(name, plan, now).await?;
            println!("{}", ws.id);
            Ok(())
        }
        Command::SetPlan {
            workspace, plan, ..
        } => {
            let plan = parse_plan(&plan)?;
            anyhow::ensure!(
                store.set_workspace_plan(&workspace, plan, now).await?,
                "no workspace with id `{workspace}`"
            );
            println!("{workspace} is now on the {} plan", plan.as_str());
            Ok(())
        }
    };
    store.close().await;
    result
}
