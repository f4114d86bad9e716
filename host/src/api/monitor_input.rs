//! Turning a monitor request body into a stored monitor, and a stored monitor into its
//! API view. Common fields are checked here; the type's own fields are checked by the
//! plugin that provides the type (`validate-config`).
//!
//! The spec's four types (`http`, `keyword`, `ping`, `ssl`) take their fields at the top
//! level of the monitor object; any other plugin type takes them under `config`.

use super::error::{ApiError, FieldError};
use crate::plugins::{HEARTBEAT, PluginHost};
use crate::store::{MonitorRow, State};
use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

/// Fields of the built-in types that express the same setting two ways (ssl thresholds in
/// days or as a share of the certificate's lifetime); a monitor has one of each pair.
const ALTERNATIVE_FIELDS: [(&str, &str); 2] = [
    ("warningDays", "warningPercent"),
    ("criticalDays", "criticalPercent"),
];

/// Fields every monitor has and the API accepts.
const COMMON_FIELDS: [&str; 14] = [
    "key",
    "managedBy",
    "tags",
    "dependsOn",
    "name",
    "type",
    "interval",
    "retryInterval",
    "timeout",
    "degradedAfterMs",
    "slaTarget",
    "alertPolicyId",
    "regions",
    "regionalConfirmation",
];
/// Fields the server sets.
const READ_ONLY_FIELDS: [&str; 11] = [
    "id",
    "stale",
    "pingUrl",
    "snoozedUntil",
    "status",
    "createdAt",
    "updatedAt",
    "lastCheckedAt",
    "lastResponseTimeMs",
    "consecutiveFailures",
    "consecutiveSuccesses",
];

pub const MAX_TIMEOUT_SECS: u64 = 60;
pub const DEFAULT_TIMEOUT_SECS: u64 = 10;
pub const MAX_INTERVAL_SECS: u64 = 86_400;

/// What validation produced: everything needed to store the monitor.
#[derive(Debug, Clone, PartialEq)]
pub struct MonitorInput {
    pub name: String,
    pub kind: String,
    pub interval_secs: u32,
    /// Seconds from a failing check to the next until the threshold decides; None: the
    /// interval.
    pub retry_interval_secs: Option<u32>,
    pub timeout_secs: u32,
    /// A passing check slower than this (ms) is slow; None: never degraded.
    pub degraded_after_ms: Option<u32>,
    /// The uptime it should reach, in parts per million; None: no target.
    pub sla_target_ppm: Option<u32>,
    pub alert_policy_id: Option<String>,
    /// Empty means every configured region.
    pub regions: Vec<String>,
    /// Re-check a failure from another of the monitor's regions before it counts.
    pub regional_confirmation: bool,
    /// Sorted, each once.
    pub tags: Vec<String>,
    /// Monitors this one depends on (ids, each once; their existence is checked by the
    /// caller, which can read the store).
    pub depends_on: Vec<String>,
    /// The plugin's normalised configuration (JSON text).
    pub config: String,
    /// `key` and `managedBy`.
    pub managed: super::managed::Managed,
}

/// Limits from the server configuration.
pub struct InputRules<'a> {
    pub min_interval: u32,
    pub regions: &'a [String],
}

