//! `/v1/alert-policies`: when incidents open and resolve, who hears, and escalation.

use super::AppState;
use super::channel_input;
use super::envelope::{ListBody, NoContent, Paged, Pagination, Success, SuccessBody};
use super::error::{ApiError, ErrorBody, FieldError, OrNotFound, Resource};
use super::extract::{ApiObject, ApiPath, ApiQuery};
use super::managed::DryRun;
use super::paging::{self, PageParams};
use crate::ids;
use crate::plans::Plan;
use crate::plugins::PluginHost;
use crate::store::alerting::PolicyRow;
use crate::store::keys::Principal;
use crate::store::managed::Declared;
use axum::Extension;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use utoipa::ToSchema;

const FIELDS: [&str; 15] = [
    "pipeline",
    "key",
    "managedBy",
    "flapping",
    "name",
    "failureThreshold",
    "recoveryThreshold",
    "notifyOnRecovery",
    "channels",
    "escalation",
    "groupWindowSeconds",
    "repeatEvery",
    "repeatLimit",
    "degradedThreshold",
    "notifyDegraded",
];

/// The longest gap between reminders, in minutes (a day).
const MAX_REPEAT_EVERY: u64 = 1440;
/// The most reminders one incident gets.
const MAX_REPEAT_LIMIT: u64 = 100;
/// Reminders one incident gets when `repeatLimit` is not given.
const DEFAULT_REPEAT_LIMIT: i32 = 10;

/// Longest group window.
pub const MAX_GROUP_WINDOW_SECS: u64 = 3600;

/// A channel on a policy: a stored channel (`{"channelId": "ch_..."}`) or an inline one
/// (`{"type": "email", "target": "..."}`, `{"type": "telegram", "chatId": "..."}`,
/// `{"type": "webhook", "url": "https://..."}`).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct PolicyChannel {
    pub channel_id: Option<String>,
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub target: Option<String>,
    pub chat_id: Option<String>,
    pub url: Option<String>,
}

/// Escalation of unacknowledged incidents (Business and Enterprise plans).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct EscalationBody {
    /// One step: minutes to wait for acknowledgement, 1 to 10080 (with `channels`).
    pub delay_minutes: Option<u32>,
    /// One step: who hears the DOWN then.
    pub channels: Option<Vec<PolicyChannel>>,
    /// Or several steps (instead of `delayMinutes` and `channels`), 1 to 10, with rising
    /// `afterMinutes`: each step's channels hear the DOWN that long after the incident was
    /// told, while nobody has acknowledged it.
    pub steps: Option<Vec<EscalationStep>>,
    /// With `steps`: after the last step, start again (as if the incident had just been
    /// told), until someone acknowledges it; at most 10 rounds.
    #[schema(default = false)]
    pub repeat: Option<bool>,
}

/// One escalation step.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct EscalationStep {
    /// Minutes after the incident was told (or the round began), 1 to 10080, more than
    /// the step before.
    pub after_minutes: u32,
    pub channels: Vec<PolicyChannel>,
}

/// When a monitor counts as flapping: more than `changes` state changes (down or up)
/// within `windowMinutes`. The change that crosses the line is told once
/// (`monitor.flapping_started`); its notifications are then held until it has been stable
/// for `windowMinutes`, and one summary (`monitor.flapping`) is sent.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct FlappingBody {
    /// 2 to 100.
    #[schema(example = 4)]
    pub changes: u32,
    /// 1 to 1440.
    #[schema(example = 10)]
    pub window_minutes: u32,
}

/// One step of an alert policy's pipeline.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct PipelineStep {
    /// A loaded pipeline plugin (`GET /v1/plugins?kind=pipeline`), e.g. `oncall-rota`.
    #[schema(example = "business-hours")]
    pub plugin: String,
    /// Its configuration, as its schema describes; the plugin fills in defaults. Every
    /// channel id (`ch_...`) it names must be a channel of the workspace.
    #[schema(value_type = Object)]
    pub config: Option<Value>,
}

