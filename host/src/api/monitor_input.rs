//! Turning a monitor request body into a stored monitor, and a stored monitor into its
//! API view. Common fields are checked here; the type's own fields are checked by the
//! plugin that provides the type (`validate-config`).
//!
//! The spec's four types (`http`, `keyword`, `ping`, `ssl`) take their fields at the top
//! level of the monitor object; any other plugin type takes them under `config`.

use super::error::{ApiError, FieldError};
use crate::plugins::PluginHost;
use crate::store::{MonitorRow, State};
use serde_json::{Map, Value};

/// Types whose fields sit at the top level of the monitor object.
pub const FLAT_TYPES: [&str; 4] = ["http", "keyword", "ping", "ssl"];

/// Fields of the built-in types that express the same setting two ways (ssl thresholds in
/// days or as a share of the certificate's lifetime); a monitor has one of each pair.
const ALTERNATIVE_FIELDS: [(&str, &str); 2] = [
    ("warningDays", "warningPercent"),
    ("criticalDays", "criticalPercent"),
];

/// Fields every monitor has and the API accepts.
const COMMON_FIELDS: [&str; 7] = [
    "name",
    "type",
    "interval",
    "timeout",
    "alertPolicyId",
    "regions",
    "regionalConfirmation",
];
/// Fields the server sets.
const READ_ONLY_FIELDS: [&str; 8] = [
    "id",
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
    pub timeout_secs: u32,
    pub alert_policy_id: Option<String>,
    /// Empty means every configured region.
    pub regions: Vec<String>,
    /// Re-check a failure from another of the monitor's regions before it counts.
    pub regional_confirmation: bool,
    /// The plugin's normalised configuration (JSON text).
    pub config: String,
}

/// Limits from the server configuration.
pub struct InputRules<'a> {
    pub min_interval: u32,
    pub regions: &'a [String],
}

/// The API view of a stored monitor, as a JSON object.
pub fn view(row: &MonitorRow, all_regions: &[String]) -> Value {
    let mut object = Map::new();
    object.insert("id".into(), Value::from(row.id.clone()));
    object.insert("name".into(), Value::from(row.name.clone()));
    object.insert("type".into(), Value::from(row.kind.clone()));
    object.insert("status".into(), Value::from(row.status.name()));
    object.insert("interval".into(), Value::from(row.interval_secs));
    object.insert("timeout".into(), Value::from(row.timeout_secs));
    object.insert(
        "alertPolicyId".into(),
        row.alert_policy_id.clone().map_or(Value::Null, Value::from),
    );
    let stored: Vec<String> = serde_json::from_str(&row.regions).unwrap_or_default();
    let regions = if stored.is_empty() {
        all_regions.to_vec()
    } else {
        stored
    };
    object.insert("regions".into(), Value::from(regions));
    object.insert(
        "regionalConfirmation".into(),
        Value::from(row.regional_confirmation),
    );
    let config: Map<String, Value> = serde_json::from_str(&row.config).unwrap_or_default();
    if FLAT_TYPES.contains(&row.kind.as_str()) {
        for (k, v) in config {
            object.insert(k, v);
        }
    } else {
        object.insert("config".into(), Value::Object(config));
    }
    object.insert(
        "createdAt".into(),
        Value::from(crate::time::format_ms(row.created_at)),
    );
    object.insert(
        "updatedAt".into(),
        Value::from(crate::time::format_ms(row.updated_at)),
    );
    object.insert(
        "lastCheckedAt".into(),
        row.last_checked_at
            .map_or(Value::Null, |t| Value::from(crate::time::format_ms(t))),
    );
    object.insert(
        "lastResponseTimeMs".into(),
        row.last_response_time_ms.map_or(Value::Null, Value::from),
    );
    object.insert(
        "consecutiveFailures".into(),
        Value::from(row.consecutive_failures),
    );
    object.insert(
        "consecutiveSuccesses".into(),
        Value::from(row.consecutive_successes),
    );
    Value::Object(object)
}

