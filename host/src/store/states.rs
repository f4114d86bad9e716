//! The states a monitor, an incident and a delivery can be in, stored as their lowercase
//! names. One enum each, so a state is a type the compiler checks and not a string
//! spread over modules.

use sea_orm::Iterable;
use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

/// What a monitor's checks currently say.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, EnumIter, DeriveActiveEnum, Serialize, Deserialize,
)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::None)")]
#[serde(rename_all = "lowercase")]
pub enum MonitorState {
    /// Created or resumed, and no check has passed yet.
    #[sea_orm(string_value = "pending")]
    Pending,
    #[sea_orm(string_value = "up")]
    Up,
    /// Up, but its last checks were slower than its `degradedAfterMs` (as many as its
    /// policy's `degradedThreshold`). Counted as up in uptime.
    #[sea_orm(string_value = "degraded")]
    Degraded,
    /// While an incident is unresolved.
    #[sea_orm(string_value = "down")]
    Down,
    /// Not checked until resumed.
    #[sea_orm(string_value = "paused")]
    Paused,
}

/// Where an incident is in its life: `open` -> (`acknowledged`) -> `resolved`; an incident
/// opened while a monitor it depends on is down starts `suppressed` and becomes `open`
/// (notified) if it outlasts the parent's outage.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, EnumIter, DeriveActiveEnum, Serialize, Deserialize,
)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::None)")]
#[serde(rename_all = "lowercase")]
pub enum IncidentState {
    #[sea_orm(string_value = "open")]
    Open,
    #[sea_orm(string_value = "acknowledged")]
    Acknowledged,
    /// Held because a monitor it depends on is down: nobody is told, nothing escalates.
    #[sea_orm(string_value = "suppressed")]
    Suppressed,
    /// Final: a resolved incident is never reopened.
    #[sea_orm(string_value = "resolved")]
    Resolved,
}

/// Where a delivery (one outbox row) is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, EnumIter, DeriveActiveEnum, Serialize)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::None)")]
#[serde(rename_all = "lowercase")]
pub enum DeliveryState {
    /// Waiting for its next attempt (or for its first).
    #[sea_orm(string_value = "pending")]
    Pending,
    #[sea_orm(string_value = "succeeded")]
    Succeeded,
    /// Its retry schedule ran out, or the channel refused it for good.
    #[sea_orm(string_value = "failed")]
    Failed,
    /// A step of the alert pipeline sent it to other channels instead, or into a summary
    /// (`last_error` says where).
    #[sea_orm(string_value = "routed")]
    Routed,
    /// A step of the alert pipeline dropped it (`last_error` gives the step's reason).
    #[sea_orm(string_value = "dropped")]
    Dropped,
}

/// The stored names and parsing, shared by the three state types.
pub trait State: Sized + Copy + ActiveEnum<Value = String> + Iterable {
    /// The name as stored and as the API shows it.
    fn name(self) -> &'static str;

    /// The state called `text`, if any.
    fn parse(text: &str) -> Option<Self> {
        Self::iter().find(|s| s.name() == text)
    }

    /// Every name, in declaration order (for error messages listing the choices).
    fn names() -> Vec<&'static str> {
        Self::iter().map(State::name).collect()
    }
}

impl State for MonitorState {
    fn name(self) -> &'static str {
        match self {
            MonitorState::Pending => "pending",
            MonitorState::Up => "up",
            MonitorState::Degraded => "degraded",
            MonitorState::Down => "down",
            MonitorState::Paused => "paused",
        }
    }
}

impl State for IncidentState {
    fn name(self) -> &'static str {
        match self {
            IncidentState::Open => "open",
            IncidentState::Acknowledged => "acknowledged",
            IncidentState::Suppressed => "suppressed",
            IncidentState::Resolved => "resolved",
        }
    }
}

impl State for DeliveryState {
    fn name(self) -> &'static str {
        match self {
            DeliveryState::Pending => "pending",
            DeliveryState::Succeeded => "succeeded",
            DeliveryState::Failed => "failed",
            DeliveryState::Routed => "routed",
            DeliveryState::Dropped => "dropped",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_the_stored_values_and_parse_back() {
        for s in MonitorState::iter() {
            assert_eq!(s.name(), s.to_value());
            assert_eq!(MonitorState::parse(s.name()), Some(s));
        }
        for s in IncidentState::iter() {
            assert_eq!(s.name(), s.to_value());
            assert_eq!(IncidentState::parse(s.name()), Some(s));
        }
        for s in DeliveryState::iter() {
            assert_eq!(s.name(), s.to_value());
            assert_eq!(DeliveryState::parse(s.name()), Some(s));
        }
        assert_eq!(MonitorState::parse("Up"), None);
        assert_eq!(
            IncidentState::names(),
            ["open", "acknowledged", "suppressed", "resolved"]
        );
    }
}