/// An alert policy, as created and returned.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct PolicyBody {
    #[schema(read_only, example = "pol_01JD6Z3Y5N8Q2W7R4T6V9X0B1C")]
    pub id: Option<String>,
    pub name: String,
    /// Consecutive failures before an incident opens, 1 to 100.
    #[schema(default = 2)]
    pub failure_threshold: Option<u32>,
    /// Consecutive successes before it resolves, 1 to 100.
    #[schema(default = 1)]
    pub recovery_threshold: Option<u32>,
    /// Whether channels hear about recovery.
    #[schema(default = true)]
    pub notify_on_recovery: Option<bool>,
    pub channels: Vec<PolicyChannel>,
    pub escalation: Option<EscalationBody>,
    /// Seconds, 0 to 3600: incidents this policy opens within this many seconds of the
    /// first go out as one e-mail or Telegram message listing them all, sent when the
    /// window closes. Webhooks still get one event per incident, with a shared
    /// `incident.groupId`. 0 sends each at once.
    #[schema(default = 0, example = 60)]
    pub group_window_seconds: Option<u32>,
    /// Flapping detection; null (the default) is off.
    pub flapping: Option<FlappingBody>,
    /// Minutes, 0 to 1440: while an incident stays open and unacknowledged, its DOWN is
    /// sent again this often as `incident.reminder` ("still down for 2 h 10 min"), until
    /// someone acknowledges it, it resolves, or `repeatLimit` reminders went out; a
    /// snooze, a maintenance window or a pause postpones the next one. Longer than
    /// `groupWindowSeconds` when both are set. 0 (the default) is off.
    #[schema(default = 0, example = 30)]
    pub repeat_every: Option<u32>,
    /// The most reminders one incident gets, 1 to 100.
    #[schema(default = 10, example = 5)]
    pub repeat_limit: Option<u32>,
    /// Slow passing checks in a row (slower than a monitor's `degradedAfterMs`) that make
    /// the monitor `degraded`, 1 to 100.
    #[schema(default = 3)]
    pub degraded_threshold: Option<u32>,
    /// Tell the channels when a monitor becomes `degraded` (`monitor.degraded`) and when
    /// it is fast again (`monitor.degraded_ended`).
    #[schema(default = false)]
    pub notify_degraded: Option<bool>,
    /// Steps every notification to the policy's channels passes, in order, before it is
    /// sent (at most 8): each step's plugin lets it go on, routes it to other channels,
    /// adds fields (`enrichment`), holds it until a time (notifications held together can
    /// go out as one `alert.summary`) or drops it, and the incident's timeline records what
    /// it did. A step that fails counts as absent. `[]` or null (the default) is none.
    pub pipeline: Option<Vec<PipelineStep>>,
    /// Your stable identifier for the policy: 1 to 100 characters (letters, digits, `-`,
    /// `_`, `.`, `:`, `/`), unique among the workspace's policies (409 `CONFLICT`).
    /// Configuration files (`tocsin apply`) match policies by it.
    pub key: Option<String>,
    /// The tool that owns the policy (`tocsin apply` sets `tocsin-apply`).
    pub managed_by: Option<String>,
    #[schema(read_only)]
    pub created_at: Option<String>,
    #[schema(read_only)]
    pub updated_at: Option<String>,
}

/// An alert policy as the API shows it; channel settings that are write-only (a bot
/// token) left out.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyView {
    pub id: String,
    pub name: String,
    pub failure_threshold: i32,
    pub recovery_threshold: i32,
    pub notify_on_recovery: bool,
    pub channels: Value,
    pub escalation: Value,
    pub group_window_seconds: i32,
    pub flapping: Value,
    pub repeat_every: i32,
    pub repeat_limit: i32,
    pub degraded_threshold: i32,
    pub notify_degraded: bool,
    pub pipeline: Value,
    pub key: Option<String>,
    pub managed_by: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

fn view(plugins: &PluginHost, row: &PolicyRow) -> PolicyView {
    let channels: Value = serde_json::from_str(&row.channels).unwrap_or(Value::Array(vec![]));
    let escalation = match row
        .escalation
        .as_deref()
        .and_then(|e| serde_json::from_str(e).ok())
    {
        Some(mut e @ Value::Object(_)) => {
            for list in escalation_lists(&mut e) {
                *list = channel_input::visible_list(plugins, list);
            }
            e
        }
        Some(other) => other,
        None => Value::Null,
    };
    PolicyView {
        id: row.id.clone(),
        name: row.name.clone(),
        failure_threshold: row.failure_threshold,
        recovery_threshold: row.recovery_threshold,
        notify_on_recovery: row.notify_on_recovery,
        channels: channel_input::visible_list(plugins, &channels),
        escalation,
        group_window_seconds: row.group_window_secs,
        flapping: if row.flap_changes > 0 {
            json!({"changes": row.flap_changes, "windowMinutes": row.flap_window_minutes})
        } else {
            Value::Null
        },
        repeat_every: row.repeat_every_minutes,
        repeat_limit: row.repeat_limit,
        degraded_threshold: row.degraded_threshold,
        notify_degraded: row.notify_degraded,
        pipeline: super::pipeline_input::visible(plugins, row.pipeline.as_deref(), false),
        key: row.apply_key.clone(),
        managed_by: row.managed_by.clone(),
        created_at: crate::time::format_ms(row.created_at),
        updated_at: crate::time::format_ms(row.updated_at),
    }
}

