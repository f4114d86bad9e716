//! Plugins: loading components (built-in and from `plugins_dir`), telling which contract
//! world and version each implements, and calling them. Nothing outside this module
//! touches wasmtime.

pub mod abilities;
pub mod builtin;
mod clock;
mod datagram;
pub mod describe;
pub mod egress;
mod engine_config;
pub mod http;
pub mod kept;
pub mod limits;
mod log;
pub mod net;
pub mod relay;
pub mod runtime;
pub mod secrets;
pub mod settings;
pub mod smtp;
mod socket;
pub mod state;
pub mod stream;
pub mod tls;
pub mod trust;
pub mod wit;

use runtime::Runtime;
use state::{CallContext, CallState, Grants, HostServices};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wasmtime::component::Linker;
use wit::{ChannelContract, MonitorContract, PipelineContract};

pub use describe::{HEARTBEAT, heartbeat_description};
pub use describe::{
    LoadError, MONITOR_FIELDS, PluginDescription, TOP_LEVEL_KEYWORD, World, contract_of,
    fields_at_top_level, valid_plugin_name,
};
pub use runtime::{CallError, Compiled};
pub use settings::{HostSettings, PluginGrant, SmtpConfig, SmtpTls};
pub use wit::types::{Capability, FieldError, Header, PluginKind};
pub use wit::{Alert, Decision, Delay};
pub use wit::{CheckOutcome, CheckRequest, DeliveryFailure, Notification, Receipt};

include!(concat!(env!("OUT_DIR"), "/builtin_plugins.rs"));

/// What `tocsin plugin precompile` did with one component, and how long it took.
pub type Precompiled = Result<(Compiled, Duration), String>;

/// The artifact the build compiled for a built-in plugin (or a file that is a copy of one).
fn compiled_at_build(bytes: &[u8]) -> Option<&'static [u8]> {
    BUILTIN_PLUGINS
        .iter()
        .find(|(_, wasm, artifact)| !artifact.is_empty() && *wasm == bytes)
        .map(|(_, _, artifact)| *artifact)
}

/// Count a call for `/metrics`, by how it ended.
fn count_call<T>(plugin: &str, call: &'static str, result: &Result<T, CallError>) {
    let ended = match result {
        Ok(_) => "ok",
        Err(CallError::Deadline(_)) => "deadline",
        Err(CallError::Memory(_)) => "memory",
        Err(CallError::Trap(_)) => "trap",
        Err(CallError::Instantiate(_)) => "instantiate",
    };
    crate::telemetry::global().plugin_call(plugin, call, ended);
}

/// One semaphore per kind of call; together they never ask for more instances than the
/// pool holds.
struct CallBudgets {
    checks: tokio::sync::Semaphore,
    deliveries: tokio::sync::Semaphore,
    control: tokio::sync::Semaphore,
}

impl Default for CallBudgets {
    fn default() -> CallBudgets {
        let s = |n: u32| tokio::sync::Semaphore::new(n as usize);
        CallBudgets {
            checks: s(limits::CHECK_INSTANCES),
            deliveries: s(limits::DELIVERY_INSTANCES),
            control: s(limits::CONTROL_INSTANCES),
        }
    }
}

/// A loaded monitor plugin.
pub struct MonitorPlugin {
    pub description: PluginDescription,
    name: Arc<str>,
    grants: Grants,
    binding: Arc<dyn MonitorContract>,
    /// This load of the plugin, for [`kept::Owner`]; never reused within a process.
    load: u64,
    /// Whether its instances are kept between a workspace's checks: built-ins only.
    keeps_instances: bool,
}

/// Numbers for [`MonitorPlugin::load`].
static LOADS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A loaded channel plugin.
pub struct ChannelPlugin {
    pub description: PluginDescription,
    name: Arc<str>,
    grants: Grants,
    binding: Arc<dyn ChannelContract>,
}

impl ChannelPlugin {
    /// What the channel asks of the host, as its description lists it.
    pub fn abilities(&self) -> abilities::Abilities {
        let d = &self.description;
        let listed: Vec<wit::types::Ability> = wit::types::Ability::ALL
            .into_iter()
            .filter(|a| d.abilities.contains(&a.name()))
            .collect();
        abilities::Abilities::of(&listed, &d.https_only)
    }
}

