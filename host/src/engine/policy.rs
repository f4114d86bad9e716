//! What an alert policy means to the engine: thresholds, who is told, and escalation.
//!
//! Stored forms (JSON text in `alert_policies`):
//! - `channels`: a list whose items are `{"channelId": "ch_..."}` (a stored channel) or an
//!   inline channel `{"type": "email", "target": "..."}`;
//! - `escalation`: `{"delayMinutes": 15, "channels": [...]}` or NULL.

use super::health::Thresholds;
pub use crate::outbox::Target;
use crate::store::{ChannelRow, PolicyRow, StoreError, Tx};
use serde_json::{Map, Value};
use std::collections::HashMap;

/// Escalation of unacknowledged incidents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Escalation {
    /// In order of `after_minutes`, which rises.
    pub steps: Vec<Step>,
    /// Start the steps again after the last, until someone acknowledges (at most
    /// [`MAX_ROUNDS`] rounds).
    pub repeat: bool,
}

/// One escalation step: these channels hear the DOWN this long after the incident opened
/// (or, in a repeated round, after the round began).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub after_minutes: u32,
    pub channels: Vec<Target>,
}

/// The most rounds a repeating escalation makes.
pub const MAX_ROUNDS: usize = 10;

impl Escalation {
    /// When the first step is due for an incident told at `from`.
    pub fn first_at(&self, from: i64) -> Option<i64> {
        self.steps
            .first()
            .map(|s| from + i64::from(s.after_minutes) * 60_000)
    }

    fn rounds(&self) -> usize {
        if self.repeat { MAX_ROUNDS } else { 1 }
    }

    /// The step to send once `done` steps were sent; None when none is left.
    pub fn step(&self, done: usize) -> Option<&Step> {
        let n = self.steps.len();
        if n == 0 || done >= n * self.rounds() {
            return None;
        }
        self.steps.get(done % n)
    }

    /// When the step after the one just sent (`done` steps sent, counting it) is due, at
    /// `now`; None when it was the last.
    pub fn next_at(&self, done: usize, now: i64) -> Option<i64> {
        let n = self.steps.len();
        let next = self.step(done)?;
        let gap = if done.is_multiple_of(n) {
            // A new round starts as if the incident had just been told.
            next.after_minutes
        } else {
            next.after_minutes
                .saturating_sub(self.steps[(done - 1) % n].after_minutes)
        };
        Some(now + i64::from(gap.max(1)) * 60_000)
    }

    /// The channels of the first `done` steps sent (each step once).
    pub fn told(&self, done: usize) -> impl Iterator<Item = &Target> {
        self.steps.iter().take(done).flat_map(|s| s.channels.iter())
    }
}

/// The escalation a policy stores: `{"steps": [{"afterMinutes", "channels"}], "repeat"}`,
/// or the older one-step `{"delayMinutes", "channels"}`. Each step's channels as JSON.
pub fn stored_steps(e: &Value) -> Vec<(u32, &Value)> {
    let minutes = |v: &Value| v.as_u64().and_then(|m| u32::try_from(m).ok()).unwrap_or(0);
    match e.get("steps").and_then(Value::as_array) {
        Some(steps) => steps
            .iter()
            .map(|s| (minutes(&s["afterMinutes"]), &s["channels"]))
            .collect(),
        None => vec![(minutes(&e["delayMinutes"]), &e["channels"])],
    }
}

/// When a monitor counts as flapping: more than `changes` changes within `window_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flapping {
    pub changes: u32,
    pub window_ms: i64,
}

/// Reminders of an open, unacknowledged incident: every `every_ms`, at most `limit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repeat {
    pub every_ms: i64,
    pub limit: i32,
}

/// A policy, ready to act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rules {
    pub thresholds: Thresholds,
    pub notify_on_recovery: bool,
    /// Tell the channels when a monitor becomes degraded and when that ends.
    pub notify_degraded: bool,
    pub channels: Vec<Target>,
    pub escalation: Option<Escalation>,
    /// Seconds over which openings are gathered into one e-mail or Telegram message.
    pub group_window_secs: i64,
    /// Flapping detection; None is off.
    pub flapping: Option<Flapping>,
    /// Reminders; None is off.
    pub repeat: Option<Repeat>,
}

impl Rules {
    /// When the first reminder of an incident told at `now` is due, if the policy reminds.
    pub fn first_reminder(&self, now: i64) -> Option<i64> {
        self.repeat
            .filter(|r| r.limit > 0)
            .map(|r| now + r.every_ms)
    }
}

impl Default for Rules {
    /// A monitor without a policy: default thresholds, nobody notified.
    fn default() -> Self {
        Rules {
            thresholds: Thresholds::default(),
            notify_on_recovery: true,
            notify_degraded: false,
            channels: Vec::new(),
            escalation: None,
            group_window_secs: 0,
            flapping: None,
            repeat: None,
        }
    }
}

/// An inline channel object split into its type and its configuration.
pub fn split_inline(item: &Map<String, Value>) -> Option<(String, Map<String, Value>)> {
    let kind = item.get("type")?.as_str()?.to_string();
    let mut config = item.clone();
    config.remove("type");
    Some((kind, config))
}

