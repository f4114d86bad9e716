//! `tocsin serve`: the server.

use super::Flags;
use std::path::Path;

pub fn exec(file: Option<&Path>, flags: &Flags) -> anyhow::Result<()> {
    let config = super::configured(file, flags)?;
    super::runtime()?.block_on(crate::app::serve(config))
}
