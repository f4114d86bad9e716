//! `tocsin migrate`: bring the database's schema up to date and exit.

use super::Flags;
use std::path::Path;

pub fn exec(file: Option<&Path>, flags: &Flags) -> anyhow::Result<()> {
    let config = super::configured(file, flags)?;
    super::runtime()?.block_on(async {
        let store = crate::app::open_store(&config).await?;
        println!(
            "Database is up to date ({})",
            crate::app::redact(&config.database_url)
        );
        store.close().await;
        Ok(())
    })
}
