//! The `tocsin` command.

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use tocsin::config::{Config, LogFormat, Overrides};
use tocsin::plans::Plan;
use tocsin::store::keys::Role;

/// mimalloc instead of the system allocator: a server's allocations are many small strings
/// and buffers freed on other threads, where glibc's malloc spent a fifth of the API's
/// time (docs/performance.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "tocsin",
    version,
    about = "Uptime monitoring and alerting with WebAssembly plugins"
)]
struct Cli {
    /// Configuration file (TOML). Default: tocsin.toml in the working directory, if present.
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the server: API, scheduler and plugins.
    Serve(Flags),
    /// Apply database migrations and exit.
    Migrate(Flags),
    /// Check the configuration, database, SMTP relay, Telegram bot, ICMP, plugins, clock
    /// and disk; print ok/warn/fail with a fix for each. Exits 1 when something fails.
    Doctor(Flags),
    /// Copy the SQLite database to FILE while the server runs (a consistent snapshot).
    Backup {
        /// Where to write the copy (must not exist).
        file: PathBuf,
        /// Leave raw check results out (daily uptime, incidents and settings stay).
        #[arg(long)]
        without_history: bool,
        #[command(flatten)]
        flags: Flags,
    },
    /// Replace the SQLite database with a backup (stop the server first). The file must be
    /// an intact Tocsin database of this version's schema or an older one.
    Restore {
        /// The backup to restore.
        file: PathBuf,
        #[command(flatten)]
        flags: Flags,
    },
    /// Make a workspace match a configuration file (YAML, TOML or JSON; a folder applies
    /// all of its files): monitors, alert policies, channels, status pages and maintenance
    /// windows, over a running server's API. Prints the plan, then carries it out.
    Apply {
        /// The file or folder to apply (repeatable).
        #[arg(
            short = 'f',
            long = "file",
            value_name = "FILE|DIR",
            required_unless_present = "schema"
        )]
        files: Vec<PathBuf>,
        /// Print the plan (create, change with each field's old and new value, delete) and
        /// change nothing.
        #[arg(long)]
        dry_run: bool,
        /// Delete what the file no longer declares: only objects apply created (their
        /// managedBy is the file's), unless --prune-unmanaged.
        #[arg(long)]
        prune: bool,
        /// With --prune, also delete undeclared objects that apply did not create.
        #[arg(long, requires = "prune")]
        prune_unmanaged: bool,
        /// Print the file's JSON Schema (for editors) and exit.
        #[arg(long)]
        schema: bool,
        #[command(flatten)]
        remote: RemoteFlags,
    },
    /// Write a workspace's monitors, alert policies, channels, status pages and
    /// maintenance windows as a file `tocsin apply` takes back unchanged.
    Export {
        /// Where to write (default: standard output). The extension picks the format.
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
        /// yaml, toml or json (default: from --output's extension, else yaml).
        #[arg(long)]
        format: Option<tocsin::cli::apply::Format>,
        #[command(flatten)]
        remote: RemoteFlags,
    },
    /// Manage workspaces in the configured database (works while the server is stopped).
    #[command(subcommand)]
    Workspace(WorkspaceCommand),
    /// Manage API keys in the configured database (works while the server is stopped).
    #[command(subcommand)]
    Key(KeyCommand),
    /// Manage people's accounts in the configured database (works while the server is
    /// stopped).
    #[command(subcommand)]
    User(UserCommand),
    /// Help for webhook receivers: check a signature, send a signed test event.
    #[command(subcommand)]
    Webhook(WebhookCommand),
    /// Help for plugin authors: check a component, start a new one.
    #[command(subcommand)]
    Plugin(PluginCommand),
    /// Measure checks/s, schedule lag, CPU, memory, database writes and API throughput
    /// against a loopback target, with a native baseline for the plugin cost.
    Bench(BenchFlags),
    /// Print the shell completion script for SHELL (bash, zsh, fish, elvish, powershell).
    Completions { shell: clap_complete::Shell },
    /// Write the manual pages (tocsin.1 and one per subcommand) into DIR.
    Man {
        #[arg(long, value_name = "DIR", default_value = ".")]
        out: PathBuf,
    },
    /// The benchmark's loopback target (started by `tocsin bench`).
    #[command(hide = true)]
    BenchTarget,
}