/// A monitor as the API returns it: the creation fields (with defaults filled in) plus these.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MonitorView {
    #[schema(example = "mon_01JD6Z3Y5N8Q2W7R4T6V9X0B1C")]
    pub id: String,
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    /// `pending` (no check yet), `up`, `degraded` (up, but slower than `degradedAfterMs`
    /// for the policy's `degradedThreshold` checks in a row), `down` or `paused`.
    #[schema(example = "up")]
    pub status: String,
    pub interval: u32,
    /// Seconds from a failing check to the next while the failure has not yet reached the
    /// policy's `failureThreshold` (fast re-checks); then the interval's rhythm resumes.
    /// Null: the interval. Not for heartbeat monitors, nor with `regionalConfirmation`.
    pub retry_interval: Option<u32>,
    pub timeout: u32,
    /// Milliseconds: a passing check slower than this is slow, and the policy's
    /// `degradedThreshold` slow checks in a row make the monitor `degraded` until a check
    /// is fast again (uptime counts it up). At most the timeout. Null: never degraded. Not
    /// for heartbeat monitors.
    #[schema(example = 1500)]
    pub degraded_after_ms: Option<u32>,
    /// The uptime it should reach over a report's period, in percent (up to four
    /// decimals): uptime reports (`/v1/reports/uptime`) mark it met or missed. Null: none.
    #[schema(example = 99.9)]
    pub sla_target: Option<f64>,
    pub alert_policy_id: Option<String>,
    pub regions: Vec<String>,
    pub regional_confirmation: bool,
    pub tags: Vec<String>,
    /// Monitors whose outage explains this one's: while one of them is down, this
    /// monitor's incidents open `suppressed` and notify nobody (see docs/alerting.md).
    pub depends_on: Vec<String>,
    pub key: Option<String>,
    pub managed_by: Option<String>,
    /// Notifications about this monitor are held until then (`POST .../snooze`); absent
    /// when not snoozed by itself (a tag's snooze is under `/v1/snoozes`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snoozed_until: Option<String>,
    /// Heartbeat monitors: the secret URL the job pings (GET or POST; `/start`, `/fail`
    /// and `/<exit status>` variants). Anyone with it can ping; keep it like a password.
    /// Read keys and viewers see it with the token replaced by `[redacted]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ping_url: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    pub last_checked_at: Option<String>,
    pub last_response_time_ms: Option<u32>,
    pub consecutive_failures: u32,
    pub consecutive_successes: u32,
    /// True when every region the monitor checks from is a private location whose probes
    /// are all silent: no check runs, and `status` is the last one its probes reported.
    pub stale: bool,
    /// The type's own fields follow (for `http`: `url`, `method`, `headers`, ...).
    #[serde(flatten)]
    #[schema(additional_properties)]
    pub type_fields: Map<String, Value>,
}

/// The API view of a stored monitor. `top_level` says whether its type's fields sit at the
/// top level of the object (the plugin's description says so) or under `config`.
pub fn view(
    row: &MonitorRow,
    all_regions: &[String],
    top_level: bool,
    write_only: &[String],
    public_url: &str,
) -> MonitorView {
    let stored = row.region_list();
    let regions = if stored.is_empty() {
        all_regions.to_vec()
    } else {
        stored
    };
    let count = |n: i32| u32::try_from(n).unwrap_or(0);
    MonitorView {
        id: row.id.clone(),
        name: row.name.clone(),
        kind: row.kind.clone(),
        status: row.status.name().to_string(),
        interval: count(row.interval_secs),
        retry_interval: row.retry_interval_secs.map(count),
        timeout: count(row.timeout_secs),
        degraded_after_ms: row.degraded_after_ms.map(count),
        sla_target: row.sla_target_ppm.map(ppm_percent),
        alert_policy_id: row.alert_policy_id.clone(),
        regions,
        regional_confirmation: row.regional_confirmation,
        tags: row.tag_list(),
        depends_on: row.parent_ids(),
        key: row.apply_key.clone(),
        managed_by: row.managed_by.clone(),
        snoozed_until: row.snoozed_until.map(crate::time::format_ms),
        ping_url: row
            .ping_token
            .as_ref()
            .map(|t| format!("{}/ping/{t}", public_url.trim_end_matches('/'))),
        created_at: crate::time::format_ms(row.created_at),
        updated_at: crate::time::format_ms(row.updated_at),
        last_checked_at: row.last_checked_at.map(crate::time::format_ms),
        last_response_time_ms: row.last_response_time_ms.map(count),
        consecutive_failures: count(row.consecutive_failures),
        consecutive_successes: count(row.consecutive_successes),
        stale: false,
        type_fields: shown_fields(row, top_level, write_only),
    }
}

/// The type's fields as the API shows them: without the write-only ones (passwords), which
/// a PATCH that leaves them out keeps.
fn shown_fields(row: &MonitorRow, top_level: bool, write_only: &[String]) -> Map<String, Value> {
    let mut fields = type_fields(row, top_level);
    let target = match fields.get_mut("config") {
        Some(Value::Object(config)) if !top_level => config,
        _ => &mut fields,
    };
    for name in write_only {
        target.remove(name);
    }
    fields
}

/// The type's own fields: the stored configuration's keys, or `{"config": {...}}`.
fn type_fields(row: &MonitorRow, top_level: bool) -> Map<String, Value> {
    let config: Map<String, Value> = serde_json::from_str(&row.config).unwrap_or_default();
    if top_level {
        config
    } else {
        Map::from_iter([("config".to_string(), Value::Object(config))])
    }
}