fn targets(items: &Value, stored: &HashMap<String, ChannelRow>) -> Vec<Target> {
    let Some(items) = items.as_array() else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(|item| {
            let item = item.as_object()?;
            if let Some(id) = item.get("channelId").and_then(Value::as_str) {
                match stored.get(id) {
                    Some(c) => Some(Target {
                        kind: c.kind.clone(),
                        config: c.config.clone(),
                        channel_id: Some(c.id.clone()),
                    }),
                    None => {
                        tracing::warn!(
                            channel = id,
                            "an alert policy refers to a channel that no longer exists; skipped"
                        );
                        None
                    }
                }
            } else {
                let (kind, config) = split_inline(item)?;
                Some(Target {
                    kind,
                    config: Value::Object(config).to_string(),
                    channel_id: None,
                })
            }
        })
        .collect()
}

fn channel_ids(items: &Value, into: &mut Vec<String>) {
    if let Some(items) = items.as_array() {
        for item in items {
            if let Some(id) = item.get("channelId").and_then(Value::as_str) {
                into.push(id.to_string());
            }
        }
    }
}

/// The rules of a policy (defaults when there is none or it was deleted).
pub async fn rules_of(tx: &Tx, policy_id: Option<&str>) -> Result<Rules, StoreError> {
    let Some(id) = policy_id else {
        return Ok(Rules::default());
    };
    let policies = tx.policies_by_ids(vec![id.to_string()]).await?;
    Ok(load_rules(tx, &policies)
        .await?
        .remove(id)
        .unwrap_or_default())
}

/// Turn stored policies into rules, resolving stored channels in one query.
pub async fn load_rules(
    tx: &Tx,
    policies: &[PolicyRow],
) -> Result<HashMap<String, Rules>, StoreError> {
    let mut parsed = Vec::with_capacity(policies.len());
    let mut ids = Vec::new();
    for p in policies {
        let channels: Value = serde_json::from_str(&p.channels).unwrap_or(Value::Array(vec![]));
        let escalation: Option<Value> = p
            .escalation
            .as_deref()
            .and_then(|e| serde_json::from_str(e).ok());
        channel_ids(&channels, &mut ids);
        if let Some(e) = &escalation {
            for (_, channels) in stored_steps(e) {
                channel_ids(channels, &mut ids);
            }
        }
        parsed.push((p, channels, escalation));
    }
    let stored: HashMap<String, ChannelRow> = tx
        .channels_among(ids)
        .await?
        .into_iter()
        .map(|c| (c.id.clone(), c))
        .collect();
    Ok(parsed
        .into_iter()
        .map(|(p, channels, escalation)| {
            // A stored channel of another workspace never counts.
            let mine: HashMap<String, ChannelRow> = stored
                .iter()
                .filter(|(_, c)| c.workspace_id == p.workspace_id)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            let rules = Rules {
                thresholds: Thresholds {
                    failure: u32::try_from(p.failure_threshold).unwrap_or(2).max(1),
                    recovery: u32::try_from(p.recovery_threshold).unwrap_or(1).max(1),
                    degraded: u32::try_from(p.degraded_threshold).unwrap_or(3).max(1),
                },
                notify_on_recovery: p.notify_on_recovery,
                notify_degraded: p.notify_degraded,
                channels: targets(&channels, &mine),
                escalation: escalation.map(|e| Escalation {
                    steps: stored_steps(&e)
                        .into_iter()
                        .map(|(after_minutes, channels)| Step {
                            after_minutes,
                            channels: targets(channels, &mine),
                        })
                        .collect(),
                    repeat: e["repeat"] == Value::Bool(true),
                }),
                group_window_secs: i64::from(p.group_window_secs.max(0)),
                flapping: (p.flap_changes > 0 && p.flap_window_minutes > 0).then(|| Flapping {
                    changes: p.flap_changes as u32,
                    window_ms: i64::from(p.flap_window_minutes) * 60_000,
                }),
                repeat: (p.repeat_every_minutes > 0).then(|| Repeat {
                    every_ms: i64::from(p.repeat_every_minutes) * 60_000,
                    limit: p.repeat_limit,
                }),
            };
            (p.id.clone(), rules)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_and_stored_channels_become_targets() {
        let mut stored = HashMap::new();
        stored.insert(
            "ch_1".to_string(),
            ChannelRow {
                id: "ch_1".into(),
                workspace_id: "ws".into(),
                name: "ops".into(),
                kind: "telegram".into(),
                config: r#"{"chatId":"42"}"#.into(),
                created_at: 0,
                updated_at: 0,
                apply_key: None,
                managed_by: None,
            },
        );
        let items: Value = serde_json::from_str(
            r#"[{"type":"email","target":"a@example.com"},{"channelId":"ch_1"},{"channelId":"ch_gone"}]"#,
        )
        .expect("json");
        let t = targets(&items, &stored);
        assert_eq!(t.len(), 2);
        assert_eq!(
            (
                t[0].kind.as_str(),
                t[0].config.as_str(),
                t[0].channel_id.as_deref()
            ),
            ("email", r#"{"target":"a@example.com"}"#, None)
        );
        assert_eq!(
            (t[1].kind.as_str(), t[1].channel_id.as_deref()),
            ("telegram", Some("ch_1"))
        );
    }

    #[test]
    fn no_policy_means_default_thresholds_and_silence() {
        let r = Rules::default();
        assert_eq!((r.thresholds.failure, r.thresholds.recovery), (2, 1));
        assert!(r.channels.is_empty() && r.escalation.is_none());
    }
}
