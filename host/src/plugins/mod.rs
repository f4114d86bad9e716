//! Plugins: loading components (built-in and from `plugins_dir`), telling which contract
//! world and version each implements, and calling them. Nothing outside this module
//! touches wasmtime.

pub mod bindings;
pub mod http;
pub mod limits;
mod log;
pub mod net;
pub mod runtime;
pub mod smtp;
pub mod state;
pub mod tls;
pub mod trust;

use bindings::channel_v0_1::{Channel, ChannelPre};
use bindings::monitor_v0_1::{Monitor, MonitorPre};
use bindings::types::{Capability, FieldError, PluginKind};
use runtime::Runtime;
use state::{CallContext, CallState, Grants, HostServices};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wasmtime::component::{HasSelf, Linker};

pub use bindings::channel_v0_1::exports::tocsin::plugin::channel_plugin::{
    Failure as DeliveryFailure, Notification, Receipt,
};
pub use bindings::monitor_v0_1::exports::tocsin::plugin::monitor_plugin::{
    CheckOutcome, CheckRequest,
};
pub use runtime::CallError;

include!(concat!(env!("OUT_DIR"), "/builtin_plugins.rs"));

/// Contract versions this server loads.
pub const SUPPORTED_CONTRACTS: &[&str] = &["0.1.0"];

/// Server settings the host imports use.
#[derive(Debug, Clone, Default)]
pub struct HostSettings {
    pub smtp: crate::config::SmtpConfig,
    /// PEM file of extra trusted certificate authorities.
    pub tls_extra_roots: Option<PathBuf>,
    /// What plugins from `plugins_dir` are granted, by name.
    pub plugin_grants: BTreeMap<String, crate::config::PluginGrant>,
    /// Grant every plugin what it declares (for `tocsin plugin check` on a developer's
    /// machine; never for a server).
    pub grant_declared: bool,
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
    /// The capabilities the server grants it: built-ins get what they declare; plugins from
    /// `plugins_dir` only what `[plugin_grants.<name>]` allows.
    pub granted: Vec<&'static str>,
}

/// A loaded monitor plugin.
pub struct MonitorPlugin {
    pub description: PluginDescription,
    name: Arc<str>,
    grants: Grants,
    pre: MonitorPre<CallState>,
}

/// A loaded channel plugin.
pub struct ChannelPlugin {
    pub description: PluginDescription,
    name: Arc<str>,
    grants: Grants,
    pre: ChannelPre<CallState>,
}

/// A component to load.
pub struct PluginSource {
    /// `builtin` or a file path, for messages.
    pub origin: String,
    pub bytes: Vec<u8>,
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

/// All loaded plugins and the runtime that runs them.
pub struct PluginHost {
    runtime: Runtime,
    plugin_grants: BTreeMap<String, crate::config::PluginGrant>,
    grant_declared: bool,
    services: Arc<HostServices>,
    monitors: BTreeMap<String, Arc<MonitorPlugin>>,
    channels: BTreeMap<String, Arc<ChannelPlugin>>,
    monitor_linker: Linker<CallState>,
    channel_linker: Linker<CallState>,
}

/// Which world a component implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum World {
    Monitor,
    Channel,
}

/// Read the world and contract version from a component's export names
/// (`tocsin:plugin/monitor-plugin@0.1.0`).
pub fn contract_of(names: impl IntoIterator<Item = String>) -> Result<(World, String), LoadError> {
    let mut unsupported = None;
    for name in names {
        let Some(rest) = name.strip_prefix("tocsin:plugin/") else {
            continue;
        };
        let (interface, version) = rest.split_once('@').unwrap_or((rest, ""));
        let world = match interface {
            "monitor-plugin" => World::Monitor,
            "channel-plugin" => World::Channel,
            _ => continue,
        };
        if SUPPORTED_CONTRACTS.contains(&version) {
            return Ok((world, version.to_string()));
        }
        unsupported = Some(version.to_string());
    }
    match unsupported {
        Some(found) => Err(LoadError::UnsupportedContract {
            found,
            supported: SUPPORTED_CONTRACTS.join(", "),
        }),
        None => Err(LoadError::NotAPlugin),
    }
}

fn capability_name(c: Capability) -> &'static str {
    match c {
        Capability::Http => "http",
        Capability::Net => "net",
        Capability::Tls => "tls",
        Capability::Smtp => "smtp",
    }
}

fn grants_for(capabilities: &[Capability]) -> Grants {
    let mut g = Grants::default();
    for c in capabilities {
        match c {
            Capability::Http => g.http = true,
            Capability::Net => g.net = true,
            Capability::Tls => g.tls = true,
            Capability::Smtp => g.smtp = true,
        }
    }
    g
}

