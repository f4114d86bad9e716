//! The server's one typed configuration, built once at start-up from a TOML file, then
//! `TOCSIN_*` environment variables, then command-line flags (each overriding the last).
//! Every setting has a default, so the server runs with no file at all. This is the only
//! module that reads the environment.

use crate::plans::{Plan, Quota, Quotas};
use crate::plugins::Capability;
use crate::plugins::egress::{EgressPolicy, EgressPreset};
use serde::Deserialize;
use settings::{self as set, Bounds, Fallback, Setting};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Pretty,
    Json,
}

/// Who may read `GET /metrics`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MetricsAccess {
    /// An API key's bearer; the key's workspace's monitors only.
    Key,
    /// Anyone, every workspace's monitors.
    Public,
    /// Nobody: the route answers 404.
    Off,
}

/// A probe region and the addresses its checks come from.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Region {
    pub name: String,
    #[serde(default)]
    pub ipv4: Vec<String>,
    #[serde(default)]
    pub ipv6: Vec<String>,
    /// A private location: checked by probes (`tocsin probe`), never by a node. A monitor
    /// checks from it only when it names it in its regions; "every region" leaves it out.
    #[serde(default)]
    pub private: bool,
}

pub use crate::plugins::settings::{PluginGrant, SmtpConfig, SmtpTls};

pub mod settings;

/// The Telegram Bot API used by telegram channels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TelegramConfig {
    pub bot_token: Option<String>,
    pub api_base: String,
    /// The secret token Telegram sends with the bot's updates (`/telegram/updates`); None:
    /// updates are not received, and buttons open links.
    pub webhook_secret: Option<String>,
}

/// The complete configuration.
#[derive(Debug, Clone)]
pub struct Config {
    pub listen: SocketAddr,
    pub data_dir: PathBuf,
    pub database_url: String,
    pub public_url: String,
    /// Shortest monitor interval accepted, in seconds.
    pub min_interval: u32,
    pub allow_insecure_webhooks: bool,
    pub webhook_retry_schedule: Vec<Duration>,
    pub rate_limit_per_minute: u32,
    /// Requests a key may make at once before the per-minute rate applies.
    pub rate_limit_burst: u32,
    pub bootstrap_key: Option<String>,
    pub bootstrap_plan: Plan,
    /// What each plan allows (`[plans.<plan>]`).
    pub quotas: Quotas,
    pub plugins_dir: PathBuf,
    /// Where compiled plugins are kept across restarts (`<data_dir>/cache/plugins`).
    pub plugin_cache_dir: PathBuf,
    /// The region this node runs checks for.
    pub region: String,
    pub regions: Vec<Region>,
    pub smtp: SmtpConfig,
    /// Per-plugin grants for plugins from `plugins_dir`, by plugin name.
    pub plugin_grants: std::collections::BTreeMap<String, PluginGrant>,
    /// Server-side settings handed to a channel plugin with every delivery, by plugin name
    /// (`[plugin_settings.<name>]`, e.g. PagerDuty's `eventsUrl` for a proxy), as JSON.
    pub plugin_settings: std::collections::BTreeMap<String, serde_json::Value>,
    pub telegram: TelegramConfig,
    pub tls_extra_roots: Option<PathBuf>,
    /// Which addresses checks and deliveries may connect to.
    pub egress: EgressPolicy,
    /// Days raw check results, finished deliveries and resolved incidents are kept
    /// (0: for ever).
    pub retention: Retention,
    /// What anonymous visitors may do with a status page's subscribe form.
    pub subscriptions: Subscriptions,
    pub sessions: SessionLifetimes,
    /// How long an alert's one-click links work.
    pub action_link_lifetime: Duration,
    /// Single sign-on providers, in the order the sign-in page shows them.
    pub oidc: Vec<OidcProvider>,
    pub log_format: LogFormat,
    /// Who may read `GET /metrics`.
    pub metrics: MetricsAccess,
    /// Also expose Uptime Kuma's metric names (`monitor_status`, ...) for its dashboards.
    pub metrics_kuma_names: bool,
    /// Expose a response-time histogram per monitor (about half a scrape's lines).
    pub metrics_histograms: bool,
    /// Log filter in `tracing` syntax (e.g. `info,tocsin=debug`).
    pub log_filter: String,
    /// Check results waiting to be written before new ones are shed (counted and logged).
    pub recorder_buffer: usize,
    /// Threads that run the checks (the scheduler and the plugins' checks); the API, the
    /// result writer and the deliveries run on threads of their own.
    pub check_threads: usize,
    /// Time for a request's whole body, from the end of its head; past it, 408.
    pub request_body_timeout: Duration,
    /// Connections one client address may hold open at once; more are refused with 429.
    pub max_connections_per_address: u32,
    /// Origins allowed to frame the public status pages (`frame-ancestors`); empty: none.
    pub status_page_frame_ancestors: Vec<String>,
}

/// Check results buffered for the database by default (`recorder_buffer`).
pub const DEFAULT_RECORDER_BUFFER: u32 = 100_000;
/// Connections one client address may hold open at once (`max_connections_per_address`):
/// a browser opens about six, a proxy in front of many people needs more
/// (docs/deployment.md).
pub const DEFAULT_MAX_CONNECTIONS_PER_ADDRESS: u32 = 64;

/// Threads that run the checks by default (`check_threads`): half the machine's cores, at
/// least one, leaving the rest to the API, the result writer and the database. On one
/// thread a check's steps never wake another thread, which saves about a tenth of its
/// CPU; one thread keeps up with about 3,000 checks a second on a two-core machine
/// (docs/performance.md).
pub fn default_check_threads() -> u32 {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    u32::try_from(cores / 2).unwrap_or(1).max(1)
}

