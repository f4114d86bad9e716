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
    /// Host interfaces the plugin may call: `http`, `net`, `tls`, `smtp`, `tcp`.
    #[serde(default)]
    pub capabilities: Vec<String>,
    /// When set, the only hosts the plugin's HTTP requests (and their redirects) may reach:
    /// exact names or addresses, or `*.example.com` for any subdomain.
    pub http_hosts: Option<Vec<String>>,
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
