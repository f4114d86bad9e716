//! The `tocsin` command. Its subcommands are modules of [`tocsin::cli::commands`].

/// mimalloc instead of the system allocator: a server's allocations are many small strings
/// and buffers freed on other threads, where glibc's malloc spent a fifth of the API's
/// time (docs/performance.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> anyhow::Result<()> {
    tocsin::cli::commands::run()
}
