//! Starting and stopping the server: database, bootstrap, plugins, scheduler, HTTP.

use crate::api::{self, AppState};
use crate::clock::{SharedClock, SystemClock};
use crate::config::Config;
use crate::engine::{EngineContext, Recorder};
use crate::outbox::worker::{DeliverySettings, OutboxWorker};
use crate::plugins::PluginHost;
use crate::scheduler::Scheduler;
use crate::store::Store;
use anyhow::{Context, bail};
use std::path::Path;

/// The longest a background pass with nothing pending sleeps on a node alone on its
/// database (a safety net: every write that can give it work tells it).
const IDLE_CAP: std::time::Duration = std::time::Duration::from_secs(30);
/// How often key usage (`lastUsedAt`) is written.
const KEY_USAGE_FLUSH: std::time::Duration = std::time::Duration::from_secs(30);
/// How long the outbox has at shutdown to finish the attempts it holds.
const OUTBOX_GRACE: std::time::Duration = std::time::Duration::from_secs(12);
/// How long the recorder has at shutdown to write what checks handed over.
const RECORDER_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

mod tasks;

use std::sync::Arc;
use tasks::{Phase, Stop, Tasks};
use tokio::sync::watch;

/// Connect to the configured database and apply migrations.
pub async fn open_store(config: &Config) -> anyhow::Result<Store> {
    let store = Store::connect(&config.database_url)
        .await
        .with_context(|| {
            format!(
                "cannot open the database at {}",
                redact(&config.database_url)
            )
        })?;
    store
        .migrate()
        .await
        .context("database migrations failed")?;
    Ok(store)
}

/// Hide a password in a database URL for messages.
pub fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let creds = &url[scheme + 3..at];
            match creds.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..scheme + 3], &url[at..]),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    }
}

/// The plugin runtime a server runs, with no plugin loaded yet: its SMTP relay, trusted
/// roots, grants and egress policy.
pub fn plugin_runtime(config: &Config) -> anyhow::Result<PluginHost> {
    PluginHost::new(
        Some(config.plugin_cache_dir.clone()),
        &crate::plugins::HostSettings {
            smtp: config.smtp.clone(),
            tls_extra_roots: config.tls_extra_roots.clone(),
            plugin_grants: config.plugin_grants.clone(),
            grant_declared: false,
            egress: config.egress.clone(),
        },
    )
    .context("cannot start the plugin runtime")
}

/// Load the built-in plugins and those in `plugins_dir`.
pub async fn load_plugins(config: &Config) -> anyhow::Result<PluginHost> {
    let mut host = plugin_runtime(config)?;
    host.load_all(PluginHost::builtin_sources()).await;
    host.load_all(PluginHost::directory_sources(&config.plugins_dir))
        .await;
    Ok(host)
}

/// The lock a running server holds in its data directory (SQLite only: one server per file).
pub const LOCK_FILE: &str = "tocsin.lock";

/// Hold the data directory's lock, or say which process might hold it.
pub fn lock_data_dir(data_dir: &Path) -> anyhow::Result<std::fs::File> {
    std::fs::create_dir_all(data_dir)
        .with_context(|| format!("cannot create the data directory {}", data_dir.display()))?;
    let path = data_dir.join(LOCK_FILE);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => bail!(
            "a Tocsin server is running on {} (it holds {}); stop it first",
            data_dir.display(),
            path.display()
        ),
        Err(std::fs::TryLockError::Error(e)) => {
            Err(e).with_context(|| format!("cannot lock {}", path.display()))
        }
    }
}

fn write_bootstrap_key(data_dir: &Path, secret: &str) -> std::io::Result<()> {
    write_secret_file(data_dir, "bootstrap-admin.key", secret)
}

/// Write `text` to `<data_dir>/<name>`, readable only by the owner.
fn write_secret_file(data_dir: &Path, name: &str, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    std::fs::create_dir_all(data_dir)?;
    let path = data_dir.join(name);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(&path)?;
    writeln!(file, "{text}")
}