/// The view as `p` may see it (a read key does not see what inline channels' schemas mark
/// secret: webhook URLs keep their origins only).
fn view_for(plugins: &PluginHost, p: &Principal, row: &PolicyRow) -> PolicyView {
    let mut v = view(plugins, row);
    if super::redact::applies(p) {
        super::redact::channel_list(plugins, &mut v.channels);
        for list in escalation_lists(&mut v.escalation) {
            super::redact::channel_list(plugins, list);
        }
        v.pipeline = super::pipeline_input::visible(plugins, row.pipeline.as_deref(), true);
    }
    v
}

fn threshold(
    object: &Map<String, Value>,
    field: &str,
    default: i32,
    errors: &mut Vec<FieldError>,
) -> i32 {
    match object.get(field) {
        None | Some(Value::Null) => default,
        Some(v) => match v.as_u64() {
            Some(n) if (1..=100).contains(&n) => n as i32,
            _ => {
                errors.push(FieldError::new(field, "must be an integer from 1 to 100"));
                default
            }
        },
    }
}

struct Validated {
    name: String,
    failure: i32,
    recovery: i32,
    notify_on_recovery: bool,
    channels: String,
    escalation: Option<String>,
    group_window_secs: i32,
    flap: (i32, i32),
    /// (`repeatEvery` minutes, `repeatLimit`)
    repeat: (i32, i32),
    /// (`degradedThreshold`, `notifyDegraded`)
    degraded: (i32, bool),
    pipeline: Option<String>,
    managed: super::managed::Managed,
}

async fn validate(
    state: &AppState,
    p: &Principal,
    object: &Map<String, Value>,
) -> Result<Validated, ApiError> {
    let mut errors = Vec::new();
    for key in object.keys() {
        if !FIELDS.contains(&key.as_str())
            && !["id", "createdAt", "updatedAt"].contains(&key.as_str())
        {
            errors.push(FieldError::new(key, "is not a field of an alert policy"));
        }
    }
    let name = super::fields::name(object.get("name"), &mut errors).unwrap_or_default();
    let managed = super::managed::read(object, &mut errors);
    let failure = threshold(object, "failureThreshold", 2, &mut errors);
    let recovery = threshold(object, "recoveryThreshold", 1, &mut errors);
    let notify_on_recovery = match object.get("notifyOnRecovery") {
        None | Some(Value::Null) => true,
        Some(Value::Bool(b)) => *b,
        Some(_) => {
            errors.push(FieldError::new("notifyOnRecovery", "must be true or false"));
            true
        }
    };
    let group_window_secs = match object.get("groupWindowSeconds") {
        None | Some(Value::Null) => 0,
        Some(v) => match v.as_u64() {
            Some(n) if n <= MAX_GROUP_WINDOW_SECS => n as i32,
            _ => {
                errors.push(FieldError::new(
                    "groupWindowSeconds",
                    format!("must be an integer from 0 to {MAX_GROUP_WINDOW_SECS}"),
                ));
                0
            }
        },
    };
    let flap = flapping(object.get("flapping"), &mut errors);
    let degraded = (
        bounded(object, "degradedThreshold", 3, 1..=100, &mut errors),
        match object.get("notifyDegraded") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => {
                errors.push(FieldError::new("notifyDegraded", "must be true or false"));
                false
            }
        },
    );
    let repeat = (
        bounded(object, "repeatEvery", 0, 0..=MAX_REPEAT_EVERY, &mut errors),
        bounded(
            object,
            "repeatLimit",
            DEFAULT_REPEAT_LIMIT,
            1..=MAX_REPEAT_LIMIT,
            &mut errors,
        ),
    );
    // A reminder must not come before the grouped DOWN it reminds of.
    if repeat.0 > 0 && i64::from(repeat.0) * 60 <= i64::from(group_window_secs) {
        errors.push(FieldError::new(
            "repeatEvery",
            "must be longer than groupWindowSeconds, so a reminder never comes before the grouped message it reminds of",
        ));
    }
    let escalation = read_escalation(object.get("escalation"), &mut errors);
    paging::finish(errors)?;
    let channels = channel_input::validate_channel_list(
        state,
        &p.workspace_id,
        object.get("channels"),
        "channels",
    )
    .await?;
    let escalation = match escalation {
        None => None,
        Some(e) => {
            let ws = state
                .store
                .workspace(&p.workspace_id)
                .await?
                .ok_or_else(|| ApiError::internal("workspace vanished"))?;
            if matches!(Plan::parse(&ws.plan), Some(Plan::Free | Plan::Pro)) {
                return Err(ApiError::new(
                    StatusCode::FORBIDDEN,
                    "PLAN_UPGRADE_REQUIRED",
                    format!(
                        "Escalation needs the Business or Enterprise plan; this workspace is on {}",
                        ws.plan
                    ),
                ));
            }
            let mut lists = Vec::with_capacity(e.steps.len());
            for (i, (_, channels)) in e.steps.iter().enumerate() {
                let field = if e.one_step {
                    "escalation.channels".to_string()
                } else {
                    format!("escalation.steps[{i}].channels")
                };
                lists.push(
                    channel_input::validate_channel_list(
                        state,
                        &p.workspace_id,
                        channels.as_ref(),
                        &field,
                    )
                    .await?,
                );
            }
            Some(e.stored(lists).to_string())
        }
    };
    let pipeline =
        super::pipeline_input::validate_pipeline(state, &p.workspace_id, object.get("pipeline"))
            .await?;
    Ok(Validated {
        name,
        failure,
        recovery,
        notify_on_recovery,
        channels: channels.to_string(),
        escalation,
        group_window_secs,
        flap,
        repeat,
        degraded,
        pipeline,
        managed,
    })
}

