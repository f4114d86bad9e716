//! What check outcomes mean: consecutive counters, monitor state, incidents, escalation
//! and the events they cause. The engine receives check records from the scheduler and
//! writes them, with every state change they cause, in one transaction.

pub mod actions;
pub mod announcements;
pub mod certificates;
pub mod context;
pub mod degraded;
pub mod escalation;
pub mod flapping;
pub mod health;
pub mod heartbeat;
pub mod hold;
pub mod holds;
pub mod incidents;
pub mod locations;
pub mod maintenance;
pub mod policy;
pub mod recorder;
pub mod reminders;
pub mod retention;
pub mod schedules;

pub use context::EngineContext;
pub use recorder::{CheckRecord, Recorder};