/// Run the server until SIGINT or SIGTERM.
pub async fn serve(config: Config) -> anyhow::Result<()> {
    crate::crypto::install_provider();
    let started = std::time::Instant::now();
    let mut config = config;
    let clock: SharedClock = Arc::new(SystemClock);
    // One server per SQLite file; `tocsin restore` also checks this lock.
    let _data_dir_lock = if config.database_url.starts_with("sqlite:") {
        Some(lock_data_dir(&config.data_dir)?)
    } else {
        None
    };
    // Bind before the slow start-up: a taken address is said at once, not after the plugins compile, and a
    // port of 0 (the kernel picks) is known before anything builds a link from it.
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("cannot listen on {}", config.listen))?;
    let address = listener.local_addr()?;
    if config.listen.port() == 0 && config.public_url == format!("http://{}", config.listen) {
        config.public_url = format!("http://{address}");
    }
    // What the server calls when it uses its own API (the dashboard's imports).
    config.listen = address;
    let config = Arc::new(config);
    let store = open_store(&config).await?;
    first_start(&store, &config, &clock).await?;

    let plugins = Arc::new(load_plugins(&config).await?);
    let mut engine = EngineContext::new(&config.public_url);
    engine.channels = plugins.channel_abilities();
    if store.is_sqlite() {
        // Alone on its database, the node sees every write: background passes with
        // nothing pending wait to be told of work instead of polling.
        engine = engine.idle_until_told(IDLE_CAP);
        // One node owns a SQLite database: leases left by a crash belong to nobody.
        crate::outbox::worker::release_all_leases(&store)
            .await
            .context("cannot reset delivery leases")?;
    }
    let checks = CheckRuntime::start(config.check_threads)?;
    let mut tasks = Tasks::new();
    let (recorder, recorder_task) = Recorder::spawn_with(
        store.clone(),
        engine.clone(),
        crate::engine::recorder::RecorderOptions {
            buffer: config.recorder_buffer,
            ..Default::default()
        },
    );
    // The recorder drains what checks already handed over once every sender is gone:
    // the scheduler, the confirmer, the deadline sweep and the ping handlers hold the
    // only senders, and they end before it.
    tasks.adopt(
        Phase::Writers,
        "recorder",
        Stop::Within(RECORDER_GRACE),
        recorder_task,
    );
    let node = Node {
        id: crate::ids::new_id(crate::ids::prefix::NODE),
        clustered: !store.is_sqlite(),
    };
    let services = Services {
        store: &store,
        plugins: &plugins,
        recorder: &recorder,
        engine: &engine,
        clock: &clock,
        config: &config,
    };
    services
        .start_checks(&mut tasks, &checks.handle, &node)
        .await;
    services.start_sweeps(&mut tasks);

    let key_usage = Arc::new(crate::api::api_keys::KeyUsage::default());
    tasks.spawn(
        Phase::Writers,
        "key usage",
        Stop::Wait,
        crate::api::api_keys::flush_usage_loop(
            store.clone(),
            key_usage.clone(),
            KEY_USAGE_FLUSH,
            tasks.signal(),
        ),
    );
    let (stopping_tx, stopping_rx) = watch::channel(false);
    let state = AppState {
        store: store.clone(),
        plugins: plugins.clone(),
        config: config.clone(),
        clock,
        engine,
        limits: Arc::new(crate::api::ratelimit::Limits::new(
            config.rate_limit_per_minute,
            config.rate_limit_burst,
        )),
        key_usage,
        accounts: Arc::new(crate::accounts::Services {
            sso: crate::accounts::oidc::Sso::new(
                config.oidc.clone(),
                &config.public_url,
                plugins.trusted_certs(),
            )
            .map_err(anyhow::Error::msg)
            .context("cannot set up single sign-on")?,
            login: Default::default(),
            reset: Default::default(),
        }),
        recorder,
        monitor_pages: Arc::default(),
        metrics_labels: Arc::default(),
        stopping: stopping_rx,
    };
    // The decoy hash makes an unknown account's refusal cost what a wrong password costs.
    tokio::task::spawn_blocking(crate::accounts::password::prepare);
    tracing::info!(
        address = %address,
        database = %redact(&config.database_url),
        region = %config.region,
        node = %node.id,
        claims = node.clustered,
        plugins = plugins.descriptions().len(),
        pooling = plugins.is_pooling(),
        startup_ms = started.elapsed().as_millis() as u64,
        "Tocsin is listening"
    );
    println!("Tocsin is listening on http://{address}");

    api::serve::serve(
        listener,
        api::router(state, crate::web::routes()),
        api::serve::ConnectionLimits::of(&config),
        async move {
            shutdown_signal().await;
            stopping_tx.send_replace(true);
        },
    )
    .await
    .context("the HTTP server failed")?;

    tracing::info!("shutting down");
    tasks.shutdown().await;
    store.close().await;
    drop(checks);
    Ok(())
}

