//! What a `read` key does not see: the values of a monitor's request headers (they carry
//! tokens) and the path and query of webhook URLs (where receivers put theirs). Names,
//! hosts and everything else stay visible, so a read-only dashboard still shows what is
//! monitored and where alerts go. `write` and `admin` keys see everything but write-only
//! fields (a bot token), which nobody sees.

use crate::store::keys::{Principal, Role};
use serde_json::{Map, Value};

/// What stands in for a hidden value.
pub const REDACTED: &str = "[redacted]";

/// Does `p` see secrets redacted?
pub fn applies(p: &Principal) -> bool {
    p.role == Role::Read
}

/// A monitor's type fields (top level or under `config`): header values hidden.
pub fn monitor_fields(fields: &mut Map<String, Value>) {
    if let Some(Value::Object(config)) = fields.get_mut("config") {
        monitor_fields(config);
    }
    if let Some(Value::Object(headers)) = fields.get_mut("headers") {
        for value in headers.values_mut() {
            *value = Value::from(REDACTED);
        }
    }
}

/// A channel's settings: a webhook URL keeps only its origin.
pub fn channel_settings(kind: &str, settings: &mut Map<String, Value>) {
    if kind != "webhook" {
        return;
    }
    if let Some(Value::String(url)) = settings.get_mut("url") {
        *url = webhook_url(url);
    }
}

/// A policy's channel list (inline channels carry their `type`).
pub fn channel_list(list: &mut Value) {
    let Value::Array(items) = list else {
        return;
    };
    for item in items {
        if let Value::Object(o) = item {
            let kind = o
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            channel_settings(&kind, o);
        }
    }
}

/// `https://hooks.example.com/services/T000/B000/XXXX` → `https://hooks.example.com/[redacted]`.
fn webhook_url(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(u) => format!(
            "{}/{REDACTED}",
            u.origin().ascii_serialization().trim_end_matches('/')
        ),
        Err(_) => REDACTED.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn header_values_and_webhook_paths_are_hidden() {
        let mut m =
            json!({"url": "https://a.test/x?token=1", "headers": {"Authorization": "Bearer s"}})
                .as_object()
                .cloned()
                .expect("object");
        monitor_fields(&mut m);
        assert_eq!(m["headers"]["Authorization"], REDACTED);
        assert_eq!(m["url"], "https://a.test/x?token=1");
        let mut nested = json!({"config": {"headers": {"X-Key": "k"}}})
            .as_object()
            .cloned()
            .expect("object");
        monitor_fields(&mut nested);
        assert_eq!(nested["config"]["headers"]["X-Key"], REDACTED);

        let mut list = json!([
            {"type": "webhook", "url": "https://hooks.test:8443/services/T/B/secret?x=1"},
            {"type": "email", "target": "ops@example.test"},
            {"channelId": "ch_1"}
        ]);
        channel_list(&mut list);
        assert_eq!(list[0]["url"], "https://hooks.test:8443/[redacted]");
        assert_eq!(list[1]["target"], "ops@example.test");
        assert_eq!(list[2]["channelId"], "ch_1");
    }
}

/// What the audit log keeps of a monitor, channel or policy: its API view with the
/// values a read key would not see replaced (header values, webhook paths), so no
/// secret lands in the log.
pub mod audit {
    use serde_json::Value;

    pub fn monitor(view: &impl serde::Serialize) -> Value {
        let mut v = serde_json::to_value(view).unwrap_or(Value::Null);
        if let Value::Object(o) = &mut v {
            super::monitor_fields(o);
        }
        v
    }

    pub fn channel(kind: &str, view: &impl serde::Serialize) -> Value {
        let mut v = serde_json::to_value(view).unwrap_or(Value::Null);
        if let Value::Object(o) = &mut v {
            super::channel_settings(kind, o);
            if let Some(Value::Object(settings)) = o.get_mut("settings") {
                super::channel_settings(kind, settings);
            }
        }
        v
    }

    pub fn policy(view: &impl serde::Serialize) -> Value {
        let mut v = serde_json::to_value(view).unwrap_or(Value::Null);
        if let Value::Object(o) = &mut v {
            for key in ["channels", "escalationChannels"] {
                if let Some(list) = o.get_mut(key) {
                    super::channel_list(list);
                }
            }
            if let Some(Value::Object(esc)) = o.get_mut("escalation")
                && let Some(list) = esc.get_mut("channels")
            {
                super::channel_list(list);
            }
        }
        v
    }
}
