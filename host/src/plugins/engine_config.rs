//! The wasmtime engine's settings. The server's build script compiles this same file to
//! compile the built-in plugins ahead of time: a compiled artifact loads only into an
//! engine whose settings hash the same, so the two must never be written twice.

use super::limits;
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

/// The settings every engine shares. `perf_map` names the plugins' compiled functions for
/// `perf` (/tmp/perf-PID.map); it does not change the compiled code.
fn base_config(perf_map: bool) -> Config {
    let mut config = Config::new();
    config.wasm_component_model(true);
    config.epoch_interruption(true);
    config.cranelift_opt_level(wasmtime::OptLevel::Speed);
    if perf_map {
        config.profiler(wasmtime::ProfilingStrategy::PerfMap);
    }
    config
}

/// The engine the server runs plugins in: instances from a pool when the address space
/// allows (the error says why not), on-demand otherwise.
fn pooled_engine(perf_map: bool) -> wasmtime::Result<Engine> {
    let mut pool = PoolingAllocationConfig::default();
    pool.total_component_instances(limits::POOL_INSTANCES)
        .total_core_instances(limits::POOL_INSTANCES * 4)
        .total_memories(limits::POOL_INSTANCES * 2)
        .total_tables(limits::POOL_INSTANCES * 4)
        .total_stacks(limits::POOL_INSTANCES)
        .max_memories_per_component(limits::MAX_MEMORIES as u32)
        .max_tables_per_component(limits::MAX_TABLES as u32)
        .max_core_instances_per_component(limits::MAX_INSTANCES as u32)
        .max_memory_size(limits::MEMORY_LIMIT_BYTES)
        .table_elements(limits::MAX_TABLE_ELEMENTS)
        // Reset a slot's memory by zeroing the pages the guest touched (found with the
        // PAGEMAP_SCAN ioctl on Linux 6.7+) instead of unmapping them: no page faults on
        // the next call and no TLB shootdowns across threads. Measured with `tocsin bench`
        // (docs/performance.md): plugin CPU per check fell by a third; without the ioctl,
        // the first 1 MiB is zeroed whole and the rest unmapped in batches.
        .pagemap_scan(wasmtime::Enabled::Auto)
        .linear_memory_keep_resident(1 << 20)
        .table_keep_resident(64 << 10)
        .decommit_batch_size(32);
    let mut config = base_config(perf_map);
    config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    Engine::new(&config)
}

/// The pooled engine, or an on-demand one and the reason the pool could not be reserved.
pub fn engine(perf_map: bool) -> wasmtime::Result<(Engine, Option<wasmtime::Error>)> {
    match pooled_engine(perf_map) {
        Ok(engine) => Ok((engine, None)),
        Err(e) => Ok((Engine::new(&base_config(perf_map))?, Some(e))),
    }
}
