//! The alert pipeline: the steps of an alert policy (`alert_policies.pipeline`) that each
//! notification to the policy's channels passes before the outbox sends it. The engine
//! queues deliveries as always, in the transaction of the incident change; the worker,
//! holding a delivery's lease before its first attempt, asks the steps in order, and each
//! lets it go on, routes it to other channels, adds fields, holds it until a time or drops
//! it. What a step did is written in one transaction with the incident's timeline entry
//! (and any new deliveries), conditional on the delivery being as it was read, so two
//! workers never both act on one. The delivery's `pipeline` column keeps how far it came
//! ([`Progress`]), so a held notification resumes at the next step and a retried one does
//! not pass the steps again.
//!
//! A step whose plugin is not loaded, traps, runs out of time or answers what the server
//! cannot use (an unknown channel, a time in the past, a payload that is not an object)
//! counts as absent: the notification goes on, and the timeline says so. A step can hold
//! an alert back only by answering.
//!
//! Held notifications become one `alert.summary` only for a channel whose plugin asks for
//! `grouping` (it can say many things in one message); any other channel gets each held
//! notification on its own when the hold ends, so a receiver that knows nothing of
//! summaries (a pager, a webhook written for incident events) misses nothing.

use super::subscribers;
use crate::ids::{self, prefix};
use crate::plugins::{Alert, Decision, PluginHost};
use crate::store::{DeliveryRow, DeliveryState, Store, StoreError, Tx};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// The furthest ahead a step may hold a notification (8 days: a long weekend's morning
/// and a week's rota both fit).
pub const MAX_DELAY_MS: i64 = 8 * 24 * 3_600_000;
/// The most channels one route names.
pub const MAX_ROUTE: usize = 10;
/// The largest object one step adds under `enrichment`, as JSON text.
pub const MAX_ENRICHMENT_BYTES: usize = 16 * 1024;
/// The most notifications one summary lists; more held together go in the next one.
pub const MAX_SUMMARY: usize = 100;
/// The summary's event kind.
pub const SUMMARY_EVENT: &str = "alert.summary";

/// How far a delivery came through its policy's pipeline (the `pipeline` column, JSON).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Progress {
    /// The policy whose steps it passes (a summary has no monitor to find it by).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
    /// The index of the step that sees it next.
    pub next: usize,
    /// Times a step held it.
    #[serde(default)]
    pub delayed: u32,
    /// Held for a summary by the step of this index: when the hold ends, the deliveries
    /// it holds for the same channel until the same moment go out as one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary_by: Option<usize>,
    /// Every step has seen it: the attempts that follow (retries) do not ask again.
    #[serde(default)]
    pub passed: bool,
}

impl Progress {
    fn read(d: &DeliveryRow) -> Option<Progress> {
        d.pipeline
            .as_deref()
            .and_then(|p| serde_json::from_str(p).ok())
    }

    fn text(&self) -> Option<String> {
        serde_json::to_string(self).ok()
    }
}

/// One step of a policy's pipeline, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub plugin: String,
    /// The configuration as the plugin normalised it (JSON object text).
    pub config: String,
}

/// A policy's stored pipeline (`[{"plugin", "config"}]`), as steps.
pub fn steps_of(stored: Option<&str>) -> Vec<Step> {
    let Some(Value::Array(items)) = stored.and_then(|s| serde_json::from_str(s).ok()) else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(|s| {
            Some(Step {
                plugin: s["plugin"].as_str()?.to_string(),
                config: s
                    .get("config")
                    .map_or_else(|| "{}".into(), Value::to_string),
            })
        })
        .collect()
}

/// What the pipeline made of a delivery.
#[derive(Debug)]
pub enum Passage {
    /// Attempt it now: this row (its payload perhaps enriched, its progress written).
    Deliver(Box<DeliveryRow>),
    /// Nothing to attempt now: a step routed, held, dropped or summarised it, or another
    /// worker moved it first.
    Taken,
}

/// What the worker gives the steps besides the delivery.
pub struct Stage<'a> {
    pub store: &'a Store,
    pub plugins: &'a PluginHost,
    /// `[plugin_settings.<name>]` of the configuration, by plugin name.
    pub settings: &'a std::collections::BTreeMap<String, Value>,
    /// When the steps are asked (what they see as `now`).
    pub now: i64,
    /// The clock the renewed lease is read from once the steps have answered.
    pub clock: &'a dyn crate::clock::Clock,
    /// The lease the worker holds while it decides and attempts.
    pub lease_ms: i64,
}

