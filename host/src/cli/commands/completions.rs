//! `tocsin completions`: the shell's completion script.

#[derive(clap::Args)]
pub struct Args {
    shell: clap_complete::Shell,
}

pub fn exec(args: &Args) -> anyhow::Result<()> {
    let mut cmd = <super::Cli as clap::CommandFactory>::command();
    clap_complete::generate(args.shell, &mut cmd, "tocsin", &mut std::io::stdout());
    Ok(())
}