/// The longest wait of an escalation step, in minutes (a week).
const MAX_STEP_MINUTES: u64 = 10_080;
/// The most steps one escalation has.
const MAX_STEPS: usize = 10;

/// An escalation as asked for, before its channels are checked.
struct EscalationInput {
    /// `(afterMinutes, channels)` of each step.
    steps: Vec<(u64, Option<Value>)>,
    repeat: bool,
    /// Given as `{delayMinutes, channels}`: stored and shown so.
    one_step: bool,
}

impl EscalationInput {
    /// The stored form, with each step's checked channel list.
    fn stored(&self, lists: Vec<Value>) -> Value {
        if self.one_step {
            let delay = self.steps.first().map_or(0, |s| s.0);
            let list = lists.into_iter().next().unwrap_or(Value::Array(vec![]));
            return json!({"delayMinutes": delay, "channels": list});
        }
        let steps: Vec<Value> = self
            .steps
            .iter()
            .zip(lists)
            .map(|((after, _), list)| json!({"afterMinutes": after, "channels": list}))
            .collect();
        json!({"steps": steps, "repeat": self.repeat})
    }
}

/// `escalation`: `{delayMinutes, channels}` (one step) or `{steps, repeat}`; null is none.
fn read_escalation(value: Option<&Value>, errors: &mut Vec<FieldError>) -> Option<EscalationInput> {
    let e = match value {
        None | Some(Value::Null) => return None,
        Some(Value::Object(e)) => e,
        Some(_) => {
            errors.push(FieldError::new("escalation", "must be an object or null"));
            return None;
        }
    };
    let minutes = |v: Option<&Value>, field: String, errors: &mut Vec<FieldError>| match v
        .and_then(Value::as_u64)
    {
        Some(d) if (1..=MAX_STEP_MINUTES).contains(&d) => d,
        _ => {
            errors.push(FieldError::new(
                field,
                format!("must be an integer from 1 to {MAX_STEP_MINUTES}"),
            ));
            0
        }
    };
    if !e.contains_key("steps") {
        for key in e.keys() {
            if key != "delayMinutes" && key != "channels" {
                errors.push(FieldError::new(
                    format!("escalation.{key}"),
                    "is not a field of an escalation (delayMinutes and channels, or steps and repeat)",
                ));
            }
        }
        let delay = minutes(
            e.get("delayMinutes"),
            "escalation.delayMinutes".into(),
            errors,
        );
        return Some(EscalationInput {
            steps: vec![(delay, e.get("channels").cloned())],
            repeat: false,
            one_step: true,
        });
    }
    for key in e.keys() {
        if key != "steps" && key != "repeat" {
            errors.push(FieldError::new(
                format!("escalation.{key}"),
                "is not a field of an escalation with steps (steps and repeat)",
            ));
        }
    }
    let repeat = match e.get("repeat") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => {
            errors.push(FieldError::new(
                "escalation.repeat",
                "must be true or false",
            ));
            false
        }
    };
    let Some(list) = e.get("steps").and_then(Value::as_array) else {
        errors.push(FieldError::new(
            "escalation.steps",
            "must be a list of steps",
        ));
        return None;
    };
    if list.is_empty() || list.len() > MAX_STEPS {
        errors.push(FieldError::new(
            "escalation.steps",
            format!("must have 1 to {MAX_STEPS} steps"),
        ));
        return None;
    }
    let mut steps = Vec::with_capacity(list.len());
    let mut last = 0;
    for (i, step) in list.iter().enumerate() {
        let Some(step) = step.as_object() else {
            errors.push(FieldError::new(
                format!("escalation.steps[{i}]"),
                "must be an object: afterMinutes and channels",
            ));
            continue;
        };
        for key in step.keys() {
            if key != "afterMinutes" && key != "channels" {
                errors.push(FieldError::new(
                    format!("escalation.steps[{i}].{key}"),
                    "is not a field of a step (afterMinutes and channels)",
                ));
            }
        }
        let field = format!("escalation.steps[{i}].afterMinutes");
        let after = minutes(step.get("afterMinutes"), field.clone(), errors);
        if after != 0 && after <= last {
            errors.push(FieldError::new(
                field,
                "must be more than the step before's",
            ));
        }
        last = last.max(after);
        steps.push((after, step.get("channels").cloned()));
    }
    Some(EscalationInput {
        steps,
        repeat,
        one_step: false,
    })
}

