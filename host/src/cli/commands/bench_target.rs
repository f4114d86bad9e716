//! `tocsin bench-target` (hidden): the benchmark's loopback target, a process of its own.

pub fn exec() -> anyhow::Result<()> {
    crate::cli::bench::target::run()
}
