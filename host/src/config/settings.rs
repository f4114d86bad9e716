//! Every setting, described once: its TOML key, its `TOCSIN_*` environment variable, its
//! default and what it does. The server reads each setting through its description (a
//! default given as a value is parsed as if it had been configured), and README.md's
//! configuration table is generated from [`ALL`] by a test that fails when they disagree.

/// One setting.
pub struct Setting {
    /// The key in the TOML file (`retention.checks_days`).
    pub key: &'static str,
    /// The environment variable; `None` for settings only the file can give.
    pub env: Option<&'static str>,
    pub default: Fallback,
    /// What it does, for the table; empty when the key says it.
    pub about: &'static str,
    /// The values it may take, for a number or a duration.
    pub bounds: Bounds,
}

/// The values a number or a duration setting may take, as text read like its value.
pub enum Bounds {
    Any,
    AtLeast(&'static str),
    Within(&'static str, &'static str),
}

/// A setting's default.
pub enum Fallback {
    /// Text read as if it had been configured (`""` for none: an empty list, no value).
    Value(&'static str),
    /// Worked out at start-up or elsewhere; described for the table.
    Described(&'static str),
}

use Bounds::{AtLeast, Within};
use Fallback::{Described, Value};

macro_rules! settings {
    (@bounds) => { Bounds::Any };
    (@bounds $bounds:expr) => { $bounds };
    ($($name:ident = $key:literal, $env:expr, $default:expr, $about:literal $(, $bounds:expr)?;)*) => {
        $(pub const $name: Setting = Setting {
            key: $key,
            env: $env,
            default: $default,
            about: $about,
            bounds: settings!(@bounds $($bounds)?),
        };)*
        /// Every setting, in the order of README.md's table.
        pub const ALL: &[&Setting] = &[$(&$name),*];
    };
}

const TOML_ONLY: Option<&str> = None;

settings! {
    LISTEN = "listen", Some("TOCSIN_LISTEN"), Value("127.0.0.1:8080"), "";
    DATA_DIR = "data_dir", Some("TOCSIN_DATA_DIR"), Value("./data"), "";
    DATABASE_URL = "database_url", Some("TOCSIN_DATABASE_URL"),
        Described("`sqlite://<data_dir>/tocsin.db`"), "";
    PUBLIC_URL = "public_url", Some("TOCSIN_PUBLIC_URL"), Described("`http://<listen>` (the bound port when `listen` says port 0)"), "";
    MIN_INTERVAL = "min_interval", Some("TOCSIN_MIN_INTERVAL"), Value("30"),
        "the shortest interval a monitor may have, in seconds", Within("1", "86400");
    ALLOW_INSECURE_WEBHOOKS = "allow_insecure_webhooks", Some("TOCSIN_ALLOW_INSECURE_WEBHOOKS"),
        Value("false"), "";
    WEBHOOK_RETRY_SCHEDULE = "webhook_retry_schedule", Some("TOCSIN_WEBHOOK_RETRY_SCHEDULE"),
        Value("10s,1m,5m,30m,2h,6h,12h"), "";
    RATE_LIMIT_PER_MINUTE = "rate_limit_per_minute", Some("TOCSIN_RATE_LIMIT_PER_MINUTE"),
        Value("600"), "", AtLeast("1");
    RATE_LIMIT_BURST = "rate_limit_burst", Some("TOCSIN_RATE_LIMIT_BURST"), Value("100"), "",
        AtLeast("1");
    REQUEST_BODY_TIMEOUT = "request_body_timeout", Some("TOCSIN_REQUEST_BODY_TIMEOUT"),
        Value("30s"),
        "time for a request's whole body after its head; past it 408 and the connection closes",
        Within("1s", "10m");
    MAX_CONNECTIONS_PER_ADDRESS = "max_connections_per_address",
        Some("TOCSIN_MAX_CONNECTIONS_PER_ADDRESS"), Value("64"),
        "connections one client address may hold open; more are answered 429 and closed",
        AtLeast("1");
    STATUS_PAGE_FRAME_ANCESTORS = "status_page_frame_ancestors",
        Some("TOCSIN_STATUS_PAGE_FRAME_ANCESTORS"), Value(""),
        "origins allowed to embed the public status pages in a frame, comma-separated in the environment; none: no site may frame them; [deployment.md](docs/deployment.md#embedding-a-status-page)";
    BOOTSTRAP_KEY = "bootstrap_key", Some("TOCSIN_BOOTSTRAP_KEY"), Described("none (random)"),
        "the first workspace's admin key: `tcs_` followed by 40 letters and digits";
    BOOTSTRAP_PLAN = "bootstrap_plan", Some("TOCSIN_BOOTSTRAP_PLAN"), Value("enterprise"), "";
    PLUGINS_DIR = "plugins_dir", Some("TOCSIN_PLUGINS_DIR"), Described("`<data_dir>/plugins`"), "";
    PLUGIN_CACHE_DIR = "plugin_cache_dir", Some("TOCSIN_PLUGIN_CACHE_DIR"),
        Described("`<data_dir>/cache/plugins`"),
        "compiled plugins, kept across restarts; nodes on one machine may share it";
    REGION = "region", Some("TOCSIN_REGION"), Described("first of `regions`, else `local`"), "";
    REGIONS = "regions", TOML_ONLY, Described("`[{name = \"local\", ipv4 = [], ipv6 = []}]`"),
        "`private = true`: a private location, checked by probes (`tocsin probe`) only";
    PLUGIN_GRANTS = "plugin_grants.<plugin>", TOML_ONLY,
        Described("none: plugins from `plugins_dir` get no capability, and a channel's deliveries are not signed"),
        "`capabilities`, `http_hosts`, `signing`";
    PLUGIN_SETTINGS = "plugin_settings.<plugin>", TOML_ONLY, Described("none"),
        "any keys, handed to a channel plugin as its `settings` with every delivery: `eventsUrl` for `pagerduty`, `apiBase` for `opsgenie` and `pushover`";
    SMTP_HOST = "smtp.host", Some("TOCSIN_SMTP_HOST"), Value(""), "the relay for e-mail";
    SMTP_PORT = "smtp.port", Some("TOCSIN_SMTP_PORT"), Described("by `smtp.tls`: `25` for `none`, `587` for `starttls`, `465` for `tls`"), "";
    SMTP_USERNAME = "smtp.username", Some("TOCSIN_SMTP_USERNAME"), Value(""), "";
    SMTP_PASSWORD = "smtp.password", Some("TOCSIN_SMTP_PASSWORD"), Value(""), "";
    SMTP_FROM = "smtp.from", Some("TOCSIN_SMTP_FROM"), Value(""), "";
    SMTP_TLS = "smtp.tls", Some("TOCSIN_SMTP_TLS"), Described("`starttls`"), "`none`, `starttls`, `tls`";
    TELEGRAM_BOT_TOKEN = "telegram.bot_token", Some("TOCSIN_TELEGRAM_BOT_TOKEN"), Value(""), "";
    TELEGRAM_API_BASE = "telegram.api_base", Some("TOCSIN_TELEGRAM_API_BASE"),
        Value("https://api.telegram.org"), "";
    TELEGRAM_WEBHOOK_SECRET = "telegram.webhook_secret", Some("TOCSIN_TELEGRAM_WEBHOOK_SECRET"),
        Value(""),
        "set, with `telegram.bot_token`: alerts' one-click buttons act in Telegram itself (register `<public_url>/telegram/updates` as the bot's webhook with this secret token; see docs/alerting.md)";
    TLS_EXTRA_ROOTS = "tls_extra_roots", Some("TOCSIN_TLS_EXTRA_ROOTS"), Value(""),
        "a PEM file of certificate authorities trusted besides the system's";
    PLANS = "plans.<plan>", TOML_ONLY, Described("see [Plans](#plans)"),
        "`monitors`, `channels`, `status_pages`, `members`, `api_keys`, `min_interval`";
    RETENTION_CHECKS_DAYS = "retention.checks_days", Some("TOCSIN_RETENTION_CHECKS_DAYS"),
        Value("90"), "raw check results; daily rollups are kept for ever";
    RETENTION_DELIVERIES_DAYS = "retention.deliveries_days",
        Some("TOCSIN_RETENTION_DELIVERIES_DAYS"), Value("90"),
        "finished deliveries and their attempts";
    RETENTION_INCIDENTS_DAYS = "retention.incidents_days", Some("TOCSIN_RETENTION_INCIDENTS_DAYS"),
        Value("0"), "resolved incidents and their timelines; `0` keeps them for ever";
    RETENTION_AUDIT_DAYS = "retention.audit_days", Some("TOCSIN_RETENTION_AUDIT_DAYS"),
        Value("365"), "audit log entries; `0` keeps them for ever";
    ACTION_LINK_LIFETIME = "action_link_lifetime", Some("TOCSIN_ACTION_LINK_LIFETIME"),
        Value("24h"),
        "an alert's one-click links (acknowledge, snooze, resolve) work this long after it was sent, once each",
        Within("1s", "30d");
    SESSION_IDLE = "session_idle", Some("TOCSIN_SESSION_IDLE"), Value("7d"),
        "a session unused this long ends", AtLeast("1m");
    SESSION_LIFETIME = "session_lifetime", Some("TOCSIN_SESSION_LIFETIME"), Value("30d"),
        "a session ends this long after sign-in", AtLeast("1m");
    OIDC = "[[oidc]]", TOML_ONLY,
        Described("none; see [docs/authentication.md](docs/authentication.md)"),
        "single sign-on providers: `name`, `display_name`, `issuer`, `client_id`, `client_secret`, `scopes`, `allowed_domains`, `trust_email` (believe addresses the provider does not mark verified; default false), `groups_claim`, `default_role`, `[[oidc.roles]]` `group`/`workspace`/`role`";
    EGRESS = "egress", Some("TOCSIN_EGRESS"), Value("default"),
        "`default`: everything but cloud metadata and link-local; `public-only`: public addresses only";
    EGRESS_ALLOW = "egress_allow", TOML_ONLY, Described("none"),
        "CIDR list applied after the preset";
    EGRESS_DENY = "egress_deny", TOML_ONLY, Described("none"),
        "CIDR list applied after the preset and `egress_allow`; deny wins";
    SUBSCRIPTIONS_CONFIRMATIONS_PER_MAILBOX = "subscriptions.confirmations_per_mailbox",
        Some("TOCSIN_SUBSCRIPTIONS_CONFIRMATIONS_PER_MAILBOX"), Value("3"),
        "status-page confirmation mails per hour to one mailbox: the address in lower case without its `+tag`, over every page";
    SUBSCRIPTIONS_CONFIRMATIONS_PER_PAGE = "subscriptions.confirmations_per_page",
        Some("TOCSIN_SUBSCRIPTIONS_CONFIRMATIONS_PER_PAGE"), Value("100"),
        "confirmation mails per hour for one status page";
    SUBSCRIPTIONS_CONFIRMATIONS_PER_CLIENT = "subscriptions.confirmations_per_client",
        Some("TOCSIN_SUBSCRIPTIONS_CONFIRMATIONS_PER_CLIENT"), Value("10"),
        "confirmation mails per hour one client address asks for; an IPv6 address counts by its /64";
    SUBSCRIPTIONS_WEBHOOKS_PER_PAGE = "subscriptions.webhooks_per_page",
        Some("TOCSIN_SUBSCRIPTIONS_WEBHOOKS_PER_PAGE"), Value("20"),
        "new status-page webhook subscribers per hour for one status page";
    SUBSCRIPTIONS_WEBHOOKS_PER_CLIENT = "subscriptions.webhooks_per_client",
        Some("TOCSIN_SUBSCRIPTIONS_WEBHOOKS_PER_CLIENT"), Value("5"),
        "new status-page webhook subscribers per hour from one client address; an IPv6 address counts by its /64";
    SUBSCRIPTIONS_ALLOW_PRIVATE_TARGETS = "subscriptions.allow_private_targets",
        Some("TOCSIN_SUBSCRIPTIONS_ALLOW_PRIVATE_TARGETS"), Value("false"),
        "let status-page webhook subscribers name loopback and private addresses under the server's own egress policy; for test and lab servers only, see [docs/deployment.md](docs/deployment.md#what-anonymous-visitors-may-reach)";
    LOG_FORMAT = "log_format", Some("TOCSIN_LOG_FORMAT"), Value("pretty"), "`pretty`, `json`";
    METRICS = "metrics", Some("TOCSIN_METRICS"), Value("key"),
        "who may read `GET /metrics`: `key`: any API key's bearer, its workspace's monitors; `public`: everyone, every workspace; `off`: 404";
    METRICS_KUMA_NAMES = "metrics_kuma_names", Some("TOCSIN_METRICS_KUMA_NAMES"), Value("false"),
        "also expose Uptime Kuma's `monitor_status`, `monitor_response_time`, `monitor_cert_days_remaining`, `monitor_cert_is_valid`";
    METRICS_HISTOGRAMS = "metrics_histograms", Some("TOCSIN_METRICS_HISTOGRAMS"), Value("true"),
        "a response-time histogram per monitor in `GET /metrics`: about half of a scrape's lines; turn off for many monitors";
    RECORDER_BUFFER = "recorder_buffer", Some("TOCSIN_RECORDER_BUFFER"), Value("100000"),
        "check results waiting for the database; past it new results are dropped, counted in `tocsin_recorder_shed_total` and logged, so checks never wait on a slow database; about 0.5 KiB each", AtLeast("100");
    CHECK_THREADS = "check_threads", Some("TOCSIN_CHECK_THREADS"),
        Described("half the cores, at least `1`"),
        "threads that run the checks and their plugins, apart from the threads of the API, the result writer and the database; with one thread a check's steps never wake another thread, which saves about a tenth of its CPU, and one thread kept up with 3,000 checks a second but not 4,000 on a two-core machine", Within("1", "256");
    LOG_FILTER = "log_filter", Some("TOCSIN_LOG"),
        Value("info,sqlx=warn,sea_orm=warn,cranelift=warn,wasmtime=warn"),
        "which log lines are written, in `tracing`'s filter syntax such as `info,tocsin=debug`";
}

/// README.md's configuration table, header included.
pub fn table() -> String {
    let mut out = String::from("| TOML key | Environment | Default |\n|---|---|---|\n");
    for s in ALL {
        let key = if s.about.is_empty() {
            format!("`{}`", s.key)
        } else {
            format!("`{}` ({})", s.key, s.about)
        };
        let env = s
            .env
            .map_or("(TOML only)".to_string(), |e| format!("`{e}`"));
        let mut default = match s.default {
            Value("") => "none".to_string(),
            Value(v) => format!("`{v}`"),
            Described(text) => text.to_string(),
        };
        match s.bounds {
            Bounds::Any => {}
            AtLeast(low) => default.push_str(&format!(" (at least `{low}`)")),
            Within(low, high) => default.push_str(&format!(" (`{low}` to `{high}`)")),
        }
        out.push_str(&format!("| {key} | {env} | {default} |\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table README.md shows, between its header and the first line after it that is
    /// not a row.
    fn readme_table(readme: &str) -> Option<(usize, usize)> {
        let start = readme.find("| TOML key | Environment | Default |")?;
        let len: usize = readme[start..]
            .split_inclusive('\n')
            .take_while(|line| line.starts_with('|'))
            .map(str::len)
            .sum();
        Some((start, start + len))
    }

    /// `TOCSIN_BLESS_README=1 cargo test -p tocsin --lib readme` writes the table.
    #[test]
    fn readme_configuration_table_is_generated_from_the_settings() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md");
        let readme = std::fs::read_to_string(path).expect("README.md");
        let (start, end) = readme_table(&readme).expect("README.md has the table");
        let table = table();
        if std::env::var_os("TOCSIN_BLESS_README").is_some() {
            let written = format!("{}{table}{}", &readme[..start], &readme[end..]);
            std::fs::write(path, written).expect("README.md written");
            return;
        }
        assert!(
            readme[start..end] == table,
            "README.md's configuration table differs from config/settings.rs; \
             run TOCSIN_BLESS_README=1 cargo test -p tocsin --lib readme"
        );
    }

    #[test]
    fn keys_and_variables_are_unique_and_named_alike() {
        let mut keys = std::collections::BTreeSet::new();
        let mut vars = std::collections::BTreeSet::new();
        for s in ALL {
            assert!(keys.insert(s.key), "{} twice", s.key);
            if let Some(var) = s.env {
                assert!(vars.insert(var), "{var} twice");
                assert!(var.starts_with("TOCSIN_"), "{var}");
            }
        }
    }
}
