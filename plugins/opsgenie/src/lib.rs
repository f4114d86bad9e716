//! The `opsgenie` channel: Opsgenie's Alert API. Tocsin's incident lifecycle drives the
//! alert's: `incident.created` creates it, `incident.acknowledged` acknowledges it and
//! `incident.resolved` closes it, found by its alias (the incident's id).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tocsin_chat::{Alert, Kind, Post, Severity};
use tocsin_plugin_sdk::typed::{TypedConfig, field_error};
use tocsin_plugin_sdk::{
    Ability, Capability, Channel, Delivery, Failure, FieldError, Info, Receipt, export_channel,
};

/// The channel's configuration.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(title = "opsgenie channel")]
pub struct OpsgenieConfig {
    /// API key of an API integration.
    #[schemars(length(min = 1, max = 128), extend("writeOnly" = true))]
    #[schemars(title = "API key")]
    pub api_key: String,
    /// Where the account lives: us (api.opsgenie.com, the default) or eu (api.eu.opsgenie.com).
    #[serde(default = "default_region")]
    #[schemars(extend("enum" = ["us", "eu"]))]
    #[schemars(title = "Region")]
    pub region: String,
    /// Priority of created alerts, P1 (the default) to P5.
    #[serde(default = "default_priority")]
    #[schemars(extend("enum" = ["P1", "P2", "P3", "P4", "P5"]))]
    #[schemars(title = "Priority")]
    pub priority: String,
}

fn default_region() -> String {
    "us".into()
}

fn default_priority() -> String {
    "P1".into()
}

impl TypedConfig for OpsgenieConfig {
    fn refine(mut self) -> Result<Self, Vec<FieldError>> {
        self.api_key = self.api_key.trim().to_string();
        let mut problems = Vec::new();
        if !["us", "eu"].contains(&self.region.as_str()) {
            problems.push(field_error("region", "must be us or eu"));
        }
        if !["P1", "P2", "P3", "P4", "P5"].contains(&self.priority.as_str()) {
            problems.push(field_error("priority", "must be P1, P2, P3, P4 or P5"));
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
    type Config = OpsgenieConfig;

    fn info() -> Info {
        Info {
            name: "opsgenie",
            version: env!("CARGO_PKG_VERSION"),
            description: "Creates, acknowledges and closes Opsgenie alerts as Tocsin incidents open, are acknowledged and resolve.",
            capabilities: &[Capability::Http],
        }
    }

    // The alert follows the incident: acknowledged when it is.
    fn abilities() -> &'static [Ability] {
        &[Ability::Acknowledgements]
    }

    fn deliver(config: OpsgenieConfig, n: Delivery) -> Result<Receipt, Failure> {
        let alert = Alert::parse(&n.payload).map_err(Failure::permanent)?;
        let base = match tocsin_chat::settings(&n.settings)["apiBase"].as_str() {
            Some(b) => b.trim_end_matches('/').to_string(),
            None if config.region == "eu" => "https://api.eu.opsgenie.com".into(),
            None => "https://api.opsgenie.com".into(),
        };
        let Some((path, body)) = request(&config, &alert) else {
            return Ok(Receipt {
                status_code: None,
                detail: Some(format!(
                    "not sent: Opsgenie alerts follow incidents, not {}",
                    alert.event
                )),
            });
        };
        tocsin_chat::post(Post {
            service: "Opsgenie",
            method: "POST",
            url: format!("{base}{path}"),
            headers: vec![tocsin_chat::header(
                "Authorization",
                &format!("GenieKey {}", config.api_key),
            )],
            body,
            timeout_ms: n.timeout_ms,
        })
    }
}

/// The path and body for an alert, or none for events that are not alerts.
pub fn request(config: &OpsgenieConfig, alert: &Alert) -> Option<(String, Value)> {
    let by_alias = |action: &str| {
        format!(
            "/v2/alerts/{}/{action}?identifierType=alias",
            tocsin_chat::path_segment(&alert.dedup_key())
        )
    };
    match &alert.kind {
        Kind::Down | Kind::Certificate { .. } | Kind::Location { online: false, .. } => {
            let alias = match &alert.kind {
                Kind::Certificate { .. } => format!(
                    "certificate-{}",
                    alert.monitor_id.as_deref().unwrap_or(&alert.monitor)
                ),
                _ => alert.dedup_key(),
            };
            let details: serde_json::Map<String, Value> = alert
                .facts()
                .into_iter()
                .map(|(l, v)| (l.to_string(), json!(v)))
                .chain(
                    alert
                        .link
                        .iter()
                        .map(|l| ("Incident".to_string(), json!(l))),
                )
                .collect();
            let priority = match alert.severity() {
                Severity::Critical => config.priority.as_str(),
                _ => "P3",
            };
            Some((
                "/v2/alerts".to_string(),
                json!({
                    "message": alert.title().chars().take(130).collect::<String>(),
                    "alias": alias,
                    "description": alert.plain().chars().take(15000).collect::<String>(),
                    "entity": alert.monitor,
                    "source": "Tocsin",
                    "priority": priority,
                    "tags": ["tocsin"],
                    "details": details,
                }),
            ))
        }
        Kind::Acknowledged => Some((
            by_alias("acknowledge"),
            json!({"source": "Tocsin", "note": "Acknowledged in Tocsin"}),
        )),
        Kind::Recovered | Kind::Location { online: true, .. } => Some((
            by_alias("close"),
            json!({"source": "Tocsin", "note": alert.plain()}),
        )),
        _ => None,
    }
}

export_channel!(Plugin);
