//! Workspace plans: what a workspace has paid for decides a few limits (how many alert
//! policy channels it may use, for example). A domain concept of its own, read by the
//! configuration (the bootstrap plan), the store and the API.

use serde::Deserialize;

/// A workspace plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Plan {
    Free,
    Pro,
    Business,
    Enterprise,
}

impl Plan {
    pub fn as_str(self) -> &'static str {
        match self {
            Plan::Free => "free",
            Plan::Pro => "pro",
            Plan::Business => "business",
            Plan::Enterprise => "enterprise",
        }
    }

    pub fn parse(text: &str) -> Option<Plan> {
        match text {
            "free" => Some(Plan::Free),
            "pro" => Some(Plan::Pro),
            "business" => Some(Plan::Business),
            "enterprise" => Some(Plan::Enterprise),
            _ => None,
        }
    }
}
