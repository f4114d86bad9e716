//! `tocsin bench --plugin-pieces`: where a plugin check's CPU goes beyond the native
//! check's. The same http check is run natively and through the `http` plugin, and the
//! plugin call is also stopped at each of its stages: a store created and dropped; a
//! component instantiated in it (and torn down with it); its configuration validated (a
//! guest call with no I/O). The differences between stages are the pieces. The kinds take
//! turns in chunks of 250 calls, each chunk in a rotated order, so neither a noisy machine
//! nor the loopback sockets piling up in TIME_WAIT weigh on one kind more than another;
//! CPU is the scheduler's own count per thread, to the nanosecond. The warm-up runs
//! whole plugin checks alone and then native checks alone, and prints when, so a profile
//! of the process (`perf record`, with `TOCSIN_PLUGIN_PERFMAP=1`) can be split by phase.

use super::{Target, measure, timed_batch, timed_batch_by};
use crate::config::{Config, Overrides};
use crate::plugins::{CallStage, PluginHost};
use anyhow::Context;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// Process CPU per call of each kind.
#[derive(Debug, Clone, Copy, Default)]
pub struct Pieces {
    pub native: Duration,
    pub store: Duration,
    pub instantiate: Duration,
    pub validate: Duration,
    /// A whole check in a fresh store and instance.
    pub check: Duration,
    /// A whole check as the scheduler makes it: in an instance kept between the checks of
    /// one workspace.
    pub kept: Duration,
}

impl Pieces {
    /// Instantiating and tearing the instance down, beyond the store's own cost.
    pub fn instantiation(&self) -> Duration {
        self.instantiate.saturating_sub(self.store)
    }

    /// A guest call without I/O: lowering the configuration, the guest parsing it, lifting
    /// the answer.
    pub fn guest_call(&self) -> Duration {
        self.validate.saturating_sub(self.instantiate)
    }

    /// The check's guest work and crossings: what the check call costs beyond the
    /// instance and the native check's own work.
    pub fn check_over_native(&self) -> Duration {
        self.check
            .saturating_sub(self.instantiate)
            .saturating_sub(self.native)
    }
}

/// Calls of each kind in one chunk of the measurement.
const CHUNK: usize = 250;

/// Measure `3 × count` calls of each kind after a warm-up, the kinds taking turns.
pub(super) async fn run(target: &Target, cache: &Path, count: usize) -> anyhow::Result<Pieces> {
    let config = Config::build(
        None,
        &|_| None,
        &Overrides {
            data_dir: Some(cache.to_path_buf()),
            ..Overrides::default()
        },
    )?;
    let plugins = Arc::new(crate::app::load_plugins(&config).await?);
    let url = target.url("/ok");
    let stages = [
        CallStage::Store,
        CallStage::Instantiate,
        CallStage::Validate,
        CallStage::Check,
        CallStage::Kept(super::BENCH_WORKSPACE),
    ];
    // The warm-up: whole plugin checks alone, then native checks alone, each phase long
    // enough for a profiler to sample it on its own (the times it prints mark the phases).
    let alone = |d: Duration| d / u32::try_from(count).unwrap_or(u32::MAX).max(1);
    let started = std::time::SystemTime::now();
    let plugin_alone = timed_batch(
        count,
        stage_call(&plugins, &url, CallStage::Kept(super::BENCH_WORKSPACE))?,
    )
    .await?
    .0;
    let between = std::time::SystemTime::now();
    let native_alone = timed_batch(count, super::native_check(&plugins, &url))
        .await?
        .0;
    let ended = std::time::SystemTime::now();
    let unix = |t: std::time::SystemTime| {
        t.duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs_f64()
    };
    println!(
        "warm-up: {count} plugin checks alone from {:.1} to {:.1} (unix time), {:.1} µs each; {count} native checks alone to {:.1}, {:.1} µs each",
        unix(started),
        unix(between),
        alone(plugin_alone).as_secs_f64() * 1e6,
        unix(ended),
        alone(native_alone).as_secs_f64() * 1e6,
    );
    // The kinds take turns in chunks, each chunk's order rotated, so none always runs
    // first or last: every loopback connection leaves a socket in TIME_WAIT for a minute,
    // and a connect costs more the more of them there are, so a kind measured after the
    // others' thousands of connections would pay for them.
    let total = count * 3;
    let mut totals = [Duration::ZERO; 6];
    let mut done = 0;
    let mut turn = 0;
    while done < total {
        let n = CHUNK.min(total - done);
        for k in 0..totals.len() {
            let kind = (k + turn) % totals.len();
            let clock = measure::cpu_time_fine;
            totals[kind] += if kind == 0 {
                timed_batch_by(clock, n, super::native_check(&plugins, &url))
                    .await?
                    .0
            } else {
                timed_batch_by(clock, n, stage_call(&plugins, &url, stages[kind - 1])?)
                    .await?
                    .0
            };
        }
        done += n;
        turn += 1;
    }
    let per = |d: Duration| d / u32::try_from(total).unwrap_or(u32::MAX).max(1);
    Ok(Pieces {
        native: per(totals[0]),
        store: per(totals[1]),
        instantiate: per(totals[2]),
        validate: per(totals[3]),
        check: per(totals[4]),
        kept: per(totals[5]),
    })
}

/// One call of the http plugin up to `stage`, as a future factory for `timed_batch`.
fn stage_call(
    plugins: &Arc<PluginHost>,
    url: &str,
    stage: CallStage,
) -> anyhow::Result<impl Fn() -> std::pin::Pin<Box<dyn Future<Output = bool> + Send>> + Clone> {
    let http = plugins
        .monitor("http")
        .context("the http plugin is not loaded")?;
    let config = super::http_config(url);
    let plugins = plugins.clone();
    Ok(move || {
        let plugins = plugins.clone();
        let http = http.clone();
        let config = config.clone();
        let call = async move {
            let request = super::bench_request(config);
            matches!(plugins.check_up_to(&http, request, stage).await, Ok(true))
        };
        Box::pin(call) as std::pin::Pin<Box<dyn Future<Output = bool> + Send>>
    })
}

/// The pieces as a table, each with its share of the plugin check.
pub(super) fn print(p: &Pieces) {
    let us = |d: Duration| format!("{:.1} µs", d.as_secs_f64() * 1e6);
    let share = |d: Duration| 100.0 * d.as_secs_f64() / p.check.as_secs_f64().max(1e-9);
    println!("plugin check pieces (process CPU per call, http plugin against loopback):");
    println!(
        "  native check (the host's HTTP code)      {:>10}  {:>5.1} %",
        us(p.native),
        share(p.native)
    );
    println!(
        "  store: created, limits set, dropped      {:>10}  {:>5.1} %",
        us(p.store),
        share(p.store)
    );
    println!(
        "  instance: created and torn down          {:>10}  {:>5.1} %",
        us(p.instantiation()),
        share(p.instantiation())
    );
    println!(
        "  check's guest work and crossings         {:>10}  {:>5.1} %",
        us(p.check_over_native()),
        share(p.check_over_native())
    );
    let ratio = |d: Duration| d.as_secs_f64() / p.native.as_secs_f64().max(1e-9);
    println!(
        "  whole plugin check, fresh instance       {:>10}  {:.2}x native",
        us(p.check),
        ratio(p.check)
    );
    println!(
        "  whole plugin check, instance kept        {:>10}  {:.2}x native  (the scheduler's path)",
        us(p.kept),
        ratio(p.kept)
    );
    println!(
        "  (a guest call without I/O, validating the configuration: {})",
        us(p.guest_call())
    );
}