#[derive(Args, Clone)]
struct BenchFlags {
    /// Monitor counts to run, comma-separated (one run each).
    #[arg(long, value_delimiter = ',', default_value = "1000")]
    monitors: Vec<usize>,
    /// Seconds between checks of each monitor.
    #[arg(long, default_value_t = 60)]
    interval: u32,
    /// Seconds measured, after the warm-up (default: one interval).
    #[arg(long)]
    duration: Option<u64>,
    /// Seconds run before measuring.
    #[arg(long, default_value_t = 10)]
    warmup: u64,
    /// Run on PostgreSQL (`postgres://...`; a fresh database is created and dropped).
    /// Default: SQLite in a temporary directory.
    #[arg(long)]
    database_url: Option<String>,
    /// Share of monitors whose target fails, in percent (they open incidents).
    #[arg(long, default_value_t = 1.0)]
    failing_percent: f64,
    /// Checks per side in the plugin-versus-native comparison (with --serve: the same
    /// command's reference, measured once the server has stopped; at least 1,000).
    #[arg(long, default_value_t = 2000)]
    baseline_checks: usize,
    /// Seconds of `wrk` load on each API route (0 skips it).
    #[arg(long, default_value_t = 10)]
    api_seconds: u64,
    /// Milliseconds slept before each batch of results is written: a slow database, to
    /// show that checks keep their rate while results are buffered, then shed.
    #[arg(long, default_value_t = 0)]
    db_delay_ms: u64,
    /// Results buffered for the database before new ones are shed (`recorder_buffer`).
    #[arg(long, default_value_t = tocsin::engine::recorder::DEFAULT_BUFFER)]
    recorder_buffer: usize,
    /// Skip the API phase (`GET /metrics` and the `wrk` load).
    #[arg(long)]
    skip_api: bool,
    /// Measure a `tocsin serve` process of its own: monitors created through its API,
    /// checks counted by the target, CPU and memory of that process (and of PostgreSQL's
    /// processes with --database-url).
    #[arg(long)]
    serve: bool,
    /// With --serve: insert the monitors straight into the database before the server
    /// starts (as after an import or a restart) instead of through its API, and report
    /// the time from the server's start to its first check.
    #[arg(long, requires = "serve")]
    preload: bool,
    /// Only measure a plugin check's pieces apart (store, instance, guest call, check)
    /// against the native check, --baseline-checks calls of each.
    #[arg(long)]
    plugin_pieces: bool,
    /// Also print the results as a Markdown table.
    #[arg(long)]
    markdown: bool,
}

