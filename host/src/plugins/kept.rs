//! Monitor instances kept between the checks of one workspace.
//!
//! A fresh store and instance for every check cost a third of a plugin check's CPU
//! (docs/performance.md, "The plugin and the API"): wasmtime's instantiation, the pooled
//! slot's reset, the guest's start-up. A check of a built-in monitor plugin therefore takes
//! an instance the same plugin left idle after an earlier check **of the same workspace**,
//! and leaves its own behind when it ends well. Instances never cross workspaces: the key
//! is the workspace and the loaded plugin, so no state (a guest's globals, the bytes left in
//! its memory) can reach another tenant.
//!
//! An instance is kept only when its call ended with an answer and the guest holds no host
//! resource; a trap, a deadline or the memory limit drops it with its store. It serves at
//! most [`MAX_USES`] checks over at most [`MAX_AGE`], and waits at most [`IDLE`] for the
//! next one: enough to carry it from one of the scheduler's batches to the next, not to
//! hold memory for monitors that stopped. At most [`limits::KEPT_INSTANCES`] are idle at
//! once; the pool's slots for them are set aside from the checks' share, so idle instances
//! never keep a check from starting.
//!
//! Only built-in plugins are kept: they hold no global state between calls (none of them
//! has a `static`), while a third-party plugin written for a fresh instance per call may.

use super::limits;
use super::state::CallState;
use super::wit::MonitorInstance;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use wasmtime::Store;

/// Checks one kept instance serves at most.
pub const MAX_USES: u32 = 1_000;
/// How long one instance is kept at most, from its creation.
pub const MAX_AGE: Duration = Duration::from_secs(60);
/// How long an idle instance waits for its workspace's next check.
pub const IDLE: Duration = Duration::from_secs(1);

/// Whose instance it is: the loaded plugin (a number never reused, so a plugin loaded anew
/// never gets its predecessor's instances) and the workspace.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Owner {
    pub plugin: u64,
    pub workspace: Arc<str>,
}

/// What an instance has done so far.
#[derive(Debug, Clone, Copy)]
pub struct History {
    uses: u32,
    born: Instant,
}

impl History {
    /// An instance about to serve its first check.
    pub fn fresh() -> History {
        History {
            uses: 0,
            born: Instant::now(),
        }
    }
}

/// An instance and the store it lives in, between two checks.
pub struct Kept {
    store: Store<CallState>,
    instance: Box<dyn MonitorInstance>,
    history: History,
    idle_since: Instant,
}

impl Kept {
    /// An instance that has just served a check.
    pub fn new(
        store: Store<CallState>,
        instance: Box<dyn MonitorInstance>,
        history: History,
    ) -> Kept {
        Kept {
            store,
            instance,
            history: History {
                uses: history.uses.saturating_add(1),
                born: history.born,
            },
            idle_since: Instant::now(),
        }
    }

    /// The store, the instance, and what it has done, for its next check.
    pub fn into_parts(self) -> (Store<CallState>, Box<dyn MonitorInstance>, History) {
        (self.store, self.instance, self.history)
    }

    fn usable(&self, now: Instant) -> bool {
        self.history.uses < MAX_USES
            && now.duration_since(self.history.born) < MAX_AGE
            && now.duration_since(self.idle_since) < IDLE
    }
}

/// The idle instances of every workspace and plugin.
#[derive(Default)]
pub struct KeptInstances {
    idle: Mutex<Idle>,
    /// Instances taken from the pool again, and instances left in it (for the benchmark and
    /// the tests).
    reused: AtomicU64,
    kept: AtomicU64,
}

#[derive(Default)]
struct Idle {
    by_owner: HashMap<Owner, Vec<Kept>>,
    count: usize,
    swept: Option<Instant>,
}

impl Idle {
    /// Take out every instance that can no longer serve (they are dropped by the caller,
    /// outside the lock: dropping resets the pooled slot).
    fn sweep(&mut self, now: Instant, out: &mut Vec<Kept>) {
        self.swept = Some(now);
        self.by_owner.retain(|_, list| {
            let (keep, expired): (Vec<Kept>, Vec<Kept>) =
                list.drain(..).partition(|k| k.usable(now));
            out.extend(expired);
            *list = keep;
            !list.is_empty()
        });
        self.count = self.by_owner.values().map(Vec::len).sum();
    }

    fn due_for_sweep(&self, now: Instant) -> bool {
        self.swept.is_none_or(|t| now.duration_since(t) >= IDLE)
    }
}

impl KeptInstances {
    /// An idle instance of `owner`, the one used last, if any can still serve.
    pub fn take(&self, owner: &Owner) -> Option<Kept> {
        let now = Instant::now();
        let mut expired = Vec::new();
        let found = {
            let mut guard = self.idle.lock().unwrap_or_else(|e| e.into_inner());
            let idle = &mut *guard;
            if idle.due_for_sweep(now) {
                idle.sweep(now, &mut expired);
            }
            let mut found = None;
            if let Some(list) = idle.by_owner.get_mut(owner) {
                while let Some(kept) = list.pop() {
                    idle.count -= 1;
                    if kept.usable(now) {
                        found = Some(kept);
                        break;
                    }
                    expired.push(kept);
                }
                if list.is_empty() {
                    idle.by_owner.remove(owner);
                }
            }
            found
        };
        drop(expired);
        if found.is_some() {
            self.reused.fetch_add(1, Ordering::Relaxed);
        }
        found
    }

    /// Leave `kept` for `owner`'s next check, when it may serve more and there is room.
    pub fn put(&self, owner: Owner, kept: Kept) {
        let now = Instant::now();
        if !kept.usable(now) {
            return;
        }
        let mut expired = Vec::new();
        let refused = {
            let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
            if idle.count >= limits::KEPT_INSTANCES as usize || idle.due_for_sweep(now) {
                idle.sweep(now, &mut expired);
            }
            if idle.count < limits::KEPT_INSTANCES as usize {
                idle.by_owner.entry(owner).or_default().push(kept);
                idle.count += 1;
                None
            } else {
                Some(kept)
            }
        };
        drop(expired);
        if refused.is_none() {
            self.kept.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Checks that ran in an instance kept from an earlier check.
    pub fn reused(&self) -> u64 {
        self.reused.load(Ordering::Relaxed)
    }

    /// Instances idle now.
    pub fn idle(&self) -> usize {
        self.idle.lock().map_or(0, |i| i.count)
    }
}