/// How an escalation's `i`-th channel list is named in errors.
fn escalation_field(i: usize, of: usize) -> String {
    if of <= 1 && i == 0 {
        "escalation.channels".into()
    } else {
        format!("escalation.steps[{i}].channels")
    }
}

/// The channel lists of an escalation (stored or shown): its `channels`, or each step's.
pub fn escalation_lists(e: &mut Value) -> Vec<&mut Value> {
    let Value::Object(o) = e else {
        return Vec::new();
    };
    if !o.contains_key("steps") {
        return o.get_mut("channels").into_iter().collect();
    }
    match o.get_mut("steps") {
        Some(Value::Array(steps)) => steps
            .iter_mut()
            .filter_map(|s| s.get_mut("channels"))
            .collect(),
        _ => Vec::new(),
    }
}

/// An optional integer field within `range` (`default` when absent or null).
fn bounded(
    object: &Map<String, Value>,
    field: &str,
    default: i32,
    range: std::ops::RangeInclusive<u64>,
    errors: &mut Vec<FieldError>,
) -> i32 {
    match object.get(field) {
        None | Some(Value::Null) => default,
        Some(v) => match v.as_u64().filter(|n| range.contains(n)) {
            Some(n) => i32::try_from(n).unwrap_or(default),
            None => {
                errors.push(FieldError::new(
                    field,
                    format!(
                        "must be an integer from {} to {}",
                        range.start(),
                        range.end()
                    ),
                ));
                default
            }
        },
    }
}

/// `flapping`: `(changes, windowMinutes)`, `(0, 0)` when off or refused.
fn flapping(value: Option<&Value>, errors: &mut Vec<FieldError>) -> (i32, i32) {
    match value {
        None | Some(Value::Null) => (0, 0),
        Some(Value::Object(f)) => {
            let changes = f.get("changes").and_then(Value::as_u64);
            let minutes = f.get("windowMinutes").and_then(Value::as_u64);
            for key in f.keys() {
                if key != "changes" && key != "windowMinutes" {
                    errors.push(FieldError::new(
                        format!("flapping.{key}"),
                        "is not a field of flapping",
                    ));
                }
            }
            match (changes, minutes) {
                (Some(c), Some(m)) if (2..=100).contains(&c) && (1..=1440).contains(&m) => {
                    (c as i32, m as i32)
                }
                (c, _) if !c.is_some_and(|c| (2..=100).contains(&c)) => {
                    errors.push(FieldError::new(
                        "flapping.changes",
                        "must be an integer from 2 to 100",
                    ));
                    (0, 0)
                }
                _ => {
                    errors.push(FieldError::new(
                        "flapping.windowMinutes",
                        "must be an integer from 1 to 1440",
                    ));
                    (0, 0)
                }
            }
        }
        Some(_) => {
            errors.push(FieldError::new("flapping", "must be an object or null"));
            (0, 0)
        }
    }
}