/// The TOML file. Unknown keys are refused, so a typo is an error rather than a silent default.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    listen: Option<String>,
    data_dir: Option<PathBuf>,
    database_url: Option<String>,
    public_url: Option<String>,
    min_interval: Option<u32>,
    allow_insecure_webhooks: Option<bool>,
    webhook_retry_schedule: Option<String>,
    rate_limit_per_minute: Option<u32>,
    rate_limit_burst: Option<u32>,
    bootstrap_key: Option<String>,
    bootstrap_plan: Option<Plan>,
    plans: Option<FilePlans>,
    plugins_dir: Option<PathBuf>,
    plugin_cache_dir: Option<PathBuf>,
    region: Option<String>,
    regions: Option<Vec<Region>>,
    smtp: Option<SmtpConfig>,
    plugin_grants: Option<std::collections::BTreeMap<String, PluginGrant>>,
    plugin_settings: Option<std::collections::BTreeMap<String, toml::Table>>,
    telegram: Option<FileTelegram>,
    tls_extra_roots: Option<PathBuf>,
    egress: Option<String>,
    egress_allow: Option<Vec<String>>,
    egress_deny: Option<Vec<String>>,
    retention: Option<FileRetention>,
    subscriptions: Option<FileSubscriptions>,
    session_idle: Option<String>,
    session_lifetime: Option<String>,
    action_link_lifetime: Option<String>,
    oidc: Option<Vec<OidcProvider>>,
    log_format: Option<LogFormat>,
    log_filter: Option<String>,
    metrics: Option<MetricsAccess>,
    metrics_kuma_names: Option<bool>,
    metrics_histograms: Option<bool>,
    recorder_buffer: Option<u32>,
    check_threads: Option<u32>,
    request_body_timeout: Option<String>,
    max_connections_per_address: Option<u32>,
    status_page_frame_ancestors: Option<Vec<String>>,
}

/// How long rows are kept, in days; 0 keeps them for ever.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    pub checks_days: u32,
    pub deliveries_days: u32,
    pub incidents_days: u32,
    pub audit_days: u32,
}

/// `[subscriptions]`: limits on what anonymous visitors may make the server do through a
/// status page's subscribe form. Each count is of confirmation mails sent, or webhook
/// subscribers added, in the last hour; over a limit the visitor gets the same answer and
/// nothing is sent or stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Subscriptions {
    /// Confirmation mails to one mailbox (the address in lower case without its `+tag`),
    /// over every page (`subscriptions.confirmations_per_mailbox`, 3).
    pub confirmations_per_mailbox: u32,
    /// Confirmation mails for one status page (`subscriptions.confirmations_per_page`, 100).
    pub confirmations_per_page: u32,
    /// Confirmation mails one client address (an IPv6 address's /64) asks for
    /// (`subscriptions.confirmations_per_client`, 10).
    pub confirmations_per_client: u32,
    /// Webhook subscribers added to one status page (`subscriptions.webhooks_per_page`, 20).
    pub webhooks_per_page: u32,
    /// Webhook subscribers one client address (an IPv6 address's /64) adds
    /// (`subscriptions.webhooks_per_client`, 5).
    pub webhooks_per_client: u32,
    /// Let webhook subscribers name loopback and private addresses (the server's own
    /// egress policy then applies instead of public addresses only). For test and lab
    /// servers whose status pages are not on the internet; off by default.
    pub allow_private_targets: bool,
}

impl Default for Subscriptions {
    fn default() -> Self {
        Subscriptions {
            confirmations_per_mailbox: 3,
            confirmations_per_page: 100,
            confirmations_per_client: 10,
            webhooks_per_page: 20,
            webhooks_per_client: 5,
            allow_private_targets: false,
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSubscriptions {
    confirmations_per_mailbox: Option<u32>,
    confirmations_per_page: Option<u32>,
    confirmations_per_client: Option<u32>,
    webhooks_per_page: Option<u32>,
    webhooks_per_client: Option<u32>,
    allow_private_targets: Option<bool>,
}

/// A single sign-on provider (`[[oidc]]`): OpenID Connect, authorization code flow with
/// PKCE, endpoints found by discovery from `issuer`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OidcProvider {
    /// In URLs (`/v1/auth/oidc/<name>/start`): letters, digits, `-` and `_`.
    pub name: String,
    /// On the sign-in page ("Sign in with ...").
    #[serde(default)]
    pub display_name: Option<String>,
    pub issuer: String,
    pub client_id: String,
    #[serde(default)]
    pub client_secret: Option<String>,
    /// Scopes besides `openid` (default `email`, `profile`).
    #[serde(default = "default_oidc_scopes")]
    pub scopes: Vec<String>,
    /// E-mail domains whose first sign-in creates an account. Empty: only people who
    /// already have an account or an invitation may sign in.
    #[serde(default)]
    pub allowed_domains: Vec<String>,
    /// Believe every e-mail address this provider gives, even when its ID token does not
    /// say `email_verified: true` (for a provider that verifies addresses without saying
    /// so). Default false: an unverified address signs in to nothing, since some providers
    /// let anyone claim any address.
    #[serde(default)]
    pub trust_email: bool,
    /// The ID token claim with the person's groups.
    #[serde(default = "default_groups_claim")]
    pub groups_claim: String,
    /// Groups to workspace roles; re-applied at every sign-in.
    #[serde(default)]
    pub roles: Vec<OidcRoleMapping>,
    /// The role given in the first workspace to a new account that no group maps.
    #[serde(default)]
    pub default_role: Option<String>,
}

/// A member of `group` gets `role` in `workspace` (default: the first workspace).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OidcRoleMapping {
    pub group: String,
    #[serde(default)]
    pub workspace: Option<String>,
    pub role: String,
}

fn default_oidc_scopes() -> Vec<String> {
    vec!["email".into(), "profile".into()]
}

fn default_groups_claim() -> String {
    "groups".into()
}

/// Sessions of people signed in through the API or the dashboard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionLifetimes {
    /// A session unused this long ends.
    pub idle: Duration,
    /// A session ends this long after sign-in, used or not.
    pub absolute: Duration,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileRetention {
    checks_days: Option<u32>,
    deliveries_days: Option<u32>,
    incidents_days: Option<u32>,
    audit_days: Option<u32>,
}

/// `[plans.free]`, `[plans.pro]`, ...: each key overrides that plan's default.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FilePlans {
    free: Option<Quota>,
    pro: Option<Quota>,
    business: Option<Quota>,
    enterprise: Option<Quota>,
}

