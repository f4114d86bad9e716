//! What a component says about itself, and what the host decides from it at load time:
//! which world and contract version it implements (from its export names), whether its
//! name and description are acceptable, where a monitor type's fields sit, and the
//! capability names.

use super::Capability;
use super::wit;

/// The schema keyword by which a monitor plugin puts its fields at the top level of a
/// monitor object instead of under `config`.
pub const TOP_LEVEL_KEYWORD: &str = "x-tocsin-top-level";

/// Fields every monitor object has; a top-level plugin may not reuse them.
pub const MONITOR_FIELDS: [&str; 24] = [
    "stale",
    "retryInterval",
    "degradedAfterMs",
    "slaTarget",
    "tags",
    "dependsOn",
    "snoozedUntil",
    "pingUrl",
    "id",
    "name",
    "type",
    "status",
    "interval",
    "timeout",
    "alertPolicyId",
    "regions",
    "regionalConfirmation",
    "config",
    "createdAt",
    "updatedAt",
    "lastCheckedAt",
    "lastResponseTimeMs",
    "consecutiveFailures",
    "consecutiveSuccesses",
];

impl Capability {
    /// Every capability, in the contract's order.
    pub const ALL: [Capability; 6] = [
        Capability::Http,
        Capability::Net,
        Capability::Tls,
        Capability::Smtp,
        Capability::Tcp,
        Capability::Udp,
    ];

    /// The name used in descriptions, grants and the configuration.
    pub fn name(self) -> &'static str {
        match self {
            Capability::Http => "http",
            Capability::Net => "net",
            Capability::Tls => "tls",
            Capability::Smtp => "smtp",
            Capability::Tcp => "tcp",
            Capability::Udp => "udp",
        }
    }

    /// The capability called `name`.
    pub fn parse(name: &str) -> Option<Capability> {
        Capability::ALL.into_iter().find(|c| c.name() == name)
    }

    /// `http, net, tls or smtp`, for messages.
    pub fn choices() -> String {
        let names: Vec<&str> = Capability::ALL.iter().map(|c| c.name()).collect();
        crate::text::or_list(&names)
    }
}

/// What a loaded plugin says about itself, plus where it came from.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PluginDescription {
    pub name: String,
    pub kind: &'static str,
    pub version: String,
    pub description: String,
    pub config_schema: serde_json::Value,
    pub capabilities: Vec<&'static str>,
    /// `tocsin:plugin` contract version the component was built against.
    pub contract: String,
    /// `builtin` or the file it was loaded from.
    pub source: String,
    /// A monitor type whose fields sit at the top level of a monitor object (the schema
    /// says `"x-tocsin-top-level": true`, as the built-in types do) rather than under
    /// `config`.
    pub top_level_fields: bool,
    /// The capabilities the server grants it: built-ins get what they declare; plugins from
    /// `plugins_dir` only what `[plugin_grants.<name>]` allows.
    pub granted: Vec<&'static str>,
    /// Channels: what it asks of the host (`acknowledgements`, `pauses`, `grouping`,
    /// `signing`); a plugin of a contract before 0.3.0 gets those of the built-in of its
    /// name. Empty for monitors.
    pub abilities: Vec<&'static str>,
    /// Channels: top-level configuration fields whose URL must be `https://`.
    pub https_only: Vec<String>,
}

/// The monitor type the server provides itself: it receives pings instead of making
/// requests, so no plugin could provide it.
pub const HEARTBEAT: &str = "heartbeat";

/// What the `heartbeat` type says about itself, as a plugin would.
pub fn heartbeat_description() -> PluginDescription {
    PluginDescription {
        name: HEARTBEAT.into(),
        kind: "monitor",
        version: env!("CARGO_PKG_VERSION").into(),
        description: "Waits for a job to ping its URL: fails when a ping is late, when the job reports failure, or when a run takes too long".into(),
        config_schema: serde_json::json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            TOP_LEVEL_KEYWORD: true,
            "properties": {
                "period": {"type": "integer", "minimum": 1, "maximum": 31_536_000, "title": "Period (seconds)",
                    "description": "A ping is expected this often. Give `period` or `cron`."},
                "cron": {"type": "string", "maxLength": 200, "title": "Cron schedule",
                    "description": "When the job runs: five fields (minute hour day month weekday), or six with seconds first."},
                "timezone": {"type": "string", "default": "UTC", "title": "Time zone",
                    "description": "IANA time zone the cron schedule is read in, e.g. Europe/Berlin."},
                "grace": {"type": "integer", "minimum": 0, "maximum": 31_536_000, "default": 60, "title": "Grace (seconds)",
                    "description": "How late a ping may be before the check fails."},
                "maxDuration": {"type": "integer", "minimum": 1, "maximum": 31_536_000, "title": "Longest run (seconds)",
                    "description": "After a /start ping, the run fails if it has not finished within this long."}
            },
            "additionalProperties": false
        }),
        capabilities: Vec::new(),
        contract: "server".into(),
        source: "builtin".into(),
        top_level_fields: true,
        granted: Vec::new(),
        abilities: Vec::new(),
        https_only: Vec::new(),
    }
}