async fn find(state: &AppState, p: &Principal, id: &str) -> Result<PolicyRow, ApiError> {
    state
        .store
        .alert_policy(&p.workspace_id, id)
        .await?
        .or_not_found(Resource::ALERT_POLICY, id)
}

/// Create an alert policy.
#[utoipa::path(post, path = "/v1/alert-policies", tag = "alert-policies", request_body = PolicyBody, params(DryRun),
    responses(
        (status = 201, description = "The created policy", body = SuccessBody<PolicyBody>),
        (status = 200, description = "With `dryRun=true`: the policy as it would be created; nothing was saved", body = SuccessBody<PolicyBody>),
        (status = 409, description = "CONFLICT: another policy has this key", body = ErrorBody),
        (status = 400, description = "Invalid fields", body = ErrorBody),
        (status = 403, description = "PLAN_UPGRADE_REQUIRED: escalation on a free or pro workspace", body = ErrorBody),
        (status = 422, description = "Unknown channel or channel type", body = ErrorBody),
    ))]
pub async fn create_policy(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiQuery(dry): ApiQuery<DryRun>,
    ApiObject(object): ApiObject,
) -> Result<Success<PolicyView>, ApiError> {
    if object.contains_key("id") {
        return Err(ApiError::validation(vec![FieldError::new(
            "id",
            "is read-only",
        )]));
    }
    let v = validate(&state, &p, &object).await?;
    let kind = Declared::AlertPolicy;
    super::managed::check_key_free(
        &state,
        kind,
        &p.workspace_id,
        v.managed.key.as_deref(),
        None,
    )
    .await?;
    let now = state.clock.now_ms();
    let row = PolicyRow {
        id: ids::new_id(ids::prefix::ALERT_POLICY),
        workspace_id: p.workspace_id.clone(),
        name: v.name,
        failure_threshold: v.failure,
        recovery_threshold: v.recovery,
        notify_on_recovery: v.notify_on_recovery,
        channels: v.channels,
        escalation: v.escalation,
        group_window_secs: v.group_window_secs,
        flap_changes: v.flap.0,
        flap_window_minutes: v.flap.1,
        repeat_every_minutes: v.repeat.0,
        repeat_limit: v.repeat.1,
        degraded_threshold: v.degraded.0,
        notify_degraded: v.degraded.1,
        pipeline: v.pipeline,
        created_at: now,
        updated_at: now,
        apply_key: v.managed.key,
        managed_by: v.managed.managed_by,
    };
    if dry.on() {
        return Ok(Success::ok(view(&state.plugins, &row)));
    }
    crate::store::audit::note(
        crate::store::audit::Change::new(
            Some(&p.workspace_id),
            "alert_policy.create",
            "alert_policy",
            Some(&row.id),
        )
        .after(super::redact::audit::policy(
            &state.plugins,
            &view(&state.plugins, &row),
        )),
    );
    let key = row.apply_key.clone();
    let saved = super::managed::or_key_taken(
        state.store.insert_alert_policy(row).await,
        kind,
        key.as_deref(),
    )?;
    Ok(Success::created(view(&state.plugins, &saved)))
}

/// List alert policies, newest first.
#[utoipa::path(get, path = "/v1/alert-policies", tag = "alert-policies", params(PageParams),
    responses((status = 200, description = "A page of policies", body = ListBody<PolicyBody>)))]
pub async fn list_policies(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiQuery(pg): ApiQuery<PageParams>,
) -> Result<Paged<PolicyView>, ApiError> {
    let mut errors = Vec::new();
    let page = pg.page(&mut errors);
    paging::finish(errors)?;
    let (rows, total) = state
        .store
        .list_alert_policies(&p.workspace_id, page)
        .await?;
    Ok(Paged {
        items: rows
            .iter()
            .map(|r| view_for(&state.plugins, &p, r))
            .collect(),
        pagination: Pagination::new(page, total),
    })
}