impl FilePlans {
    fn quotas(self) -> Quotas {
        let d = Quotas::default();
        let pick = |q: Option<Quota>, base: Quota| q.map_or(base, |q| q.over(base));
        Quotas {
            free: pick(self.free, d.free),
            pro: pick(self.pro, d.pro),
            business: pick(self.business, d.business),
            enterprise: pick(self.enterprise, d.enterprise),
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileTelegram {
    bot_token: Option<String>,
    api_base: Option<String>,
    webhook_secret: Option<String>,
}

/// Settings given as command-line flags; `None` leaves the file/env value.
#[derive(Debug, Default, Clone)]
pub struct Overrides {
    pub listen: Option<String>,
    pub data_dir: Option<PathBuf>,
    pub database_url: Option<String>,
    pub region: Option<String>,
    pub min_interval: Option<u32>,
}

/// A configuration error, naming the setting.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("config file {path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("{setting}: {message}")]
    Invalid {
        setting: &'static str,
        message: String,
    },
}

fn invalid(setting: &'static str, message: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        setting,
        message: message.into(),
    }
}

impl Config {
    /// Load the configuration the way `tocsin serve` does: the file named by `--config`
    /// (or `tocsin.toml` when it exists), then the process environment, then `overrides`.
    pub fn load(file: Option<&Path>, overrides: &Overrides) -> Result<Config, ConfigError> {
        let env = |name: &str| std::env::var(name).ok();
        Self::build(file, &env, overrides)
    }

    /// Build from a file, an environment lookup and flag overrides.
    pub fn build(
        file: Option<&Path>,
        env: &dyn Fn(&str) -> Option<String>,
        overrides: &Overrides,
    ) -> Result<Config, ConfigError> {
        Self::build_noting(file, env, overrides).map(|(config, _)| config)
    }

    /// Build, and say which settings were read (every one of [`settings::ALL`]).
    fn build_noting(
        file: Option<&Path>,
        env: &dyn Fn(&str) -> Option<String>,
        overrides: &Overrides,
    ) -> Result<(Config, Vec<&'static str>), ConfigError> {
        let default_file = Path::new("tocsin.toml");
        let f = match file {
            Some(path) => read_file(path)?,
            None if default_file.is_file() => read_file(default_file)?,
            None => FileConfig::default(),
        };
        let o = overrides.clone();
        let s = Sources {
            env,
            read: Default::default(),
        };

        let listen_text: String = s.value(&set::LISTEN, o.listen, f.listen)?;
        let listen: SocketAddr = listen_text.parse().map_err(|_| {
            invalid(
                set::LISTEN.key,
                format!("`{listen_text}` is not an address such as 127.0.0.1:8080"),
            )
        })?;
        let data_dir: PathBuf = s.value(&set::DATA_DIR, o.data_dir, f.data_dir)?;
        let database_url: String = s
            .pick(&set::DATABASE_URL, o.database_url, f.database_url)?
            .unwrap_or_else(|| format!("sqlite://{}", data_dir.join("tocsin.db").display()));
        check_database_url(&database_url)?;
        let public_url = s
            .pick(&set::PUBLIC_URL, None, f.public_url)?
            .unwrap_or_else(|| format!("http://{listen}"))
            .trim_end_matches('/')
            .to_string();
        let schedule_text: String =
            s.value(&set::WEBHOOK_RETRY_SCHEDULE, None, f.webhook_retry_schedule)?;
        let webhook_retry_schedule = parse_schedule(&schedule_text)
            .map_err(|m| invalid(set::WEBHOOK_RETRY_SCHEDULE.key, m))?;
        let bootstrap_key: Option<String> = s.pick(&set::BOOTSTRAP_KEY, None, f.bootstrap_key)?;
        if bootstrap_key
            .as_deref()
            .is_some_and(|key| !crate::ids::is_well_formed_secret(key))
        {
            return Err(invalid(
                set::BOOTSTRAP_KEY.key,
                "must be `tcs_` followed by 40 letters and digits",
            ));
        }
        let plugins_dir: PathBuf = s
            .pick(&set::PLUGINS_DIR, None, f.plugins_dir)?
            .unwrap_or_else(|| data_dir.join("plugins"));
        let plugin_cache_dir: PathBuf = s
            .pick(&set::PLUGIN_CACHE_DIR, None, f.plugin_cache_dir)?
            .unwrap_or_else(|| data_dir.join("cache").join("plugins"));
        let region = s.pick(&set::REGION, o.region, f.region)?;
        let (region, regions) = regions(region, s.file_only(&set::REGIONS, f.regions))?;
        let plugin_grants = s
            .file_only(&set::PLUGIN_GRANTS, f.plugin_grants)
            .unwrap_or_default();
        check_grants(&plugin_grants)?;
        let plugin_settings = plugin_settings(
            s.file_only(&set::PLUGIN_SETTINGS, f.plugin_settings)
                .unwrap_or_default(),
        )?;
        let subscriptions = subscriptions(&s, f.subscriptions.unwrap_or_default())?;
        let preset_text: String = s.value(&set::EGRESS, None, f.egress)?;
        let preset = EgressPreset::parse(&preset_text)
            .ok_or_else(|| invalid(set::EGRESS.key, "must be default or public-only"))?;
        let egress = EgressPolicy::new(
            preset,
            &s.file_only(&set::EGRESS_ALLOW, f.egress_allow)
                .unwrap_or_default(),
            &s.file_only(&set::EGRESS_DENY, f.egress_deny)
                .unwrap_or_default(),
        )
        .map_err(|m| invalid(set::EGRESS.key, m))?
        .with_private_visitor_targets(subscriptions.allow_private_targets);
        let oidc = s.file_only(&set::OIDC, f.oidc).unwrap_or_default();
        check_oidc(&oidc)?;
        let check_threads: u32 = s
            .pick(&set::CHECK_THREADS, None, f.check_threads)?
            .unwrap_or_else(default_check_threads);
        within(&set::CHECK_THREADS, &check_threads, u32::from_setting)?;
        let status_page_frame_ancestors: Vec<String> = s.value(
            &set::STATUS_PAGE_FRAME_ANCESTORS,
            None,
            f.status_page_frame_ancestors,
        )?;
        check_frame_ancestors(&status_page_frame_ancestors)?;

        let config = Config {
            listen,
            data_dir,
            database_url,
            public_url,
            min_interval: s.bounded(&set::MIN_INTERVAL, o.min_interval, f.min_interval)?,
            allow_insecure_webhooks: s.value(
                &set::ALLOW_INSECURE_WEBHOOKS,
                None,
                f.allow_insecure_webhooks,
            )?,
            webhook_retry_schedule,
            rate_limit_per_minute: s.bounded(
                &set::RATE_LIMIT_PER_MINUTE,
                None,
                f.rate_limit_per_minute,
            )?,
            rate_limit_burst: s.bounded(&set::RATE_LIMIT_BURST, None, f.rate_limit_burst)?,
            bootstrap_key,
            bootstrap_plan: s.value(&set::BOOTSTRAP_PLAN, None, f.bootstrap_plan)?,
            quotas: s
                .file_only(&set::PLANS, f.plans)
                .unwrap_or_default()
                .quotas(),
            plugins_dir,
            plugin_cache_dir,
            region,
            regions,
            smtp: smtp(&s, f.smtp.unwrap_or_default())?,
            plugin_grants,
            plugin_settings,
            telegram: telegram(&s, f.telegram.unwrap_or_default())?,
            tls_extra_roots: s.pick(&set::TLS_EXTRA_ROOTS, None, f.tls_extra_roots)?,
            egress,
            retention: retention(&s, f.retention.unwrap_or_default())?,
            subscriptions,
            sessions: SessionLifetimes {
                idle: s.duration(&set::SESSION_IDLE, f.session_idle)?,
                absolute: s.duration(&set::SESSION_LIFETIME, f.session_lifetime)?,
            },
            action_link_lifetime: s.duration(&set::ACTION_LINK_LIFETIME, f.action_link_lifetime)?,
            oidc,
            log_format: s.value(&set::LOG_FORMAT, None, f.log_format)?,
            metrics: s.value(&set::METRICS, None, f.metrics)?,
            metrics_kuma_names: s.value(&set::METRICS_KUMA_NAMES, None, f.metrics_kuma_names)?,
            metrics_histograms: s.value(&set::METRICS_HISTOGRAMS, None, f.metrics_histograms)?,
            log_filter: s.value(&set::LOG_FILTER, None, f.log_filter)?,
            recorder_buffer: s.bounded::<u32>(&set::RECORDER_BUFFER, None, f.recorder_buffer)?
                as usize,
            check_threads: check_threads as usize,
            request_body_timeout: s.duration(&set::REQUEST_BODY_TIMEOUT, f.request_body_timeout)?,
            max_connections_per_address: s.bounded(
                &set::MAX_CONNECTIONS_PER_ADDRESS,
                None,
                f.max_connections_per_address,
            )?,
            status_page_frame_ancestors,
        };
        Ok((config, s.read.into_inner()))
    }

