//! `tocsin doctor`: checks what a server needs around it (its configuration, the database
//! and its schema, the SMTP relay, the Telegram bot, ICMP for ping, the plugins, the
//! clocks, the disk) and prints one line each: ok, warn or fail, with what to do.
//! It changes nothing: no migration, no message sent, no plugin call.

use crate::config::Config;
use crate::plugins::PluginHost;
use crate::store::Store;
use crate::store::backup::known_migrations;
use std::path::Path;
use std::time::Duration;

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    Ok,
    Warn,
    Fail,
}

impl Verdict {
    fn label(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Warn => "warn",
            Verdict::Fail => "FAIL",
        }
    }
}

/// One line of the report.
#[derive(Debug, Clone)]
pub struct Finding {
    pub check: &'static str,
    pub verdict: Verdict,
    pub detail: String,
    /// What to do about it (empty when ok).
    pub fix: String,
}

fn ok(check: &'static str, detail: impl Into<String>) -> Finding {
    Finding {
        check,
        verdict: Verdict::Ok,
        detail: detail.into(),
        fix: String::new(),
    }
}

fn bad(
    check: &'static str,
    verdict: Verdict,
    detail: impl Into<String>,
    fix: impl Into<String>,
) -> Finding {
    Finding {
        check,
        verdict,
        detail: detail.into(),
        fix: fix.into(),
    }
}

/// Clock difference with the database beyond which results and leases go wrong.
const SKEW_WARN: Duration = Duration::from_secs(2);
const SKEW_FAIL: Duration = Duration::from_secs(30);
/// Free space below which the database may soon fill the disk.
const DISK_WARN_BYTES: u64 = 1 << 30;
const DISK_FAIL_BYTES: u64 = 100 << 20;

/// Run every check against `config` (already loaded: a configuration that does not load
/// is reported by the caller).
pub async fn run(config: &Config, source: &str) -> Vec<Finding> {
    crate::crypto::install_provider();
    let mut out = vec![ok("configuration", source.to_string())];
    let missing_file = Store::sqlite_file(&config.database_url).filter(|f| !f.exists());
    let store = if let Some(file) = missing_file {
        // Connecting would create it; the doctor changes nothing.
        out.push(bad(
            "database",
            Verdict::Warn,
            format!("{} does not exist yet", file.display()),
            "the first `tocsin serve` (or `tocsin migrate`) creates it; check data_dir if you expected one",
        ));
        None
    } else {
        match tokio::time::timeout(
            Duration::from_secs(15),
            Store::connect(&config.database_url),
        )
        .await
        {
            Ok(Ok(s)) if s.ping().await => Some(s),
            Ok(Ok(_)) | Err(_) => {
                out.push(bad(
                    "database",
                    Verdict::Fail,
                    format!(
                        "{} does not answer",
                        crate::app::redact(&config.database_url)
                    ),
                    "start the database or correct database_url",
                ));
                None
            }
            Ok(Err(e)) => {
                out.push(bad(
                    "database",
                    Verdict::Fail,
                    format!("{}: {e}", crate::app::redact(&config.database_url)),
                    "correct database_url, or make its directory writable",
                ));
                None
            }
        }
    };
    if let Some(store) = &store {
        out.push(ok(
            "database",
            format!(
                "{} answers ({})",
                crate::app::redact(&config.database_url),
                store.backend_name()
            ),
        ));
        out.push(schema(store).await);
        out.push(clock(store).await);
    }
    // The runtime without its plugins: the relay, roots and egress policy a server uses.
    match crate::app::plugin_runtime(config) {
        Ok(mut host) => {
            out.push(smtp(&host).await);
            out.push(telegram(config).await);
            out.push(icmp());
            out.extend(plugin_directory(&mut host, &config.plugins_dir).await);
        }
        Err(e) => out.push(bad(
            "plugins",
            Verdict::Fail,
            format!("{e:#}"),
            "check smtp.*, tls_extra_roots and the egress settings",
        )),
    }
    out.push(disk(&config.data_dir));
    if let Some(store) = store {
        store.close().await;
    }
    out
}

async fn schema(store: &Store) -> Finding {
    let known = known_migrations();
    let applied = match store.applied_migrations().await {
        Ok(a) => a,
        Err(_) => {
            return bad(
                "schema",
                Verdict::Warn,
                "the database has no Tocsin schema yet",
                "`tocsin migrate` (or the first `tocsin serve`) creates it",
            );
        }
    };
    if let Some(unknown) = applied.iter().find(|m| !known.contains(m)) {
        return bad(
            "schema",
            Verdict::Fail,
            format!("written by a newer Tocsin ({unknown})"),
            "run the version that wrote it, or a newer one",
        );
    }
    let pending = known.iter().filter(|m| !applied.contains(m)).count();
    let at = applied.last().map_or("none", String::as_str);
    if pending > 0 {
        bad(
            "schema",
            Verdict::Warn,
            format!("at {at}; {pending} migrations to apply"),
            "`tocsin migrate` (the server also applies them when it starts)",
        )
    } else {
        ok("schema", format!("up to date ({at})"))
    }
}

