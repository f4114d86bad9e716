//! Write Tocsin plugins in Rust.
//!
//! A monitor implements [`Monitor`], a channel implements [`Channel`], a step of the alert
//! pipeline implements [`Pipeline`]; one line of [`export_monitor!`], [`export_channel!`]
//! or [`export_pipeline!`] turns the type into the component's exports.
//! The configuration is one typed struct ([`typed`]): it gives the JSON Schema
//! `describe()` returns, `validate-config` with every problem reported by field, and the
//! canonical form the server stores. The SDK also answers a check with an invalid
//! configuration as a failed check instead of a trap.
//!
//! ```ignore
//! use tocsin_plugin_sdk::{export_monitor, typed::TypedConfig, CheckContext, Info, Monitor, Outcome};
//!
//! #[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
//! #[serde(rename_all = "camelCase", deny_unknown_fields)]
//! #[schemars(title = "tcp monitor")]
//! struct TcpConfig { host: String, port: u16 }
//! impl TypedConfig for TcpConfig {}
//!
//! struct Tcp;
//! impl Monitor for Tcp {
//!     type Config = TcpConfig;
//!     fn info() -> Info { /* name, version, description, capabilities */ }
//!     fn check(c: TcpConfig, ctx: &CheckContext) -> Outcome { /* host imports */ }
//! }
//! export_monitor!(Tcp);
//! ```
//!
//! The host interfaces are re-exported as [`http`], [`net`], [`tls`], [`smtp`] and [`log`].

// The bindings wit-bindgen generates call the host and export functions through `unsafe` glue.
#![allow(unsafe_code)]

pub mod config;
pub mod schema;
pub mod tcp;

/// 64 unpredictable bits (for protocol nonces and query ids), from std's hasher keys,
/// which WASI seeds from the host's random source. Not for keys or secrets.
pub fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.finish()
}

/// Compare a query's answer (the first column of the first row; `None` for no rows or
/// NULL) with the value a monitor expects, in the words a failed check uses.
pub fn expect_answer(expected: Option<&str>, got: Option<&str>) -> Result<(), String> {
    match (expected, got) {
        (None, _) => Ok(()),
        (Some(e), Some(g)) if e == g => Ok(()),
        (Some(e), Some(g)) => Err(format!(
            "the query answered \"{}\", expected \"{e}\"",
            g.chars().take(100).collect::<String>()
        )),
        (Some(e), None) => Err(format!(
            "the query answered no value (no rows or NULL), expected \"{e}\""
        )),
    }
}
pub mod typed;

/// Bindings of the `monitor` world of the frozen `tocsin:plugin@0.3.0` contract.
pub mod monitor {
    wit_bindgen::generate!({
        path: "../wit/v0.3.0",
        world: "monitor",
        additional_derives: [PartialEq, Eq],
        pub_export_macro: true,
        export_macro_name: "export_monitor_world",
        default_bindings_module: "tocsin_plugin_sdk::monitor",
    });
}

/// Bindings of the `channel` world of the frozen `tocsin:plugin@0.3.0` contract; the
/// interfaces it shares with `monitor` are the same Rust types.
pub mod channel {
    wit_bindgen::generate!({
        path: "../wit/v0.3.0",
        world: "channel",
        additional_derives: [PartialEq, Eq],
        pub_export_macro: true,
        export_macro_name: "export_channel_world",
        default_bindings_module: "tocsin_plugin_sdk::channel",
        with: {
            "tocsin:plugin/types@0.3.0": crate::monitor::tocsin::plugin::types,
            "tocsin:plugin/http@0.3.0": crate::monitor::tocsin::plugin::http,
            "tocsin:plugin/log@0.3.0": crate::monitor::tocsin::plugin::log,
            "tocsin:plugin/net@0.3.0": crate::monitor::tocsin::plugin::net,
        },
    });
}

/// Bindings of the `pipeline` world of the frozen `tocsin:plugin@0.3.0` contract.
pub mod pipeline {
    wit_bindgen::generate!({
        path: "../wit/v0.3.0",
        world: "pipeline",
        additional_derives: [PartialEq, Eq],
        pub_export_macro: true,
        export_macro_name: "export_pipeline_world",
        default_bindings_module: "tocsin_plugin_sdk::pipeline",
        with: {
            "tocsin:plugin/types@0.3.0": crate::monitor::tocsin::plugin::types,
            "tocsin:plugin/log@0.3.0": crate::monitor::tocsin::plugin::log,
        },
    });
}