#[derive(Subcommand)]
enum PluginCommand {
    /// Load a component, describe it, and with --config run one check (or one test delivery).
    Check {
        /// The component (.wasm).
        file: PathBuf,
        /// A configuration (JSON object) to validate and run one call with.
        #[arg(value_name = "CONFIG")]
        with_config: Option<String>,
        /// Time budget of the call, in seconds.
        #[arg(long, default_value_t = 10)]
        timeout: u64,
    },
    /// Print the built-in catalogue (Markdown, generated from the plugins' schemas), or
    /// rewrite its generated parts in the documentation with --update.
    Catalogue {
        /// A file whose generated parts to rewrite in place (docs/plugins.md, README.md);
        /// repeat for several.
        #[arg(long, value_name = "FILE")]
        update: Vec<PathBuf>,
        /// Where compiled plugins are kept between runs.
        #[arg(long, value_name = "DIR")]
        cache_dir: Option<PathBuf>,
    },
    /// Compile the plugins of `plugins_dir` (and any built-in this machine cannot run as the
    /// build compiled it) into the compile cache, so the server's first start compiles
    /// nothing. Run it where the server runs, after installing or adding plugins.
    Precompile,
    /// Create a monitor plugin project to start from.
    New {
        /// rust, python or js.
        #[arg(long)]
        lang: String,
        /// The monitor type it provides, e.g. `dns`.
        #[arg(long)]
        name: String,
        /// Where to create it (default: a folder named after the plugin).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
enum WebhookCommand {
    /// Say whether a delivery's signature is valid, and why not.
    Verify {
        /// The workspace's webhook secret (whsec_...). Repeat to try several (rotation).
        #[arg(long, required = true)]
        secret: Vec<String>,
        /// The X-Service-Timestamp header's value.
        #[arg(long)]
        timestamp: String,
        /// The X-Service-Signature header's value (sha256=...).
        #[arg(long)]
        signature: String,
        /// File with the raw request body, or `-` for standard input.
        #[arg(long, value_name = "FILE")]
        body: PathBuf,
    },
    /// Send a signed test `incident.created` event to a URL, as the channel test does.
    SendTest {
        #[arg(long)]
        url: String,
        /// The secret to sign with (whsec_...).
        #[arg(long)]
        secret: String,
    },
    /// Print an example of every event kind, with headers (the examples of docs/webhooks.md).
    Examples,
}

#[derive(Subcommand)]
enum WorkspaceCommand {
    /// Create a workspace and print its id.
    Create {
        #[arg(long)]
        name: String,
        /// free, pro, business or enterprise.
        #[arg(long, default_value = "free")]
        plan: String,
        #[command(flatten)]
        flags: Flags,
    },
    /// Change a workspace's plan.
    SetPlan {
        #[arg(long, value_name = "ws_...")]
        workspace: String,
        /// free, pro, business or enterprise.
        #[arg(long)]
        plan: String,
        #[command(flatten)]
        flags: Flags,
    },
}

#[derive(Subcommand)]
enum KeyCommand {
    /// Create an API key and print its secret (shown this once).
    Create {
        #[arg(long, value_name = "ws_...")]
        workspace: String,
        /// owner, admin, write or read (the operator's key may be an owner key).
        #[arg(long, default_value = "admin")]
        role: String,
        /// A name to tell the key apart.
        #[arg(long, default_value = "cli")]
        name: String,
        #[command(flatten)]
        flags: Flags,
    },
}

#[derive(Subcommand)]
enum UserCommand {
    /// Create an account with a role in a workspace (or give an existing account that
    /// role). Prints the account id, and a link to set the password unless one is read
    /// from standard input.
    Create {
        #[arg(long)]
        email: String,
        #[arg(long, value_name = "ws_...")]
        workspace: String,
        /// owner, admin, member or viewer.
        #[arg(long, default_value = "member")]
        role: String,
        /// Display name (default: the part of the address before `@`).
        #[arg(long)]
        name: Option<String>,
        /// Read the password from the first line of standard input.
        #[arg(long)]
        password_stdin: bool,
        #[command(flatten)]
        flags: Flags,
    },
}

/// Where the API is, and the key that acts on it.
#[derive(Args, Clone)]
struct RemoteFlags {
    /// The server's address.
    #[arg(long, env = "TOCSIN_URL", default_value = "http://127.0.0.1:8080")]
    url: String,
    /// An API key of the workspace (write or admin role).
    #[arg(long, env = "TOCSIN_API_KEY", hide_env_values = true)]
    key: Option<String>,
}

impl RemoteFlags {
    fn key(&self) -> anyhow::Result<&str> {
        self.key
            .as_deref()
            .context("an API key is needed: --key or TOCSIN_API_KEY")
    }
}

fn current_thread() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}

/// `tocsin apply`, a client of a running server's API.
fn apply_command(
    files: &[PathBuf],
    options: &tocsin::cli::apply::ApplyOptions,
    remote: &RemoteFlags,
) -> anyhow::Result<()> {
    let doc = tocsin::cli::apply::load(files)?;
    let text = current_thread()?.block_on(tocsin::cli::apply::apply(
        &remote.url,
        remote.key()?,
        &doc,
        options,
    ))?;
    print!("{text}");
    Ok(())
}

/// `tocsin export`, a client of a running server's API.
fn export_command(
    output: Option<PathBuf>,
    format: Option<tocsin::cli::apply::Format>,
    remote: &RemoteFlags,
) -> anyhow::Result<()> {
    let exported =
        current_thread()?.block_on(tocsin::cli::apply::export(&remote.url, remote.key()?))?;
    let format = format
        .or_else(|| output.as_deref().and_then(tocsin::cli::apply::format_of))
        .unwrap_or(tocsin::cli::apply::Format::Yaml);
    let text = exported.render(format)?;
    if format == tocsin::cli::apply::Format::Json && !exported.variables.is_empty() {
        // JSON has no comments: the variables the secrets became are named here.
        eprintln!(
            "Secrets are written as ${{VARIABLE}}s; set these before `tocsin apply`: {}",
            exported.variables.join(", ")
        );
    }
    match output {
        Some(path) => std::fs::write(&path, text)
            .with_context(|| format!("cannot write {}", path.display()))?,
        None => print!("{text}"),
    }
    Ok(())
}

/// Flags that override the file and the environment.
#[derive(Args, Clone, Default)]
struct Flags {
    /// Address to listen on, e.g. 127.0.0.1:8080.
    #[arg(long)]
    listen: Option<String>,
    /// Data directory (SQLite database, plugin cache, bootstrap key).
    #[arg(long, value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// Database URL: sqlite://PATH or postgres://...
    #[arg(long, value_name = "URL")]
    database_url: Option<String>,
    /// Probe region this node checks from.
    #[arg(long)]
    region: Option<String>,
    /// Shortest monitor interval accepted, in seconds.
    #[arg(long, value_name = "SECONDS")]
    min_interval: Option<u32>,
}

impl Flags {
    fn overrides(&self) -> Overrides {
        Overrides {
            listen: self.listen.clone(),
            data_dir: self.data_dir.clone(),
            database_url: self.database_url.clone(),
            region: self.region.clone(),
            min_interval: self.min_interval,
        }
    }
}

fn init_logging(format: LogFormat, filter: &str) {
    let filter = tracing_subscriber::EnvFilter::try_new(filter)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Json => builder.json().init(),
        LogFormat::Pretty => builder.init(),
    }
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let cli = match cli.command {
        Command::Webhook(cmd) => return webhook_command(cmd),
        // Precompiling needs the server's configuration (plugins_dir, plugin_cache_dir).
        Command::Plugin(cmd) if !matches!(cmd, PluginCommand::Precompile) => {
            return plugin_command(cmd);
        }
        Command::BenchTarget => return tocsin::cli::bench::target::run(),
        Command::Bench(flags) => return bench_command(&flags),
        Command::Apply { schema: true, .. } => {
            let schema = tocsin::cli::apply::schema();
            println!("{}", serde_json::to_string_pretty(&schema)?);
            return Ok(());
        }
        Command::Apply {
            files,
            dry_run,
            prune,
            prune_unmanaged,
            remote,
            ..
        } => {
            let options = tocsin::cli::apply::ApplyOptions {
                dry_run,
                prune,
                prune_unmanaged,
            };
            return apply_command(&files, &options, &remote);
        }
        Command::Export {
            output,
            format,
            remote,
        } => return export_command(output, format, &remote),
        Command::Completions { shell } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut cmd, "tocsin", &mut std::io::stdout());
            return Ok(());
        }
        Command::Man { out } => {
            std::fs::create_dir_all(&out)
                .with_context(|| format!("cannot create {}", out.display()))?;
            clap_mangen::generate_to(<Cli as clap::CommandFactory>::command(), &out)
                .with_context(|| format!("cannot write manual pages into {}", out.display()))?;
            println!("Manual pages written to {}", out.display());
            return Ok(());
        }
        other => Cli {
            config: cli.config,
            command: other,
        },
    };
    let flags = match &cli.command {
        Command::Serve(f) | Command::Migrate(f) | Command::Doctor(f) => f.clone(),
        Command::Backup { flags, .. } | Command::Restore { flags, .. } => flags.clone(),
        Command::Workspace(WorkspaceCommand::Create { flags, .. })
        | Command::Workspace(WorkspaceCommand::SetPlan { flags, .. })
        | Command::Key(KeyCommand::Create { flags, .. })
        | Command::User(UserCommand::Create { flags, .. }) => flags.clone(),
        Command::Webhook(_)
        | Command::Plugin(_)
        | Command::Bench(_)
        | Command::BenchTarget
        | Command::Completions { .. }
        | Command::Man { .. }
        | Command::Apply { .. }
        | Command::Export { .. } => Flags::default(),
    };
    let loaded = Config::load(cli.config.as_deref(), &flags.overrides());
    if matches!(cli.command, Command::Doctor(_)) {
        return doctor_command(cli.config.as_deref(), loaded.map_err(anyhow::Error::from));
    }
    let config = loaded.context("invalid configuration")?;
    init_logging(config.log_format, &config.log_filter);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        match cli.command {
            Command::Serve(_) => tocsin::app::serve(config).await,
            // Answered above, before a configuration is required.
            Command::Doctor(_) => Ok(()),
            Command::Migrate(_) => {
                let store = tocsin::app::open_store(&config).await?;
                println!(
                    "Database is up to date ({})",
                    tocsin::app::redact(&config.database_url)
                );
                store.close().await;
                Ok(())
            }
            Command::Backup {
                file,
                without_history,
                ..
            } => tocsin::cli::backup::backup(&config, &file, !without_history).await,
            Command::Restore { file, .. } => tocsin::cli::backup::restore(&config, &file).await,
            Command::Workspace(cmd) => workspace_command(&config, cmd).await,
            Command::Key(cmd) => key_command(&config, cmd).await,
            Command::User(cmd) => user_command(&config, cmd).await,
            Command::Webhook(cmd) => webhook_command(cmd),
            Command::Plugin(PluginCommand::Precompile) => {
                tocsin::cli::plugin_tools::precompile(&config)
            }
            Command::Plugin(cmd) => plugin_command(cmd),
            Command::Bench(flags) => bench_command(&flags),
            Command::BenchTarget => tocsin::cli::bench::target::run(),
            // Answered before the configuration is loaded.
            Command::Completions { .. }
            | Command::Man { .. }
            | Command::Apply { .. }
            | Command::Export { .. } => Ok(()),
        }
    })
}

