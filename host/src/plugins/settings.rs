//! What the server's configuration tells the plugin host: the SMTP relay, extra trusted
//! roots and what each plugin from `plugins_dir` is granted. The configuration module
//! reads these from the file, the environment and flags.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// How the SMTP relay is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SmtpTls {
    None,
    Starttls,
    Tls,
}

/// What the operator grants one plugin from `plugins_dir` (`[plugin_grants.<name>]`).
/// Built-in plugins get what they declare; others get only what is granted here.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginGrant {
    /// Host interfaces the plugin may call: `http`, `net`, `tls`, `smtp`, `tcp`, `udp`.
    #[serde(default)]
    pub capabilities: Vec<String>,
    /// When set, the only hosts the plugin's HTTP requests (and their redirects) may reach:
    /// exact names or addresses, or `*.example.com` for any subdomain.
    pub http_hosts: Option<Vec<String>>,
    /// A channel that asks for `signing` gets its deliveries signed with the workspace's
    /// webhook secret only when this is set (a signed event is one the workspace's own
    /// receivers trust).
    #[serde(default)]
    pub signing: bool,
}

/// The SMTP relay used by e-mail channels.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SmtpConfig {
    pub host: Option<String>,
    pub port: Option<u16>,
    pub username: Option<String>,
    pub password: Option<String>,
    pub from: Option<String>,
    pub tls: Option<SmtpTls>,
}

/// Server settings the host imports use.
#[derive(Debug, Clone, Default)]
pub struct HostSettings {
    pub smtp: SmtpConfig,
    /// PEM file of extra trusted certificate authorities.
    pub tls_extra_roots: Option<PathBuf>,
    /// What plugins from `plugins_dir` are granted, by name.
    pub plugin_grants: BTreeMap<String, PluginGrant>,
    /// Grant every plugin what it declares (for `tocsin plugin check` on a developer's
    /// machine; never for a server).
    pub grant_declared: bool,
    /// Which addresses checks and deliveries may connect to.
    pub egress: super::egress::EgressPolicy,
}

/// The server's own Telegram bot, which the built-in `telegram` channel reads from its
/// settings.
#[derive(Debug, Clone, Default)]
pub struct TelegramBot {
    pub api_base: String,
    pub token: Option<String>,
    /// The server receives its bot's updates: Telegram buttons may call back.
    pub callbacks: bool,
}

/// The settings a channel plugin gets from the server itself, before the operator's
/// `[plugin_settings.<name>]` keys go over them: `allowInsecure` for a channel that names
/// https-only fields, and the bot for the built-in Telegram channel (the one built-in whose
/// server settings are its own).
pub fn channel_server_settings(
    name: &str,
    abilities: &super::abilities::Abilities,
    allow_insecure: bool,
    telegram: &TelegramBot,
) -> serde_json::Map<String, serde_json::Value> {
    let mut settings = serde_json::Map::new();
    if !abilities.https_only.is_empty() {
        settings.insert("allowInsecure".into(), allow_insecure.into());
    }
    if name == super::builtin::TELEGRAM {
        settings.insert("apiBase".into(), telegram.api_base.clone().into());
        settings.insert("botToken".into(), telegram.token.clone().into());
        settings.insert("callbacks".into(), telegram.callbacks.into());
    }
    settings
}