/// The editable fields of a stored monitor, in request form, for PATCH to merge into.
pub fn editable(row: &MonitorRow, top_level: bool) -> Map<String, Value> {
    let mut object = Map::new();
    object.insert("name".into(), Value::from(row.name.clone()));
    object.insert("type".into(), Value::from(row.kind.clone()));
    // A heartbeat monitor's interval follows from its period; it has no timeout.
    if row.kind != HEARTBEAT {
        object.insert("interval".into(), Value::from(row.interval_secs));
        object.insert(
            "retryInterval".into(),
            row.retry_interval_secs.map_or(Value::Null, Value::from),
        );
        object.insert("timeout".into(), Value::from(row.timeout_secs));
        object.insert(
            "degradedAfterMs".into(),
            row.degraded_after_ms.map_or(Value::Null, Value::from),
        );
    }
    object.insert(
        "slaTarget".into(),
        row.sla_target_ppm
            .map(ppm_percent)
            .map_or(Value::Null, Value::from),
    );
    object.insert(
        "alertPolicyId".into(),
        row.alert_policy_id.clone().map_or(Value::Null, Value::from),
    );
    let regions = row.region_list();
    object.insert(
        "regions".into(),
        if regions.is_empty() {
            Value::Null
        } else {
            Value::from(regions)
        },
    );
    object.insert(
        "regionalConfirmation".into(),
        Value::from(row.regional_confirmation),
    );
    let tags = row.tag_list();
    object.insert("tags".into(), Value::from(tags));
    let depends_on = row.parent_ids();
    object.insert("dependsOn".into(), Value::from(depends_on));
    super::managed::editable(&mut object, &row.apply_key, &row.managed_by);
    object.extend(type_fields(row, top_level));
    object
}

/// Merge a PATCH body into the stored fields: keys replace, `config` merges one level deep.
pub fn merge_patch(
    row: &MonitorRow,
    top_level: bool,
    patch: Map<String, Value>,
) -> Result<Map<String, Value>, ApiError> {
    let mut merged = editable(row, top_level);
    let mut errors = Vec::new();
    // Setting one of two alternative fields replaces the other stored one.
    for (a, b) in ALTERNATIVE_FIELDS {
        for (set, other) in [(a, b), (b, a)] {
            if patch.get(set).is_some_and(|v| !v.is_null()) && !patch.contains_key(other) {
                merged.remove(other);
            }
        }
    }
    for (key, value) in patch {
        if key == "type" && value.as_str() != Some(row.kind.as_str()) {
            errors.push(FieldError::new(
                "type",
                "cannot be changed; create a new monitor instead",
            ));
            continue;
        }
        if key == "config"
            && let (Some(Value::Object(existing)), Value::Object(changes)) =
                (merged.get_mut("config"), &value)
        {
            for (k, v) in changes {
                existing.insert(k.clone(), v.clone());
            }
            continue;
        }
        merged.insert(key, value);
    }
    if errors.is_empty() {
        Ok(merged)
    } else {
        Err(ApiError::validation(errors))
    }
}

/// A PUT body as a complete monitor object: only the body's fields, plus the stored
/// write-only ones (passwords) it leaves out, which the API never shows. Fields it leaves
/// out take their defaults.
pub fn replacement(
    row: &MonitorRow,
    top_level: bool,
    write_only: &[String],
    body: Map<String, Value>,
) -> Result<Map<String, Value>, ApiError> {
    if let Some(kind) = body.get("type")
        && kind.as_str() != Some(row.kind.as_str())
    {
        return Err(ApiError::validation(vec![FieldError::new(
            "type",
            "cannot be changed; create a new monitor instead",
        )]));
    }
    let mut object = body;
    object.insert("type".into(), Value::from(row.kind.clone()));
    let stored: Map<String, Value> = serde_json::from_str(&row.config).unwrap_or_default();
    let target = if top_level {
        &mut object
    } else {
        match object
            .entry("config")
            .or_insert_with(|| Value::Object(Map::new()))
        {
            Value::Object(config) => config,
            // Not an object: validation says so.
            _ => return Ok(object),
        }
    };
    for name in write_only {
        if !target.contains_key(name)
            && let Some(v) = stored.get(name)
        {
            target.insert(name.clone(), v.clone());
        }
    }
    Ok(object)
}

