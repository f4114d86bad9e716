//! Everything that touches wasmtime directly: one `Engine` (epoch interruption, pooling
//! allocator when the address space allows), the epoch ticker, compiling with an on-disk
//! cache, and running one call in a `Store` (fresh, or kept for a workspace's next check)
//! under its limits and deadline.

use super::state::{CallContext, CallState};
use super::{engine_config, limits};
use std::future::Future;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;
use wasmtime::component::{Component, Linker};
use wasmtime::{Engine, Store, UpdateDeadline};

/// Why a plugin call failed (as opposed to the plugin reporting a failed check).
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum CallError {
    #[error("plugin did not finish within {0} ms and was stopped")]
    Deadline(u64),
    #[error("plugin exceeded its memory limit of {0} MiB")]
    Memory(usize),
    #[error("plugin crashed: {0}")]
    Trap(String),
    #[error("plugin could not be started: {0}")]
    Instantiate(String),
}

/// Where a loaded component's machine code came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compiled {
    /// Compiled by the build for this machine and embedded in the binary (built-ins).
    AtBuild,
    /// Read from the compile cache, written by an earlier start or `tocsin plugin precompile`.
    Cached,
    /// Compiled just now (and written to the cache when there is one).
    Now,
}

impl Compiled {
    pub fn as_str(self) -> &'static str {
        match self {
            Compiled::AtBuild => "at build time",
            Compiled::Cached => "from the compile cache",
            Compiled::Now => "compiled now",
        }
    }
}

/// The wasmtime engine and its ticker. Cheap to share.
pub struct Runtime {
    engine: Engine,
    pooling: bool,
    cache_dir: Option<PathBuf>,
    ticker: Arc<Ticker>,
}

impl Drop for Runtime {
    fn drop(&mut self) {
        self.ticker.stop.store(true, Ordering::Relaxed);
        self.ticker.wake();
    }
}

/// Advances the engine's epoch every [`limits::EPOCH_TICK`], but only while a call is
/// running: an idle server's ticker sleeps instead of waking a core 100 times a second.
/// The epoch only matters to a guest running wasm, and every guest runs inside
/// [`Runtime::call`], which holds a [`Running`] for as long as it lasts.
struct Ticker {
    running: AtomicUsize,
    ticks: AtomicU64,
    stop: AtomicBool,
    thread: OnceLock<std::thread::Thread>,
}

impl Ticker {
    fn wake(&self) {
        if let Some(thread) = self.thread.get() {
            thread.unpark();
        }
    }

    fn enter(self: &Arc<Self>) -> Running {
        if self.running.fetch_add(1, Ordering::SeqCst) == 0 {
            self.wake();
        }
        Running(self.clone())
    }

    fn run(&self, engine: wasmtime::EngineWeak) {
        while !self.stop.load(Ordering::Relaxed) {
            if self.running.load(Ordering::SeqCst) == 0 {
                // `enter` unparks after raising the count, so a call that starts between
                // the load and the park leaves a token and this park returns at once.
                std::thread::park();
                continue;
            }
            std::thread::sleep(limits::EPOCH_TICK);
            match engine.upgrade() {
                Some(engine) => engine.increment_epoch(),
                None => break,
            }
            self.ticks.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// A call in progress, as the ticker counts them.
struct Running(Arc<Ticker>);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Whether the plugins' compiled functions are named for `perf` (`TOCSIN_PLUGIN_PERFMAP=1`).
fn perf_map() -> bool {
    std::env::var_os("TOCSIN_PLUGIN_PERFMAP").is_some_and(|v| v == "1")
}

impl Runtime {
    /// Build the engine. `cache_dir` keeps compiled plugins across restarts.
    pub fn new(cache_dir: Option<PathBuf>) -> anyhow::Result<Runtime> {
        let (engine, unpooled) = engine_config::engine(perf_map())?;
        if let Some(e) = &unpooled {
            tracing::info!(reason = %e, "pooling allocator unavailable; using on-demand instance allocation");
        }
        let pooling = unpooled.is_none();
        let ticker = Arc::new(Ticker {
            running: AtomicUsize::new(0),
            ticks: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            thread: OnceLock::new(),
        });
        let weak = engine.weak();
        let runs = ticker.clone();
        let handle = std::thread::Builder::new()
            .name("tocsin-epoch".into())
            .spawn(move || runs.run(weak))?;
        let _ = ticker.thread.set(handle.thread().clone());
        Ok(Runtime {
            engine,
            pooling,
            cache_dir,
            ticker,
        })
    }

    /// Epoch ticks so far: they advance only while a call runs.
    pub fn epoch_ticks(&self) -> u64 {
        self.ticker.ticks.load(Ordering::Relaxed)
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Whether instances come from the pooling allocator.
    pub fn is_pooling(&self) -> bool {
        self.pooling
    }

    /// A linker with WASI p2 (granting nothing) and nothing else yet.
    pub fn new_linker(&self) -> anyhow::Result<Linker<CallState>> {
        let mut linker = Linker::new(&self.engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
        Ok(linker)
    }

    /// Compile a component, or load it from the cache when this engine compiled it before.
    /// `ahead` is the artifact the build compiled for a built-in plugin: used when this
    /// engine accepts it (same wasmtime, same settings, a CPU with the same features).
    pub fn compile(
        &self,
        bytes: &[u8],
        ahead: Option<&[u8]>,
    ) -> anyhow::Result<(Component, Compiled)> {
        if let Some(artifact) = ahead {
            match deserialize(&self.engine, artifact) {
                Ok(component) => return Ok((component, Compiled::AtBuild)),
                Err(e) => {
                    tracing::info!(error = %e, "a built-in plugin compiled by the build does not suit this machine; compiling it here")
                }
            }
        }
        let Some(dir) = &self.cache_dir else {
            return Ok((Component::new(&self.engine, bytes)?, Compiled::Now));
        };
        let path = dir.join(format!("{}.cwasm", self.cache_key(bytes)));
        if path.is_file() {
            match load_precompiled(&self.engine, &path) {
                Ok(component) => return Ok((component, Compiled::Cached)),
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "ignoring unusable compile cache entry")
                }
            }
        }
        let serialized = self.engine.precompile_component(bytes)?;
        match write_atomically(dir, &path, &serialized) {
            Ok(()) => Ok((load_precompiled(&self.engine, &path)?, Compiled::Now)),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "could not write the compile cache");
                Ok((Component::new(&self.engine, bytes)?, Compiled::Now))
            }
        }
    }

    fn cache_key(&self, bytes: &[u8]) -> String {
        use sha2::{Digest, Sha256};
        // DefaultHasher::new() has fixed keys: stable within one build, which is all the
        // engine half needs (another build has another compatibility hash anyway).
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        self.engine
            .precompile_compatibility_hash()
            .hash(&mut hasher);
        format!(
            "{}-{:016x}",
            hex::encode(Sha256::digest(bytes)),
            hasher.finish()
        )
    }

    /// A fresh store for one call, under the memory and table limits.
    pub(super) fn store(&self, call: CallContext) -> Store<CallState> {
        let mut store = Store::new(&self.engine, CallState::new(call));
        store.limiter(|state| &mut state.limits);
        store
    }

    /// Run `f` against a fresh store: the call gets `call.budget` plus the margin, then it
    /// is stopped. Any failure is turned into a `CallError` and the store is dropped.
    pub async fn call<R, F>(&self, call: CallContext, f: F) -> Result<R, CallError>
    where
        R: Send,
        F: for<'s> FnOnce(
            &'s mut Store<CallState>,
        )
            -> Pin<Box<dyn Future<Output = wasmtime::Result<R>> + Send + 's>>,
    {
        let mut store = self.store(call);
        self.run(&mut store, f).await
    }