/// Why a component was refused.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(
        "not a Tocsin plugin: it exports neither tocsin:plugin/monitor-plugin nor tocsin:plugin/channel-plugin"
    )]
    NotAPlugin,
    #[error(
        "built against tocsin:plugin@{found}, which this server does not support (supported: {supported})"
    )]
    UnsupportedContract { found: String, supported: String },
    #[error("does not compile: {0}")]
    Compile(String),
    #[error("cannot be linked: {0}")]
    Link(String),
    #[error("describe() failed: {0}")]
    Describe(String),
    #[error("invalid description: {0}")]
    InvalidDescription(String),
    #[error("a {kind} plugin named `{name}` is already loaded (from {origin})")]
    Clash {
        kind: &'static str,
        name: String,
        origin: String,
    },
}

/// Which world a component implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum World {
    Monitor,
    Channel,
    /// A step of the alert pipeline (contract 0.3.0 on).
    Pipeline,
}

/// Read the world and contract version from a component's export names
/// (`tocsin:plugin/monitor-plugin@0.1.0`).
pub fn contract_of(
    names: impl IntoIterator<Item = String>,
) -> Result<(World, &'static wit::Version), LoadError> {
    let mut unsupported = None;
    for name in names {
        let Some(rest) = name.strip_prefix("tocsin:plugin/") else {
            continue;
        };
        let (interface, version) = rest.split_once('@').unwrap_or((rest, ""));
        let world = match interface {
            "monitor-plugin" => World::Monitor,
            "channel-plugin" => World::Channel,
            "pipeline-plugin" => World::Pipeline,
            _ => continue,
        };
        if let Some(v) = wit::version(version) {
            return Ok((world, v));
        }
        unsupported = Some(version.to_string());
    }
    match unsupported {
        Some(found) => Err(LoadError::UnsupportedContract {
            found,
            supported: wit::supported().join(", "),
        }),
        None => Err(LoadError::NotAPlugin),
    }
}

/// Whether a configuration schema puts the type's fields at the top level of a monitor
/// object; refused when one of them would shadow a field every monitor has.
pub fn fields_at_top_level(schema: &serde_json::Value) -> Result<bool, LoadError> {
    if schema[TOP_LEVEL_KEYWORD] != true {
        return Ok(false);
    }
    match schema["properties"]
        .as_object()
        .and_then(|p| p.keys().find(|k| MONITOR_FIELDS.contains(&k.as_str())))
    {
        Some(clash) => Err(LoadError::InvalidDescription(format!(
            "its fields sit at the top level of a monitor, but `{clash}` is a field every monitor has"
        ))),
        None => Ok(true),
    }
}

/// Whether `name` is 1 to 32 lowercase letters, digits or `-`, not starting with `-`.
pub fn valid_plugin_name(name: &str) -> bool {
    (1..=32).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contract_is_read_from_export_names() {
        let (world, v) = contract_of([
            "wasi:cli/run@0.2.6".to_string(),
            "tocsin:plugin/monitor-plugin@0.1.0".to_string(),
        ])
        .expect("supported");
        assert_eq!((world, v.number), (World::Monitor, "0.1.0"));
        let (world, _) =
            contract_of(["tocsin:plugin/channel-plugin@0.1.0".to_string()]).expect("supported");
        assert_eq!(world, World::Channel);
        let (_, v) =
            contract_of(["tocsin:plugin/monitor-plugin@0.2.0".to_string()]).expect("supported");
        assert_eq!(v.number, "0.2.0");
        let (world, v) =
            contract_of(["tocsin:plugin/channel-plugin@0.3.0".to_string()]).expect("supported");
        assert_eq!((world, v.number), (World::Channel, "0.3.0"));
        let err = contract_of(["tocsin:plugin/monitor-plugin@9.0.0".to_string()])
            .expect_err("unsupported");
        assert!(err.to_string().contains("tocsin:plugin@9.0.0"));
        assert!(err.to_string().contains("0.1.0, 0.2.0, 0.3.0"), "{err}");
        assert!(matches!(
            contract_of(["wasi:cli/run@0.2.6".to_string()]),
            Err(LoadError::NotAPlugin)
        ));
    }

    #[test]
    fn top_level_fields_are_declared_and_may_not_shadow_common_ones() {
        let schema = |extra: serde_json::Value| {
            let mut s =
                serde_json::json!({"type": "object", "properties": {"url": {"type": "string"}}});
            if let (Some(o), Some(e)) = (s.as_object_mut(), extra.as_object()) {
                o.extend(e.clone());
            }
            s
        };
        assert!(!fields_at_top_level(&schema(serde_json::json!({}))).expect("nested"));
        assert!(
            fields_at_top_level(&schema(serde_json::json!({"x-tocsin-top-level": true})))
                .expect("top level")
        );
        let clash = serde_json::json!({"x-tocsin-top-level": true, "properties": {"interval": {}}});
        let err = fields_at_top_level(&clash).expect_err("shadows interval");
        assert!(err.to_string().contains("`interval`"), "{err}");
    }

    #[test]
    fn plugin_names_are_restricted() {
        assert!(valid_plugin_name("http"));
        assert!(valid_plugin_name("dns-over-https2"));
        assert!(!valid_plugin_name("HTTP"));
        assert!(!valid_plugin_name(""));
        assert!(!valid_plugin_name("-x"));
        assert!(!valid_plugin_name(&"a".repeat(33)));
    }
}