/// Validate a complete monitor object (a create body, or a merged PATCH): the fields every
/// monitor has, then the type's own fields, which its plugin checks.
pub async fn validate(
    object: Map<String, Value>,
    rules: &InputRules<'_>,
    plugins: &PluginHost,
) -> Result<MonitorInput, ApiError> {
    let mut errors: Vec<FieldError> = Vec::new();
    let common = read_common(&object, rules, &mut errors);
    let flat = common
        .kind
        .as_deref()
        .is_some_and(|k| plugins.fields_at_top_level(k));
    let config = type_fields_of(&object, flat, common.kind.is_some(), &mut errors);
    // Without a type there is nobody to ask about the rest.
    let Some(kind) = common.kind.clone() else {
        return Err(ApiError::validation(errors));
    };
    if kind == HEARTBEAT {
        return heartbeat_input(common, config, rules, errors);
    }
    let normalized = ask_plugin(plugins, &kind, config, flat, &mut errors).await?;
    if !errors.is_empty() {
        return Err(ApiError::validation(errors));
    }
    let (Some(name), Some(interval), Some(timeout), Some(config)) =
        (common.name, common.interval, common.timeout, normalized)
    else {
        return Err(ApiError::bad_request("Invalid monitor"));
    };
    refuse_denied_literal_target(&config, flat, plugins.egress())?;
    // Checks of one monitor never overlap: a check ends before the next is due.
    if timeout > interval {
        return Err(ApiError::unprocessable(format!(
            "timeout ({timeout} s) must not be longer than interval ({interval} s)"
        ))
        .with_details(vec![FieldError::new("timeout", "must not exceed interval")]));
    }
    if let Some(retry) = common.retry_interval
        && retry > interval
    {
        return Err(ApiError::unprocessable(format!(
            "retryInterval ({retry} s) must not be longer than interval ({interval} s): it brings the check after a failure forward (lower it, or send \"retryInterval\": null)"
        ))
        .with_details(vec![FieldError::new(
            "retryInterval",
            "must not exceed interval",
        )]));
    }
    if let Some(slow) = common.degraded_after
        && slow > timeout * 1000
    {
        return Err(ApiError::unprocessable(format!(
            "degradedAfterMs ({slow} ms) must not be longer than timeout ({timeout} s): a check slower than the timeout fails"
        ))
        .with_details(vec![FieldError::new(
            "degradedAfterMs",
            "must not exceed the timeout",
        )]));
    }
    Ok(MonitorInput {
        name,
        kind,
        degraded_after_ms: common
            .degraded_after
            .map(|d| u32::try_from(d).unwrap_or(u32::MAX)),
        sla_target_ppm: common.sla_target_ppm,
        interval_secs: u32::try_from(interval).unwrap_or(u32::MAX),
        retry_interval_secs: common
            .retry_interval
            .map(|r| u32::try_from(r).unwrap_or(u32::MAX)),
        timeout_secs: u32::try_from(timeout).unwrap_or(u32::MAX),
        alert_policy_id: common.alert_policy_id,
        regions: common.regions,
        regional_confirmation: common.regional_confirmation,
        tags: common.tags,
        depends_on: common.depends_on,
        config,
        managed: common.managed,
    })
}

/// A heartbeat monitor: the server checks its settings itself. Its interval (shown, and
/// used by the plan's shortest-interval rule) is its period, or a minute for a cron schedule.
fn heartbeat_input(
    common: Common,
    config: Map<String, Value>,
    rules: &InputRules<'_>,
    mut errors: Vec<FieldError>,
) -> Result<MonitorInput, ApiError> {
    let config = match crate::engine::heartbeat::validate(&config, u64::from(rules.min_interval)) {
        Ok(c) => Some(c),
        Err(problems) => {
            errors.extend(
                problems
                    .into_iter()
                    .map(|p| FieldError::new(p.field, p.message)),
            );
            None
        }
    };
    if !common.regions.is_empty() {
        errors.push(FieldError::new(
            "regions",
            "a heartbeat monitor is pinged, not checked from regions",
        ));
    }
    if common.regional_confirmation {
        errors.push(FieldError::new(
            "regionalConfirmation",
            "a heartbeat monitor is pinged, not checked from regions",
        ));
    }
    if !errors.is_empty() {
        return Err(ApiError::validation(errors));
    }
    let (Some(name), Some(config)) = (common.name, config) else {
        return Err(ApiError::bad_request("Invalid monitor"));
    };
    let period = serde_json::from_str::<Value>(&config)
        .ok()
        .and_then(|c| c.get("period").and_then(Value::as_u64))
        .unwrap_or(60);
    Ok(MonitorInput {
        name,
        kind: HEARTBEAT.to_string(),
        interval_secs: u32::try_from(period).unwrap_or(u32::MAX),
        retry_interval_secs: None,
        timeout_secs: 1,
        degraded_after_ms: None,
        sla_target_ppm: common.sla_target_ppm,
        alert_policy_id: common.alert_policy_id,
        regions: Vec::new(),
        regional_confirmation: false,
        tags: common.tags,
        depends_on: common.depends_on,
        config,
        managed: common.managed,
    })
}