/// A loaded pipeline plugin: a step of alert policies' pipelines.
pub struct PipelinePlugin {
    pub description: PluginDescription,
    name: Arc<str>,
    binding: Arc<dyn PipelineContract>,
}

/// A component to load.
pub struct PluginSource {
    /// `builtin` or a file path, for messages.
    pub origin: String,
    pub bytes: Vec<u8>,
}

/// All loaded plugins and the runtime that runs them.
pub struct PluginHost {
    runtime: Runtime,
    /// Instances per kind of call (see [`limits::CHECK_INSTANCES`]).
    budgets: CallBudgets,
    plugin_grants: BTreeMap<String, PluginGrant>,
    grant_declared: bool,
    services: Arc<HostServices>,
    /// The same services under the visitors' egress policy, for deliveries to targets an
    /// anonymous visitor gave (a status page's webhook subscribers).
    visitor_services: Arc<HostServices>,
    /// The trusted roots (loaded once; single sign-on's client trusts the same).
    trusted_certs: Vec<rustls::pki_types::CertificateDer<'static>>,
    monitors: BTreeMap<String, Arc<MonitorPlugin>>,
    channels: BTreeMap<String, Arc<ChannelPlugin>>,
    pipelines: BTreeMap<String, Arc<PipelinePlugin>>,
    monitor_linker: Linker<CallState>,
    channel_linker: Linker<CallState>,
    pipeline_linker: Linker<CallState>,
    /// Built-in monitors' instances idle between a workspace's checks.
    kept: kept::KeptInstances,
}

impl PluginHost {
    /// Create an empty host. `cache_dir` keeps compiled components across restarts.
    pub fn new(cache_dir: Option<PathBuf>, settings: &HostSettings) -> anyhow::Result<PluginHost> {
        let runtime = Runtime::new(cache_dir)?;
        let mut monitor_linker = runtime.new_linker()?;
        let mut channel_linker = runtime.new_linker()?;
        let mut pipeline_linker = runtime.new_linker()?;
        for version in wit::VERSIONS {
            (version.link)(&mut monitor_linker, &mut channel_linker)?;
            if let Some(world) = &version.pipeline {
                (world.link)(&mut pipeline_linker)?;
            }
        }
        let smtp = relay::SmtpRelay::from_config(&settings.smtp).map_err(anyhow::Error::msg)?;
        let roots = trust::load(settings.tls_extra_roots.as_deref())?;
        if roots.extra > 0 {
            tracing::info!(count = roots.extra, "trusting extra root certificates");
        }
        let egress = Arc::new(settings.egress.clone());
        let visitor_egress = Arc::new(settings.egress.for_visitors());
        let visitor_services = Arc::new(HostServices {
            http: http::Clients::build(&roots.certs, visitor_egress.clone())?,
            // Visitors' e-mail goes through the server's relay on the ordinary path.
            smtp: None,
            tls_verifier: roots.verifier.clone(),
            egress: visitor_egress,
        });
        let services = Arc::new(HostServices {
            http: http::Clients::build(&roots.certs, egress.clone())?,
            smtp,
            tls_verifier: roots.verifier,
            egress,
        });
        Ok(PluginHost {
            runtime,
            budgets: CallBudgets::default(),
            plugin_grants: settings.plugin_grants.clone(),
            grant_declared: settings.grant_declared,
            services,
            visitor_services,
            trusted_certs: roots.certs,
            monitors: BTreeMap::new(),
            channels: BTreeMap::new(),
            pipelines: BTreeMap::new(),
            monitor_linker,
            channel_linker,
            pipeline_linker,
            kept: kept::KeptInstances::default(),
        })
    }

    /// Send an e-mail from the server itself (invitations, password resets) through the
    /// configured relay, under the egress policy, within 30 s.
    pub async fn send_mail(&self, to: &str, subject: &str, text: &str) -> Result<(), String> {
        let Some(relay) = &self.services.smtp else {
            return Err("no SMTP relay is configured (set smtp.host)".into());
        };
        let message = relay::Mail {
            to: vec![to.to_string()],
            subject: subject.to_string(),
            text_body: text.to_string(),
            html_body: None,
            attachments: Arc::from([]),
        };
        relay
            .send(
                &message,
                std::time::Duration::from_secs(30),
                &self.services.egress,
            )
            .await
            .map_err(relay::Error::message)
    }

