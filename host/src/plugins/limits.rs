//! Every limit a plugin call runs under, with its default and why. These are the only
//! numbers the runtime enforces; change them here.

use std::time::Duration;

/// Linear memory one plugin instance may hold. 64 MiB fits a Rust plugin many times over
/// and a Python or JavaScript plugin comfortably; a plugin that grows past it traps.
pub const MEMORY_LIMIT_BYTES: usize = 64 << 20;

/// Elements a table may grow to. Rust guests use a few hundred; interpreters a few thousand.
pub const MAX_TABLE_ELEMENTS: usize = 100_000;

/// Core instances, memories and tables one component may create (adapters and shims
/// add a few of each beside the main module).
pub const MAX_INSTANCES: usize = 32;
pub const MAX_MEMORIES: usize = 8;
pub const MAX_TABLES: usize = 32;

/// Live host resources (streams, handles) one call may hold.
pub const RESOURCE_TABLE_CAPACITY: usize = 1024;

/// Time a plugin gets after its check or delivery budget to turn host results into an
/// answer. A call still running at budget + margin is stopped.
pub const DEADLINE_MARGIN: Duration = Duration::from_millis(500);

/// Budget of `describe` and `validate-config`, which do no I/O.
pub const CONTROL_CALL_BUDGET: Duration = Duration::from_secs(2);

/// Budget of a pipeline step's `decide`, which does no I/O: a step still deciding after
/// it counts as absent and the notification goes on.
pub const PIPELINE_CALL_BUDGET: Duration = Duration::from_secs(2);

/// How often the epoch advances. A looping guest is noticed within one tick of its deadline.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// Plugin instances alive at once when the pooling allocator is in use. Every running
/// check holds one instance while it waits on the network, so this bounds concurrent checks.
pub const POOL_INSTANCES: u32 = 1000;

/// The pool split by kind of call, so one kind can never take the instances another needs:
/// checks waiting on slow targets cannot starve deliveries or the API's validation.
pub const CHECK_INSTANCES: u32 = 868;
/// Instances of built-in monitor plugins left idle between one workspace's checks
/// (`kept.rs`). Their slots are set aside here, so idle instances never take a slot a
/// starting check needs.
pub const KEPT_INSTANCES: u32 = 32;
/// Delivery attempts at once (the outbox worker's slots).
pub const DELIVERY_INSTANCES: u32 = 32;
/// `describe` and `validate-config` calls at once (plugin loading, API validation).
pub const CONTROL_INSTANCES: u32 = 64;
const _: () = assert!(
    CHECK_INSTANCES + KEPT_INSTANCES + DELIVERY_INSTANCES + CONTROL_INSTANCES <= POOL_INSTANCES
);

/// Checks of one workspace running at once: a workspace whose targets all hang holds at
/// most this share of the check instances, the rest stay free for everyone else.
pub const CHECKS_PER_WORKSPACE: u32 = 225;

/// Most bytes of an HTTP response body handed to a plugin.
pub const HTTP_MAX_BODY_BYTES: u32 = 1024 * 1024;

/// Largest `details` object of a check outcome that is stored (JSON text). Larger or
/// malformed details are stored as `{}`; the verdict itself is kept.
pub const MAX_DETAILS_BYTES: usize = 16 * 1024;