/// Whether `name` is 1 to 32 lowercase letters, digits or `-`, not starting with `-`.
pub fn valid_plugin_name(name: &str) -> bool {
    (1..=32).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
}

impl PluginHost {
    /// Create an empty host. `cache_dir` keeps compiled components across restarts.
    pub fn new(cache_dir: Option<PathBuf>, settings: &HostSettings) -> anyhow::Result<PluginHost> {
        let runtime = Runtime::new(cache_dir)?;
        let mut monitor_linker = runtime.new_linker()?;
        Monitor::add_to_linker::<CallState, HasSelf<CallState>>(&mut monitor_linker, |s| s)?;
        let mut channel_linker = runtime.new_linker()?;
        Channel::add_to_linker::<CallState, HasSelf<CallState>>(&mut channel_linker, |s| s)?;
        let smtp = smtp::SmtpRelay::from_config(&settings.smtp).map_err(anyhow::Error::msg)?;
        let roots = trust::load(settings.tls_extra_roots.as_deref())?;
        if roots.extra > 0 {
            tracing::info!(count = roots.extra, "trusting extra root certificates");
        }
        let services = Arc::new(HostServices {
            http_client: http::build_client(&roots.certs)?,
            smtp,
            tls_verifier: roots.verifier,
        });
        Ok(PluginHost {
            runtime,
            plugin_grants: settings.plugin_grants.clone(),
            grant_declared: settings.grant_declared,
            services,
            monitors: BTreeMap::new(),
            channels: BTreeMap::new(),
            monitor_linker,
            channel_linker,
        })
    }

    /// The built-in plugins, as sources.
    pub fn builtin_sources() -> Vec<PluginSource> {
        BUILTIN_PLUGINS
            .iter()
            .map(|(_, bytes)| PluginSource {
                origin: "builtin".into(),
                bytes: bytes.to_vec(),
            })
            .collect()
    }