/// A target written as an address (`url` with an IP host, `hostname` or `host`) that the egress
/// policy denies could never be checked: refuse the monitor instead of failing every
/// check. Names go through at check time, when they are resolved.
fn refuse_denied_literal_target(
    config: &str,
    flat: bool,
    egress: &crate::plugins::egress::EgressPolicy,
) -> Result<(), ApiError> {
    let Ok(Value::Object(fields)) = serde_json::from_str::<Value>(config) else {
        return Ok(());
    };
    let prefix = if flat { "" } else { "config." };
    for field in ["url", "hostname", "host"] {
        let Some(text) = fields.get(field).and_then(Value::as_str) else {
            continue;
        };
        let host = match reqwest::Url::parse(text) {
            Ok(url) if field == "url" => url.host_str().unwrap_or_default().to_string(),
            _ => text.trim().to_string(),
        };
        let Some(ip) = crate::plugins::net::literal_ip(&host) else {
            continue;
        };
        if let Err(denied) = egress.check(ip) {
            return Err(ApiError::unprocessable(format!(
                "This server may not connect to the monitor's target: {denied}"
            ))
            .with_details(vec![FieldError::new(
                format!("{prefix}{field}"),
                denied.to_string(),
            )]));
        }
    }
    Ok(())
}

/// The fields every monitor has, each None when it was invalid (and said so in `errors`).
struct Common {
    name: Option<String>,
    kind: Option<String>,
    interval: Option<u64>,
    /// None: not set (the interval), or invalid.
    retry_interval: Option<u64>,
    timeout: Option<u64>,
    /// None: not set (never degraded), or invalid.
    degraded_after: Option<u64>,
    /// None: not set, or invalid.
    sla_target_ppm: Option<u32>,
    alert_policy_id: Option<String>,
    regions: Vec<String>,
    regional_confirmation: bool,
    tags: Vec<String>,
    depends_on: Vec<String>,
    managed: super::managed::Managed,
}

/// Parts per million as a percentage (999,000 → 99.9).
pub fn ppm_percent(ppm: i32) -> f64 {
    f64::from(ppm) / 10_000.0
}

/// `slaTarget`: a percentage above 0 and at most 100, with at most four decimals, stored
/// as parts per million.
fn sla_target_field(value: Option<&Value>, errors: &mut Vec<FieldError>) -> Option<u32> {
    let value = value.filter(|v| !v.is_null())?;
    let percent = value.as_f64().filter(|p| *p > 0.0 && *p <= 100.0);
    let ppm = percent.map(|p| p * 10_000.0);
    match ppm {
        Some(ppm) if (ppm - ppm.round()).abs() < 1e-6 => Some(ppm.round() as u32),
        _ => {
            errors.push(FieldError::new(
                "slaTarget",
                "must be a percentage above 0 and at most 100, with at most four decimals (such as 99.9), or null",
            ));
            None
        }
    }
}

