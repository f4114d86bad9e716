//! What check outcomes mean: consecutive counters, monitor state, and (with alert
//! policies) incidents. The engine receives check records from the scheduler and writes
//! them, with every state change they cause, in one transaction.

pub mod health;
pub mod recorder;

pub use recorder::{CheckRecord, Recorder};