pub use channel::tocsin::plugin::smtp;
pub use monitor::tocsin::plugin::{http, log, net, tls, types};
pub use pipeline::exports::tocsin::plugin::pipeline_plugin::{Decision, Delay};
pub use pipeline::tocsin::plugin::clock;
pub use types::{Ability, Capability, Header};

/// The contract version these bindings implement.
pub const CONTRACT: &str = "0.3.0";

use monitor::exports::tocsin::plugin::monitor_plugin::{CheckOutcome, CheckRequest};
use typed::PluginConfig;
pub use types::FieldError;
use types::{PluginInfo, PluginKind};

/// What `describe()` answers.
pub struct Info {
    /// The plugin's name: the monitor `type` or channel `type` users write.
    pub name: &'static str,
    /// Usually `env!("CARGO_PKG_VERSION")`.
    pub version: &'static str,
    /// One sentence for `GET /v1/plugins`.
    pub description: &'static str,
    /// The host interfaces the plugin calls; the server grants them per plugin.
    pub capabilities: &'static [Capability],
}

/// What a check is told besides its configuration.
pub struct CheckContext {
    /// The time the check may take, in milliseconds; the host stops it a little later.
    pub timeout_ms: u32,
    /// The monitor being checked.
    pub monitor_id: String,
    /// The region the check runs in.
    pub region: String,
    /// Server settings for this plugin, as JSON text (`{}` when none).
    pub settings: String,
    /// 1 for the scheduled check, 2 for a re-check from another region confirming a failure.
    pub attempt: u32,
}

/// A check's result.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub ok: bool,
    /// Why it failed, in words a user reads in an alert.
    pub reason: Option<String>,
    pub status_code: Option<u16>,
    pub response_time_ms: Option<u32>,
    /// Anything worth keeping with the result (shown in the API, at most 16 KiB).
    pub details: serde_json::Value,
}

impl Outcome {
    /// A passing check.
    pub fn pass(response_time_ms: Option<u32>) -> Outcome {
        Outcome {
            ok: true,
            reason: None,
            status_code: None,
            response_time_ms,
            details: serde_json::json!({}),
        }
    }

    /// A failing check, with the reason a user will read.
    pub fn fail(reason: impl Into<String>) -> Outcome {
        Outcome {
            ok: false,
            reason: Some(reason.into()),
            status_code: None,
            response_time_ms: None,
            details: serde_json::json!({}),
        }
    }

    /// The same outcome with details attached.
    pub fn with_details(mut self, details: serde_json::Value) -> Outcome {
        self.details = details;
        self
    }

    /// The same outcome with a response time.
    pub fn with_time(mut self, response_time_ms: u32) -> Outcome {
        self.response_time_ms = Some(response_time_ms);
        self
    }

    /// The same outcome with a status code.
    pub fn with_status(mut self, status_code: u16) -> Outcome {
        self.status_code = Some(status_code);
        self
    }
}

/// A monitor plugin: reads its configuration, then checks.
pub trait Monitor {
    /// The configuration: its schema, parsing and canonical form.
    type Config: PluginConfig;
    /// Name, version, description and capabilities.
    fn info() -> Info;
    /// Run one check. Failures are outcomes with a reason, never panics.
    fn check(config: Self::Config, ctx: &CheckContext) -> Outcome;
}

/// What a channel is asked to deliver.
pub struct Delivery {
    /// `incident.created`, `incident.resolved`, ...
    pub event: String,
    /// The event as JSON text, exactly as the server signed it.
    pub payload: String,
    /// Headers the server wants sent (signature, ids) for a channel that asks for
    /// [`Ability::Signing`]; empty for any other.
    pub headers: Vec<Header>,
    /// The time the delivery may take, in milliseconds.
    pub timeout_ms: u32,
    /// Server settings for this plugin, as JSON text.
    pub settings: String,
}

/// A delivered notification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Receipt {
    pub status_code: Option<u16>,
    pub detail: Option<String>,
}

/// A delivery that did not happen. `retryable` ones are tried again on the retry schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub retryable: bool,
    pub reason: String,
    pub status_code: Option<u16>,
}

impl Failure {
    /// A failure worth retrying (timeouts, 5xx, refused connections).
    pub fn retry(reason: impl Into<String>) -> Failure {
        Failure {
            retryable: true,
            reason: reason.into(),
            status_code: None,
        }
    }

    /// A failure that will not get better by retrying (bad configuration, 4xx).
    pub fn permanent(reason: impl Into<String>) -> Failure {
        Failure {
            retryable: false,
            reason: reason.into(),
            status_code: None,
        }
    }

    /// The same failure with the receiver's status code.
    pub fn with_status(mut self, status_code: u16) -> Failure {
        self.status_code = Some(status_code);
        self
    }
}