    /// Names of the regions nodes check from: what a monitor with no regions of its own
    /// rotates over. Private locations are left out.
    pub fn region_names(&self) -> Vec<String> {
        self.regions
            .iter()
            .filter(|r| !r.private)
            .map(|r| r.name.clone())
            .collect()
    }

    /// Names of every configured region, private locations included: what a monitor's
    /// `regions` may name.
    pub fn all_region_names(&self) -> Vec<String> {
        self.regions.iter().map(|r| r.name.clone()).collect()
    }

    /// Whether `name` is a configured private location.
    pub fn is_private_location(&self, name: &str) -> bool {
        self.regions.iter().any(|r| r.private && r.name == name)
    }
}

/// Each allowed frame ancestor is an origin (`https://example.com`, `https://*.example.com`,
/// an optional port) or `'self'`: nothing that could end the directive or add another.
fn check_frame_ancestors(origins: &[String]) -> Result<(), ConfigError> {
    for origin in origins {
        let host = origin
            .strip_prefix("https://")
            .or_else(|| origin.strip_prefix("http://"));
        let ok = origin == "'self'"
            || host.is_some_and(|h| {
                !h.is_empty()
                    && h.chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '*'))
            });
        if !ok {
            return Err(invalid(
                "status_page_frame_ancestors",
                format!(
                    "`{origin}` is not an origin such as https://intranet.example.com or 'self'"
                ),
            ));
        }
    }
    Ok(())
}

/// Provider names are unique and URL-safe; roles and issuers make sense.
fn check_oidc(providers: &[OidcProvider]) -> Result<(), ConfigError> {
    let mut seen = std::collections::HashSet::new();
    for p in providers {
        if p.name.is_empty()
            || p.name.len() > 64
            || !p
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(invalid(
                "oidc.name",
                format!("`{}` must be 1 to 64 letters, digits, `-` or `_`", p.name),
            ));
        }
        if !seen.insert(p.name.clone()) {
            return Err(invalid(
                "oidc.name",
                format!("`{}` names two providers", p.name),
            ));
        }
        if !(p.issuer.starts_with("https://") || p.issuer.starts_with("http://")) {
            return Err(invalid(
                "oidc.issuer",
                format!("`{}` is not an http(s) URL", p.issuer),
            ));
        }
        let roles = ["owner", "admin", "member", "viewer"];
        for r in p
            .roles
            .iter()
            .map(|m| m.role.as_str())
            .chain(p.default_role.as_deref())
        {
            if !roles.contains(&r) {
                return Err(invalid(
                    "oidc.roles",
                    format!("`{r}` is not a role (owner, admin, member, viewer)"),
                ));
            }
        }
    }
    Ok(())
}

/// Where settings come from, strongest first: a flag, a `TOCSIN_*` environment variable,
/// the file, then the setting's default.
struct Sources<'a> {
    env: &'a dyn Fn(&str) -> Option<String>,
    /// The settings read so far, by key.
    read: std::cell::RefCell<Vec<&'static str>>,
}