/// Get an alert policy.
#[utoipa::path(get, path = "/v1/alert-policies/{id}", tag = "alert-policies", params(("id" = String, Path, description = "Policy id")),
    responses(
        (status = 200, description = "The policy", body = SuccessBody<PolicyBody>),
        (status = 404, description = "ALERT_POLICY_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn get_policy(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiPath(id): ApiPath<String>,
) -> Result<Success<PolicyView>, ApiError> {
    Ok(Success::ok(view_for(
        &state.plugins,
        &p,
        &find(&state, &p, &id).await?,
    )))
}

/// Change fields of an alert policy; absent fields keep their values.
#[utoipa::path(patch, path = "/v1/alert-policies/{id}", tag = "alert-policies", params(("id" = String, Path, description = "Policy id"), DryRun),
    request_body(content = Object, description = "Fields to change, as in PolicyBody"),
    responses(
        (status = 200, description = "The updated policy (with `dryRun=true`: as it would be; nothing was saved)", body = SuccessBody<PolicyBody>),
        (status = 400, description = "Invalid fields, or a write-only value (a password, a token) not given again although its target (host, port, URL origin) changed", body = ErrorBody),
        (status = 403, description = "PLAN_UPGRADE_REQUIRED", body = ErrorBody),
        (status = 404, description = "ALERT_POLICY_NOT_FOUND", body = ErrorBody),
        (status = 409, description = "CONFLICT: another policy has this key", body = ErrorBody),
    ))]
pub async fn update_policy(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(dry): ApiQuery<DryRun>,
    ApiObject(patch): ApiObject,
) -> Result<Success<PolicyView>, ApiError> {
    edit(&state, &p, &id, dry.on(), patch, false).await
}

/// Replace an alert policy's fields: the body is a complete policy, and fields it leaves
/// out take their defaults (an inline channel's write-only settings, such as a bot token,
/// keep their stored values).
#[utoipa::path(put, path = "/v1/alert-policies/{id}", tag = "alert-policies", params(("id" = String, Path, description = "Policy id"), DryRun),
    request_body = PolicyBody,
    responses(
        (status = 200, description = "The policy as replaced (with `dryRun=true`: as it would be; nothing was saved)", body = SuccessBody<PolicyBody>),
        (status = 400, description = "Invalid fields, or a write-only value (a password, a token) not given again although its target (host, port, URL origin) changed", body = ErrorBody),
        (status = 403, description = "PLAN_UPGRADE_REQUIRED", body = ErrorBody),
        (status = 404, description = "ALERT_POLICY_NOT_FOUND", body = ErrorBody),
        (status = 409, description = "CONFLICT: another policy has this key", body = ErrorBody),
    ))]
pub async fn replace_policy(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(dry): ApiQuery<DryRun>,
    ApiObject(body): ApiObject,
) -> Result<Success<PolicyView>, ApiError> {
    edit(&state, &p, &id, dry.on(), body, true).await
}