/// A channel plugin: reads its configuration, then delivers notifications.
pub trait Channel {
    /// The configuration: its schema, parsing and canonical form.
    type Config: PluginConfig;
    /// Name, version, description and capabilities.
    fn info() -> Info;
    /// What the channel asks of the server beyond delivering (none unless it says):
    /// `Acknowledgements`, `Pauses`, `Grouping`, `Signing`.
    fn abilities() -> &'static [Ability] {
        &[]
    }
    /// Top-level configuration fields holding a URL that must be `https://` (the server
    /// refuses a plain `http://` one unless its operator allows insecure webhooks).
    fn https_only() -> &'static [&'static str] {
        &[]
    }
    /// Deliver one notification.
    fn deliver(config: Self::Config, delivery: Delivery) -> Result<Receipt, Failure>;
}

/// One notification on its way to one channel, as a pipeline step sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct PipelineAlert {
    /// Event kind, e.g. `incident.created`.
    pub event: String,
    /// The payload as the channel would get it (JSON text).
    pub payload: String,
    /// The stored channel it goes to, or None for one written into the policy.
    pub channel_id: Option<String>,
    /// The channel's type, e.g. `email`.
    pub channel_type: String,
    /// The monitor's tags.
    pub tags: Vec<String>,
    /// Now, in milliseconds since the Unix epoch.
    pub now: i64,
    /// How many times a step held it before.
    pub delayed: u32,
    /// Server settings for this plugin, as JSON text (`{}` when none).
    pub settings: String,
}

/// A step of the alert pipeline: reads its configuration, then decides what happens to
/// each notification (see the contract's `pipeline-plugin`). It calls no network; the
/// [`clock`] interface gives wall-clock time in any time zone.
pub trait Pipeline {
    /// The configuration: its schema, parsing and canonical form.
    type Config: PluginConfig;
    /// Name, version and description (capabilities are ignored: a step has none).
    fn info() -> Info;
    /// What happens to one notification.
    fn decide(config: Self::Config, alert: PipelineAlert) -> Decision;
}

/// The words a failed check or delivery uses for an invalid configuration.
pub fn invalid_config_reason(problems: &[FieldError]) -> String {
    let all: Vec<String> = problems
        .iter()
        .map(|p| format!("{} {}", p.field, p.message))
        .collect();
    format!("Invalid configuration: {}", all.join("; "))
}

fn plugin_info<C: PluginConfig>(
    info: Info,
    kind: PluginKind,
    abilities: &[Ability],
    https_only: &[&str],
) -> PluginInfo {
    PluginInfo {
        name: info.name.into(),
        kind,
        version: info.version.into(),
        description: info.description.into(),
        config_schema: C::schema().to_string(),
        capabilities: info.capabilities.to_vec(),
        abilities: abilities.to_vec(),
        https_only: https_only.iter().map(|f| f.to_string()).collect(),
    }
}

/// The glue [`export_monitor!`] uses; not for direct use.
#[doc(hidden)]
pub mod __monitor {
    use super::*;

    pub fn describe<M: Monitor>() -> PluginInfo {
        plugin_info::<M::Config>(M::info(), PluginKind::Monitor, &[], &[])
    }

    pub fn validate_config<M: Monitor>(text: String) -> Result<String, Vec<FieldError>> {
        M::Config::parse(&text).map(|c| c.canonical().to_string())
    }

    pub fn check<M: Monitor>(req: CheckRequest) -> CheckOutcome {
        let outcome = match M::Config::from_canonical(&req.config) {
            Ok(config) => {
                let ctx = CheckContext {
                    timeout_ms: req.timeout_ms,
                    monitor_id: req.monitor_id,
                    region: req.region,
                    settings: req.settings,
                    attempt: req.attempt,
                };
                M::check(config, &ctx)
            }
            Err(problems) => Outcome::fail(invalid_config_reason(&problems)),
        };
        CheckOutcome {
            ok: outcome.ok,
            reason: outcome.reason,
            status_code: outcome.status_code,
            response_time_ms: outcome.response_time_ms,
            details: outcome.details.to_string(),
        }
    }
}

/// The glue [`export_channel!`] uses; not for direct use.
#[doc(hidden)]
pub mod __channel {
    use super::*;
    use channel::exports::tocsin::plugin::channel_plugin as wit;

    pub fn describe<C: Channel>() -> PluginInfo {
        plugin_info::<C::Config>(
            C::info(),
            PluginKind::Channel,
            C::abilities(),
            C::https_only(),
        )
    }