    /// `*.wasm` files of a directory, sorted by name. A missing directory has none.
    pub fn directory_sources(dir: &Path) -> Vec<PluginSource> {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Vec::new();
        };
        let mut paths: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "wasm") && p.is_file())
            .collect();
        paths.sort();
        paths
            .into_iter()
            .filter_map(|path| match std::fs::read(&path) {
                Ok(bytes) => Some(PluginSource { origin: path.display().to_string(), bytes }),
                Err(e) => {
                    tracing::error!(path = %path.display(), error = %e, "cannot read plugin file; skipped");
                    None
                }
            })
            .collect()
    }

    /// Load each source; a refused one is logged and skipped, the rest still load.
    pub async fn load_all(&mut self, sources: Vec<PluginSource>) -> Vec<(String, LoadError)> {
        let mut refused = Vec::new();
        for source in sources {
            let origin = source.origin.clone();
            match self.load(source).await {
                Ok(d) => {
                    tracing::info!(plugin = %d.name, kind = d.kind, version = %d.version, contract = %d.contract, origin = %origin, "plugin loaded")
                }
                Err(e) => {
                    tracing::error!(origin = %origin, error = %e, "plugin refused");
                    refused.push((origin, e));
                }
            }
        }
        refused
    }

    /// Load one component.
    pub async fn load(&mut self, source: PluginSource) -> Result<PluginDescription, LoadError> {
        let component = self
            .runtime
            .compile(&source.bytes)
            .map_err(|e| LoadError::Compile(format!("{e:#}")))?;
        let engine = self.runtime.engine();
        let exports: Vec<String> = component
            .component_type()
            .exports(engine)
            .map(|(n, _)| n.to_string())
            .collect();
        let (world, contract) = contract_of(exports)?;
        let describe_ctx = |name: &str| CallContext {
            plugin: Arc::from(name),
            grants: Grants::default(),
            services: self.services.clone(),
            budget_deadline: Instant::now() + limits::CONTROL_CALL_BUDGET,
            budget: limits::CONTROL_CALL_BUDGET,
            region: None,
        };
        match world {
            World::Monitor => {
                let pre = self
                    .monitor_linker
                    .instantiate_pre(&component)
                    .and_then(MonitorPre::new)
                    .map_err(|e| LoadError::Link(format!("{e:#}")))?;
                let p = pre.clone();
                let info = self
                    .runtime
                    .call(describe_ctx(&source.origin), move |store| {
                        Box::pin(async move {
                            let instance = p.instantiate_async(&mut *store).await?;
                            instance
                                .tocsin_plugin_monitor_plugin()
                                .call_describe(&mut *store)
                                .await
                        })
                    })
                    .await
                    .map_err(|e| LoadError::Describe(e.to_string()))?;
                let description =
                    self.describe(info, PluginKind::Monitor, contract, &source.origin)?;
                if let Some(existing) = self.monitors.get(&description.name) {
                    return Err(LoadError::Clash {
                        kind: "monitor",
                        name: description.name,
                        origin: existing.description.source.clone(),
                    });
                }
                let (grants, description) = self.grant(description, &source.origin);
                let plugin = MonitorPlugin {
                    name: Arc::from(description.name.as_str()),
                    description: description.clone(),
                    grants,
                    pre,
                };
                self.monitors
                    .insert(description.name.clone(), Arc::new(plugin));
                Ok(description)
            }
            World::Channel => {
                let pre = self
                    .channel_linker
                    .instantiate_pre(&component)
                    .and_then(ChannelPre::new)
                    .map_err(|e| LoadError::Link(format!("{e:#}")))?;
                let p = pre.clone();
                let info = self
                    .runtime
                    .call(describe_ctx(&source.origin), move |store| {
                        Box::pin(async move {
                            let instance = p.instantiate_async(&mut *store).await?;
                            instance
                                .tocsin_plugin_channel_plugin()
                                .call_describe(&mut *store)
                                .await
                        })
                    })
                    .await
                    .map_err(|e| LoadError::Describe(e.to_string()))?;
                let description =
                    self.describe(info, PluginKind::Channel, contract, &source.origin)?;
                if let Some(existing) = self.channels.get(&description.name) {
                    return Err(LoadError::Clash {
                        kind: "channel",
                        name: description.name,
                        origin: existing.description.source.clone(),
                    });
                }
                let (grants, description) = self.grant(description, &source.origin);
                let plugin = ChannelPlugin {
                    name: Arc::from(description.name.as_str()),
                    description: description.clone(),
                    grants,
                    pre,
                };
                self.channels
                    .insert(description.name.clone(), Arc::new(plugin));
                Ok(description)
            }
        }
    }

    fn describe(
        &self,
        info: bindings::types::PluginInfo,
        expected: PluginKind,
        contract: String,
        origin: &str,
    ) -> Result<PluginDescription, LoadError> {
        if info.kind != expected {
            return Err(LoadError::InvalidDescription(
                "describe() names a kind other than the world it exports".into(),
            ));
        }
        if !valid_plugin_name(&info.name) {
            return Err(LoadError::InvalidDescription(format!(
                "name `{}` must be 1 to 32 lowercase letters, digits or `-`",
                info.name
            )));
        }
        let config_schema: serde_json::Value =
            serde_json::from_str(&info.config_schema).map_err(|e| {
                LoadError::InvalidDescription(format!("config-schema is not JSON: {e}"))
            })?;
        if !config_schema.is_object() {
            return Err(LoadError::InvalidDescription(
                "config-schema must be a JSON object".into(),
            ));
        }
        Ok(PluginDescription {
            name: info.name,
            kind: match expected {
                PluginKind::Monitor => "monitor",
                PluginKind::Channel => "channel",
            },
            version: info.version,
            description: info.description,
            config_schema,
            capabilities: info.capabilities.into_iter().map(capability_name).collect(),
            contract,
            source: origin.to_string(),
            granted: Vec::new(),
        })
    }

    /// Every loaded plugin, monitors first, by name.
    pub fn descriptions(&self) -> Vec<PluginDescription> {
        self.monitors
            .values()
            .map(|p| p.description.clone())
            .chain(self.channels.values().map(|p| p.description.clone()))
            .collect()
    }

    /// The monitor plugin for a monitor type.
    pub fn monitor(&self, name: &str) -> Option<Arc<MonitorPlugin>> {
        self.monitors.get(name).cloned()
    }

    /// The channel plugin for a channel type.
    pub fn channel(&self, name: &str) -> Option<Arc<ChannelPlugin>> {
        self.channels.get(name).cloned()
    }

    /// The services host imports use (HTTP client, SMTP, TLS verifier), for native
    /// comparisons in the benchmark.
    pub fn services(&self) -> Arc<HostServices> {
        self.services.clone()
    }

    /// Whether instances come from the pooling allocator.
    pub fn is_pooling(&self) -> bool {
        self.runtime.is_pooling()
    }

    fn context(&self, name: &Arc<str>, grants: Grants, budget: Duration) -> CallContext {
        CallContext {
            plugin: name.clone(),
            grants,
            services: self.services.clone(),
            budget_deadline: Instant::now() + budget,
            budget,
            region: None,
        }
    }

    /// Ask a monitor plugin to check a configuration. `Ok(Err(..))` lists the problems.
    pub async fn validate_monitor_config(
        &self,
        plugin: &MonitorPlugin,
        config: String,
    ) -> Result<Result<String, Vec<FieldError>>, CallError> {
        let pre = plugin.pre.clone();
        let ctx = self.context(&plugin.name, Grants::default(), limits::CONTROL_CALL_BUDGET);
        self.runtime
            .call(ctx, move |store| {
                Box::pin(async move {
                    let instance = pre.instantiate_async(&mut *store).await?;
                    instance
                        .tocsin_plugin_monitor_plugin()
                        .call_validate_config(&mut *store, &config)
                        .await
                })
            })
            .await
    }

    /// Run one check. `budget` is the monitor's timeout.
    pub async fn check(
        &self,
        plugin: &MonitorPlugin,
        request: CheckRequest,
    ) -> Result<CheckOutcome, CallError> {
        let budget = Duration::from_millis(u64::from(request.timeout_ms));
        let pre = plugin.pre.clone();
        let mut ctx = self.context(&plugin.name, plugin.grants.clone(), budget);
        ctx.region = Some(Arc::from(request.region.as_str()));
        self.runtime
            .call(ctx, move |store| {
                Box::pin(async move {
                    let instance = pre.instantiate_async(&mut *store).await?;
                    instance
                        .tocsin_plugin_monitor_plugin()
                        .call_check(&mut *store, &request)
                        .await
                })
            })
            .await
    }

    /// Ask a channel plugin to check a configuration.
    pub async fn validate_channel_config(
        &self,
        plugin: &ChannelPlugin,
        config: String,
    ) -> Result<Result<String, Vec<FieldError>>, CallError> {
        let pre = plugin.pre.clone();
        let ctx = self.context(&plugin.name, Grants::default(), limits::CONTROL_CALL_BUDGET);
        self.runtime
            .call(ctx, move |store| {
                Box::pin(async move {
                    let instance = pre.instantiate_async(&mut *store).await?;
                    instance
                        .tocsin_plugin_channel_plugin()
                        .call_validate_config(&mut *store, &config)
                        .await
                })
            })
            .await
    }

    /// Make one delivery attempt.
    pub async fn deliver(
        &self,
        plugin: &ChannelPlugin,
        n: Notification,
    ) -> Result<Result<Receipt, DeliveryFailure>, CallError> {
        let budget = Duration::from_millis(u64::from(n.timeout_ms));
        let pre = plugin.pre.clone();
        let ctx = self.context(&plugin.name, plugin.grants.clone(), budget);
        self.runtime
            .call(ctx, move |store| {
                Box::pin(async move {
                    let instance = pre.instantiate_async(&mut *store).await?;
                    instance
                        .tocsin_plugin_channel_plugin()
                        .call_deliver(&mut *store, &n)
                        .await
                })
            })
            .await
    }
}

