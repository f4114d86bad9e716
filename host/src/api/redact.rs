//! What a `read` principal (a read key, a viewer) and the audit log do not see: the values
//! a plugin's configuration schema marks secret (`x-tocsin-secret`: a webhook URL whose
//! path is the credential keeps only its origin, a request header's value is replaced) or
//! write-only (`writeOnly`: a password, which nobody is shown). The schema decides, never a
//! list of types or field names here, so a third-party plugin's secrets are hidden alike.
//! Names, hosts and everything else stay visible, so a read-only dashboard still shows what
//! is monitored and where alerts go. `write` and `admin` principals see secrets whole.

use crate::plugins::PluginHost;
use crate::plugins::secrets::SchemaSecrets;
use crate::store::keys::{Principal, Role};
use serde_json::{Map, Value};

pub use crate::plugins::secrets::REDACTED;

/// Does `p` see secrets redacted?
pub fn applies(p: &Principal) -> bool {
    p.role == Role::Read
}

/// A monitor's type fields (top level, or under `config`), redacted as its type's schema
/// says.
pub fn monitor_fields(secrets: &SchemaSecrets, fields: &mut Map<String, Value>) {
    // A top-level type may not have a field called `config` (it is a common field).
    match fields.get_mut("config") {
        Some(Value::Object(config)) => secrets.redact(config),
        _ => secrets.redact(fields),
    }
}

/// A channel's settings, redacted as its type's schema says.
pub fn channel_settings(secrets: &SchemaSecrets, settings: &mut Map<String, Value>) {
    secrets.redact(settings);
}

/// A policy's channel list: each inline channel (it carries its `type`) redacted as its
/// type's schema says; references (`channelId`, `channel`) stay.
pub fn channel_list(plugins: &PluginHost, list: &mut Value) {
    let Value::Array(items) = list else {
        return;
    };
    for item in items {
        let Value::Object(o) = item else {
            continue;
        };
        let Some(kind) = o.get("type").and_then(Value::as_str).map(str::to_string) else {
            continue;
        };
        let kind_value = o.remove("type");
        plugins.channel_secrets(&kind).redact(o);
        if let Some(t) = kind_value {
            // `type` first, as stored.
            let rest = std::mem::take(o);
            o.insert("type".into(), t);
            o.extend(rest);
        }
    }
}

/// Refuse an edit that would carry a stored write-only value (a password) to a new target:
/// when a field the schema marks `x-tocsin-target` (a host, a port, a URL's origin)
/// changes, each write-only value must be given again in the same request (or `null` for
/// none), as a browser keeps a saved password to its own site. `stored` and `new` are the
/// configurations before and after the edit, `given` the request's own type fields,
/// `prefix` where they sit in error fields (`config.`, `channels[0].`).
pub fn secrets_follow_target(
    secrets: &SchemaSecrets,
    stored: &Map<String, Value>,
    new: &Map<String, Value>,
    given: &Map<String, Value>,
    prefix: &str,
) -> Result<(), super::error::ApiError> {
    let Some(target) = secrets.changed_target(stored, new) else {
        return Ok(());
    };
    let carried: Vec<super::error::FieldError> = secrets
        .write_only_fields()
        .into_iter()
        .filter(|f| {
            !given.contains_key(f)
                && new.get(f).is_some_and(|v| !v.is_null())
                && new.get(f) == stored.get(f)
        })
        .map(|f| {
            super::error::FieldError::new(
                format!("{prefix}{f}"),
                format!(
                    "must be given again: `{target}` changed, and a stored secret is never sent to a new target (give it, or null for none)"
                ),
            )
        })
        .collect();
    if carried.is_empty() {
        Ok(())
    } else {
        Err(super::error::ApiError::validation(carried))
    }
}

/// What the audit log keeps of a monitor, channel or policy: its API view with the values
/// a read key would not see replaced, so no secret lands in the log.
pub mod audit {
    use crate::plugins::PluginHost;
    use crate::plugins::secrets::SchemaSecrets;
    use serde_json::Value;