fn read_common(
    object: &Map<String, Value>,
    rules: &InputRules<'_>,
    errors: &mut Vec<FieldError>,
) -> Common {
    let name = super::fields::name(object.get("name"), errors);
    let kind = match object.get("type") {
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        None | Some(Value::Null) => {
            errors.push(FieldError::new("type", "is required"));
            None
        }
        Some(_) => {
            errors.push(FieldError::new(
                "type",
                "must be a monitor type name such as http",
            ));
            None
        }
    };
    let (interval, timeout) = if kind.as_deref() == Some(HEARTBEAT) {
        for field in ["interval", "timeout", "retryInterval", "degradedAfterMs"] {
            if object.get(field).is_some_and(|v| !v.is_null()) {
                errors.push(FieldError::new(
                    field,
                    "is not a field of a heartbeat monitor: it expects pings every `period` seconds or on a `cron` schedule",
                ));
            }
        }
        (Some(0), Some(1))
    } else {
        let interval = integer_field(
            object,
            "interval",
            u64::from(rules.min_interval),
            MAX_INTERVAL_SECS,
            None,
            errors,
        );
        // Omitted: 10 s, or the interval when that is shorter, so a 1-second monitor just
        // works.
        let default_timeout =
            interval.map_or(DEFAULT_TIMEOUT_SECS, |i| i.min(DEFAULT_TIMEOUT_SECS));
        let timeout = integer_field(
            object,
            "timeout",
            1,
            MAX_TIMEOUT_SECS,
            Some(default_timeout),
            errors,
        );
        (interval, timeout)
    };
    let alert_policy_id = match object.get("alertPolicyId") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => {
            errors.push(FieldError::new(
                "alertPolicyId",
                "must be an alert policy id or null",
            ));
            None
        }
    };
    let regional_confirmation = match object.get("regionalConfirmation") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => {
            errors.push(FieldError::new(
                "regionalConfirmation",
                "must be true or false",
            ));
            false
        }
    };
    let retry_interval = retry_interval_field(object, rules, regional_confirmation, errors);
    let degraded_after = if kind.as_deref() == Some(HEARTBEAT)
        || object.get("degradedAfterMs").is_none_or(Value::is_null)
    {
        None
    } else {
        integer_field(
            object,
            "degradedAfterMs",
            1,
            MAX_TIMEOUT_SECS * 1000,
            None,
            errors,
        )
    };
    let sla_target_ppm = sla_target_field(object.get("slaTarget"), errors);
    for field in READ_ONLY_FIELDS {
        if object.contains_key(field) {
            errors.push(FieldError::new(field, "is read-only"));
        }
    }
    Common {
        name,
        kind,
        interval,
        retry_interval,
        timeout,
        degraded_after,
        sla_target_ppm,
        alert_policy_id,
        regions: regions_field(object.get("regions"), rules.regions, errors),
        regional_confirmation,
        tags: tags_field(object.get("tags"), errors),
        depends_on: depends_on_field(object.get("dependsOn"), errors),
        managed: super::managed::read(object, errors),
    }
}

/// `retryInterval`: absent or null is the interval (no fast re-checks). A heartbeat
/// monitor has none (said with its other checked-only fields).
fn retry_interval_field(
    object: &Map<String, Value>,
    rules: &InputRules<'_>,
    regional_confirmation: bool,
    errors: &mut Vec<FieldError>,
) -> Option<u64> {
    if object.get("retryInterval").is_none_or(Value::is_null)
        || object.get("type").and_then(Value::as_str) == Some(HEARTBEAT)
    {
        return None;
    }
    if regional_confirmation {
        errors.push(FieldError::new(
            "retryInterval",
            "cannot be combined with regionalConfirmation, which already checks a failure again at once from another region (send \"retryInterval\": null with it)",
        ));
        return None;
    }
    integer_field(
        object,
        "retryInterval",
        u64::from(rules.min_interval),
        MAX_INTERVAL_SECS,
        None,
        errors,
    )
}

/// Most monitors one monitor depends on.
pub const MAX_DEPENDENCIES: usize = 20;

/// `dependsOn`: monitor ids, each once; absent or null is none.
fn depends_on_field(value: Option<&Value>, errors: &mut Vec<FieldError>) -> Vec<String> {
    let items = match value {
        None | Some(Value::Null) => return Vec::new(),
        Some(Value::Array(items)) => items,
        Some(_) => {
            errors.push(FieldError::new(
                "dependsOn",
                "must be a list of monitor ids",
            ));
            return Vec::new();
        }
    };
    let mut ids: Vec<String> = Vec::new();
    for item in items {
        match item.as_str() {
            Some(id) if crate::ids::is_valid(id, crate::ids::prefix::MONITOR) => {
                if !ids.iter().any(|i| i == id) {
                    ids.push(id.to_string());
                }
            }
            _ => {
                errors.push(FieldError::new(
                    "dependsOn",
                    "must be a list of monitor ids",
                ));
                return Vec::new();
            }
        }
    }
    if ids.len() > MAX_DEPENDENCIES {
        errors.push(FieldError::new(
            "dependsOn",
            format!("at most {MAX_DEPENDENCIES} monitors"),
        ));
    }
    ids
}

/// Most tags on one monitor, and the longest tag.
pub const MAX_TAGS: usize = 20;
pub const MAX_TAG_CHARS: usize = 50;