/// `tocsin doctor`: the table, and exit status 1 when a check failed.
fn doctor_command(
    file: Option<&std::path::Path>,
    loaded: anyhow::Result<Config>,
) -> anyhow::Result<()> {
    use tocsin::cli::doctor;
    init_logging(LogFormat::Pretty, "error");
    let findings = match loaded {
        Err(e) => doctor::configuration_failed(&e),
        Ok(config) => {
            let source = match file {
                Some(f) => format!("{} loads", f.display()),
                None if std::path::Path::new("tocsin.toml").is_file() => {
                    "tocsin.toml loads".to_string()
                }
                None => "no file; defaults and TOCSIN_* variables".to_string(),
            };
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()?;
            runtime.block_on(doctor::run(&config, &source))
        }
    };
    print!("{}", doctor::table(&findings));
    if doctor::worst(&findings) == doctor::Verdict::Fail {
        std::process::exit(1);
    }
    Ok(())
}

/// The benchmark sets up its own databases and plugins; logs only warnings.
fn bench_command(flags: &BenchFlags) -> anyhow::Result<()> {
    init_logging(LogFormat::Pretty, "warn");
    let opts = tocsin::cli::bench::BenchOptions {
        monitors: flags.monitors.clone(),
        interval: flags.interval.max(1),
        duration: std::time::Duration::from_secs(
            flags.duration.unwrap_or(u64::from(flags.interval)).max(1),
        ),
        warmup: std::time::Duration::from_secs(flags.warmup),
        database_url: flags.database_url.clone(),
        failing_percent: flags.failing_percent.clamp(0.0, 100.0),
        baseline_checks: flags.baseline_checks.max(10),
        api_duration: std::time::Duration::from_secs(flags.api_seconds),
        recorder: tocsin::engine::recorder::RecorderOptions {
            buffer: flags.recorder_buffer.max(1),
            write_delay: std::time::Duration::from_millis(flags.db_delay_ms),
        },
        serve: flags.serve,
        preload: flags.preload,
        skip_api: flags.skip_api,
        plugin_pieces: flags.plugin_pieces,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let reports = runtime.block_on(tocsin::cli::bench::run(&opts))?;
    if flags.markdown {
        println!("\n{}", tocsin::cli::bench::markdown(&reports));
    }
    Ok(())
}

/// Plugin helpers need neither configuration nor database.
fn plugin_command(cmd: PluginCommand) -> anyhow::Result<()> {
    match cmd {
        PluginCommand::Check {
            file,
            with_config,
            timeout,
        } => {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()?;
            let (report, ok) = runtime.block_on(tocsin::cli::plugin_tools::check(
                &file,
                with_config.as_deref(),
                std::time::Duration::from_secs(timeout.clamp(1, 60)),
            ));
            print!("{report}");
            if ok { Ok(()) } else { std::process::exit(1) }
        }
        PluginCommand::Catalogue { update, cache_dir } => {
            use tocsin::cli::catalogue;
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()?;
            let plugins = runtime.block_on(catalogue::builtin_descriptions(cache_dir))?;
            let blocks = catalogue::blocks(&plugins);
            if update.is_empty() {
                print!("{}", catalogue::render(&blocks));
            }
            for file in update {
                let text = std::fs::read_to_string(&file)
                    .with_context(|| format!("cannot read {}", file.display()))?;
                let (new, replaced) = catalogue::update(&text, &blocks)
                    .map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
                if replaced.is_empty() {
                    anyhow::bail!("{} holds no generated catalogue part", file.display());
                }
                if new != text {
                    std::fs::write(&file, new)
                        .with_context(|| format!("cannot write {}", file.display()))?;
                }
                println!("{}: {}", file.display(), replaced.join(", "));
            }
            Ok(())
        }
        PluginCommand::Precompile => {
            anyhow::bail!("`tocsin plugin precompile` needs the server's configuration")
        }
        PluginCommand::New { lang, name, dir } => {
            let dir = dir.unwrap_or_else(|| PathBuf::from(&name));
            let files = tocsin::cli::plugin_tools::scaffold(&lang, &name, &dir)
                .map_err(anyhow::Error::msg)?;
            for f in files {
                println!("created {}", f.display());
            }
            Ok(())
        }
    }
}

/// Webhook helpers need neither configuration nor database.
fn webhook_command(cmd: WebhookCommand) -> anyhow::Result<()> {
    use tocsin::cli::webhook_tools;
    match cmd {
        WebhookCommand::Verify {
            secret,
            timestamp,
            signature,
            body,
        } => {
            let bytes = if body.as_os_str() == "-" {
                let mut b = Vec::new();
                std::io::Read::read_to_end(&mut std::io::stdin(), &mut b)?;
                b
            } else {
                std::fs::read(&body).with_context(|| format!("cannot read {}", body.display()))?
            };
            let now = chrono::Utc::now().timestamp();
            let d = webhook_tools::diagnose(&secret, &timestamp, &signature, &bytes, now);
            for f in &d.findings {
                println!("{f}");
            }
            if d.valid {
                Ok(())
            } else {
                std::process::exit(1)
            }
        }
        WebhookCommand::SendTest { url, secret } => {
            tocsin::crypto::install_provider();
            let now_ms = chrono::Utc::now().timestamp_millis();
            let (id, payload, headers) = webhook_tools::test_delivery(&secret, now_ms);
            let roots = tocsin::plugins::trust::load(None)?;
            // As deliveries go: no redirects, a 10 s deadline.
            let client = tocsin::plugins::http::build_client(
                &roots.certs,
                std::sync::Arc::new(tocsin::plugins::egress::EgressPolicy::default()),
            )?;
            let started = std::time::Instant::now();
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            let (status, answer) = runtime.block_on(async {
                let mut req = client
                    .post(&url)
                    .timeout(std::time::Duration::from_secs(10))
                    .body(payload);
                for (k, v) in &headers {
                    req = req.header(k, v);
                }
                let response = req
                    .send()
                    .await
                    .with_context(|| format!("cannot deliver to {url}"))?;
                let status = response.status();
                anyhow::Ok((status, response.text().await.unwrap_or_default()))
            })?;
            println!(
                "{} {} in {} ms (webhookId {id})",
                if status.is_success() {
                    "delivered:"
                } else {
                    "refused:"
                },
                status,
                started.elapsed().as_millis()
            );
            if !answer.is_empty() {
                println!("{}", answer.chars().take(500).collect::<String>());
            }
            if status.is_success() {
                Ok(())
            } else {
                std::process::exit(1)
            }
        }
        WebhookCommand::Examples => {
            print!("{}", webhook_tools::examples_markdown());
            Ok(())
        }
    }
}

fn parse_plan(text: &str) -> anyhow::Result<Plan> {
    Plan::parse(text)
        .with_context(|| format!("unknown plan `{text}`: use free, pro, business or enterprise"))
}

async fn workspace_command(config: &Config, cmd: WorkspaceCommand) -> anyhow::Result<()> {
    let store = tocsin::app::open_store(config).await?;
    let now = chrono::Utc::now().timestamp_millis();
    let result = match cmd {
        WorkspaceCommand::Create { name, plan, .. } => {
            let plan = parse_plan(&plan)?;
            let name = name.trim();
            anyhow::ensure!(
                (1..=200).contains(&name.chars().count()),
                "the name must have 1 to 200 characters"
            );
            let ws = store.create_workspace(name, plan, now).await?;
            println!("{}", ws.id);
            Ok(())
        }
        WorkspaceCommand::SetPlan {
            workspace, plan, ..
        } => {
            let plan = parse_plan(&plan)?;
            anyhow::ensure!(
                store.set_workspace_plan(&workspace, plan, now).await?,
                "no workspace with id `{workspace}`"
            );
            println!("{workspace} is now on the {} plan", plan.as_str());
            Ok(())
        }
    };
    store.close().await;
    result
}

async fn key_command(config: &Config, cmd: KeyCommand) -> anyhow::Result<()> {
    let store = tocsin::app::open_store(config).await?;
    let now = chrono::Utc::now().timestamp_millis();
    let result = match cmd {
        KeyCommand::Create {
            workspace,
            role,
            name,
            ..
        } => {
            let role = Role::parse(&role).with_context(|| {
                format!("unknown role `{role}`: use owner, admin, write or read")
            })?;
            anyhow::ensure!(
                store.workspace(&workspace).await?.is_some(),
                "no workspace with id `{workspace}`"
            );
            let (_, secret) = store
                .create_api_key(&workspace, name.trim(), role, None, now)
                .await?;
            println!("{secret}");
            Ok(())
        }
    };
    store.close().await;
    result
}

async fn user_command(config: &Config, cmd: UserCommand) -> anyhow::Result<()> {
    let UserCommand::Create {
        email,
        workspace,
        role,
        name,
        password_stdin,
        ..
    } = cmd;
    let password = if password_stdin {
        let mut line = String::new();
        std::io::stdin().read_line(&mut line)?;
        Some(line.trim_end_matches(['\r', '\n']).to_string())
    } else {
        None
    };
    let store = tocsin::app::open_store(config).await?;
    let now = chrono::Utc::now().timestamp_millis();
    let result = tocsin::cli::users::create_user(
        &store,
        &config.public_url,
        tocsin::cli::users::NewUser {
            email: &email,
            name: name.as_deref(),
            workspace_id: &workspace,
            role: &role,
            password: password.as_deref(),
        },
        now,
    )
    .await;
    store.close().await;
    let created = result?;
    println!("{}", created.user_id);
    if let Some(link) = created.password_link {
        println!("Set the password here (the link works once, for 24 hours):\n\n    {link}");
    }
    Ok(())
}
