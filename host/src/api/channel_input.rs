//! Validating notification channel settings, shared by stored channels and the inline
//! channels of alert policies. The channel plugin checks its own fields; the server adds
//! its own rules (the fields a plugin names `https-only`, such as a webhook's URL, must
//! use HTTPS unless `allow_insecure_webhooks`).

use super::AppState;
use super::error::{ApiError, FieldError};
use crate::plugins::PluginHost;
use crate::plugins::secrets::SchemaSecrets;
use serde_json::{Map, Value};

/// Check one channel's settings with its plugin. `prefix` names the field path in errors
/// (e.g. `channels[0].`). Returns the normalised settings (JSON text).
pub async fn validate_settings(
    state: &AppState,
    kind: &str,
    settings: Map<String, Value>,
    prefix: &str,
) -> Result<String, ApiError> {
    let Some(plugin) = state.plugins.channel(kind) else {
        let known: Vec<String> = state
            .plugins
            .descriptions()
            .into_iter()
            .filter(|d| d.kind == "channel")
            .map(|d| d.name)
            .collect();
        return Err(ApiError::unprocessable(format!(
            "No loaded plugin provides the channel type `{kind}` (available: {})",
            known.join(", ")
        ))
        .with_details(vec![FieldError::new(
            format!("{prefix}type"),
            "is not a loaded channel type",
        )]));
    };
    match state
        .plugins
        .validate_channel_config(&plugin, Value::Object(settings).to_string())
        .await
    {
        Ok(Ok(normalized)) => {
            // On what the plugin made of it: a default it fills in counts too.
            if !state.config.allow_insecure_webhooks {
                let insecure = insecure_fields(&plugin.abilities().https_only, &normalized, prefix);
                if !insecure.is_empty() {
                    return Err(ApiError::validation(insecure));
                }
            }
            Ok(normalized)
        }
        Ok(Err(problems)) => Err(ApiError::validation(
            problems
                .into_iter()
                .take(50)
                .map(|p| {
                    FieldError::new(
                        format!("{prefix}{}", crate::text::bounded(&p.field, 256)),
                        crate::text::bounded(&p.message, 512),
                    )
                })
                .collect(),
        )),
        Err(e) => Err(ApiError::unprocessable(format!(
            "The `{kind}` plugin could not check the settings: {e}"
        ))),
    }
}

/// The https-only fields of a channel's settings (JSON text) whose value is not an
/// `https://` URL, as field errors.
fn insecure_fields(https_only: &[String], settings: &str, prefix: &str) -> Vec<FieldError> {
    let settings: Value = serde_json::from_str(settings).unwrap_or(Value::Null);
    https_only
        .iter()
        .filter(|f| {
            settings
                .get(f.as_str())
                .and_then(Value::as_str)
                .is_some_and(|url| !url.starts_with("https://"))
        })
        .map(|f| {
            FieldError::new(
                format!("{prefix}{f}"),
                "must be an https:// URL (the server does not allow insecure webhooks)",
            )
        })
        .collect()
}

/// Settings as the API shows them: the fields its type's schema marks write-only removed.
pub fn visible(secrets: &SchemaSecrets, settings: &str) -> Map<String, Value> {
    let mut map: Map<String, Value> = serde_json::from_str(settings).unwrap_or_default();
    secrets.hide_write_only(&mut map);
    map
}

