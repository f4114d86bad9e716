//! `tocsin probe`: run checks in a private location for a server.

use super::Flags;
use anyhow::Context;
use std::path::Path;

#[derive(clap::Args)]
pub struct Args {
    /// The server's URL (https; plain http only to a loopback address).
    #[arg(long, env = "TOCSIN_SERVER_URL")]
    server_url: String,
    /// The probe's token, from `POST /v1/probes` (`tpb_...`).
    #[arg(long, env = "TOCSIN_PROBE_TOKEN", hide_env_values = true)]
    token: String,
    /// Results kept while the server cannot be reached; past this the oldest are shed
    /// (and counted).
    #[arg(long, env = "TOCSIN_PROBE_BUFFER_RESULTS", default_value_t = 1_000_000)]
    buffer_results: usize,
    /// Results older than this many hours are shed from the buffer.
    #[arg(long, env = "TOCSIN_PROBE_BUFFER_HOURS", default_value_t = 168)]
    buffer_hours: u32,
    /// Data directory: the buffer, the kept assignments, the plugin cache.
    #[arg(long, value_name = "DIR")]
    data_dir: Option<std::path::PathBuf>,
}

pub fn exec(file: Option<&Path>, args: &Args) -> anyhow::Result<()> {
    // A node's flags (listen address, database, region) mean nothing to a probe.
    let flags = Flags {
        data_dir: args.data_dir.clone(),
        ..Flags::default()
    };
    let config = super::configured(file, &flags)?;
    if !crate::store::probes::is_well_formed_token(args.token.trim()) {
        anyhow::bail!(
            "the probe token must be `tpb_` and 40 letters and digits, as `POST /v1/probes` gave it"
        );
    }
    crate::probe::check_server_url(&args.server_url)?;
    let roots = crate::plugins::trust::load(config.tls_extra_roots.as_deref())?;
    super::runtime()?.block_on(async {
        crate::crypto::install_provider();
        let _lock = crate::app::lock_data_dir(&config.data_dir)?;
        let plugins = std::sync::Arc::new(
            crate::app::load_plugins(&config)
                .await
                .context("cannot load the plugins")?,
        );
        crate::probe::run(
            plugins,
            crate::probe::ProbeOptions {
                server_url: args.server_url.clone(),
                token: args.token.trim().to_string(),
                data_dir: config.data_dir.clone(),
                limits: crate::probe::buffer::Limits {
                    max_results: args.buffer_results.max(1),
                    max_age_ms: i64::from(args.buffer_hours.max(1)) * 3_600_000,
                },
                roots: roots.certs,
            },
        )
        .await
    })
}