impl Sources<'_> {
    /// The configured value of one setting, if any: the flag, else the environment
    /// variable (parsed), else the file's value.
    fn pick<T: FromSetting>(
        &self,
        setting: &'static Setting,
        flag: Option<T>,
        file: Option<T>,
    ) -> Result<Option<T>, ConfigError> {
        self.read.borrow_mut().push(setting.key);
        if flag.is_some() {
            return Ok(flag);
        }
        match setting.env.and_then(self.env) {
            Some(text) => T::from_setting(setting.key, &text).map(Some),
            None => Ok(file),
        }
    }

    /// The value of one setting: the configured one, else its default.
    fn value<T: FromSetting>(
        &self,
        setting: &'static Setting,
        flag: Option<T>,
        file: Option<T>,
    ) -> Result<T, ConfigError> {
        match (self.pick(setting, flag, file)?, &setting.default) {
            (Some(value), _) => Ok(value),
            (None, Fallback::Value(text)) => T::from_setting(setting.key, text),
            (None, Fallback::Described(_)) => Err(invalid(setting.key, "has no default")),
        }
    }

    /// A number within the setting's bounds.
    fn bounded<T: FromSetting + PartialOrd>(
        &self,
        setting: &'static Setting,
        flag: Option<T>,
        file: Option<T>,
    ) -> Result<T, ConfigError> {
        let value = self.value(setting, flag, file)?;
        within(setting, &value, T::from_setting)?;
        Ok(value)
    }

    /// A duration (`10s`, `5m`, ...) within the setting's bounds.
    fn duration(
        &self,
        setting: &'static Setting,
        file: Option<String>,
    ) -> Result<Duration, ConfigError> {
        let text: String = self.value(setting, None, file)?;
        let read = |key, text: &str| parse_duration(text).map_err(|m| invalid(key, m));
        let d = read(setting.key, &text)?;
        within(setting, &d, read)?;
        Ok(d)
    }

    /// A setting only the file can give.
    fn file_only<T>(&self, setting: &'static Setting, file: Option<T>) -> Option<T> {
        self.read.borrow_mut().push(setting.key);
        file
    }
}

