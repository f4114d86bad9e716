//! `tocsin bench`: checks/s, lag, CPU, memory, database writes and API throughput.

use crate::config::LogFormat;

#[derive(clap::Args, Clone)]
pub struct Args {
    /// Monitor counts to run, comma-separated (one run each).
    #[arg(long, value_delimiter = ',', default_value = "1000")]
    monitors: Vec<usize>,
    /// Seconds between checks of each monitor.
    #[arg(long, default_value_t = 60)]
    interval: u32,
    /// Seconds measured, after the warm-up (default: one interval).
    #[arg(long)]
    duration: Option<u64>,
    /// Seconds run before measuring.
    #[arg(long, default_value_t = 10)]
    warmup: u64,
    /// Run on PostgreSQL (`postgres://...`; a fresh database is created and dropped).
    /// Default: SQLite in a temporary directory.
    #[arg(long)]
    database_url: Option<String>,
    /// Share of monitors whose target fails, in percent (they open incidents).
    #[arg(long, default_value_t = 1.0)]
    failing_percent: f64,
    /// Give every monitor this `retryInterval` (seconds), and the failing ones a policy
    /// whose threshold the run never reaches: they are re-checked at this pace throughout,
    /// the most fast re-checks can cost.
    #[arg(long, conflicts_with = "serve")]
    retry_interval: Option<u32>,
    /// Checks per side in the plugin-versus-native comparison (with --serve: the same
    /// command's reference, measured once the server has stopped; at least 1,000).
    #[arg(long, default_value_t = 2000)]
    baseline_checks: usize,
    /// Seconds of `wrk` load on each API route (0 skips it).
    #[arg(long, default_value_t = 10)]
    api_seconds: u64,
    /// Milliseconds slept before each batch of results is written: a slow database, to
    /// show that checks keep their rate while results are buffered, then shed.
    #[arg(long, default_value_t = 0)]
    db_delay_ms: u64,
    /// Results buffered for the database before new ones are shed (`recorder_buffer`).
    #[arg(long, default_value_t = crate::engine::recorder::DEFAULT_BUFFER)]
    recorder_buffer: usize,
    /// Skip the API phase (`GET /metrics` and the `wrk` load).
    #[arg(long)]
    skip_api: bool,
    /// Measure a `tocsin serve` process of its own: monitors created through its API,
    /// checks counted by the target, CPU and memory of that process (and of PostgreSQL's
    /// processes with --database-url).
    #[arg(long)]
    serve: bool,
    /// With --serve: insert the monitors straight into the database before the server
    /// starts (as after an import or a restart) instead of through its API, and report
    /// the time from the server's start to its first check.
    #[arg(long, requires = "serve")]
    preload: bool,
    /// Only measure a plugin check's pieces apart (store, instance, guest call, check)
    /// against the native check, --baseline-checks calls of each.
    #[arg(long)]
    plugin_pieces: bool,
    /// Only measure a `tocsin serve` process taking results from probes (`tocsin probe`):
    /// --monitors monitors in one private location shared by this many probes, which post
    /// batches of 500 results as fast as the server takes them (e.g. `--probe-ingest 10
    /// --monitors 100000`).
    #[arg(long, value_name = "PROBES")]
    probe_ingest: Option<usize>,
    /// Also print the results as a Markdown table.
    #[arg(long)]
    markdown: bool,
}

/// The benchmark sets up its own databases and plugins; logs only warnings.
pub fn exec(flags: &Args) -> anyhow::Result<()> {
    super::init_logging(LogFormat::Pretty, "warn");
    let opts = crate::cli::bench::BenchOptions {
        monitors: flags.monitors.clone(),
        interval: flags.interval.max(1),
        duration: std::time::Duration::from_secs(
            flags.duration.unwrap_or(u64::from(flags.interval)).max(1),
        ),
        warmup: std::time::Duration::from_secs(flags.warmup),
        database_url: flags.database_url.clone(),
        failing_percent: flags.failing_percent.clamp(0.0, 100.0),
        retry_interval: flags.retry_interval.map(|r| r.max(1)),
        baseline_checks: flags.baseline_checks.max(10),
        api_duration: std::time::Duration::from_secs(flags.api_seconds),
        recorder: crate::engine::recorder::RecorderOptions {
            buffer: flags.recorder_buffer.max(1),
            write_delay: std::time::Duration::from_millis(flags.db_delay_ms),
        },
        serve: flags.serve,
        preload: flags.preload,
        skip_api: flags.skip_api,
        plugin_pieces: flags.plugin_pieces,
        probe_ingest: flags.probe_ingest.map(|p| p.max(1)),
    };
    let reports = super::runtime()?.block_on(crate::cli::bench::run(&opts))?;
    if flags.markdown {
        println!("\n{}", crate::cli::bench::markdown(&reports));
    }
    Ok(())
}