async fn clock(store: &Store) -> Finding {
    match store.database_clock_ms().await {
        Ok(None) => ok("clock", "SQLite shares this machine's clock"),
        Ok(Some(db_ms)) => {
            let here = chrono::Utc::now().timestamp_millis();
            let skew = Duration::from_millis(here.abs_diff(db_ms));
            let detail = format!("{} ms apart from the database", skew.as_millis());
            let fix = "synchronise the clocks (chrony or systemd-timesyncd on both hosts)";
            if skew > SKEW_FAIL {
                bad("clock", Verdict::Fail, detail, fix)
            } else if skew > SKEW_WARN {
                bad("clock", Verdict::Warn, detail, fix)
            } else {
                ok("clock", detail)
            }
        }
        Err(e) => bad(
            "clock",
            Verdict::Warn,
            format!("cannot read the database's clock: {e}"),
            "",
        ),
    }
}

async fn smtp(host: &PluginHost) -> Finding {
    match host.probe_smtp().await {
        None => bad(
            "smtp",
            Verdict::Warn,
            "no relay configured: e-mail channels, invitations and password resets cannot send",
            "set smtp.host (and port, tls, username, password, from)",
        ),
        Some(Ok(detail)) => ok("smtp", detail),
        Some(Err(e)) => bad(
            "smtp",
            Verdict::Fail,
            e,
            "check smtp.host, smtp.port (587 STARTTLS, 465 TLS, 25 none), smtp.tls and the credentials",
        ),
    }
}

async fn telegram(config: &Config) -> Finding {
    let Some(token) = config.telegram.bot_token.as_deref() else {
        return ok(
            "telegram",
            "no bot token configured (telegram channels are not used)",
        );
    };
    let url = format!(
        "{}/bot{token}/getMe",
        config.telegram.api_base.trim_end_matches('/')
    );
    let client = match reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
    {
        Ok(c) => c,
        Err(e) => return bad("telegram", Verdict::Fail, e.to_string(), ""),
    };
    let answer = match client.get(&url).send().await {
        Ok(r) => r,
        Err(e) => {
            return bad(
                "telegram",
                Verdict::Fail,
                format!(
                    "{} cannot be reached: {}",
                    config.telegram.api_base,
                    e.without_url()
                ),
                "check telegram.api_base and the egress to it",
            );
        }
    };
    let status = answer.status();
    let body: serde_json::Value = answer
        .text()
        .await
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    if status.is_success() && body["ok"] == true {
        let name = body["result"]["username"].as_str().unwrap_or("?");
        if config.telegram.webhook_secret.is_some() {
            return telegram_webhook(config, &client, token, name).await;
        }
        ok("telegram", format!("the token belongs to @{name}"))
    } else {
        bad(
            "telegram",
            Verdict::Fail,
            format!(
                "getMe answered {}: {}",
                status.as_u16(),
                body["description"].as_str().unwrap_or("no description")
            ),
            "set telegram.bot_token to the token @BotFather gave",
        )
    }
}

/// With `telegram.webhook_secret`, the bot's webhook must be this server's updates route,
/// or alerts' buttons (which then call back) do nothing.
async fn telegram_webhook(
    config: &Config,
    client: &reqwest::Client,
    token: &str,
    bot: &str,
) -> Finding {
    let expected = format!(
        "{}/telegram/updates",
        config.public_url.trim_end_matches('/')
    );
    let fix = format!(
        "register it: curl {}/bot<token>/setWebhook -d url={expected} -d secret_token=<telegram.webhook_secret> -d allowed_updates='[\"callback_query\"]'",
        config.telegram.api_base.trim_end_matches('/')
    );
    let url = format!(
        "{}/bot{token}/getWebhookInfo",
        config.telegram.api_base.trim_end_matches('/')
    );
    let info: serde_json::Value = match client.get(&url).send().await {
        Ok(r) => r
            .text()
            .await
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default(),
        Err(e) => {
            return bad(
                "telegram",
                Verdict::Warn,
                format!("getWebhookInfo failed: {}", e.without_url()),
                fix,
            );
        }
    };
    match info["result"]["url"].as_str() {
        Some(u) if u == expected => ok(
            "telegram",
            format!("the token belongs to @{bot}, whose updates come to {expected}"),
        ),
        other => bad(
            "telegram",
            Verdict::Warn,
            format!(
                "@{bot}'s webhook is {}, not {expected}: alerts' Telegram buttons will do nothing",
                other.filter(|u| !u.is_empty()).unwrap_or("not set")
            ),
            fix,
        ),
    }
}