/// An edit: a PATCH merged into the stored fields, or a PUT's complete object.
async fn edit(
    state: &AppState,
    p: &Principal,
    id: &str,
    dry_run: bool,
    body: Map<String, Value>,
    replace: bool,
) -> Result<Success<PolicyView>, ApiError> {
    let row = find(state, p, id).await?;
    let mut merged = Map::new();
    if !replace {
        let current =
            serde_json::to_value(view(&state.plugins, &row)).map_err(ApiError::internal)?;
        for f in FIELDS {
            merged.insert(f.to_string(), current[f].clone());
        }
    }
    for (k, v) in body {
        merged.insert(k, v);
    }
    merged.remove("id");
    merged.remove("createdAt");
    merged.remove("updatedAt");
    // A pipeline sent back as it was shown (or left out of a PATCH) is kept as stored, not
    // checked again: what the view hides (write-only values) stays, and a step whose plugin
    // is gone or whose channel was renamed does not block an edit of something else.
    let keep_pipeline = row.pipeline.is_some()
        && merged.get("pipeline")
            == Some(&super::pipeline_input::visible(
                &state.plugins,
                row.pipeline.as_deref(),
                false,
            ));
    if keep_pipeline {
        merged.remove("pipeline");
    }
    // The view hides write-only settings (a bot token): an inline channel the PATCH leaves
    // in place, or sends back as it was shown, keeps the stored ones.
    let stored_channels: Value = serde_json::from_str(&row.channels).unwrap_or(Value::Null);
    let given_channels = match merged.get_mut("channels") {
        Some(list) => {
            channel_input::carry_write_only(&state.plugins, list, &stored_channels, "channels")?
        }
        None => Vec::new(),
    };
    let stored_escalation: Value = row
        .escalation
        .as_deref()
        .and_then(|e| serde_json::from_str(e).ok())
        .unwrap_or(Value::Null);
    // Each list of the escalation against the stored list in the same place (its step).
    let mut stored_lists = stored_escalation.clone();
    let stored_lists: Vec<Value> = escalation_lists(&mut stored_lists)
        .into_iter()
        .map(|l| l.clone())
        .collect();
    let mut given_escalation = Vec::new();
    if let Some(e) = merged.get_mut("escalation") {
        for (i, list) in escalation_lists(e).into_iter().enumerate() {
            let stored = stored_lists.get(i).unwrap_or(&Value::Null);
            given_escalation.push(channel_input::carry_write_only(
                &state.plugins,
                list,
                stored,
                &escalation_field(i, stored_lists.len()),
            )?);
        }
    }
    let mut v = validate(state, p, &merged).await?;
    if keep_pipeline {
        v.pipeline = row.pipeline.clone();
    }
    // Compared once normalised (defaults filled in): a carried token must not follow a
    // channel to a new server.
    let new_channels: Value = serde_json::from_str(&v.channels).unwrap_or(Value::Null);
    channel_input::secrets_stay_with_targets(
        &state.plugins,
        &new_channels,
        &stored_channels,
        &given_channels,
        "channels",
    )?;
    let mut new_escalation: Value = v
        .escalation
        .as_deref()
        .and_then(|e| serde_json::from_str(e).ok())
        .unwrap_or(Value::Null);
    let new_lists = escalation_lists(&mut new_escalation);
    let count = new_lists.len();
    for (i, list) in new_lists.into_iter().enumerate() {
        channel_input::secrets_stay_with_targets(
            &state.plugins,
            list,
            stored_lists.get(i).unwrap_or(&Value::Null),
            given_escalation.get(i).map_or(&[][..], Vec::as_slice),
            &escalation_field(i, count),
        )?;
    }
    let kind = Declared::AlertPolicy;
    let own = Some(row.id.as_str());
    super::managed::check_key_free(state, kind, &p.workspace_id, v.managed.key.as_deref(), own)
        .await?;
    let before = super::redact::audit::policy(&state.plugins, &view(&state.plugins, &row));
    // Reminders turned on, off or re-timed reach the policy's open incidents at once.
    let reminders_from =
        ((row.repeat_every_minutes, row.repeat_limit) != v.repeat).then(|| state.clock.now_ms());
    let updated = PolicyRow {
        name: v.name,
        failure_threshold: v.failure,
        recovery_threshold: v.recovery,
        notify_on_recovery: v.notify_on_recovery,
        channels: v.channels,
        escalation: v.escalation,
        group_window_secs: v.group_window_secs,
        flap_changes: v.flap.0,
        flap_window_minutes: v.flap.1,
        repeat_every_minutes: v.repeat.0,
        repeat_limit: v.repeat.1,
        degraded_threshold: v.degraded.0,
        notify_degraded: v.degraded.1,
        pipeline: v.pipeline,
        apply_key: v.managed.key,
        managed_by: v.managed.managed_by,
        updated_at: state.clock.now_ms(),
        ..row
    };
    if dry_run {
        return Ok(Success::ok(view(&state.plugins, &updated)));
    }
    crate::store::audit::note(
        crate::store::audit::Change::new(
            Some(&p.workspace_id),
            "alert_policy.update",
            "alert_policy",
            Some(&updated.id),
        )
        .before(before)
        .after(super::redact::audit::policy(
            &state.plugins,
            &view(&state.plugins, &updated),
        )),
    );
    let key = updated.apply_key.clone();
    let saved = super::managed::or_key_taken(
        state
            .store
            .update_alert_policy(updated, reminders_from)
            .await,
        kind,
        key.as_deref(),
    )?;
    Ok(Success::ok(view(&state.plugins, &saved)))
}

/// Delete an alert policy. Its monitors keep running without notifications.
#[utoipa::path(delete, path = "/v1/alert-policies/{id}", tag = "alert-policies", params(("id" = String, Path, description = "Policy id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "ALERT_POLICY_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn delete_policy(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiPath(id): ApiPath<String>,
) -> Result<NoContent, ApiError> {
    crate::store::audit::note(crate::store::audit::Change::new(
        Some(&p.workspace_id),
        "alert_policy.delete",
        "alert_policy",
        Some(&id),
    ));
    if state
        .store
        .delete_alert_policy(&p.workspace_id, &id)
        .await?
    {
        Ok(NoContent)
    } else {
        crate::store::audit::discard();
        Err(Resource::ALERT_POLICY.not_found(&id))
    }
}