/// `value` within `range`, else an error naming the setting.
fn within<T: PartialOrd>(
    setting: &'static Setting,
    value: &T,
    read: impl Fn(&'static str, &str) -> Result<T, ConfigError>,
) -> Result<(), ConfigError> {
    let (low, high, rule) = match setting.bounds {
        Bounds::Any => return Ok(()),
        Bounds::AtLeast(low) => (low, None, format!("at least {low}")),
        Bounds::Within(low, high) => (low, Some(high), format!("from {low} to {high}")),
    };
    let below = *value < read(setting.key, low)?;
    let above = match high {
        Some(high) => *value > read(setting.key, high)?,
        None => false,
    };
    if below || above {
        Err(invalid(setting.key, format!("must be {rule}")))
    } else {
        Ok(())
    }
}

/// A setting's value read from an environment variable's text.
trait FromSetting: Sized {
    fn from_setting(setting: &'static str, text: &str) -> Result<Self, ConfigError>;
}

impl FromSetting for String {
    fn from_setting(_: &'static str, text: &str) -> Result<Self, ConfigError> {
        Ok(text.to_string())
    }
}

impl FromSetting for PathBuf {
    fn from_setting(_: &'static str, text: &str) -> Result<Self, ConfigError> {
        Ok(PathBuf::from(text))
    }
}

impl FromSetting for u32 {
    fn from_setting(setting: &'static str, text: &str) -> Result<Self, ConfigError> {
        parse_number(setting, text)
    }
}

/// A comma-separated list (in the environment; a TOML list in the file).
impl FromSetting for Vec<String> {
    fn from_setting(_: &'static str, text: &str) -> Result<Self, ConfigError> {
        Ok(text
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect())
    }
}

impl FromSetting for u16 {
    fn from_setting(setting: &'static str, text: &str) -> Result<Self, ConfigError> {
        parse_number(setting, text)
    }
}

impl FromSetting for bool {
    fn from_setting(setting: &'static str, text: &str) -> Result<Self, ConfigError> {
        parse_bool(setting, text)
    }
}

impl FromSetting for Plan {
    fn from_setting(setting: &'static str, text: &str) -> Result<Self, ConfigError> {
        Plan::parse(text)
            .ok_or_else(|| invalid(setting, "must be free, pro, business or enterprise"))
    }
}

impl FromSetting for LogFormat {
    fn from_setting(setting: &'static str, text: &str) -> Result<Self, ConfigError> {
        match text {
            "pretty" => Ok(LogFormat::Pretty),
            "json" => Ok(LogFormat::Json),
            _ => Err(invalid(setting, "must be pretty or json")),
        }
    }
}

impl FromSetting for MetricsAccess {
    fn from_setting(setting: &'static str, text: &str) -> Result<Self, ConfigError> {
        match text {
            "key" => Ok(MetricsAccess::Key),
            "public" => Ok(MetricsAccess::Public),
            "off" => Ok(MetricsAccess::Off),
            _ => Err(invalid(setting, "must be key, public or off")),
        }
    }
}

impl FromSetting for SmtpTls {
    fn from_setting(setting: &'static str, text: &str) -> Result<Self, ConfigError> {
        match text {
            "none" => Ok(SmtpTls::None),
            "starttls" => Ok(SmtpTls::Starttls),
            "tls" => Ok(SmtpTls::Tls),
            _ => Err(invalid(setting, "must be none, starttls or tls")),
        }
    }
}

fn check_database_url(url: &str) -> Result<(), ConfigError> {
    if ["sqlite:", "postgres://", "postgresql://"]
        .iter()
        .any(|p| url.starts_with(p))
    {
        Ok(())
    } else {
        Err(invalid(
            "database_url",
            "must start with sqlite:// or postgres://",
        ))
    }
}

/// The longest region name.
const MAX_REGION_NAME: usize = 64;

/// The regions (one `local` region by default) and this node's, which must be one of them.
fn regions(
    region: Option<String>,
    configured: Option<Vec<Region>>,
) -> Result<(String, Vec<Region>), ConfigError> {
    let regions = configured.unwrap_or_else(|| {
        vec![Region {
            name: "local".into(),
            ipv4: vec![],
            ipv6: vec![],
            private: false,
        }]
    });
    // Region names are stored with checks, nodes, probes and confirmation requests
    // (at most 64 characters there).
    let mut seen = std::collections::BTreeSet::new();
    for r in &regions {
        if r.name.is_empty()
            || r.name.chars().count() > MAX_REGION_NAME
            || r.name.chars().any(char::is_control)
        {
            return Err(invalid(
                "regions",
                format!(
                    "a region's name must be 1 to {MAX_REGION_NAME} characters, without control characters: `{}`",
                    r.name.escape_default()
                ),
            ));
        }
        if !seen.insert(r.name.as_str()) {
            return Err(invalid("regions", format!("`{}` is listed twice", r.name)));
        }
    }
    let Some(first) = regions.iter().find(|r| !r.private) else {
        return Err(invalid(
            "regions",
            "must list at least one region that is not private (nodes check from it)",
        ));
    };
    let region = region.unwrap_or_else(|| first.name.clone());
    match regions.iter().find(|r| r.name == region) {
        None => {
            return Err(invalid(
                "region",
                format!("`{region}` is not one of the configured regions"),
            ));
        }
        Some(r) if r.private => {
            return Err(invalid(
                "region",
                format!("`{region}` is a private location: probes check from it, not nodes"),
            ));
        }
        Some(_) => {}
    }
    Ok((region, regions))
}

fn check_grants(
    grants: &std::collections::BTreeMap<String, PluginGrant>,
) -> Result<(), ConfigError> {
    for (name, grant) in grants {
        if let Some(bad) = grant
            .capabilities
            .iter()
            .find(|c| Capability::parse(c).is_none())
        {
            return Err(invalid(
                "plugin_grants",
                format!(
                    "`{name}`: unknown capability `{bad}` (use {})",
                    Capability::choices()
                ),
            ));
        }
    }
    Ok(())
}

/// The SMTP relay: the file's `[smtp]`, each field overridden by its `TOCSIN_SMTP_*`.
fn smtp(s: &Sources<'_>, file: SmtpConfig) -> Result<SmtpConfig, ConfigError> {
    Ok(SmtpConfig {
        host: s.pick(&set::SMTP_HOST, None, file.host)?,
        port: s.pick(&set::SMTP_PORT, None, file.port)?,
        username: s.pick(&set::SMTP_USERNAME, None, file.username)?,
        password: s.pick(&set::SMTP_PASSWORD, None, file.password)?,
        from: s.pick(&set::SMTP_FROM, None, file.from)?,
        tls: s.pick(&set::SMTP_TLS, None, file.tls)?,
    })
}

fn telegram(s: &Sources<'_>, file: FileTelegram) -> Result<TelegramConfig, ConfigError> {
    let api_base: String = s.value(&set::TELEGRAM_API_BASE, None, file.api_base)?;
    Ok(TelegramConfig {
        bot_token: s.pick(&set::TELEGRAM_BOT_TOKEN, None, file.bot_token)?,
        api_base: api_base.trim_end_matches('/').to_string(),
        webhook_secret: s
            .pick(&set::TELEGRAM_WEBHOOK_SECRET, None, file.webhook_secret)?
            .filter(|secret: &String| !secret.is_empty()),
    })
}

fn retention(s: &Sources<'_>, file: FileRetention) -> Result<Retention, ConfigError> {
    Ok(Retention {
        checks_days: s.value(&set::RETENTION_CHECKS_DAYS, None, file.checks_days)?,
        deliveries_days: s.value(&set::RETENTION_DELIVERIES_DAYS, None, file.deliveries_days)?,
        incidents_days: s.value(&set::RETENTION_INCIDENTS_DAYS, None, file.incidents_days)?,
        audit_days: s.value(&set::RETENTION_AUDIT_DAYS, None, file.audit_days)?,
    })
}

fn subscriptions(s: &Sources<'_>, f: FileSubscriptions) -> Result<Subscriptions, ConfigError> {
    use set::{
        SUBSCRIPTIONS_ALLOW_PRIVATE_TARGETS as PRIVATE,
        SUBSCRIPTIONS_CONFIRMATIONS_PER_CLIENT as PER_CLIENT,
        SUBSCRIPTIONS_CONFIRMATIONS_PER_MAILBOX as PER_MAILBOX,
        SUBSCRIPTIONS_CONFIRMATIONS_PER_PAGE as PER_PAGE,
        SUBSCRIPTIONS_WEBHOOKS_PER_CLIENT as HOOKS_PER_CLIENT,
        SUBSCRIPTIONS_WEBHOOKS_PER_PAGE as HOOKS_PER_PAGE,
    };
    Ok(Subscriptions {
        confirmations_per_mailbox: s.value(&PER_MAILBOX, None, f.confirmations_per_mailbox)?,
        confirmations_per_page: s.value(&PER_PAGE, None, f.confirmations_per_page)?,
        confirmations_per_client: s.value(&PER_CLIENT, None, f.confirmations_per_client)?,
        webhooks_per_page: s.value(&HOOKS_PER_PAGE, None, f.webhooks_per_page)?,
        webhooks_per_client: s.value(&HOOKS_PER_CLIENT, None, f.webhooks_per_client)?,
        allow_private_targets: s.value(&PRIVATE, None, f.allow_private_targets)?,
    })
}

/// `[plugin_settings.<name>]` tables as JSON, as channel plugins get them.
fn plugin_settings(
    tables: std::collections::BTreeMap<String, toml::Table>,
) -> Result<std::collections::BTreeMap<String, serde_json::Value>, ConfigError> {
    tables
        .into_iter()
        .map(|(name, table)| {
            serde_json::to_value(table)
                .map(|v| (name.clone(), v))
                .map_err(|e| invalid(set::PLUGIN_SETTINGS.key, format!("`{name}`: {e}")))
        })
        .collect()
}

fn read_file(path: &Path) -> Result<FileConfig, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    toml::from_str(&text).map_err(|e| ConfigError::Parse {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

fn parse_number<T: std::str::FromStr>(setting: &'static str, text: &str) -> Result<T, ConfigError> {
    text.trim()
        .parse()
        .map_err(|_| invalid(setting, format!("`{text}` is not a valid number")))
}

fn parse_bool(setting: &'static str, text: &str) -> Result<bool, ConfigError> {
    match text.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(invalid(setting, format!("`{text}` is not true or false"))),
    }
}

/// Parse a duration such as `10s`, `5m`, `2h`, `1d` or `250ms`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let n: u64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a duration such as 10s or 5m"))?;
    let ms = match unit {
        "ms" => n,
        "s" | "" => n * 1000,
        "m" => n * 60_000,
        "h" => n * 3_600_000,
        "d" => n * 86_400_000,
        _ => {
            return Err(format!(
                "`{text}` has an unknown unit (use ms, s, m, h or d)"
            ));
        }
    };
    Ok(Duration::from_millis(ms))
}

/// Parse a comma-separated retry schedule.
pub fn parse_schedule(text: &str) -> Result<Vec<Duration>, String> {
    let steps: Vec<Duration> = text
        .split(',')
        .filter(|s| !s.trim().is_empty())
        .map(parse_duration)
        .collect::<Result<_, _>>()?;
    if steps.len() > 20 {
        return Err("has more than 20 steps".into());
    }
    Ok(steps)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::io::Write;

    fn build(
        file: Option<&Path>,
        env: &[(&str, &str)],
        o: &Overrides,
    ) -> Result<Config, ConfigError> {
        let map: HashMap<String, String> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::build(file, &move |k| map.get(k).cloned(), o)
    }

    /// Every setting the table lists is read by `build`, and `build` reads no setting the
    /// table does not list: a setting added in one place and not the other fails here.
    #[test]
    fn build_reads_exactly_the_settings_of_the_table() {
        let (_, read) =
            Config::build_noting(None, &|_| None, &Overrides::default()).expect("defaults");
        let read: std::collections::BTreeSet<_> = read.into_iter().collect();
        let listed: std::collections::BTreeSet<_> = settings::ALL.iter().map(|s| s.key).collect();
        assert_eq!(read, listed);
    }

    /// The defaults other modules name agree with the table's.
    #[test]
    fn defaults_named_elsewhere_agree_with_the_table() {
        let c = build(None, &[], &Overrides::default()).expect("defaults");
        assert_eq!(c.recorder_buffer, DEFAULT_RECORDER_BUFFER as usize);
        assert_eq!(
            c.max_connections_per_address,
            DEFAULT_MAX_CONNECTIONS_PER_ADDRESS
        );
        assert_eq!(c.subscriptions, Subscriptions::default());
    }

    #[test]
    fn everything_has_a_default() {
        let c = build(None, &[], &Overrides::default()).expect("defaults");
        assert_eq!(c.listen.to_string(), "127.0.0.1:8080");
        assert_eq!(c.database_url, "sqlite://./data/tocsin.db");
        assert_eq!(c.public_url, "http://127.0.0.1:8080");
        assert_eq!(c.min_interval, 30);
        assert_eq!(c.webhook_retry_schedule.len(), 7);
        assert_eq!(c.webhook_retry_schedule[6], Duration::from_secs(12 * 3600));
        assert_eq!(c.region, "local");
        assert_eq!(c.plugins_dir, PathBuf::from("./data/plugins"));
        assert_eq!(c.bootstrap_plan, Plan::Enterprise);
        assert_eq!(c.telegram.api_base, "https://api.telegram.org");
        assert_eq!(c.egress, EgressPolicy::default());
        assert_eq!(
            c.retention,
            Retention {
                checks_days: 90,
                deliveries_days: 90,
                incidents_days: 0,
                audit_days: 365,
            }
        );
        assert_eq!(c.sessions.idle, Duration::from_secs(7 * 86_400));
        assert_eq!(c.sessions.absolute, Duration::from_secs(30 * 86_400));
        assert!(c.oidc.is_empty());
        assert_eq!(c.check_threads, default_check_threads() as usize);
        assert!(c.check_threads >= 1);
    }

    #[test]
    fn plan_quotas_override_defaults_key_by_key() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.toml");
        std::fs::write(
            &path,
            "[plans.free]\nmonitors = 3\nmin_interval = 0\n[plans.enterprise]\nmembers = 500\n",
        )
        .expect("write");
        let c = build(Some(&path), &[], &Overrides::default()).expect("valid");
        assert_eq!(c.quotas.free.monitors, Some(3));
        assert_eq!(
            c.quotas.free.channels,
            Quota::default_for(Plan::Free).channels
        );
        assert_eq!(c.quotas.free.min_interval, None, "0 is no limit");
        assert_eq!(c.quotas.enterprise.members, Some(500));
        assert_eq!(c.quotas.enterprise.monitors, None);
        assert_eq!(c.quotas.pro, Quota::default_for(Plan::Pro));
        std::fs::write(&path, "[plans.free]\nmonitor = 3\n").expect("write");
        assert!(build(Some(&path), &[], &Overrides::default()).is_err());
    }

    #[test]
    fn egress_preset_and_lists() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.toml");
        std::fs::write(
            &path,
            "egress = \"public-only\"\negress_allow = [\"10.0.0.0/8\"]\negress_deny = [\"10.9.0.0/16\"]\n",
        )
        .expect("write");
        let c = build(Some(&path), &[], &Overrides::default()).expect("valid");
        assert_eq!(c.egress.preset(), EgressPreset::PublicOnly);
        assert!(c.egress.check("10.1.1.1".parse().expect("ip")).is_ok());
        assert!(c.egress.check("10.9.1.1".parse().expect("ip")).is_err());
        assert!(c.egress.check("127.0.0.1".parse().expect("ip")).is_err());
        let c = build(
            Some(&path),
            &[("TOCSIN_EGRESS", "default")],
            &Overrides::default(),
        )
        .expect("valid");
        assert!(c.egress.check("127.0.0.1".parse().expect("ip")).is_ok());
        std::fs::write(&path, "egress_deny = [\"nope\"]\n").expect("write");
        let e = build(Some(&path), &[], &Overrides::default()).expect_err("bad cidr");
        assert!(
            e.to_string().starts_with("egress: egress_deny: `nope`"),
            "{e}"
        );
    }

    #[test]
    fn subscription_limits_and_private_targets() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.toml");
        let c = build(None, &[], &Overrides::default()).expect("valid");
        assert_eq!(c.subscriptions, Subscriptions::default());
        let loopback = "127.0.0.1".parse().expect("ip");
        assert!(c.egress.check(loopback).is_ok());
        assert!(c.egress.for_visitors().check(loopback).is_err());
        std::fs::write(
            &path,
            "[subscriptions]\nconfirmations_per_mailbox = 1\nwebhooks_per_page = 2\nallow_private_targets = true\n",
        )
        .expect("write");
        let c = build(
            Some(&path),
            &[
                ("TOCSIN_SUBSCRIPTIONS_CONFIRMATIONS_PER_PAGE", "7"),
                ("TOCSIN_SUBSCRIPTIONS_WEBHOOKS_PER_CLIENT", "4"),
            ],
            &Overrides::default(),
        )
        .expect("valid");
        assert_eq!(c.subscriptions.confirmations_per_mailbox, 1);
        assert_eq!(c.subscriptions.confirmations_per_page, 7);
        assert_eq!(c.subscriptions.confirmations_per_client, 10);
        assert_eq!(c.subscriptions.webhooks_per_page, 2);
        assert_eq!(c.subscriptions.webhooks_per_client, 4);
        assert!(c.egress.for_visitors().check(loopback).is_ok());
        let e = build(
            None,
            &[("TOCSIN_SUBSCRIPTIONS_ALLOW_PRIVATE_TARGETS", "maybe")],
            &Overrides::default(),
        )
        .expect_err("not a bool");
        assert!(
            e.to_string()
                .starts_with("subscriptions.allow_private_targets"),
            "{e}"
        );
    }

    #[test]
    fn file_then_env_then_flags() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.toml");
        let mut f = std::fs::File::create(&path).expect("create");
        writeln!(
            f,
            "listen = \"127.0.0.1:9000\"\nmin_interval = 5\ndata_dir = \"/srv/t\"\n\
             [[regions]]\nname = \"eu\"\nipv4 = [\"192.0.2.0/24\"]\n[[regions]]\nname = \"us\"\n\
             [smtp]\nhost = \"mail\"\ntls = \"starttls\""
        )
        .expect("write");
        let c = build(
            Some(&path),
            &[("TOCSIN_MIN_INTERVAL", "2"), ("TOCSIN_REGION", "us")],
            &Overrides::default(),
        )
        .expect("valid");
        assert_eq!(c.listen.port(), 9000);
        assert_eq!(c.min_interval, 2);
        assert_eq!(c.region, "us");
        assert_eq!(c.database_url, "sqlite:///srv/t/tocsin.db");
        assert_eq!(c.smtp.tls, Some(SmtpTls::Starttls));
        assert_eq!(c.regions[0].ipv4, ["192.0.2.0/24"]);
        let o = Overrides {
            min_interval: Some(1),
            region: Some("eu".into()),
            ..Default::default()
        };
        let c = build(Some(&path), &[("TOCSIN_MIN_INTERVAL", "2")], &o).expect("valid");
        assert_eq!((c.min_interval, c.region.as_str()), (1, "eu"));
        std::fs::write(&path, "check_threads = 4\n").expect("write");
        let c = build(Some(&path), &[], &Overrides::default()).expect("valid");
        assert_eq!(c.check_threads, 4);
    }

    #[test]
    fn rejects_bad_values_naming_the_setting() {
        let err = |env: &[(&str, &str)]| {
            build(None, env, &Overrides::default())
                .expect_err("invalid")
                .to_string()
        };
        assert!(err(&[("TOCSIN_LISTEN", "nope")]).starts_with("listen:"));
        assert!(err(&[("TOCSIN_MIN_INTERVAL", "0")]).starts_with("min_interval:"));
        assert!(err(&[("TOCSIN_REGION", "mars")]).starts_with("region:"));
        assert!(err(&[("TOCSIN_BOOTSTRAP_KEY", "short")]).starts_with("bootstrap_key:"));
        assert!(
            err(&[("TOCSIN_WEBHOOK_RETRY_SCHEDULE", "10x")]).starts_with("webhook_retry_schedule:")
        );
        assert!(err(&[("TOCSIN_DATABASE_URL", "mysql://x")]).starts_with("database_url:"));
        assert!(err(&[("TOCSIN_EGRESS", "open")]).starts_with("egress:"));
        assert!(err(&[("TOCSIN_CHECK_THREADS", "0")]).starts_with("check_threads:"));
        assert!(err(&[("TOCSIN_CHECK_THREADS", "many")]).starts_with("check_threads:"));
    }

    #[test]
    fn region_names_are_short_and_distinct() {
        let r = |name: &str, private: bool| Region {
            name: name.into(),
            ipv4: vec![],
            ipv6: vec![],
            private,
        };
        assert!(regions(None, Some(vec![r("eu", false), r("office", true)])).is_ok());
        let long = "x".repeat(65);
        for bad in [
            vec![r("eu", false), r(&long, true)],
            vec![r("", false)],
            vec![r("eu\n", false)],
            vec![r("eu", false), r("eu", true)],
        ] {
            let e = regions(None, Some(bad)).expect_err("invalid").to_string();
            assert!(e.starts_with("regions:"), "{e}");
        }
    }

    #[test]
    fn unknown_file_keys_are_errors() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.toml");
        std::fs::write(&path, "lisen = \"127.0.0.1:1\"\n").expect("write");
        let e = build(Some(&path), &[], &Overrides::default()).expect_err("typo");
        assert!(e.to_string().contains("lisen"));
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("2h"), Ok(Duration::from_secs(7200)));
        assert!(parse_duration("h").is_err());
        assert_eq!(parse_schedule("1s, 2s").map(|s| s.len()), Ok(2));
    }
}