/// Whether `tag` is a well-formed tag.
pub fn is_tag(tag: &str) -> bool {
    (1..=MAX_TAG_CHARS).contains(&tag.chars().count())
        && tag
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | ':' | '/'))
}

/// `tags`: a list of tags, sorted and each once; absent or null is none.
pub(crate) fn tags_field(value: Option<&Value>, errors: &mut Vec<FieldError>) -> Vec<String> {
    let items = match value {
        None | Some(Value::Null) => return Vec::new(),
        Some(Value::Array(items)) => items,
        Some(_) => {
            errors.push(FieldError::new("tags", "must be a list of strings"));
            return Vec::new();
        }
    };
    let mut tags = Vec::new();
    for item in items {
        match item.as_str().map(str::trim) {
            Some(t) if is_tag(t) => tags.push(t.to_string()),
            _ => {
                errors.push(FieldError::new(
                    "tags",
                    format!(
                        "each tag is 1 to {MAX_TAG_CHARS} letters, digits, `-`, `_`, `.`, `:` or `/`"
                    ),
                ));
                return Vec::new();
            }
        }
    }
    tags.sort();
    tags.dedup();
    if tags.len() > MAX_TAGS {
        errors.push(FieldError::new("tags", format!("at most {MAX_TAGS} tags")));
    }
    tags
}

/// `regions`: configured region names, each once; empty means every region.
fn regions_field(
    value: Option<&Value>,
    configured: &[String],
    errors: &mut Vec<FieldError>,
) -> Vec<String> {
    match value {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) if !items.is_empty() => {
            let mut names = Vec::new();
            for item in items {
                match item.as_str() {
                    Some(r) if configured.iter().any(|c| c == r) => {
                        if !names.iter().any(|n| n == r) {
                            names.push(r.to_string());
                        }
                    }
                    _ => errors.push(FieldError::new(
                        "regions",
                        format!("must list configured regions ({})", configured.join(", ")),
                    )),
                }
            }
            names
        }
        Some(_) => {
            errors.push(FieldError::new(
                "regions",
                "must be a non-empty list of region names",
            ));
            Vec::new()
        }
    }
}

/// The type's own fields: the top-level keys that are not common fields (`flat`), or the
/// `config` object.
fn type_fields_of(
    object: &Map<String, Value>,
    flat: bool,
    typed: bool,
    errors: &mut Vec<FieldError>,
) -> Map<String, Value> {
    let mut config = Map::new();
    for (key, value) in object {
        if COMMON_FIELDS.contains(&key.as_str()) || READ_ONLY_FIELDS.contains(&key.as_str()) {
            continue;
        }
        if flat {
            if key == "config" {
                errors.push(FieldError::new(
                    "config",
                    "is not a field of this monitor type (its fields go at the top level)",
                ));
            } else {
                config.insert(key.clone(), value.clone());
            }
        } else if key == "config" {
            match value {
                Value::Object(c) => config = c.clone(),
                Value::Null => {}
                _ => errors.push(FieldError::new("config", "must be an object")),
            }
        } else if typed {
            errors.push(FieldError::new(
                key,
                "is not a field of a monitor (plugin settings go under `config`)",
            ));
        }
    }
    config
}

/// Ask the type's plugin to check its fields. Its problems join `errors` (top-level
/// types) or answer 422 on their own (`config.*`); the normalised configuration otherwise.
async fn ask_plugin(
    plugins: &PluginHost,
    kind: &str,
    config: Map<String, Value>,
    flat: bool,
    errors: &mut Vec<FieldError>,
) -> Result<Option<String>, ApiError> {
    let Some(plugin) = plugins.monitor(kind) else {
        if !errors.is_empty() {
            return Err(ApiError::validation(std::mem::take(errors)));
        }
        let known: Vec<String> = plugins
            .descriptions()
            .into_iter()
            .filter(|d| d.kind == "monitor")
            .map(|d| d.name)
            .collect();
        return Err(ApiError::unprocessable(format!(
            "No loaded plugin provides the monitor type `{kind}` (available: {})",
            known.join(", ")
        )));
    };
    match plugins
        .validate_monitor_config(&plugin, Value::Object(config).to_string())
        .await
    {
        Ok(Ok(text)) => Ok(Some(text)),
        Ok(Err(problems)) => {
            let prefix = if flat { "" } else { "config." };
            let details: Vec<FieldError> = problems
                .into_iter()
                .take(50)
                .map(|p| {
                    FieldError::new(
                        format!("{prefix}{}", crate::text::bounded(&p.field, 256)),
                        crate::text::bounded(&p.message, 512),
                    )
                })
                .collect();
            if !flat && errors.is_empty() {
                return Err(ApiError::unprocessable(format!(
                    "The `{kind}` plugin rejected the configuration"
                ))
                .with_details(details));
            }
            errors.extend(details);
            Ok(None)
        }
        Err(e) => Err(ApiError::unprocessable(format!(
            "The `{kind}` plugin could not check the configuration: {e}"
        ))),
    }
}