    pub fn validate_config<C: Channel>(text: String) -> Result<String, Vec<FieldError>> {
        C::Config::parse(&text).map(|c| c.canonical().to_string())
    }

    pub fn deliver<C: Channel>(n: wit::Notification) -> Result<wit::Receipt, wit::Failure> {
        let config = C::Config::from_canonical(&n.config).map_err(|problems| wit::Failure {
            retryable: false,
            reason: invalid_config_reason(&problems),
            status_code: None,
        })?;
        let delivery = Delivery {
            event: n.event,
            payload: n.payload,
            headers: n.headers,
            timeout_ms: n.timeout_ms,
            settings: n.settings,
        };
        C::deliver(config, delivery)
            .map(|r| wit::Receipt {
                status_code: r.status_code,
                detail: r.detail,
            })
            .map_err(|f| wit::Failure {
                retryable: f.retryable,
                reason: f.reason,
                status_code: f.status_code,
            })
    }
}

/// The glue [`export_pipeline!`] uses; not for direct use.
#[doc(hidden)]
pub mod __pipeline {
    use super::*;
    use pipeline::exports::tocsin::plugin::pipeline_plugin as wit;

    pub fn describe<P: Pipeline>() -> PluginInfo {
        let mut info = plugin_info::<P::Config>(P::info(), PluginKind::Pipeline, &[], &[]);
        info.capabilities.clear();
        info
    }

    pub fn validate_config<P: Pipeline>(text: String) -> Result<String, Vec<FieldError>> {
        P::Config::parse(&text).map(|c| c.canonical().to_string())
    }

    /// A configuration the server accepted but this build cannot read lets the alert go
    /// on, and says so in the server's log.
    pub fn decide<P: Pipeline>(a: wit::Alert) -> wit::Decision {
        match P::Config::from_canonical(&a.config) {
            Ok(config) => P::decide(
                config,
                PipelineAlert {
                    event: a.event,
                    payload: a.payload,
                    channel_id: a.channel_id,
                    channel_type: a.channel_type,
                    tags: a.tags,
                    now: a.now,
                    delayed: a.delayed,
                    settings: a.settings,
                },
            ),
            Err(problems) => {
                log::log(log::Level::Error, &invalid_config_reason(&problems));
                wit::Decision::Deliver
            }
        }
    }
}

/// Export a [`Monitor`] as the component's `monitor-plugin` interface. Only a WebAssembly
/// build exports anything, so the crate's native unit tests build too.
#[macro_export]
macro_rules! export_monitor {
    ($ty:ty) => {
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            struct TocsinMonitorExports;
            impl $crate::monitor::exports::tocsin::plugin::monitor_plugin::Guest
                for TocsinMonitorExports
            {
                fn describe() -> $crate::types::PluginInfo {
                    $crate::__monitor::describe::<$ty>()
                }
                fn validate_config(
                    text: ::std::string::String,
                ) -> ::std::result::Result<
                    ::std::string::String,
                    ::std::vec::Vec<$crate::types::FieldError>,
                > {
                    $crate::__monitor::validate_config::<$ty>(text)
                }
                fn check(
                    req: $crate::monitor::exports::tocsin::plugin::monitor_plugin::CheckRequest,
                ) -> $crate::monitor::exports::tocsin::plugin::monitor_plugin::CheckOutcome {
                    $crate::__monitor::check::<$ty>(req)
                }
            }
            $crate::monitor::export_monitor_world!(TocsinMonitorExports with_types_in $crate::monitor);
        };
        // Native builds (unit tests) export nothing, but still check the type implements
        // the trait and count it as used.
        #[cfg(not(target_arch = "wasm32"))]
        const _: () = {
            let _ = $crate::__monitor::describe::<$ty>;
        };
    };
}

/// Export a [`Channel`] as the component's `channel-plugin` interface. Only a WebAssembly
/// build exports anything, so the crate's native unit tests build too.
#[macro_export]
macro_rules! export_channel {
    ($ty:ty) => {
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            struct TocsinChannelExports;
            impl $crate::channel::exports::tocsin::plugin::channel_plugin::Guest
                for TocsinChannelExports
            {
                fn describe() -> $crate::types::PluginInfo {
                    $crate::__channel::describe::<$ty>()
                }
                fn validate_config(
                    text: ::std::string::String,
                ) -> ::std::result::Result<
                    ::std::string::String,
                    ::std::vec::Vec<$crate::types::FieldError>,
                > {
                    $crate::__channel::validate_config::<$ty>(text)
                }
                fn deliver(
                    n: $crate::channel::exports::tocsin::plugin::channel_plugin::Notification,
                ) -> ::std::result::Result<
                    $crate::channel::exports::tocsin::plugin::channel_plugin::Receipt,
                    $crate::channel::exports::tocsin::plugin::channel_plugin::Failure,
                > {
                    $crate::__channel::deliver::<$ty>(n)
                }
            }
            $crate::channel::export_channel_world!(TocsinChannelExports with_types_in $crate::channel);
        };
        // Native builds (unit tests) export nothing, but still check the type implements
        // the trait and count it as used.
        #[cfg(not(target_arch = "wasm32"))]
        const _: () = {
            let _ = $crate::__channel::describe::<$ty>;
        };
    };
}