    /// Try the configured SMTP relay without sending (None: none is configured).
    pub async fn probe_smtp(&self) -> Option<Result<String, String>> {
        let relay = self.services.smtp.as_ref()?;
        Some(
            relay
                .probe(std::time::Duration::from_secs(10), &self.services.egress)
                .await,
        )
    }

    /// Whether this process may open ICMP sockets (ping monitors need one).
    pub fn icmp_permitted() -> Result<(), String> {
        net::icmp_permitted()
    }

    /// The certificate authorities every outgoing TLS connection trusts.
    pub fn trusted_certs(&self) -> &[rustls::pki_types::CertificateDer<'static>] {
        &self.trusted_certs
    }

    /// The egress policy the host imports apply.
    pub fn egress(&self) -> &egress::EgressPolicy {
        &self.services.egress
    }

    /// The built-in plugins, as sources.
    pub fn builtin_sources() -> Vec<PluginSource> {
        BUILTIN_PLUGINS
            .iter()
            .map(|(_, bytes, _)| PluginSource {
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
            match self.load_compiled(source).await {
                Ok((d, how)) => {
                    tracing::info!(plugin = %d.name, kind = d.kind, version = %d.version, contract = %d.contract, origin = %origin, compiled = how.as_str(), "plugin loaded")
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
        self.load_compiled(source).await.map(|(d, _)| d)
    }

    /// Load one component, and say where its machine code came from.
    async fn load_compiled(
        &mut self,
        source: PluginSource,
    ) -> Result<(PluginDescription, Compiled), LoadError> {
        let ahead = compiled_at_build(&source.bytes);
        let (component, how) = self
            .runtime
            .compile(&source.bytes, ahead)
            .map_err(|e| LoadError::Compile(format!("{e:#}")))?;
        let exports: Vec<String> = component
            .component_type()
            .exports(self.runtime.engine())
            .map(|(n, _)| n.to_string())
            .collect();
        let (world, version) = contract_of(exports)?;
        let link = |e: wasmtime::Error| LoadError::Link(format!("{e:#}"));
        let ctx = self.describe_context(&source.origin);
        match world {
            World::Monitor => {
                let binding = (version.monitor)(&self.monitor_linker, &component).map_err(link)?;
                let b = binding.clone();
                let info = self
                    .runtime
                    .call(ctx, move |store| b.describe(store))
                    .await
                    .map_err(|e| LoadError::Describe(e.to_string()))?;
                let (name, grants, description) =
                    self.admit(info, PluginKind::Monitor, version, &source.origin)?;
                self.monitors.insert(
                    description.name.clone(),
                    Arc::new(MonitorPlugin {
                        name,
                        description: description.clone(),
                        grants,
                        binding,
                        load: LOADS.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
                        keeps_instances: source.origin == "builtin",
                    }),
                );
                Ok((description, how))
            }
            World::Channel => {
                let binding = (version.channel)(&self.channel_linker, &component).map_err(link)?;
                let b = binding.clone();
                let info = self
                    .runtime
                    .call(ctx, move |store| b.describe(store))
                    .await
                    .map_err(|e| LoadError::Describe(e.to_string()))?;
                let (name, grants, description) =
                    self.admit(info, PluginKind::Channel, version, &source.origin)?;
                self.channels.insert(
                    description.name.clone(),
                    Arc::new(ChannelPlugin {
                        name,
                        description: description.clone(),
                        grants,
                        binding,
                    }),
                );
                Ok((description, how))
            }
            World::Pipeline => {
                let Some(world) = &version.pipeline else {
                    return Err(LoadError::NotAPlugin);
                };
                let binding = (world.bind)(&self.pipeline_linker, &component).map_err(link)?;
                let b = binding.clone();
                let info = self
                    .runtime
                    .call(ctx, move |store| b.describe(store))
                    .await
                    .map_err(|e| LoadError::Describe(e.to_string()))?;
                let (name, _, description) =
                    self.admit(info, PluginKind::Pipeline, version, &source.origin)?;
                self.pipelines.insert(
                    description.name.clone(),
                    Arc::new(PipelinePlugin {
                        name,
                        description: description.clone(),
                        binding,
                    }),
                );
                Ok((description, how))
            }
        }
    }

    /// Compile each source into the compile cache without loading it (`tocsin plugin
    /// precompile`): what a packager runs so the first start compiles nothing. Built-ins
    /// the build compiled for this machine need nothing.
    pub fn precompile(&self, plugins_dir: &Path) -> Vec<(String, Precompiled)> {
        let compile = |origin: String, bytes: &[u8], ahead: Option<&[u8]>| {
            let started = Instant::now();
            let outcome = self
                .runtime
                .compile(bytes, ahead)
                .map(|(_, how)| (how, started.elapsed()))
                .map_err(|e| format!("{e:#}"));
            (origin, outcome)
        };
        let builtins = BUILTIN_PLUGINS.iter().map(|(name, bytes, artifact)| {
            let ahead = (!artifact.is_empty()).then_some(*artifact);
            compile(format!("built-in {name}"), bytes, ahead)
        });
        let directory = Self::directory_sources(plugins_dir)
            .into_iter()
            .map(|source| {
                let ahead = compiled_at_build(&source.bytes);
                compile(source.origin, &source.bytes, ahead)
            });
        builtins.chain(directory).collect()
    }

    /// The context of a `describe` call at load time: no grants, the control budget.
    fn describe_context(&self, origin: &str) -> CallContext {
        CallContext {
            plugin: Arc::from(origin),
            grants: Grants::default(),
            services: self.services.clone(),
            budget_deadline: Instant::now() + limits::CONTROL_CALL_BUDGET,
            budget: limits::CONTROL_CALL_BUDGET,
            region: None,
            attachments: Arc::from([]),
        }
    }

    /// Check a description, refuse a name clash, and decide the grants.
    fn admit(
        &self,
        info: wit::types::PluginInfo,
        kind: PluginKind,
        version: &wit::Version,
        origin: &str,
    ) -> Result<(Arc<str>, Grants, PluginDescription), LoadError> {
        let description = self.describe(info, kind, version.number.to_string(), origin)?;
        let existing = match kind {
            PluginKind::Monitor => self.monitors.get(&description.name).map(|p| &p.description),
            PluginKind::Channel => self.channels.get(&description.name).map(|p| &p.description),
            PluginKind::Pipeline => self
                .pipelines
                .get(&description.name)
                .map(|p| &p.description),
        };
        // The server's own monitor type keeps its name.
        if kind == PluginKind::Monitor && description.name == HEARTBEAT {
            return Err(LoadError::Clash {
                kind: description.kind,
                name: description.name,
                origin: "the server (a built-in monitor type)".into(),
            });
        }
        if let Some(existing) = existing {
            return Err(LoadError::Clash {
                kind: description.kind,
                name: description.name,
                origin: existing.source.clone(),
            });
        }
        let (grants, description) = self.grant(description, origin);
        Ok((Arc::from(description.name.as_str()), grants, description))
    }

    fn describe(
        &self,
        info: wit::types::PluginInfo,
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
        let top_level = fields_at_top_level(&config_schema)?;
        // Only a channel asks anything of the host.
        let (abilities, https_only) = match expected {
            PluginKind::Channel => (info.abilities, info.https_only),
            PluginKind::Monitor | PluginKind::Pipeline => (Vec::new(), Vec::new()),
        };
        if https_only.len() > abilities::MAX_HTTPS_ONLY
            || https_only
                .iter()
                .any(|f| f.is_empty() || f.len() > 64 || f.chars().any(char::is_control))
        {
            return Err(LoadError::InvalidDescription(format!(
                "https-only must name at most {} fields, each 1 to 64 characters",
                abilities::MAX_HTTPS_ONLY
            )));
        }
        if let Some(unknown) = https_only
            .iter()
            .find(|f| config_schema["properties"].get(f.as_str()).is_none())
        {
            return Err(LoadError::InvalidDescription(format!(
                "https-only names `{}`, which is not a property of config-schema",
                crate::text::bounded(unknown, 64)
            )));
        }
        let abilities = abilities::Abilities::of(&abilities, &https_only);
        Ok(PluginDescription {
            name: info.name,
            kind: match expected {
                PluginKind::Monitor => "monitor",
                PluginKind::Channel => "channel",
                PluginKind::Pipeline => "pipeline",
            },
            version: info.version,
            description: info.description,
            top_level_fields: top_level,
            config_schema,
            capabilities: info
                .capabilities
                .into_iter()
                .map(Capability::name)
                .collect(),
            contract,
            source: origin.to_string(),
            granted: Vec::new(),
            abilities: abilities.names(),
            https_only: abilities.https_only,
        })
    }

    /// Every loaded plugin, monitors first, then channels, then pipeline steps, each by
    /// name, with the server's own `heartbeat` type among the monitors.
    pub fn descriptions(&self) -> Vec<PluginDescription> {
        let mut monitors: Vec<PluginDescription> = self
            .monitors
            .values()
            .map(|p| p.description.clone())
            .collect();
        monitors.push(heartbeat_description());
        monitors.sort_by(|a, b| a.name.cmp(&b.name));
        monitors
            .into_iter()
            .chain(self.channels.values().map(|p| p.description.clone()))
            .chain(self.pipelines.values().map(|p| p.description.clone()))
            .collect()
    }

    /// The monitor plugin for a monitor type.
    pub fn monitor(&self, name: &str) -> Option<Arc<MonitorPlugin>> {
        self.monitors.get(name).cloned()
    }

    /// Whether a monitor type's fields sit at the top level of a monitor object.
    pub fn fields_at_top_level(&self, monitor_type: &str) -> bool {
        monitor_type == HEARTBEAT
            || self
                .monitors
                .get(monitor_type)
                .is_some_and(|p| p.description.top_level_fields)
    }

    /// The fields of a monitor type's configuration its schema marks `writeOnly`
    /// (passwords): stored and used, never shown.
    pub fn monitor_write_only_fields(&self, monitor_type: &str) -> Vec<String> {
        self.monitor_secrets(monitor_type).write_only_fields()
    }

    /// What a monitor type's schema marks as write-only, secret and target. The server's
    /// own `heartbeat` has none; a type no plugin provides any more is all secret.
    pub fn monitor_secrets(&self, monitor_type: &str) -> secrets::SchemaSecrets {
        match self.monitors.get(monitor_type) {
            Some(p) => secrets::SchemaSecrets::of(&p.description.config_schema),
            None if monitor_type == HEARTBEAT => secrets::SchemaSecrets::default(),
            None => secrets::SchemaSecrets::unknown(),
        }
    }

    /// What a channel type's schema marks as write-only, secret and target (a type no
    /// plugin provides any more is all secret).
    pub fn channel_secrets(&self, channel_type: &str) -> secrets::SchemaSecrets {
        self.channels
            .get(channel_type)
            .map_or_else(secrets::SchemaSecrets::unknown, |p| {
                secrets::SchemaSecrets::of(&p.description.config_schema)
            })
    }

    /// The channel plugin for a channel type.
    pub fn channel(&self, name: &str) -> Option<Arc<ChannelPlugin>> {
        self.channels.get(name).cloned()
    }

    /// What a pipeline plugin's schema marks as write-only and secret (a plugin no longer
    /// loaded: all of its configuration).
    pub fn pipeline_secrets(&self, name: &str) -> secrets::SchemaSecrets {
        self.pipelines
            .get(name)
            .map_or_else(secrets::SchemaSecrets::unknown, |p| {
                secrets::SchemaSecrets::of(&p.description.config_schema)
            })
    }

    /// The pipeline plugin of that name.
    pub fn pipeline(&self, name: &str) -> Option<Arc<PipelinePlugin>> {
        self.pipelines.get(name).cloned()
    }

    /// What each loaded channel type asks of the host, for the engine and the outbox.
    pub fn channel_abilities(&self) -> abilities::ChannelAbilities {
        abilities::ChannelAbilities::new(
            self.channels
                .iter()
                .map(|(name, p)| (name.clone(), p.abilities()))
                .collect(),
        )
    }

    /// What channel type `kind` asks of the host (see [`abilities::ChannelAbilities::of`]).
    pub fn channel_ability(&self, kind: &str) -> abilities::Abilities {
        self.channels.get(kind).map_or_else(
            || abilities::ChannelAbilities::default().of(kind),
            |p| p.abilities(),
        )
    }

    /// The services host imports use (HTTP client, SMTP, TLS verifier), for native
    /// comparisons in the benchmark.
    pub fn services(&self) -> Arc<HostServices> {
        self.services.clone()
    }

    /// Built-in monitors' instances kept between a workspace's checks.
    pub fn kept_instances(&self) -> &kept::KeptInstances {
        &self.kept
    }

    /// Instances in use and the most that may be, per kind of call (`check`, `deliver`,
    /// `validate`).
    pub fn instances(&self) -> [(&'static str, usize, usize); 3] {
        let b = &self.budgets;
        let used = |s: &tokio::sync::Semaphore, max: u32| {
            (max as usize).saturating_sub(s.available_permits())
        };
        [
            (
                "check",
                used(&b.checks, limits::CHECK_INSTANCES),
                limits::CHECK_INSTANCES as usize,
            ),
            (
                "deliver",
                used(&b.deliveries, limits::DELIVERY_INSTANCES),
                limits::DELIVERY_INSTANCES as usize,
            ),
            (
                "validate",
                used(&b.control, limits::CONTROL_INSTANCES),
                limits::CONTROL_INSTANCES as usize,
            ),
        ]
    }

    /// Whether instances come from the pooling allocator.
    pub fn is_pooling(&self) -> bool {
        self.runtime.is_pooling()
    }

    /// How often the epoch has advanced: only while a plugin call runs.
    pub fn epoch_ticks(&self) -> u64 {
        self.runtime.epoch_ticks()
    }

    fn context(&self, name: &Arc<str>, grants: Grants, budget: Duration) -> CallContext {
        CallContext {
            plugin: name.clone(),
            grants,
            services: self.services.clone(),
            budget_deadline: Instant::now() + budget,
            budget,
            region: None,
            attachments: Arc::from([]),
        }
    }

    /// `validate-config` of any kind of plugin: no grants, the control budget.
    async fn validate_by<F>(
        &self,
        name: &Arc<str>,
        call: F,
    ) -> Result<Result<String, Vec<FieldError>>, CallError>
    where
        F: for<'s> FnOnce(
            &'s mut wasmtime::Store<CallState>,
        ) -> wit::CallFuture<'s, Result<String, Vec<FieldError>>>,
    {
        let _slot = self.budgets.control.acquire().await;
        let ctx = self.context(name, Grants::default(), limits::CONTROL_CALL_BUDGET);
        let result = self.runtime.call(ctx, call).await;
        count_call(name, "validate", &result);
        result
    }

    /// Ask a monitor plugin to check a configuration. `Ok(Err(..))` lists the problems.
    pub async fn validate_monitor_config(
        &self,
        plugin: &MonitorPlugin,
        config: String,
    ) -> Result<Result<String, Vec<FieldError>>, CallError> {
        let binding = plugin.binding.clone();
        self.validate_by(&plugin.name, move |store| {
            binding.validate_config(store, config)
        })
        .await
    }

    /// A check call's context: the plugin's grants, the monitor's timeout as the budget,
    /// the region it runs in.
    fn check_context(&self, plugin: &MonitorPlugin, request: &CheckRequest) -> CallContext {
        let budget = Duration::from_millis(u64::from(request.timeout_ms));
        let mut ctx = self.context(&plugin.name, plugin.grants.clone(), budget);
        ctx.region = Some(Arc::from(request.region.as_str()));
        ctx
    }

    /// Run one check in a fresh instance. `budget` is the monitor's timeout.
    pub async fn check(
        &self,
        plugin: &MonitorPlugin,
        request: CheckRequest,
    ) -> Result<CheckOutcome, CallError> {
        let binding = plugin.binding.clone();
        let _slot = self.budgets.checks.acquire().await;
        let ctx = self.check_context(plugin, &request);
        let result = self
            .runtime
            .call(ctx, move |store| binding.check(store, request))
            .await;
        count_call(&plugin.name, "check", &result);
        result
    }

    /// Run one check of a monitor of `workspace`: in an instance an earlier check of the
    /// same workspace left idle when the plugin is a built-in (see [`kept`]), in a fresh one
    /// otherwise.
    pub async fn check_for(
        &self,
        workspace: &str,
        plugin: &MonitorPlugin,
        request: CheckRequest,
    ) -> Result<CheckOutcome, CallError> {
        if !plugin.keeps_instances {
            return self.check(plugin, request).await;
        }
        let _slot = self.budgets.checks.acquire().await;
        let ctx = self.check_context(plugin, &request);
        let owner = kept::Owner {
            plugin: plugin.load,
            workspace: Arc::from(workspace),
        };
        let (mut store, instance, history) = match self.kept.take(&owner) {
            Some(kept) => {
                let (mut store, instance, history) = kept.into_parts();
                store.data_mut().renew(ctx);
                (store, Some(instance), history)
            }
            None => (self.runtime.store(ctx), None, kept::History::fresh()),
        };
        let binding = plugin.binding.clone();
        let result = self
            .runtime
            .run(&mut store, move |store| {
                Box::pin(async move {
                    let instance = match instance {
                        Some(instance) => instance,
                        None => binding.instance(store).await?,
                    };
                    let outcome = instance.check(store, request).await?;
                    Ok((outcome, instance))
                })
            })
            .await;
        let (result, instance) = match result {
            Ok((outcome, instance)) => (Ok(outcome), Some(instance)),
            Err(e) => (Err(e), None),
        };
        count_call(&plugin.name, "check", &result);
        if let Some(instance) = instance
            && store.data().holds_no_resources()
        {
            self.kept
                .put(owner, kept::Kept::new(store, instance, history));
        }
        result
    }

    /// Go only as far as `stage` of a check call, for measuring a call's pieces apart
    /// (`tocsin bench --plugin-pieces`). True when the stage did what it should (the
    /// configuration valid, the check passed).
    pub async fn check_up_to(
        &self,
        plugin: &MonitorPlugin,
        request: CheckRequest,
        stage: CallStage,
    ) -> Result<bool, CallError> {
        if let CallStage::Kept(workspace) = stage {
            return Ok(self.check_for(workspace, plugin, request).await?.ok);
        }
        let binding = plugin.binding.clone();
        let _slot = self.budgets.checks.acquire().await;
        let ctx = self.check_context(plugin, &request);
        self.runtime
            .call(ctx, move |store| match stage {
                CallStage::Store => Box::pin(async { Ok(true) }),
                CallStage::Instantiate => Box::pin(async move {
                    binding.instantiate(store).await?;
                    Ok(true)
                }),
                CallStage::Validate => Box::pin(async move {
                    Ok(binding
                        .validate_config(store, request.config)
                        .await?
                        .is_ok())
                }),
                CallStage::Check => {
                    Box::pin(async move { Ok(binding.check(store, request).await?.ok) })
                }
                CallStage::Kept(_) => unreachable!("answered above"),
            })
            .await
    }

    /// Ask a channel plugin to check a configuration.
    pub async fn validate_channel_config(
        &self,
        plugin: &ChannelPlugin,
        config: String,
    ) -> Result<Result<String, Vec<FieldError>>, CallError> {
        let binding = plugin.binding.clone();
        self.validate_by(&plugin.name, move |store| {
            binding.validate_config(store, config)
        })
        .await
    }

    /// Ask a pipeline plugin to check a step's configuration.
    pub async fn validate_pipeline_config(
        &self,
        plugin: &PipelinePlugin,
        config: String,
    ) -> Result<Result<String, Vec<FieldError>>, CallError> {
        let binding = plugin.binding.clone();
        self.validate_by(&plugin.name, move |store| {
            binding.validate_config(store, config)
        })
        .await
    }

    /// Ask a pipeline step what happens to one notification. A step is granted nothing
    /// but the clock and the log, and has [`limits::PIPELINE_CALL_BUDGET`].
    pub async fn decide(
        &self,
        plugin: &PipelinePlugin,
        alert: Alert,
    ) -> Result<Decision, CallError> {
        let binding = plugin.binding.clone();
        let _slot = self.budgets.deliveries.acquire().await;
        let ctx = self.context(
            &plugin.name,
            Grants::default(),
            limits::PIPELINE_CALL_BUDGET,
        );
        let result = self
            .runtime
            .call(ctx, move |store| binding.decide(store, alert))
            .await;
        count_call(&plugin.name, "decide", &result);
        result
    }

    /// Make one delivery attempt.
    pub async fn deliver(
        &self,
        plugin: &ChannelPlugin,
        n: Notification,
    ) -> Result<Result<Receipt, DeliveryFailure>, CallError> {
        self.deliver_by(plugin, n, false, Arc::from([])).await
    }

    /// [`PluginHost::deliver`] of a delivery that carries files: the first message the
    /// plugin sends through the SMTP relay has them attached.
    pub async fn deliver_with_files(
        &self,
        plugin: &ChannelPlugin,
        n: Notification,
        files: Arc<[relay::Attachment]>,
    ) -> Result<Result<Receipt, DeliveryFailure>, CallError> {
        self.deliver_by(plugin, n, false, files).await
    }

    /// Make one delivery attempt to a target an anonymous visitor gave: the same as
    /// [`PluginHost::deliver`], but every connection goes by the visitors' egress policy
    /// ([`egress::EgressPolicy::for_visitors`]), checked after DNS resolution.
    pub async fn deliver_for_visitor(
        &self,
        plugin: &ChannelPlugin,
        n: Notification,
    ) -> Result<Result<Receipt, DeliveryFailure>, CallError> {
        self.deliver_by(plugin, n, true, Arc::from([])).await
    }

    async fn deliver_by(
        &self,
        plugin: &ChannelPlugin,
        n: Notification,
        for_visitor: bool,
        files: Arc<[relay::Attachment]>,
    ) -> Result<Result<Receipt, DeliveryFailure>, CallError> {
        let budget = Duration::from_millis(u64::from(n.timeout_ms));
        let binding = plugin.binding.clone();
        let _slot = self.budgets.deliveries.acquire().await;
        let mut ctx = self.context(&plugin.name, plugin.grants.clone(), budget);
        ctx.attachments = files;
        if for_visitor {
            ctx.services = self.visitor_services.clone();
        }
        let result = self
            .runtime
            .call(ctx, move |store| binding.deliver(store, n))
            .await;
        count_call(&plugin.name, "deliver", &result);
        result
    }
}

/// How far [`PluginHost::check_up_to`] goes: a store created and dropped; and a component
/// instantiated in it; and its configuration validated (a call that does no I/O); or a
/// whole check in a fresh instance; or a whole check as the scheduler makes it, in an
/// instance kept between the checks of the workspace named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallStage {
    Store,
    Instantiate,
    Validate,
    Check,
    Kept(&'static str),
}

impl PluginHost {
    /// What a plugin may call: built-ins what they declare, others what they declare and
    /// the configuration grants.
    fn grant(
        &self,
        mut description: PluginDescription,
        origin: &str,
    ) -> (Grants, PluginDescription) {
        let declared: Vec<Capability> = description
            .capabilities
            .iter()
            .filter_map(|c| Capability::parse(c))
            .collect();
        let grants = if origin == "builtin" || self.grant_declared {
            Grants::of(declared)
        } else {
            let configured = self.plugin_grants.get(&description.name);
            let allowed = |cap: Capability| {
                configured.is_some_and(|g| g.capabilities.iter().any(|c| c == cap.name()))
            };
            let (granted, missing): (Vec<Capability>, Vec<Capability>) =
                declared.into_iter().partition(|c| allowed(*c));
            if !missing.is_empty() {
                let missing: Vec<&str> = missing.into_iter().map(Capability::name).collect();
                tracing::warn!(
                    plugin = %description.name,
                    origin,
                    missing = %missing.join(", "),
                    "plugin asks for capabilities it was not granted; its calls to them will be refused (grant them under [plugin_grants.{}])",
                    description.name
                );
            }
            Grants {
                http_hosts: configured.and_then(|c| c.http_hosts.clone()).map(Arc::from),
                ..Grants::of(granted)
            }
        };
        description.granted = grants.names();
        // Signed deliveries carry the workspace's signature: a plugin from the plugins
        // directory gets them only when the operator says so.
        let signing_granted = origin == "builtin"
            || self.grant_declared
            || self
                .plugin_grants
                .get(&description.name)
                .is_some_and(|g| g.signing);
        if !signing_granted && description.abilities.contains(&"signing") {
            description.abilities.retain(|a| *a != "signing");
            tracing::warn!(
                plugin = %description.name,
                origin,
                "plugin asks for signed deliveries but was not granted them; its deliveries go unsigned (grant them with signing = true under [plugin_grants.{}])",
                description.name
            );
        }
        (grants, description)
    }
}
