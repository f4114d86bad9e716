//! `tocsin doctor`: the table of checks, and exit status 1 when one failed. A
//! configuration that does not load is itself a finding, not an error.

use super::Flags;
use crate::cli::doctor;
use crate::config::{Config, LogFormat};
use std::path::Path;

pub fn exec(file: Option<&Path>, flags: &Flags) -> anyhow::Result<()> {
    let loaded = Config::load(file, &flags.overrides()).map_err(anyhow::Error::from);
    super::init_logging(LogFormat::Pretty, "error");
    let findings = match loaded {
        Err(e) => doctor::configuration_failed(&e),
        Ok(config) => {
            let source = match file {
                Some(f) => format!("{} loads", f.display()),
                None if Path::new("tocsin.toml").is_file() => "tocsin.toml loads".to_string(),
                None => "no file; defaults and TOCSIN_* variables".to_string(),
            };
            super::runtime()?.block_on(doctor::run(&config, &source))
        }
    };
    print!("{}", doctor::table(&findings));
    if doctor::worst(&findings) == doctor::Verdict::Fail {
        std::process::exit(1);
    }
    Ok(())
}