    /// Run `f` in `store`, fresh or kept: the call gets the budget of the store's call
    /// context plus the margin, then it is stopped. Any failure is turned into a
    /// `CallError`; after one, the store must not be used again.
    pub(super) async fn run<R, F>(&self, store: &mut Store<CallState>, f: F) -> Result<R, CallError>
    where
        R: Send,
        F: for<'s> FnOnce(
            &'s mut Store<CallState>,
        )
            -> Pin<Box<dyn Future<Output = wasmtime::Result<R>> + Send + 's>>,
    {
        let allowed = store.data().call.budget + limits::DEADLINE_MARGIN;
        let hard_deadline = Instant::now() + allowed;
        let allowed_ms = u64::try_from(allowed.as_millis()).unwrap_or(u64::MAX);
        let _running = self.ticker.enter();
        store.set_epoch_deadline(1);
        store.epoch_deadline_callback(move |_| {
            if Instant::now() >= hard_deadline {
                Ok(UpdateDeadline::Interrupt)
            } else {
                Ok(UpdateDeadline::Yield(1))
            }
        });
        // The epoch callback stops a guest busy in wasm; this stops one stuck in a host call.
        let outcome = tokio::time::timeout(allowed + limits::EPOCH_TICK * 5, f(store)).await;
        match outcome {
            Ok(Ok(value)) => Ok(value),
            Err(_) => Err(CallError::Deadline(allowed_ms)),
            Ok(Err(e)) => {
                if store.data().limits.memory_exceeded {
                    Err(CallError::Memory(limits::MEMORY_LIMIT_BYTES >> 20))
                } else if Instant::now() >= hard_deadline
                    || e.downcast_ref::<wasmtime::Trap>() == Some(&wasmtime::Trap::Interrupt)
                {
                    Err(CallError::Deadline(allowed_ms))
                } else {
                    Err(CallError::Trap(describe_trap(&e)))
                }
            }
        }
    }
}

/// A one-line reason for a failed call.
fn describe_trap(e: &wasmtime::Error) -> String {
    if let Some(trap) = e.downcast_ref::<wasmtime::Trap>() {
        return trap.to_string();
    }
    let root = e.root_cause().to_string();
    root.lines().next().unwrap_or("unknown error").to_string()
}

/// A component from its compiled artifact: one the build embedded, or a compile cache file.
#[allow(unsafe_code)]
fn deserialize(engine: &Engine, artifact: &[u8]) -> anyhow::Result<Component> {
    // SAFETY: every artifact comes from `precompile_component` with this server's engine
    // settings: the build script's, embedded beside the built-in it was compiled from, or
    // this server's, in a cache directory only it writes to under a name that holds the
    // engine's compatibility hash. wasmtime still checks the header (version, settings,
    // CPU features) and refuses an artifact this engine cannot run.
    Ok(unsafe { Component::deserialize(engine, artifact) }?)
}

fn load_precompiled(engine: &Engine, path: &Path) -> anyhow::Result<Component> {
    // Read into memory rather than mapping the file: a cache file changed or truncated
    // under a running server must not take the process down.
    deserialize(engine, &std::fs::read(path)?)
}

fn write_atomically(dir: &Path, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(".{}.tmp", ulid::Ulid::new()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}