/// The editable fields of a stored monitor, in request form, for PATCH to merge into.
pub fn editable(row: &MonitorRow) -> Map<String, Value> {
    let mut object = Map::new();
    object.insert("name".into(), Value::from(row.name.clone()));
    object.insert("type".into(), Value::from(row.kind.clone()));
    object.insert("interval".into(), Value::from(row.interval_secs));
    object.insert("timeout".into(), Value::from(row.timeout_secs));
    object.insert(
        "alertPolicyId".into(),
        row.alert_policy_id.clone().map_or(Value::Null, Value::from),
    );
    let regions: Vec<String> = serde_json::from_str(&row.regions).unwrap_or_default();
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
    let config: Map<String, Value> = serde_json::from_str(&row.config).unwrap_or_default();
    if FLAT_TYPES.contains(&row.kind.as_str()) {
        object.extend(config);
    } else {
        object.insert("config".into(), Value::Object(config));
    }
    object
}

/// Merge a PATCH body into the stored fields: keys replace, `config` merges one level deep.
pub fn merge_patch(
    row: &MonitorRow,
    patch: Map<String, Value>,
) -> Result<Map<String, Value>, ApiError> {
    let mut merged = editable(row);
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

/// Validate a complete monitor object (a create body, or a merged PATCH).
pub async fn validate(
    object: Map<String, Value>,
    rules: &InputRules<'_>,
    plugins: &PluginHost,
) -> Result<MonitorInput, ApiError> {
    let mut errors: Vec<FieldError> = Vec::new();

    let name = super::paging::name(object.get("name"), &mut errors);
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
    let interval = integer_field(
        &object,
        "interval",
        u64::from(rules.min_interval),
        MAX_INTERVAL_SECS,
        None,
        &mut errors,
    );
    // Omitted: 10 s, or the interval when that is shorter, so a 1-second monitor just works.
    let default_timeout = interval.map_or(DEFAULT_TIMEOUT_SECS, |i| i.min(DEFAULT_TIMEOUT_SECS));
    let timeout = integer_field(
        &object,
        "timeout",
        1,
        MAX_TIMEOUT_SECS,
        Some(default_timeout),
        &mut errors,
    );
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
    let regions = match object.get("regions") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) if !items.is_empty() => {
            let mut names = Vec::new();
            for item in items {
                match item.as_str() {
                    Some(r) if rules.regions.iter().any(|c| c == r) => {
                        if !names.iter().any(|n| n == r) {
                            names.push(r.to_string());
                        }
                    }
                    _ => errors.push(FieldError::new(
                        "regions",
                        format!(
                            "must list configured regions ({})",
                            rules.regions.join(", ")
                        ),
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
    for field in READ_ONLY_FIELDS {
        if object.contains_key(field) {
            errors.push(FieldError::new(field, "is read-only"));
        }
    }

    // Split off the type's own fields.
    let flat = kind.as_deref().is_some_and(|k| FLAT_TYPES.contains(&k));
    let mut config = Map::new();
    for (key, value) in &object {
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
        } else if kind.is_some() {
            errors.push(FieldError::new(
                key,
                "is not a field of a monitor (plugin settings go under `config`)",
            ));
        }
    }

    // Without a type there is nobody to ask about the rest.
    let Some(kind) = kind else {
        return Err(ApiError::validation(errors));
    };
    let Some(plugin) = plugins.monitor(&kind) else {
        if !errors.is_empty() {
            return Err(ApiError::validation(errors));
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
    let normalized = match plugins
        .validate_monitor_config(&plugin, Value::Object(config).to_string())
        .await
    {
        Ok(Ok(text)) => Some(text),
        Ok(Err(problems)) => {
            let prefix = if flat { "" } else { "config." };
            let details: Vec<FieldError> = problems
                .into_iter()
                .map(|p| FieldError::new(format!("{prefix}{}", p.field), p.message))
                .collect();
            if flat {
                errors.extend(details);
                None
            } else if errors.is_empty() {
                return Err(ApiError::unprocessable(format!(
                    "The `{kind}` plugin rejected the configuration"
                ))
                .with_details(details));
            } else {
                errors.extend(details);
                None
            }
        }
        Err(e) => {
            return Err(ApiError::unprocessable(format!(
                "The `{kind}` plugin could not check the configuration: {e}"
            )));
        }
    };
    if !errors.is_empty() {
        return Err(ApiError::validation(errors));
    }
    let (Some(name), Some(interval), Some(timeout), Some(config)) =
        (name, interval, timeout, normalized)
    else {
        return Err(ApiError::bad_request("Invalid monitor"));
    };
    // Checks of one monitor never overlap: a check ends before the next is due.
    if timeout > interval {
        return Err(ApiError::unprocessable(format!(
            "timeout ({timeout} s) must not be longer than interval ({interval} s)"
        ))
        .with_details(vec![FieldError::new("timeout", "must not exceed interval")]));
    }
    Ok(MonitorInput {
        name,
        kind,
        interval_secs: u32::try_from(interval).unwrap_or(u32::MAX),
        timeout_secs: u32::try_from(timeout).unwrap_or(u32::MAX),
        alert_policy_id,
        regions,
        regional_confirmation,
        config,
    })
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
            id: "mon_1".into(),
            workspace_id: "ws_1".into(),
            name: "API".into(),
            kind: kind.into(),
            config: config.into(),
            interval_secs: 60,
            timeout_secs: 10,
            alert_policy_id: None,
            regions: "[]".into(),
            status: crate::store::MonitorState::Up,
            created_at: 0,
            updated_at: 0,
            last_checked_at: None,
            last_response_time_ms: None,
            consecutive_failures: 0,
            consecutive_successes: 3,
            region_cursor: 0,
            regional_confirmation: false,
        }
    }

    #[test]
    fn views_flatten_builtin_types_and_nest_others() {
        let regions = vec!["local".to_string()];
        let v = view(
            &row("http", r#"{"url":"http://a","method":"GET"}"#),
            &regions,
        );
        assert_eq!(v["url"], "http://a");
        assert_eq!(v["regions"], serde_json::json!(["local"]));
        assert!(v.get("config").is_none());
        let v = view(&row("dns", r#"{"name":"a"}"#), &regions);
        assert_eq!(v["config"]["name"], "a");
    }

    #[test]
    fn patches_replace_fields_and_refuse_type_changes() {
        let r = row(
            "http",
            r#"{"url":"http://a","method":"GET","bodyContains":"x"}"#,
        );
        let patch: Map<String, Value> =
            serde_json::from_str(r#"{"name":"B","bodyContains":null}"#).expect("json");
        let merged = merge_patch(&r, patch).expect("valid");
        assert_eq!(merged["name"], "B");
        assert_eq!(merged["bodyContains"], Value::Null);
        assert_eq!(merged["url"], "http://a");
        let patch: Map<String, Value> = serde_json::from_str(r#"{"type":"ping"}"#).expect("json");
        assert_eq!(
            merge_patch(&r, patch).map_err(|e| e.code).err(),
            Some("VALIDATION_ERROR")
        );
        let r = row("dns", r#"{"name":"a","expect":"1.2.3.4"}"#);
        let patch: Map<String, Value> =
            serde_json::from_str(r#"{"config":{"name":"b"}}"#).expect("json");
        let merged = merge_patch(&r, patch).expect("valid");
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
        let merged = merge_patch(&r, patch).expect("valid");
        assert_eq!(merged["warningPercent"], 25);
        assert!(merged.get("warningDays").is_none());
        assert_eq!(merged["criticalDays"], 7);
    }
}