/// Validate a policy's list of channels: each item is `{"channelId": "ch_..."}` (it must
/// exist in the workspace) or an inline channel `{"type": ..., ...settings}`. Returns the
/// stored form.
pub async fn validate_channel_list(
    state: &AppState,
    workspace_id: &str,
    value: Option<&Value>,
    field: &str,
) -> Result<Value, ApiError> {
    let Some(Value::Array(items)) = value else {
        return Err(ApiError::validation(vec![FieldError::new(
            field,
            "must be a non-empty list of channels",
        )]));
    };
    if items.is_empty() || items.len() > 20 {
        return Err(ApiError::validation(vec![FieldError::new(
            field,
            "must list 1 to 20 channels",
        )]));
    }
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let prefix = format!("{field}[{i}].");
        let Some(object) = item.as_object() else {
            return Err(ApiError::validation(vec![FieldError::new(
                format!("{field}[{i}]"),
                "must be an object",
            )]));
        };
        if let Some(id) = object.get("channelId") {
            let Some(id) = id.as_str() else {
                return Err(ApiError::validation(vec![FieldError::new(
                    format!("{prefix}channelId"),
                    "must be a string",
                )]));
            };
            if object.len() > 1 {
                return Err(ApiError::validation(vec![FieldError::new(
                    format!("{field}[{i}]"),
                    "a channel reference takes only channelId",
                )]));
            }
            if state.store.channel(workspace_id, id).await?.is_none() {
                return Err(ApiError::unprocessable(format!(
                    "No channel `{id}` exists in this workspace"
                ))
                .with_details(vec![FieldError::new(
                    format!("{prefix}channelId"),
                    "does not exist",
                )]));
            }
            out.push(serde_json::json!({"channelId": id}));
            continue;
        }
        let Some(kind) = object.get("type").and_then(Value::as_str) else {
            return Err(ApiError::validation(vec![FieldError::new(
                format!("{prefix}type"),
                "is required (or give channelId)",
            )]));
        };
        let mut settings = object.clone();
        settings.remove("type");
        let normalized = validate_settings(state, kind, settings, &prefix).await?;
        let mut stored: Map<String, Value> = serde_json::from_str(&normalized).unwrap_or_default();
        stored.insert("type".into(), Value::from(kind));
        // Keep `type` first for readability.
        let mut ordered = Map::new();
        ordered.insert("type".into(), Value::from(kind));
        for (k, v) in stored {
            if k != "type" {
                ordered.insert(k, v);
            }
        }
        out.push(Value::Object(ordered));
    }
    Ok(Value::Array(out))
}

/// An inline channel as a request gave it, and the position of the stored channel whose
/// write-only settings it was given ([`carry_write_only`]).
pub type Carried = (Map<String, Value>, Option<usize>);