impl PluginHost {
    /// What a plugin may call: built-ins what they declare, others what they declare and
    /// the configuration grants.
    fn grant(
        &self,
        mut description: PluginDescription,
        origin: &str,
    ) -> (Grants, PluginDescription) {
        let declared = grants_for_description(&description);
        let grants = if origin == "builtin" || self.grant_declared {
            declared
        } else {
            let configured = self.plugin_grants.get(&description.name);
            let allowed =
                |cap: &str| configured.is_some_and(|g| g.capabilities.iter().any(|c| c == cap));
            let g = Grants {
                http: declared.http && allowed("http"),
                net: declared.net && allowed("net"),
                tls: declared.tls && allowed("tls"),
                smtp: declared.smtp && allowed("smtp"),
                http_hosts: configured.and_then(|c| c.http_hosts.clone()).map(Arc::from),
            };
            let missing: Vec<&str> = declared
                .names()
                .into_iter()
                .filter(|c| !g.names().contains(c))
                .collect();
            if !missing.is_empty() {
                tracing::warn!(
                    plugin = %description.name,
                    origin,
                    missing = %missing.join(", "),
                    "plugin asks for capabilities it was not granted; its calls to them will be refused (grant them under [plugin_grants.{}])",
                    description.name
                );
            }
            g
        };
        description.granted = grants.names();
        (grants, description)
    }
}

/// The capabilities a plugin declares.
fn grants_for_description(d: &PluginDescription) -> Grants {
    let caps: Vec<Capability> = d
        .capabilities
        .iter()
        .filter_map(|c| match *c {
            "http" => Some(Capability::Http),
            "net" => Some(Capability::Net),
            "tls" => Some(Capability::Tls),
            "smtp" => Some(Capability::Smtp),
            _ => None,
        })
        .collect();
    grants_for(&caps)
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
        assert_eq!((world, v.as_str()), (World::Monitor, "0.1.0"));
        let (world, _) =
            contract_of(["tocsin:plugin/channel-plugin@0.1.0".to_string()]).expect("supported");
        assert_eq!(world, World::Channel);
        let err = contract_of(["tocsin:plugin/monitor-plugin@9.0.0".to_string()])
            .expect_err("unsupported");
        assert!(err.to_string().contains("tocsin:plugin@9.0.0"));
        assert!(matches!(
            contract_of(["wasi:cli/run@0.2.6".to_string()]),
            Err(LoadError::NotAPlugin)
        ));
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