/// The first start on a database: the first workspace and its admin key, and, while no
/// one has an account, a one-time link for the owner's. Several nodes started at once do
/// this once, under the start-up lock.
async fn first_start(store: &Store, config: &Config, clock: &SharedClock) -> anyhow::Result<()> {
    let startup = store
        .startup_lock()
        .await
        .context("cannot take the start-up lock")?;
    if let Some(b) = store
        .bootstrap(
            config.bootstrap_plan,
            config.bootstrap_key.clone(),
            clock.now_ms(),
        )
        .await
        .context("cannot create the first workspace")?
    {
        println!(
            "Created workspace {} with an admin API key (shown once):\n\n    {}\n",
            b.workspace_id, b.key_secret
        );
        match write_bootstrap_key(&config.data_dir, &b.key_secret) {
            Ok(()) => println!(
                "The key is also in {}",
                config.data_dir.join("bootstrap-admin.key").display()
            ),
            Err(e) => tracing::warn!(error = %e, "could not write bootstrap-admin.key"),
        }
    }
    // A new link at every start until someone uses one.
    match crate::accounts::sign_up::issue_setup_link(store, &config.public_url, clock.now_ms())
        .await
    {
        Ok(Some(link)) => {
            println!(
                "No one has an account yet. Create the owner's account (the link works once, for 24 hours):\n\n    {link}\n"
            );
            match write_secret_file(&config.data_dir, "setup-link.txt", &link) {
                Ok(()) => println!(
                    "The link is also in {}",
                    config.data_dir.join("setup-link.txt").display()
                ),
                Err(e) => tracing::warn!(error = %e, "could not write setup-link.txt"),
            }
        }
        Ok(None) => {
            let _ = std::fs::remove_file(config.data_dir.join("setup-link.txt"));
        }
        Err(e) => return Err(e).context("cannot issue the setup link"),
    }
    if let Some(lock) = startup {
        lock.commit()
            .await
            .context("cannot release the start-up lock")?;
    }
    Ok(())
}

/// This node: its id in the node list, and whether it shares the database with others
/// (on PostgreSQL each round of a check is claimed there before it runs).
struct Node {
    id: String,
    clustered: bool,
}

/// What the background tasks are built from.
struct Services<'a> {
    store: &'a Store,
    plugins: &'a Arc<PluginHost>,
    recorder: &'a Recorder,
    engine: &'a EngineContext,
    clock: &'a SharedClock,
    config: &'a Config,
}