    pub fn monitor(secrets: &SchemaSecrets, view: &impl serde::Serialize) -> Value {
        let mut v = serde_json::to_value(view).unwrap_or(Value::Null);
        if let Value::Object(o) = &mut v {
            let mut fields = std::mem::take(o);
            // The view's common fields are not the type's: only `config` or the type's
            // own top-level fields are redacted, and they are told apart by the schema.
            let common: serde_json::Map<String, Value> = fields
                .iter()
                .filter(|(k, _)| {
                    let k = k.as_str();
                    k != "config"
                        && (crate::plugins::MONITOR_FIELDS.contains(&k)
                            || k == "key"
                            || k == "managedBy")
                })
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            fields.retain(|k, _| !common.contains_key(k));
            super::monitor_fields(secrets, &mut fields);
            o.extend(common);
            o.extend(fields);
        }
        v
    }

    pub fn channel(secrets: &SchemaSecrets, view: &impl serde::Serialize) -> Value {
        let mut v = serde_json::to_value(view).unwrap_or(Value::Null);
        if let Value::Object(o) = &mut v {
            let common = [
                "id",
                "name",
                "type",
                "key",
                "managedBy",
                "createdAt",
                "updatedAt",
            ];
            let mut settings = std::mem::take(o);
            for k in common {
                if let Some(value) = settings.remove(k) {
                    o.insert(k.to_string(), value);
                }
            }
            super::channel_settings(secrets, &mut settings);
            o.extend(settings);
        }
        v
    }

    pub fn policy(plugins: &PluginHost, view: &impl serde::Serialize) -> Value {
        let mut v = serde_json::to_value(view).unwrap_or(Value::Null);
        if let Value::Object(o) = &mut v {
            if let Some(list) = o.get_mut("channels") {
                super::channel_list(plugins, list);
            }
            if let Some(esc) = o.get_mut("escalation") {
                for list in crate::api::alert_policies::escalation_lists(esc) {
                    super::channel_list(plugins, list);
                }
            }
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_monitors_type_fields_are_redacted_where_they_sit() {
        let secrets = SchemaSecrets::of(&json!({"properties": {
            "url": {"type": "string"},
            "headers": {"type": "object", "additionalProperties": {"type": "string", "x-tocsin-secret": true}},
            "password": {"type": "string", "writeOnly": true}
        }}));
        let mut top =
            json!({"url": "https://a.test/x?token=1", "headers": {"Authorization": "Bearer s"}})
                .as_object()
                .cloned()
                .expect("object");
        monitor_fields(&secrets, &mut top);
        assert_eq!(top["headers"]["Authorization"], REDACTED);
        assert_eq!(top["url"], "https://a.test/x?token=1");
        let mut nested = json!({"config": {"headers": {"X-Key": "k"}, "password": "p"}})
            .as_object()
            .cloned()
            .expect("object");
        monitor_fields(&secrets, &mut nested);
        assert_eq!(
            nested,
            *json!({"config": {"headers": {"X-Key": REDACTED}}})
                .as_object()
                .expect("o")
        );
    }

    #[test]
    fn audit_views_keep_common_fields_and_hide_the_types_secrets() {
        let secrets = SchemaSecrets::of(&json!({"properties": {
            "webhookUrl": {"type": "string", "x-tocsin-secret": true},
            "name": {"type": "string", "x-tocsin-secret": true}
        }}));
        let view = json!({"id": "ch_1", "name": "chat", "type": "slack",
            "webhookUrl": "https://hooks.slack.test/services/T/B/X"});
        let logged = audit::channel(&secrets, &view);
        assert_eq!(logged["name"], "chat");
        assert_eq!(logged["webhookUrl"], "https://hooks.slack.test/[redacted]");
        let monitor = json!({"id": "mon_1", "name": "api", "interval": 60,
            "config": {"webhookUrl": "https://x.test/secret"}});
        let logged = audit::monitor(&secrets, &monitor);
        assert_eq!(logged["name"], "api");
        assert_eq!(logged["config"]["webhookUrl"], "https://x.test/[redacted]");
    }
}