/// Give each inline channel of `list` the write-only settings (a bot token, an API key) of
/// the stored inline channel it is, when it lacks them: the API never shows them, so a
/// client that sends back what it read must not erase them. Which stored channel an item
/// is: the one it equals, write-only settings aside (an item sent back as shown, at any
/// position, so taking one channel off the list moves no secret to its neighbour); else,
/// when it equals none, the stored item at its position of the same type (one edited in
/// place, whose secrets [`secrets_stay_with_targets`] then keeps from a new target). When
/// the whole list comes back as shown, nothing moved, each keeps its own. Otherwise an item
/// equal to several stored channels is refused: nothing tells which one's secrets it should
/// have. Returns each item as it was given with the position of the stored channel
/// it took them from, for [`secrets_stay_with_targets`] once the list is validated.
pub fn carry_write_only(
    plugins: &PluginHost,
    list: &mut Value,
    stored: &Value,
    field: &str,
) -> Result<Vec<Carried>, ApiError> {
    let Value::Array(items) = list else {
        return Ok(Vec::new());
    };
    let given: Vec<Map<String, Value>> = items
        .iter()
        .map(|i| i.as_object().cloned().unwrap_or_default())
        .collect();
    let Value::Array(before) = stored else {
        return Ok(given.into_iter().map(|g| (g, None)).collect());
    };
    let without = |o: &Map<String, Value>, fields: &[String]| -> Map<String, Value> {
        o.iter()
            .filter(|(k, _)| !fields.contains(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    let shown_as_stored = |item: &Value, old: &Value| match (item, old) {
        (Value::Object(item), Value::Object(old)) => {
            let kind = item.get("type").and_then(Value::as_str).unwrap_or_default();
            let fields = plugins.channel_secrets(kind).write_only_fields();
            without(item, &fields) == without(old, &fields)
        }
        _ => item == old,
    };
    // The whole list sent back as it was shown, nothing moved (a PATCH of other fields, a
    // rename): every channel keeps its own, even two that look the same.
    let in_place =
        items.len() == before.len() && items.iter().zip(before).all(|(i, o)| shown_as_stored(i, o));
    let mut sources = Vec::with_capacity(items.len());
    let mut errors = Vec::new();
    for (i, item) in items.iter_mut().enumerate() {
        let Value::Object(item) = item else {
            sources.push(None);
            continue;
        };
        let Some(kind) = item.get("type").and_then(Value::as_str).map(str::to_string) else {
            sources.push(None);
            continue;
        };
        let fields = plugins.channel_secrets(&kind).write_only_fields();
        let lacking: Vec<&String> = fields.iter().filter(|f| !item.contains_key(*f)).collect();
        if lacking.is_empty() {
            sources.push(None);
            continue;
        }
        let shown = without(item, &fields);
        let same_type = |old: &Map<String, Value>| {
            old.get("type").and_then(Value::as_str) == Some(kind.as_str())
        };
        let equal: Vec<usize> = before
            .iter()
            .enumerate()
            .filter_map(|(j, old)| {
                let old = old.as_object()?;
                (same_type(old) && without(old, &fields) == shown).then_some(j)
            })
            .collect();
        let source = match equal.as_slice() {
            _ if in_place => Some(i),
            [j] => Some(*j),
            [] => before
                .get(i)
                .and_then(Value::as_object)
                .filter(|old| same_type(old))
                .map(|_| i),
            _ => {
                let holds_secrets = equal.iter().any(|j| {
                    before[*j]
                        .as_object()
                        .is_some_and(|old| lacking.iter().any(|f| old.contains_key(*f)))
                });
                if holds_secrets {
                    for f in &lacking {
                        errors.push(FieldError::new(
                            format!("{field}[{i}].{f}"),
                            "must be given again: this channel is the same as several on the policy, so which one's stored value it keeps cannot be told",
                        ));
                    }
                }
                None
            }
        };
        if let Some(old) = source.and_then(|j| before[j].as_object()) {
            for f in &lacking {
                if let Some(v) = old.get(*f) {
                    item.insert((*f).clone(), v.clone());
                }
            }
        }
        sources.push(source);
    }
    if !errors.is_empty() {
        return Err(ApiError::validation(errors));
    }
    Ok(given.into_iter().zip(sources).collect())
}

/// Refuse a validated list (`new`) in which an inline channel carries a stored write-only
/// value its request item did not give again while its target changed (a channel that now
/// sends elsewhere). `given` is [`carry_write_only`]'s answer: each item as given and the
/// stored channel it took its values from. `field` names the list in the refusal.
pub fn secrets_stay_with_targets(
    plugins: &PluginHost,
    new: &Value,
    stored: &Value,
    given: &[Carried],
    field: &str,
) -> Result<(), ApiError> {
    let (Value::Array(items), Value::Array(before)) = (new, stored) else {
        return Ok(());
    };
    for (i, (item, (given, source))) in items.iter().zip(given).enumerate() {
        let Some(old) = source.and_then(|j| before.get(j)) else {
            continue;
        };
        let (Value::Object(item), Value::Object(old)) = (item, old) else {
            continue;
        };
        let Some(kind) = item.get("type").and_then(Value::as_str) else {
            continue;
        };
        if old.get("type").and_then(Value::as_str) != Some(kind) {
            continue;
        }
        let secrets = plugins.channel_secrets(kind);
        super::redact::secrets_follow_target(
            &secrets,
            old,
            item,
            given,
            &format!("{field}[{i}]."),
        )?;
    }
    Ok(())
}

/// A stored channel list as the API shows it: each inline channel without the fields its
/// type's schema marks write-only.
pub fn visible_list(plugins: &PluginHost, stored: &Value) -> Value {
    match stored {
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| match item {
                    Value::Object(o) => {
                        let mut o = o.clone();
                        if let Some(kind) = o.get("type").and_then(Value::as_str) {
                            plugins.channel_secrets(kind).hide_write_only(&mut o);
                        }
                        Value::Object(o)
                    }
                    other => other.clone(),
                })
                .collect(),
        ),
        other => other.clone(),
    }
}