impl Services<'_> {
    /// The scheduler and, with more than one region, the confirmer on the check threads;
    /// the node heartbeat, and this node's leave once they have stopped.
    async fn start_checks(&self, tasks: &mut Tasks, threads: &tokio::runtime::Handle, node: &Node) {
        let (store, clock, config) = (self.store, self.clock, self.config);
        let mut scheduler = Scheduler::new(
            store.clone(),
            self.plugins.clone(),
            self.recorder.clone(),
            config.region.clone(),
            config.region_names(),
            clock.clone(),
        );
        if node.clustered {
            scheduler = scheduler.claiming(&node.id);
        }
        // Failures of monitors that ask for it are confirmed from another region (or an
        // online private location) before they count.
        let confirmer = if config.all_region_names().len() > 1 {
            let live = crate::scheduler::confirm::LiveRegions::default();
            scheduler = scheduler.confirming(live.clone());
            Some(crate::scheduler::confirm::Confirmer {
                store: store.clone(),
                plugins: self.plugins.clone(),
                recorder: self.recorder.clone(),
                region: config.region.clone(),
                node_id: node.id.clone(),
                clock: clock.clone(),
                live,
                permits: scheduler.permits(),
            })
        } else {
            None
        };
        // The node is in the node list before its first claim: another node takes over a
        // slot whose holder is not (or no longer) heard from.
        let node_started = clock.now_ms();
        if let Err(e) = store
            .heartbeat(&node.id, &config.region, node_started, node_started)
            .await
        {
            tracing::warn!(error = %e, "heartbeat failed; retrying");
        }
        let claim_gate = scheduler.claim_gate();
        let run = scheduler.run(tasks.signal());
        tasks.spawn_on(threads, Phase::Checks, "scheduler", Stop::Wait, run);
        if let Some(confirmer) = confirmer {
            let run = confirmer.run(tasks.signal());
            tasks.spawn_on(threads, Phase::Checks, "confirmer", Stop::Wait, run);
        }
        let beat = heartbeat_loop(
            store.clone(),
            node.id.clone(),
            config.region.clone(),
            node_started,
            clock.clone(),
            tasks.signal(),
        );
        tasks.spawn(Phase::Checks, "node heartbeat", Stop::Wait, beat);
        // Leave: no claim of this node lands from now on, and the slots it holds from
        // this second on go back, so the other nodes of its region take its share at once.
        let (store, clock, node_id) = (store.clone(), clock.clone(), node.id.clone());
        tasks.after(Phase::Checks, async move {
            claim_gate.close().await;
            let from_slot = crate::scheduler::claims::slot_at(clock.now_ms());
            if let Err(e) = store.leave(&node_id, from_slot).await {
                tracing::warn!(error = %e, "could not remove this node from the node list");
            }
        });
    }

    /// Missed heartbeats, escalations, the uptime figures, retention and the outbox.
    fn start_sweeps(&self, tasks: &mut Tasks) {
        let (store, engine, clock, config) = (self.store, self.engine, self.clock, self.config);
        let deadlines = crate::engine::heartbeat::run(
            store.clone(),
            self.recorder.clone(),
            config.region.clone(),
            clock.clone(),
            engine.work.clone(),
            tasks.signal(),
        );
        tasks.spawn(Phase::Sweeps, "heartbeat deadlines", Stop::Wait, deadlines);
        let escalation = crate::engine::escalation::run(
            store.clone(),
            engine.clone(),
            clock.clone(),
            tasks.signal(),
        );
        tasks.spawn(Phase::Sweeps, "escalation", Stop::Wait, escalation);
        let uptime =
            crate::api::metrics::refresh_uptime_loop(store.clone(), clock.clone(), tasks.signal());
        tasks.spawn(Phase::Sweeps, "uptime", Stop::Wait, uptime);
        let monthly = crate::reports::monthly::run(
            store.clone(),
            clock.clone(),
            engine.public_url.clone(),
            engine.outbox_wakeup.clone(),
            tasks.signal(),
        );
        // A report is taken with its deliveries in one transaction: cut short, it is
        // queued at the next start.
        tasks.spawn(Phase::Sweeps, "monthly reports", Stop::Abort, monthly);
        let locations = crate::engine::locations::run(
            store.clone(),
            clock.clone(),
            engine.outbox_wakeup.clone(),
            engine.offline.clone(),
            tasks.signal(),
        );
        // A location moves with its deliveries in one transaction.
        tasks.spawn(Phase::Sweeps, "locations", Stop::Abort, locations);
        let days = |d: u32| (d > 0).then(|| std::time::Duration::from_secs(u64::from(d) * 86_400));
        let retention = crate::engine::retention::run(
            store.clone(),
            clock.clone(),
            crate::engine::retention::RetentionSettings {
                checks: days(config.retention.checks_days),
                deliveries: days(config.retention.deliveries_days),
                incidents: days(config.retention.incidents_days),
                audit: days(config.retention.audit_days),
            },
            tasks.signal(),
        );
        // A sweep in progress stops between batches; it resumes at the next start.
        tasks.spawn(Phase::Sweeps, "retention", Stop::Abort, retention);
        let outbox = OutboxWorker {
            store: store.clone(),
            plugins: self.plugins.clone(),
            wakeup: engine.outbox_wakeup.clone(),
            settings: Arc::new(DeliverySettings {
                schedule: config.webhook_retry_schedule.clone(),
                telegram: crate::plugins::settings::TelegramBot {
                    api_base: config.telegram.api_base.clone(),
                    token: config.telegram.bot_token.clone(),
                    callbacks: config.telegram.bot_token.is_some()
                        && config.telegram.webhook_secret.is_some(),
                },
                allow_insecure_webhooks: config.allow_insecure_webhooks,
                plugin_settings: config.plugin_settings.clone(),
            }),
            clock: clock.clone(),
            work: engine.work.clone(),
        };
        let run = outbox.run(tasks.signal());
        tasks.spawn(Phase::Deliveries, "outbox", Stop::Within(OUTBOX_GRACE), run);
    }
}