/// Export a [`Pipeline`] as the component's `pipeline-plugin` interface. Only a
/// WebAssembly build exports anything, so the crate's native unit tests build too.
#[macro_export]
macro_rules! export_pipeline {
    ($ty:ty) => {
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            struct TocsinPipelineExports;
            impl $crate::pipeline::exports::tocsin::plugin::pipeline_plugin::Guest
                for TocsinPipelineExports
            {
                fn describe() -> $crate::types::PluginInfo {
                    $crate::__pipeline::describe::<$ty>()
                }
                fn validate_config(
                    text: ::std::string::String,
                ) -> ::std::result::Result<
                    ::std::string::String,
                    ::std::vec::Vec<$crate::types::FieldError>,
                > {
                    $crate::__pipeline::validate_config::<$ty>(text)
                }
                fn decide(
                    a: $crate::pipeline::exports::tocsin::plugin::pipeline_plugin::Alert,
                ) -> $crate::pipeline::exports::tocsin::plugin::pipeline_plugin::Decision {
                    $crate::__pipeline::decide::<$ty>(a)
                }
            }
            $crate::pipeline::export_pipeline_world!(TocsinPipelineExports with_types_in $crate::pipeline);
        };
        // Native builds (unit tests) export nothing, but still check the type implements
        // the trait and count it as used.
        #[cfg(not(target_arch = "wasm32"))]
        const _: () = {
            let _ = $crate::__pipeline::describe::<$ty>;
        };
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use typed::TypedConfig;

    /// The echo monitor's configuration.
    #[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[schemars(title = "echo monitor")]
    struct EchoConfig {
        /// The word.
        #[schemars(length(min = 1, max = 10))]
        word: String,
    }

    impl TypedConfig for EchoConfig {
        fn refine(self) -> Result<Self, Vec<FieldError>> {
            Ok(EchoConfig {
                word: self.word.trim().to_string(),
            })
        }
    }

    struct Echo;
    impl Monitor for Echo {
        type Config = EchoConfig;
        fn info() -> Info {
            Info {
                name: "echo",
                version: "1.0.0",
                description: "Passes when the word is yes.",
                capabilities: &[],
            }
        }
        fn check(config: EchoConfig, ctx: &CheckContext) -> Outcome {
            if config.word == "yes" {
                Outcome::pass(Some(ctx.timeout_ms / 1000))
            } else {
                Outcome::fail(format!("the word was {}", config.word))
            }
        }
    }

    fn request(config: &str) -> CheckRequest {
        CheckRequest {
            config: config.into(),
            timeout_ms: 5000,
            monitor_id: "mon_1".into(),
            region: "default".into(),
            settings: "{}".into(),
            attempt: 1,
        }
    }

    #[test]
    fn the_glue_describes_validates_and_checks() {
        let info = __monitor::describe::<Echo>();
        assert_eq!(info.name, "echo");
        assert!(matches!(info.kind, PluginKind::Monitor));
        let schema: serde_json::Value =
            serde_json::from_str(&info.config_schema).expect("schema is JSON");
        assert_eq!(schema["required"][0], "word");

        assert_eq!(
            __monitor::validate_config::<Echo>(r#"{"word":" yes "}"#.into()).ok(),
            Some(r#"{"word":"yes"}"#.to_string())
        );
        let errors =
            __monitor::validate_config::<Echo>(r#"{"colour":1}"#.into()).expect_err("invalid");
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["colour", "word"]);

        let passed = __monitor::check::<Echo>(request(r#"{"word":"yes"}"#));
        assert!(passed.ok);
        assert_eq!(passed.response_time_ms, Some(5));
        let failed = __monitor::check::<Echo>(request(r#"{"word":"no"}"#));
        assert_eq!(failed.reason.as_deref(), Some("the word was no"));
        let invalid = __monitor::check::<Echo>(request("[]"));
        assert!(!invalid.ok);
        assert_eq!(
            invalid.reason.as_deref(),
            Some("Invalid configuration: config must be a JSON object")
        );
    }
}