fn icmp() -> Finding {
    match PluginHost::icmp_permitted() {
        Ok(()) => ok("icmp", "ping monitors can open ICMP sockets"),
        Err(e) => bad(
            "icmp",
            Verdict::Warn,
            format!("ping monitors will fail: {e}"),
            "grant CAP_NET_RAW (the packaged unit does) or widen net.ipv4.ping_group_range",
        ),
    }
}

async fn plugin_directory(host: &mut PluginHost, dir: &Path) -> Vec<Finding> {
    let sources = PluginHost::directory_sources(dir);
    if sources.is_empty() {
        return vec![ok(
            "plugins",
            format!("built-in only ({} holds no .wasm file)", dir.display()),
        )];
    }
    let origins: Vec<String> = sources.iter().map(|s| s.origin.clone()).collect();
    let failed = host.load_all(sources).await;
    let loaded = host.descriptions();
    origins
        .into_iter()
        .map(|origin| {
            if let Some((_, e)) = failed.iter().find(|(o, _)| *o == origin) {
                return bad(
                    "plugin",
                    Verdict::Fail,
                    format!("{origin}: {e}"),
                    "`tocsin plugin check FILE` says more; rebuild it or remove it",
                );
            }
            match loaded.iter().find(|d| d.source == origin) {
                Some(d) => ok(
                    "plugin",
                    format!(
                        "{origin}: {} `{}` {} (contract {}), grants: {}",
                        d.kind,
                        d.name,
                        d.version,
                        d.contract,
                        if d.capabilities.is_empty() {
                            "none".to_string()
                        } else {
                            d.capabilities.join(", ")
                        }
                    ),
                ),
                None => bad(
                    "plugin",
                    Verdict::Warn,
                    format!("{origin}: not loaded (a built-in of the same name wins?)"),
                    "rename the plugin",
                ),
            }
        })
        .collect()
}

fn disk(data_dir: &Path) -> Finding {
    let probe = if data_dir.exists() {
        data_dir.to_path_buf()
    } else {
        data_dir
            .ancestors()
            .find(|p| p.exists())
            .unwrap_or(Path::new("/"))
            .to_path_buf()
    };
    match rustix::fs::statvfs(&probe) {
        Ok(s) => {
            let free = s.f_bavail.saturating_mul(s.f_frsize);
            let total = s.f_blocks.saturating_mul(s.f_frsize).max(1);
            let detail = format!(
                "{:.1} GiB free of {:.1} GiB at {}",
                free as f64 / f64::from(1u32 << 30),
                total as f64 / f64::from(1u32 << 30),
                probe.display()
            );
            let fix = "free space, or lower retention.checks_days";
            if free < DISK_FAIL_BYTES {
                bad("disk", Verdict::Fail, detail, fix)
            } else if free < DISK_WARN_BYTES {
                bad("disk", Verdict::Warn, detail, fix)
            } else {
                ok("disk", detail)
            }
        }
        Err(e) => bad(
            "disk",
            Verdict::Warn,
            format!("cannot read free space at {}: {e}", probe.display()),
            "",
        ),
    }
}

/// The report as a table.
pub fn table(findings: &[Finding]) -> String {
    let width = |f: fn(&Finding) -> usize| findings.iter().map(f).max().unwrap_or(0);
    let c = width(|f| f.check.len()).max("CHECK".len());
    let mut out = format!("{:<c$}  {:<6}  DETAIL\n", "CHECK", "STATUS");
    for f in findings {
        out.push_str(&format!(
            "{:<c$}  {:<6}  {}\n",
            f.check,
            f.verdict.label(),
            f.detail
        ));
        if !f.fix.is_empty() && f.verdict != Verdict::Ok {
            out.push_str(&format!("{:<c$}  {:<6}  fix: {}\n", "", "", f.fix));
        }
    }
    let worst = findings
        .iter()
        .map(|f| f.verdict)
        .max()
        .unwrap_or(Verdict::Ok);
    let count = |v| findings.iter().filter(|f| f.verdict == v).count();
    out.push_str(&format!(
        "\n{} ok, {} warn, {} fail{}\n",
        count(Verdict::Ok),
        count(Verdict::Warn),
        count(Verdict::Fail),
        if worst == Verdict::Fail {
            ": fix the failures before relying on this server"
        } else {
            ""
        }
    ));
    out
}

/// The findings' worst verdict.
pub fn worst(findings: &[Finding]) -> Verdict {
    findings
        .iter()
        .map(|f| f.verdict)
        .max()
        .unwrap_or(Verdict::Ok)
}

/// The report when the configuration itself does not load.
pub fn configuration_failed(error: &anyhow::Error) -> Vec<Finding> {
    vec![bad(
        "configuration",
        Verdict::Fail,
        format!("{error:#}"),
        "correct the setting named (tocsin.toml, TOCSIN_* variables or flags)",
    )]
}