/// A step's answer, checked: what the server can act on.
#[derive(Debug, Clone, PartialEq)]
enum Course {
    Deliver,
    Route(Vec<String>),
    Enrich(Map<String, Value>),
    Delay { until: i64, summary: bool },
    Drop(String),
}

/// Check a step's answer; Err says why the server cannot use it.
fn course(decision: Decision, now: i64) -> Result<Course, String> {
    match decision {
        Decision::Deliver => Ok(Course::Deliver),
        Decision::Route(mut channels) => {
            channels.sort();
            channels.dedup();
            if channels.is_empty() || channels.len() > MAX_ROUTE {
                return Err(format!("a route must name 1 to {MAX_ROUTE} channels"));
            }
            match channels
                .iter()
                .find(|id| !ids::is_valid(id, prefix::CHANNEL))
            {
                Some(bad) => Err(format!(
                    "`{}` is not a channel id",
                    crate::text::bounded(bad, 40)
                )),
                None => Ok(Course::Route(channels)),
            }
        }
        Decision::Enrich(text) => {
            if text.len() > MAX_ENRICHMENT_BYTES {
                return Err(format!(
                    "the fields to add are larger than {} KiB",
                    MAX_ENRICHMENT_BYTES / 1024
                ));
            }
            match serde_json::from_str(&text) {
                Ok(Value::Object(fields)) => Ok(Course::Enrich(fields)),
                _ => Err("the fields to add are not a JSON object".into()),
            }
        }
        Decision::Delay(d) => {
            if d.until <= now {
                Err("it asked to hold the alert until a moment already past".into())
            } else if d.until > now + MAX_DELAY_MS {
                Err("it asked to hold the alert more than 8 days".into())
            } else {
                Ok(Course::Delay {
                    until: d.until,
                    summary: d.summary,
                })
            }
        }
        Decision::Drop(reason) => {
            let reason = reason.trim();
            if reason.is_empty() {
                Err("it dropped the alert without a reason".into())
            } else {
                Ok(Course::Drop(crate::text::bounded(reason, 200)))
            }
        }
    }
}

/// Whether the server can act on a step's answer at `now` (the conformance kit's check):
/// Err says why it would count as absent.
pub fn check_decision(decision: Decision, now: i64) -> Result<(), String> {
    course(decision, now).map(|_| ())
}

/// How a decision reads in the timeline and `tocsin plugin check`.
pub fn describe_decision(decision: &Decision) -> String {
    match decision {
        Decision::Deliver => "deliver".into(),
        Decision::Route(channels) => format!("route to {}", channels.join(", ")),
        Decision::Enrich(fields) => format!("add {fields}"),
        Decision::Delay(d) => format!(
            "hold until {}{}",
            crate::time::format_ms(d.until),
            if d.summary { ", then in a summary" } else { "" }
        ),
        Decision::Drop(reason) => format!("drop: {reason}"),
    }
}

/// Whether a delivery is one a pipeline sees: a notification about a monitor, not a test,
/// not a status page's message to its subscribers.
fn pipelined(d: &DeliveryRow) -> bool {
    d.attempts == 0
        && !d.event.starts_with(subscribers::EVENT_PREFIX)
        && serde_json::from_str::<Value>(&d.payload).is_ok_and(|p| p["test"] != Value::Bool(true))
}

/// The most grouped incidents whose monitors' tags a step sees.
const MAX_GROUP_TAGS: usize = 100;

/// The steps `d` passes and the monitor's tags (a grouped message: every grouped
/// incident's monitor's, so a critical one among them is seen); None when its policy has
/// none.
async fn steps_for(
    store: &Store,
    d: &DeliveryRow,
    progress: &Progress,
) -> Result<Option<(String, Vec<Step>, Vec<String>)>, StoreError> {
    let monitor = match &d.monitor_id {
        Some(id) => store.monitor(&d.workspace_id, id).await?,
        None => None,
    };
    let tags_of = |m: &crate::store::MonitorRow| -> Vec<String> {
        serde_json::from_str(&m.tags).unwrap_or_default()
    };
    let mut tags: Vec<String> = monitor.as_ref().map(tags_of).unwrap_or_default();
    let payload: Value = serde_json::from_str(&d.payload).unwrap_or(Value::Null);
    if let Some(grouped) = payload["group"]["incidents"].as_array() {
        for id in grouped
            .iter()
            .filter_map(|i| i["monitor"]["id"].as_str())
            .filter(|id| Some(*id) != d.monitor_id.as_deref())
            .take(MAX_GROUP_TAGS)
        {
            if let Some(m) = store.monitor(&d.workspace_id, id).await? {
                tags.extend(tags_of(&m));
            }
        }
        tags.sort();
        tags.dedup();
    }
    let policy_id = match (&progress.policy, &monitor) {
        (Some(id), _) => id.clone(),
        (None, Some(m)) => match &m.alert_policy_id {
            Some(id) => id.clone(),
            None => return Ok(None),
        },
        (None, None) => return Ok(None),
    };
    let Some(policy) = store.alert_policy(&d.workspace_id, &policy_id).await? else {
        return Ok(None);
    };
    let steps = steps_of(policy.pipeline.as_deref());
    Ok((!steps.is_empty()).then_some((policy_id, steps, tags)))
}