/// The threads that run the checks: the scheduler, every check it starts (the plugin call
/// and its connection included) and regional confirmations. A runtime of their own keeps
/// a check's timer, plugin call and connection on one thread; on the API's work-stealing
/// threads each of those steps could wake the other thread, which cost about a tenth of a
/// check's CPU (docs/performance.md, goal 1). The result writer stays on the API's
/// threads, so a batch's bookkeeping never delays a check's timer.
struct CheckRuntime {
    handle: tokio::runtime::Handle,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl CheckRuntime {
    /// One thread runs everything itself; more share the work between them.
    fn start(threads: usize) -> anyhow::Result<CheckRuntime> {
        let mut builder = if threads <= 1 {
            tokio::runtime::Builder::new_current_thread()
        } else {
            let mut b = tokio::runtime::Builder::new_multi_thread();
            b.worker_threads(threads);
            b
        };
        let runtime = builder
            .enable_all()
            .thread_name("tocsin-checks")
            .build()
            .context("cannot start the check threads")?;
        let handle = runtime.handle().clone();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        std::thread::Builder::new()
            .name("tocsin-checks".into())
            .spawn(move || {
                // A single-threaded runtime runs its tasks only inside `block_on`.
                runtime.block_on(async {
                    let _ = stopped.await;
                });
                // Checks still in flight at shutdown are dropped, as before.
                runtime.shutdown_timeout(std::time::Duration::from_secs(2));
            })
            .context("cannot start the check threads")?;
        Ok(CheckRuntime {
            handle,
            stop: Some(stop),
        })
    }
}

impl Drop for CheckRuntime {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        _ = terminate => {}
    }
}

/// Tell the database this node is alive every few seconds (the first beat was written
/// before the loop starts), until shutdown. Also prunes old check claims and long-dead
/// nodes.
async fn heartbeat_loop(
    store: Store,
    node_id: String,
    region: String,
    started: i64,
    clock: SharedClock,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut beats: u64 = 0;
    loop {
        // About once a minute.
        if beats.is_multiple_of(12)
            && let Err(e) = store.prune_cluster(clock.now_ms()).await
        {
            tracing::warn!(error = %e, "could not prune old check claims");
        }
        beats += 1;
        tokio::select! {
            _ = tokio::time::sleep(std::time::Duration::from_millis(crate::store::cluster::HEARTBEAT_MS)) => {}
            _ = shutdown.changed() => if *shutdown.borrow() { break },
        }
        let now = clock.now_ms();
        if let Err(e) = store.heartbeat(&node_id, &region, started, now).await {
            tracing::warn!(error = %e, "heartbeat failed; retrying");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn redacts_passwords_only() {
        assert_eq!(
            redact("postgres://u:secret@h:5432/db"),
            "postgres://u:***@h:5432/db"
        );
        assert_eq!(redact("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(redact("sqlite://./data/t.db"), "sqlite://./data/t.db");
    }
}
