//! The `pagerduty` channel: PagerDuty's Events API v2. Tocsin's incident lifecycle drives
//! PagerDuty's: `incident.created` triggers, `incident.acknowledged` acknowledges and
//! `incident.resolved` resolves, all under the incident's id as `dedup_key`. Certificate
//! notices trigger an alert of their own; pause and resume notices are not pages.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tocsin_chat::{Alert, Kind, Post};
use tocsin_plugin_sdk::typed::{TypedConfig, field_error};
use tocsin_plugin_sdk::{
    Ability, Capability, Channel, Delivery, Failure, FieldError, Info, Receipt, export_channel,
};

/// The channel's configuration.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(title = "pagerduty channel")]
pub struct PagerDutyConfig {
    /// The integration key (routing key) of an Events API v2 integration.
    #[schemars(length(min = 32, max = 32), extend("writeOnly" = true))]
    #[schemars(title = "Integration key")]
    pub routing_key: String,
    /// Severity of triggered alerts: critical (the default), error, warning or info.
    #[serde(default = "default_severity")]
    #[schemars(extend("enum" = ["critical", "error", "warning", "info"]))]
    #[schemars(title = "Severity")]
    pub severity: String,
}

fn default_severity() -> String {
    "critical".into()
}

impl TypedConfig for PagerDutyConfig {
    fn refine(mut self) -> Result<Self, Vec<FieldError>> {
        self.routing_key = self.routing_key.trim().to_string();
        let mut problems = Vec::new();
        if !self.routing_key.bytes().all(|b| b.is_ascii_alphanumeric()) {
            problems.push(field_error(
                "routingKey",
                "must be the 32 letters and digits of an integration key",
            ));
        }
        if !["critical", "error", "warning", "info"].contains(&self.severity.as_str()) {
            problems.push(field_error(
                "severity",
                "must be critical, error, warning or info",
            ));
        }
        if problems.is_empty() {
            Ok(self)
        } else {
            Err(problems)
        }
    }
}

struct Plugin;

impl Channel for Plugin {
    type Config = PagerDutyConfig;

    fn info() -> Info {
        Info {
            name: "pagerduty",
            version: env!("CARGO_PKG_VERSION"),
            description: "Triggers, acknowledges and resolves PagerDuty alerts (Events API v2) as Tocsin incidents open, are acknowledged and resolve.",
            capabilities: &[Capability::Http],
        }
    }

    // The page follows the incident: acknowledged when it is.
    fn abilities() -> &'static [Ability] {
        &[Ability::Acknowledgements]
    }

    fn deliver(config: PagerDutyConfig, n: Delivery) -> Result<Receipt, Failure> {
        let alert = Alert::parse(&n.payload).map_err(Failure::permanent)?;
        let Some(event) = event(&config, &alert) else {
            return Ok(Receipt {
                status_code: None,
                detail: Some(format!(
                    "not sent: PagerDuty pages for incidents, not for {}",
                    alert.event
                )),
            });
        };
        let url = tocsin_chat::settings(&n.settings)["eventsUrl"]
            .as_str()
            .unwrap_or("https://events.pagerduty.com/v2/enqueue")
            .to_string();
        tocsin_chat::post(Post {
            service: "PagerDuty",
            method: "POST",
            url,
            headers: vec![],
            body: event,
            timeout_ms: n.timeout_ms,
        })
    }
}

/// The Events API v2 event for an alert, or none for events that are not pages.
pub fn event(config: &PagerDutyConfig, alert: &Alert) -> Option<Value> {
    let (action, key, severity) = match &alert.kind {
        Kind::Down => ("trigger", alert.dedup_key(), config.severity.as_str()),
        Kind::Acknowledged => ("acknowledge", alert.dedup_key(), ""),
        Kind::Recovered | Kind::Location { online: true, .. } => ("resolve", alert.dedup_key(), ""),
        Kind::Location { online: false, .. } => {
            ("trigger", alert.dedup_key(), config.severity.as_str())
        }
        Kind::Certificate { critical, .. } => (
            "trigger",
            format!(
                "certificate-{}",
                alert.monitor_id.as_deref().unwrap_or(&alert.monitor)
            ),
            if *critical { "error" } else { "warning" },
        ),
        _ => return None,
    };
    let mut event = json!({
        "routing_key": config.routing_key,
        "event_action": action,
        "dedup_key": key,
        "client": "Tocsin",
    });
    let mut links: Vec<Value> = Vec::new();
    if let Some(link) = &alert.link {
        event["client_url"] = json!(link);
        links.push(json!({"href": link, "text": "Open the incident in Tocsin"}));
    }
    // Tocsin's one-click links (acknowledge there, snooze, resolve) beside the page.
    links.extend(
        alert
            .actions
            .iter()
            .map(|(label, url)| json!({"href": url, "text": format!("{label} in Tocsin")})),
    );
    if !links.is_empty() {
        event["links"] = Value::Array(links);
    }
    if action == "trigger" {
        let details: serde_json::Map<String, Value> = alert
            .facts()
            .into_iter()
            .map(|(l, v)| (l.to_ascii_lowercase().replace(' ', "_"), json!(v)))
            .collect();
        let mut payload = json!({
            "summary": alert.title().chars().take(1024).collect::<String>(),
            "source": alert.target.as_deref().unwrap_or(&alert.monitor),
            "severity": severity,
            "component": alert.monitor,
            "group": alert.workspace.as_deref().unwrap_or("tocsin"),
            "class": alert.event,
            "custom_details": details,
        });
        if let Some(since) = &alert.since {
            payload["timestamp"] = json!(since);
        }
        event["payload"] = payload;
    }
    Some(event)
}

export_channel!(Plugin);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_location_offline_pages_once_and_its_return_resolves_the_page() {
        let config = PagerDutyConfig {
            routing_key: "r".repeat(32),
            severity: "critical".into(),
        };
        let offline = Alert::parse(
            r#"{"event":"location.offline","workspace":{"id":"wsp_1"},"location":{"name":"office","monitors":3}}"#,
        )
        .expect("alert");
        let page = event(&config, &offline).expect("a page");
        assert_eq!(page["event_action"], "trigger");
        assert_eq!(page["dedup_key"], "location-wsp_1-office");
        let online = Alert::parse(
            r#"{"event":"location.online","workspace":{"id":"wsp_1"},"location":{"name":"office","monitors":3}}"#,
        )
        .expect("alert");
        let resolve = event(&config, &online).expect("a resolve");
        assert_eq!(resolve["event_action"], "resolve");
        assert_eq!(resolve["dedup_key"], "location-wsp_1-office");
    }
}
