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

/// The shortest check interval the specification offers every plan (its monitor form
/// offers 30 s, 60 s, 5 m, 10 m and 30 m; only escalation depends on the plan). No plan's
/// default quota may ask for more; the server's own `min_interval` is the floor for all.
pub const SPEC_SHORTEST_INTERVAL: u32 = 30;

/// What a workspace may own and how often its monitors may run, by plan. `None` is no
/// limit. The server's own `min_interval` still applies on top of a plan's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Quota {
    pub monitors: Option<u32>,
    pub channels: Option<u32>,
    pub status_pages: Option<u32>,
    pub members: Option<u32>,
    pub api_keys: Option<u32>,
    /// Shortest monitor interval, in seconds.
    pub min_interval: Option<u32>,
}

/// Things a workspace owns that a plan counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counted {
    Monitors,
    Channels,
    StatusPages,
    Members,
    ApiKeys,
}

impl Counted {
    /// How a message names them.
    pub fn noun(self) -> &'static str {
        match self {
            Counted::Monitors => "monitors",
            Counted::Channels => "channels",
            Counted::StatusPages => "status pages",
            Counted::Members => "members",
            Counted::ApiKeys => "active API keys",
        }
    }
}

impl Quota {
    /// The defaults: room to try on `free`, a team's worth on `pro`, a company's on
    /// `business`, and no limits on `enterprise`. Every plan may check as often as the
    /// specification offers ([`SPEC_SHORTEST_INTERVAL`]); `business` more often when the
    /// server's `min_interval` allows it.
    pub fn default_for(plan: Plan) -> Quota {
        let q = |m, c, s, mem, k, i| Quota {
            monitors: Some(m),
            channels: Some(c),
            status_pages: Some(s),
            members: Some(mem),
            api_keys: Some(k),
            min_interval: Some(i),
        };
        match plan {
            Plan::Free => q(50, 10, 3, 5, 10, SPEC_SHORTEST_INTERVAL),
            Plan::Pro => q(500, 50, 20, 25, 50, SPEC_SHORTEST_INTERVAL),
            Plan::Business => q(5_000, 200, 100, 100, 200, 10),
            Plan::Enterprise => Quota {
                monitors: None,
                channels: None,
                status_pages: None,
                members: None,
                api_keys: None,
                min_interval: None,
            },
        }
    }

    /// The limit on `what`.
    pub fn of(&self, what: Counted) -> Option<u32> {
        match what {
            Counted::Monitors => self.monitors,
            Counted::Channels => self.channels,
            Counted::StatusPages => self.status_pages,
            Counted::Members => self.members,
            Counted::ApiKeys => self.api_keys,
        }
    }

    /// The configured values over the defaults, key by key; a configured `0` is no limit.
    pub fn over(self, base: Quota) -> Quota {
        let merged = Quota {
            monitors: self.monitors.or(base.monitors),
            channels: self.channels.or(base.channels),
            status_pages: self.status_pages.or(base.status_pages),
            members: self.members.or(base.members),
            api_keys: self.api_keys.or(base.api_keys),
            min_interval: self.min_interval.or(base.min_interval),
        };
        let unlimited = |v: Option<u32>| v.filter(|n| *n > 0);
        Quota {
            monitors: unlimited(merged.monitors),
            channels: unlimited(merged.channels),
            status_pages: unlimited(merged.status_pages),
            members: unlimited(merged.members),
            api_keys: unlimited(merged.api_keys),
            min_interval: unlimited(merged.min_interval),
        }
    }
}

/// The quota of every plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quotas {
    pub free: Quota,
    pub pro: Quota,
    pub business: Quota,
    pub enterprise: Quota,
}

impl Default for Quotas {
    fn default() -> Quotas {
        Quotas {
            free: Quota::default_for(Plan::Free),
            pro: Quota::default_for(Plan::Pro),
            business: Quota::default_for(Plan::Business),
            enterprise: Quota::default_for(Plan::Enterprise),
        }
    }
}

impl Quotas {
    pub fn of(&self, plan: Plan) -> &Quota {
        match plan {
            Plan::Free => &self.free,
            Plan::Pro => &self.pro,
            Plan::Business => &self.business,
            Plan::Enterprise => &self.enterprise,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLANS: [Plan; 4] = [Plan::Free, Plan::Pro, Plan::Business, Plan::Enterprise];

    #[test]
    fn no_default_quota_is_stricter_than_the_specification() {
        for plan in PLANS {
            let quota = Quota::default_for(plan);
            assert!(
                quota
                    .min_interval
                    .is_none_or(|min| min <= SPEC_SHORTEST_INTERVAL),
                "the {} plan's default shortest interval {:?} s is stricter than the \
                 specification's {SPEC_SHORTEST_INTERVAL} s",
                plan.as_str(),
                quota.min_interval
            );
            // As the server reads it too: no configuration, the defaults.
            assert_eq!(*Quotas::default().of(plan), quota);
        }
    }
}