/// Pass delivery `d` (claimed, untried) through its policy's pipeline.
pub async fn pass(stage: &Stage<'_>, d: DeliveryRow) -> Result<Passage, StoreError> {
    let progress = Progress::read(&d);
    if !pipelined(&d) || progress.as_ref().is_some_and(|p| p.passed) {
        return Ok(Passage::Deliver(Box::new(d)));
    }
    let mut progress = progress.unwrap_or_default();
    let Some((policy_id, steps, tags)) = steps_for(stage.store, &d, &progress).await? else {
        return Ok(Passage::Deliver(Box::new(d)));
    };
    progress.policy = Some(policy_id);
    if let Some(step) = progress.summary_by {
        if let Some(taken) = summarise(stage, &d, &progress, step, &steps).await? {
            return Ok(taken);
        }
        // Alone at the end of its hold: it goes on by itself.
        progress.summary_by = None;
    }
    let mut payload = d.payload.clone();
    let mut notes: Vec<(&'static str, Value)> = Vec::new();
    // Deliveries a route made while keeping `d` too: written with `d`'s next state.
    let mut fresh: Vec<DeliveryRow> = Vec::new();
    while let Some(step) = steps.get(progress.next) {
        let index = progress.next;
        progress.next += 1;
        let named = |mut details: Value| {
            details["step"] = Value::from(index);
            details["plugin"] = Value::from(step.plugin.as_str());
            details["event"] = Value::from(d.event.as_str());
            details["channel"] = channel_name(&d);
            details
        };
        let answer = ask(stage, &d, step, &payload, &tags, progress.delayed).await;
        match answer {
            Err(why) => {
                tracing::warn!(delivery = %d.id, plugin = %step.plugin, error = %why, "pipeline step failed; the alert goes on as if it were absent");
                notes.push(("pipeline_failed", named(json!({"error": why}))));
            }
            Ok(Course::Deliver) => {}
            Ok(Course::Enrich(fields)) => payload = enriched(&payload, fields),
            Ok(Course::Route(channels)) => {
                match routed(stage, &d, &payload, &progress, &channels).await? {
                    Routed::Away(rows) => {
                        fresh.extend(rows);
                        notes.push(("routed", named(json!({"channelIds": channels}))));
                        let after = DeliveryRow {
                            status: DeliveryState::Routed,
                            lease_until: None,
                            updated_at: stage.now,
                            last_error: Some(format!("Routed to {}", channels.join(", "))),
                            pipeline: Progress {
                                passed: true,
                                ..progress.clone()
                            }
                            .text(),
                            ..d.clone()
                        };
                        settle(stage.store, &d, &after, &fresh, &notes).await?;
                        return Ok(Passage::Taken);
                    }
                    Routed::AlsoHere(rows) => {
                        fresh.extend(rows);
                        let mut details = named(json!({"channelIds": channels}));
                        details["kept"] = Value::Bool(true);
                        notes.push(("routed", details));
                    }
                    Routed::Unknown(missing) => {
                        notes.push((
                            "pipeline_failed",
                            named(json!({"error": format!("it routed to {missing}, which is not a channel of this workspace")})),
                        ));
                    }
                }
            }
            Ok(Course::Delay { until, summary }) => {
                let after = DeliveryRow {
                    payload,
                    next_attempt_at: until,
                    lease_until: None,
                    updated_at: stage.now,
                    pipeline: Progress {
                        delayed: progress.delayed + 1,
                        summary_by: summary.then_some(index),
                        ..progress.clone()
                    }
                    .text(),
                    ..d.clone()
                };
                notes.push((
                    "delayed",
                    named(json!({"until": crate::time::format_ms(until), "summary": summary})),
                ));
                settle(stage.store, &d, &after, &fresh, &notes).await?;
                return Ok(Passage::Taken);
            }
            Ok(Course::Drop(reason)) => {
                let after = DeliveryRow {
                    payload,
                    status: DeliveryState::Dropped,
                    lease_until: None,
                    updated_at: stage.now,
                    last_error: Some(format!("Dropped by {}: {reason}", step.plugin)),
                    pipeline: Progress {
                        passed: true,
                        ..progress.clone()
                    }
                    .text(),
                    ..d.clone()
                };
                notes.push(("dropped", named(json!({"reason": reason}))));
                settle(stage.store, &d, &after, &fresh, &notes).await?;
                return Ok(Passage::Taken);
            }
        }
    }
    progress.passed = true;
    // The steps took time: the lease is renewed from now, for the attempt that follows.
    let after = DeliveryRow {
        payload,
        lease_until: Some(stage.clock.now_ms() + stage.lease_ms),
        updated_at: stage.now,
        pipeline: progress.text(),
        ..d.clone()
    };
    Ok(if settle(stage.store, &d, &after, &fresh, &notes).await? {
        Passage::Deliver(Box::new(after))
    } else {
        Passage::Taken
    })
}

/// The channel a delivery goes to, for the timeline: its id, or its type when inline.
fn channel_name(d: &DeliveryRow) -> Value {
    match &d.channel_id {
        Some(id) => Value::from(id.as_str()),
        None => Value::from(d.channel_kind.as_str()),
    }
}

/// Ask one step; Err says why its answer counts as absent.
async fn ask(
    stage: &Stage<'_>,
    d: &DeliveryRow,
    step: &Step,
    payload: &str,
    tags: &[String],
    delayed: u32,
) -> Result<Course, String> {
    let Some(plugin) = stage.plugins.pipeline(&step.plugin) else {
        return Err(format!(
            "no loaded plugin provides the pipeline step `{}`",
            step.plugin
        ));
    };
    let alert = Alert {
        event: d.event.clone(),
        payload: payload.to_string(),
        config: step.config.clone(),
        channel_id: d.channel_id.clone(),
        channel_type: d.channel_kind.clone(),
        tags: tags.to_vec(),
        now: stage.now,
        delayed,
        settings: stage
            .settings
            .get(&step.plugin)
            .map_or_else(|| "{}".into(), Value::to_string),
    };
    let decision = stage
        .plugins
        .decide(&plugin, alert)
        .await
        .map_err(|e| crate::text::bounded(&e.to_string(), crate::text::MAX_REASON_BYTES))?;
    course(decision, stage.now)
}

/// The payload with `fields` added to its `enrichment` object.
fn enriched(payload: &str, fields: Map<String, Value>) -> String {
    let Ok(Value::Object(mut o)) = serde_json::from_str::<Value>(payload) else {
        return payload.to_string();
    };
    let entry = o
        .entry("enrichment")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(existing) = entry {
        existing.extend(fields);
    }
    Value::Object(o).to_string()
}

/// The payload as delivery `id` carries it (receivers deduplicate by `webhookId`).
fn for_delivery(payload: &str, id: &str) -> String {
    super::events::with_object(payload, "webhookId", Value::from(id))
}

enum Routed {
    /// Sent elsewhere and not here: these deliveries replace `d`.
    Away(Vec<DeliveryRow>),
    /// The route names `d`'s own channel too: `d` goes on through the pipeline, and
    /// these deliveries go with it.
    AlsoHere(Vec<DeliveryRow>),
    /// A channel it named is not the workspace's: the answer counts as absent.
    Unknown(String),
}

/// The deliveries routing `d` to `channels` makes (each passes the steps after this one).
async fn routed(
    stage: &Stage<'_>,
    d: &DeliveryRow,
    payload: &str,
    progress: &Progress,
    channels: &[String],
) -> Result<Routed, StoreError> {
    let rows = stage
        .store
        .channels_by_ids(&d.workspace_id, channels.to_vec())
        .await?;
    if let Some(missing) = channels
        .iter()
        .find(|id| !rows.iter().any(|c| &c.id == *id))
    {
        return Ok(Routed::Unknown(missing.clone()));
    }
    let onward = Progress {
        summary_by: None,
        passed: false,
        ..progress.clone()
    };
    let fresh = rows
        .iter()
        .filter(|c| Some(&c.id) != d.channel_id.as_ref())
        .map(|c| {
            let id = ids::new_id(prefix::DELIVERY);
            DeliveryRow {
                id: id.clone(),
                channel_id: Some(c.id.clone()),
                channel_kind: c.kind.clone(),
                channel_config: c.config.clone(),
                payload: for_delivery(payload, &id),
                status: DeliveryState::Pending,
                attempts: 0,
                next_attempt_at: stage.now,
                lease_until: None,
                last_error: None,
                updated_at: stage.now,
                delivered_at: None,
                pipeline: onward.text(),
                ..d.clone()
            }
        })
        .collect();
    let keep = d
        .channel_id
        .as_ref()
        .is_some_and(|own| channels.contains(own));
    Ok(if keep {
        Routed::AlsoHere(fresh)
    } else {
        Routed::Away(fresh)
    })
}

/// Insert the routed deliveries a notification does not already have.
async fn insert_unsent(tx: &Tx, d: &DeliveryRow, fresh: &[DeliveryRow]) -> Result<(), StoreError> {
    for row in fresh {
        let channel = row.channel_id.as_deref().unwrap_or_default();
        if !tx.notification_reaches(d, channel).await? {
            tx.insert_delivery(row.clone()).await?;
        }
    }
    Ok(())
}

/// Write what the steps did to `d` (now `after`), the deliveries they made and the
/// timeline entries, in one transaction, if `d` is still as it was read (false: another
/// worker moved it first, and nothing was written).
async fn settle(
    store: &Store,
    d: &DeliveryRow,
    after: &DeliveryRow,
    fresh: &[DeliveryRow],
    notes: &[(&'static str, Value)],
) -> Result<bool, StoreError> {
    let tx = store.begin_write().await?;
    if !tx.advance_delivery(d, after, Some(d.lease_until)).await? {
        tx.commit_if(false).await?;
        return Ok(false);
    }
    insert_unsent(&tx, d, fresh).await?;
    if let Some(incident) = &d.incident_id {
        for (kind, details) in notes {
            tx.add_incident_event(incident, after.updated_at, kind, details)
                .await?;
        }
    }
    tx.commit().await?;
    Ok(true)
}

/// At the end of a summary hold: gather what step `step` held for `d`'s channel until
/// the same moment into one `alert.summary` delivery (at most [`MAX_SUMMARY`], oldest
/// first: the hundred `d` is among). None when `d` goes on alone: its channel does not ask
/// for `grouping`, or nothing else was held with it.
async fn summarise(
    stage: &Stage<'_>,
    d: &DeliveryRow,
    progress: &Progress,
    step: usize,
    steps: &[Step],
) -> Result<Option<Passage>, StoreError> {
    if !stage.plugins.channel_ability(&d.channel_kind).grouping {
        return Ok(None);
    }
    let held: Vec<DeliveryRow> = stage
        .store
        .held_together(d)
        .await?
        .into_iter()
        .filter(|m| {
            Progress::read(m).is_some_and(|p| {
                p.summary_by == Some(step) && p.policy == progress.policy && !p.passed
            })
        })
        .collect();
    let Some(at) = held.iter().position(|m| m.id == d.id) else {
        return Ok(None);
    };
    let chunk = &held[at - at % MAX_SUMMARY..held.len().min(at - at % MAX_SUMMARY + MAX_SUMMARY)];
    if chunk.len() < 2 {
        return Ok(None);
    }
    let id = ids::new_id(prefix::DELIVERY);
    let held_by = steps.get(step).map_or("", |s| s.plugin.as_str());
    let tx = stage.store.begin_write().await?;
    let mut gathered: Vec<&DeliveryRow> = Vec::new();
    for m in chunk {
        let after = DeliveryRow {
            status: DeliveryState::Routed,
            lease_until: None,
            updated_at: stage.now,
            last_error: Some(format!("Sent in the summary {id}")),
            ..m.clone()
        };
        // `d` is this worker's (its lease); the others may be any worker's, and go to the
        // one whose conditional write comes first.
        let lease = (m.id == d.id).then_some(d.lease_until);
        if tx.advance_delivery(m, &after, lease).await? {
            gathered.push(m);
        } else if m.id == d.id {
            // Another worker has `d`: leave everything to it.
            tx.commit_if(false).await?;
            return Ok(Some(Passage::Taken));
        }
    }
    if gathered.len() < 2 {
        tx.commit_if(false).await?;
        return Ok(None);
    }
    let alerts: Vec<Value> = gathered
        .iter()
        .filter_map(|m| serde_json::from_str::<Value>(&m.payload).ok())
        .map(|p| {
            let mut entry = Map::new();
            for key in [
                "event",
                "timestamp",
                "incident",
                "monitor",
                "failure",
                "ssl",
                "group",
                "enrichment",
            ] {
                if let Some(v) = p.get(key) {
                    entry.insert(key.into(), v.clone());
                }
            }
            Value::Object(entry)
        })
        .collect();
    let first: Value = serde_json::from_str(&d.payload).unwrap_or(Value::Null);
    let payload = json!({
        "event": SUMMARY_EVENT,
        "timestamp": crate::time::format_ms(stage.now),
        "webhookId": id,
        "summary": {
            "count": alerts.len(),
            "heldBy": held_by,
            "alerts": alerts,
        },
        "workspace": first["workspace"],
    });
    for m in &gathered {
        if let Some(incident) = &m.incident_id {
            tx.add_incident_event(
                incident,
                stage.now,
                "summarised",
                &json!({"step": step, "plugin": held_by, "event": m.event, "channel": channel_name(m),
                        "deliveryId": id, "count": gathered.len()}),
            )
            .await?;
        }
    }
    // Made at the moment the hold ended (not when a worker got to it), so that one step
    // after this one routing two channels' summaries to one person sends one.
    tx.insert_delivery(DeliveryRow {
        id: id.clone(),
        incident_id: None,
        monitor_id: None,
        event: SUMMARY_EVENT.to_string(),
        payload: payload.to_string(),
        status: DeliveryState::Pending,
        attempts: 0,
        next_attempt_at: stage.now,
        lease_until: None,
        last_error: None,
        created_at: d.next_attempt_at,
        updated_at: stage.now,
        delivered_at: None,
        pipeline: Progress {
            next: step + 1,
            delayed: 0,
            summary_by: None,
            passed: false,
            policy: progress.policy.clone(),
        }
        .text(),
        ..d.clone()
    })
    .await?;
    tx.commit().await?;
    Ok(Some(Passage::Taken))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::Delay;

    #[test]
    fn answers_the_server_cannot_use_count_as_absent() {
        let now = 1_000_000;
        assert_eq!(course(Decision::Deliver, now), Ok(Course::Deliver));
        assert!(course(Decision::Route(vec![]), now).is_err());
        assert!(course(Decision::Route(vec!["alice".into()]), now).is_err());
        let id = ids::new_id(prefix::CHANNEL);
        assert_eq!(
            course(Decision::Route(vec![id.clone(), id.clone()]), now),
            Ok(Course::Route(vec![id]))
        );
        assert!(course(Decision::Enrich("[1]".into()), now).is_err());
        assert!(course(Decision::Enrich("x".repeat(MAX_ENRICHMENT_BYTES + 1)), now).is_err());
        assert!(matches!(
            course(
                Decision::Enrich(r#"{"runbook":"https://runbooks/db"}"#.into()),
                now
            ),
            Ok(Course::Enrich(_))
        ));
        let delay = |until, summary| Decision::Delay(Delay { until, summary });
        assert!(course(delay(now, false), now).is_err());
        assert!(course(delay(now + MAX_DELAY_MS + 1, false), now).is_err());
        assert_eq!(
            course(delay(now + 60_000, true), now),
            Ok(Course::Delay {
                until: now + 60_000,
                summary: true
            })
        );
        assert!(course(Decision::Drop("  ".into()), now).is_err());
        assert_eq!(
            course(Decision::Drop("x".repeat(300)), now)
                .map(|c| matches!(c, Course::Drop(r) if r.len() <= 203)),
            Ok(true)
        );
    }

    #[test]
    fn enrichment_adds_to_what_earlier_steps_added() {
        let once = enriched(
            r#"{"event":"incident.created"}"#,
            json!({"a": 1}).as_object().cloned().unwrap_or_default(),
        );
        let twice = enriched(
            &once,
            json!({"b": 2}).as_object().cloned().unwrap_or_default(),
        );
        let v: Value = serde_json::from_str(&twice).unwrap_or(Value::Null);
        assert_eq!(v["enrichment"], json!({"a": 1, "b": 2}));
        assert_eq!(v["event"], "incident.created");
    }
}