fn integer_field(
    object: &Map<String, Value>,
    field: &str,
    min: u64,
    max: u64,
    default: Option<u64>,
    errors: &mut Vec<FieldError>,
) -> Option<u64> {
    match object.get(field) {
        None | Some(Value::Null) => {
            if default.is_none() {
                errors.push(FieldError::new(field, "is required"));
            }
            default
        }
        Some(Value::Number(n)) => match n.as_u64() {
            Some(v) if (min..=max).contains(&v) => Some(v),
            _ => {
                errors.push(FieldError::new(
                    field,
                    format!("must be a whole number of seconds from {min} to {max}"),
                ));
                None
            }
        },
        Some(_) => {
            errors.push(FieldError::new(
                field,
                format!("must be a whole number of seconds from {min} to {max}"),
            ));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(kind: &str, config: &str) -> MonitorRow {
        MonitorRow {
            name: "API".into(),
            config: config.into(),
            status: crate::store::MonitorState::Up,
            consecutive_successes: 3,
            ..MonitorRow::new("mon_1", "ws_1", kind, 0)
        }
    }

    #[test]
    fn views_flatten_builtin_types_and_nest_others() {
        let regions = vec!["local".to_string()];
        let json = |v: MonitorView| serde_json::to_value(v).expect("serializes");
        let v = json(view(
            &row("http", r#"{"url":"http://a","method":"GET"}"#),
            &regions,
            true,
            &[],
            "https://t.example",
        ));
        assert_eq!(v["url"], "http://a");
        assert_eq!(v["regions"], serde_json::json!(["local"]));
        assert_eq!(v["status"], "up");
        assert_eq!(v["consecutiveSuccesses"], 3);
        assert!(v.get("config").is_none());
        let v = json(view(
            &row("dns", r#"{"name":"a","password":"p"}"#),
            &regions,
            false,
            &["password".to_string()],
            "https://t.example",
        ));
        assert_eq!(
            v["config"],
            serde_json::json!({"name": "a"}),
            "write-only fields hidden"
        );
    }

    #[test]
    fn patches_replace_fields_and_refuse_type_changes() {
        let r = row(
            "http",
            r#"{"url":"http://a","method":"GET","bodyContains":"x"}"#,
        );
        let patch: Map<String, Value> =
            serde_json::from_str(r#"{"name":"B","bodyContains":null}"#).expect("json");
        let merged = merge_patch(&r, true, patch).expect("valid");
        assert_eq!(merged["name"], "B");
        assert_eq!(merged["bodyContains"], Value::Null);
        assert_eq!(merged["url"], "http://a");
        let patch: Map<String, Value> = serde_json::from_str(r#"{"type":"ping"}"#).expect("json");
        assert_eq!(
            merge_patch(&r, true, patch).map_err(|e| e.code).err(),
            Some("VALIDATION_ERROR")
        );
        let r = row("dns", r#"{"name":"a","expect":"1.2.3.4"}"#);
        let patch: Map<String, Value> =
            serde_json::from_str(r#"{"config":{"name":"b"}}"#).expect("json");
        let merged = merge_patch(&r, false, patch).expect("valid");
        assert_eq!(
            merged["config"],
            serde_json::json!({"name":"b","expect":"1.2.3.4"})
        );
    }

    #[test]
    fn patching_a_threshold_one_way_replaces_the_other_way() {
        let r = row(
            "ssl",
            r#"{"hostname":"a","port":443,"warningDays":30,"criticalDays":7}"#,
        );
        let patch: Map<String, Value> =
            serde_json::from_str(r#"{"warningPercent":25}"#).expect("json");
        let merged = merge_patch(&r, true, patch).expect("valid");
        assert_eq!(merged["warningPercent"], 25);
        assert!(merged.get("warningDays").is_none());
        assert_eq!(merged["criticalDays"], 7);
    }
}
