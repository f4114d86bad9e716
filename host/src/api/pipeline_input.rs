//! Validating an alert policy's pipeline: a list of at most [`MAX_STEPS`] steps
//! `{"plugin": "oncall-rota", "config": {...}}`. Each plugin must be a loaded pipeline
//! plugin that accepts its configuration, and every channel id (`ch_...`) a configuration
//! names must be a channel of the workspace: a step can route only to the workspace's own
//! channels (the outbox checks that again when the step answers).

use super::AppState;
use super::error::{ApiError, FieldError};
use crate::plugins::PluginHost;
use serde_json::{Map, Value};

/// The most steps one policy's pipeline has.
pub const MAX_STEPS: usize = 8;

/// The stored form of `value` (None for no pipeline: absent, null or an empty list).
pub async fn validate_pipeline(
    state: &AppState,
    workspace_id: &str,
    value: Option<&Value>,
) -> Result<Option<String>, ApiError> {
    let items = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Array(items)) if items.len() <= MAX_STEPS => items,
        Some(_) => {
            return Err(ApiError::validation(vec![FieldError::new(
                "pipeline",
                format!("must be a list of at most {MAX_STEPS} steps"),
            )]));
        }
    };
    if items.is_empty() {
        return Ok(None);
    }
    let mut stored = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let at = |field: &str| format!("pipeline[{i}].{field}");
        let Some(object) = item.as_object() else {
            return Err(ApiError::validation(vec![FieldError::new(
                format!("pipeline[{i}]"),
                "must be an object with plugin and config",
            )]));
        };
        if let Some(other) = object.keys().find(|k| *k != "plugin" && *k != "config") {
            return Err(ApiError::validation(vec![FieldError::new(
                at(other),
                "is not a field of a pipeline step (plugin, config)",
            )]));
        }
        let Some(name) = object.get("plugin").and_then(Value::as_str) else {
            return Err(ApiError::validation(vec![FieldError::new(
                at("plugin"),
                "must name a pipeline plugin",
            )]));
        };
        let Some(plugin) = state.plugins.pipeline(name) else {
            return Err(ApiError::unprocessable(format!(
                "No loaded plugin provides the pipeline step `{}` (available: {})",
                crate::text::bounded(name, 64),
                names(&state.plugins).join(", ")
            ))
            .with_details(vec![FieldError::new(
                at("plugin"),
                "is not a loaded pipeline plugin",
            )]));
        };
        let config = match object.get("config") {
            None | Some(Value::Null) => Value::Object(Map::new()),
            Some(c @ Value::Object(_)) => c.clone(),
            Some(_) => {
                return Err(ApiError::validation(vec![FieldError::new(
                    at("config"),
                    "must be an object",
                )]));
            }
        };
        let normalized = match state
            .plugins
            .validate_pipeline_config(&plugin, config.to_string())
            .await
        {
            Ok(Ok(normalized)) => normalized,
            Ok(Err(problems)) => {
                return Err(ApiError::validation(
                    problems
                        .into_iter()
                        .take(50)
                        .map(|p| {
                            FieldError::new(
                                at(&format!("config.{}", crate::text::bounded(&p.field, 256))),
                                crate::text::bounded(&p.message, 512),
                            )
                        })
                        .collect(),
                ));
            }
            Err(e) => {
                return Err(ApiError::unprocessable(format!(
                    "The `{name}` plugin could not check the configuration: {e}"
                )));
            }
        };
        let config: Value = serde_json::from_str(&normalized).unwrap_or(Value::Null);
        let mut named = Vec::new();
        channel_ids(&config, &mut named);
        named.sort();
        named.dedup();
        if !named.is_empty() {
            let found = state
                .store
                .channels_by_ids(workspace_id, named.clone())
                .await?;
            if let Some(missing) = named.iter().find(|id| !found.iter().any(|c| &c.id == *id)) {
                return Err(ApiError::unprocessable(format!(
                    "No channel `{missing}` exists in this workspace"
                ))
                .with_details(vec![FieldError::new(
                    at("config"),
                    format!("names {missing}, which does not exist"),
                )]));
            }
        }
        stored.push(serde_json::json!({"plugin": name, "config": config}));
    }
    Ok(Some(Value::Array(stored).to_string()))
}

/// Every string in `value` shaped like a channel id.
pub fn channel_ids(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) if s.starts_with(crate::ids::prefix::CHANNEL) => out.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|v| channel_ids(v, out)),
        Value::Object(o) => o.values().for_each(|v| channel_ids(v, out)),
        _ => {}
    }
}

fn names(plugins: &PluginHost) -> Vec<String> {
    plugins
        .descriptions()
        .into_iter()
        .filter(|d| d.kind == "pipeline")
        .map(|d| d.name)
        .collect()
}

/// A stored pipeline as the API shows it (`[]` for none); with `redact`, what each step's
/// schema marks secret is hidden as it is in channel settings.
pub fn visible(plugins: &PluginHost, stored: Option<&str>, redact: bool) -> Value {
    let mut steps: Value = stored
        .and_then(|s| serde_json::from_str(s).ok())
        .unwrap_or(Value::Array(Vec::new()));
    if let Value::Array(items) = &mut steps {
        for step in items {
            let name = step["plugin"].as_str().unwrap_or_default().to_string();
            let secrets = plugins.pipeline_secrets(&name);
            if let Some(Value::Object(config)) = step.get_mut("config") {
                secrets.hide_write_only(config);
                if redact {
                    secrets.redact(config);
                }
            }
        }
    }
    steps
}
