//! What open dashboards are told: each committed change to a check, a monitor, an
//! incident or a delivery, published by the transaction that wrote it once it committed
//! (never before, so a page that reads again on hearing of a change finds it; never for a
//! transaction rolled back). One broadcast per server: a listener filters by workspace.
//!
//! The writes note their changes on the [`Tx`](super::Tx) ([`Tx::note`](super::Tx::note));
//! writes that are not noted are not told. A server with no listener builds nothing:
//! [`Tx::listened`](super::Tx::listened) says whether anyone would hear.
//!
//! On PostgreSQL the nodes of a cluster tell each other ([`Cluster`]): a node with open
//! dashboards says so every few seconds (`NOTIFY` on [`WANTED`]), and while some other
//! node wants them, a committed transaction's changes are sent with `pg_notify` on
//! [`CHANGES`], after the commit and off the writer's path (one task sends them in commit
//! order on the store's pool; if it falls behind, or PostgreSQL refuses, a page misses an
//! update, never a write its data). Each node hands what the others committed to its own
//! dashboards.

use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};
use tokio::sync::broadcast;

/// Committed changes a listener may fall behind by before it is told it missed some.
const BACKLOG: usize = 1024;
/// The PostgreSQL channel committed changes cross nodes on.
pub const CHANGES: &str = "tocsin_live";
/// The PostgreSQL channel a node with open dashboards announces itself on.
pub const WANTED: &str = "tocsin_live_wanted";
/// How often a node with open dashboards announces itself.
const ANNOUNCE: Duration = Duration::from_secs(10);
/// How long an announcement holds: three missed ones and the other nodes stop sending.
const WANTED_FOR: Duration = Duration::from_secs(30);
/// The most bytes of one notification (PostgreSQL's limit is 8,000).
const PAYLOAD: usize = 7_500;
/// How long the listener waits before connecting again.
const RETRY: Duration = Duration::from_secs(2);
/// Committed transactions whose changes may wait to be sent to the other nodes; past
/// that, their pages miss those updates rather than the writer waiting.
const OUTGOING: usize = 1024;

/// One committed change, as a dashboard is told of it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Seen {
    /// A check result was stored.
    #[serde(rename_all = "camelCase")]
    Check {
        #[serde(skip)]
        workspace_id: String,
        monitor_id: String,
        /// Unix milliseconds.
        checked_at: i64,
        ok: bool,
        response_time_ms: Option<u32>,
        reason: Option<String>,
        /// Taken inside a maintenance window (counts for nothing).
        maintenance: bool,
        /// The monitor's state after this check.
        state: &'static str,
        /// Whether this check moved the monitor to `state`.
        changed: bool,
    },
    /// A monitor was created, edited, paused, resumed or deleted.
    #[serde(rename_all = "camelCase")]
    Monitor {
        #[serde(skip)]
        workspace_id: String,
        monitor_id: String,
        deleted: bool,
    },
    /// An incident was opened or changed (acknowledged, held, escalated, resolved).
    #[serde(rename_all = "camelCase")]
    Incident {
        #[serde(skip)]
        workspace_id: String,
        incident_id: String,
        monitor_id: String,
    },
    /// A delivery was attempted.
    #[serde(rename_all = "camelCase")]
    Delivery {
        #[serde(skip)]
        workspace_id: String,
        delivery_id: String,
        incident_id: Option<String>,
    },
}

impl Seen {
    /// A monitor created, edited, paused, resumed or snoozed, or (`deleted`) deleted.
    pub(super) fn monitor(workspace_id: &str, monitor_id: &str, deleted: bool) -> Seen {
        Seen::Monitor {
            workspace_id: workspace_id.to_string(),
            monitor_id: monitor_id.to_string(),
            deleted,
        }
    }

    /// The workspace the change belongs to: only its members are told.
    pub fn workspace_id(&self) -> &str {
        match self {
            Seen::Check { workspace_id, .. }
            | Seen::Monitor { workspace_id, .. }
            | Seen::Incident { workspace_id, .. }
            | Seen::Delivery { workspace_id, .. } => workspace_id,
        }
    }
}

/// One workspace's changes in one committed transaction, as the JSON array a dashboard
/// is sent (written once, whatever the number of listeners).
#[derive(Debug, Clone, PartialEq)]
pub struct Told {
    pub workspace_id: String,
    pub json: String,
}

impl Told {
    /// Every workspace: changes may have been missed (the link to the other nodes was lost
    /// for a while), so a page should read itself again.
    pub const EVERYONE: &'static str = "*";
}

/// The changes of one committed transaction, by workspace.
pub type Committed = Arc<[Told]>;

/// The server's feed of committed changes.
#[derive(Clone)]
pub struct Feed {
    sender: broadcast::Sender<Committed>,
    /// On PostgreSQL: the other nodes of the cluster.
    cluster: Option<Arc<Cluster>>,
}

/// What a node knows of the other nodes' dashboards.
pub(super) struct Cluster {
    /// This process, so it skips what it sent itself.
    node: String,
    started: Instant,
    /// Until when (milliseconds after `started`) another node has open dashboards.
    wanted_until: AtomicU64,
    /// A dashboard of this node started listening: announce it now.
    subscribed: tokio::sync::Notify,
    /// Changes for the other nodes, in commit order, to the task that sends them.
    outgoing: tokio::sync::mpsc::Sender<Vec<String>>,
    /// Another node has been heard from: there is a cluster to miss changes of.
    others: std::sync::atomic::AtomicBool,
}

impl Cluster {
    fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn wanted(&self) -> bool {
        self.wanted_until.load(Ordering::Relaxed) > self.elapsed_ms()
    }

    fn wanted_now(&self) {
        let until = self.elapsed_ms() + u64::try_from(WANTED_FOR.as_millis()).unwrap_or(0);
        self.wanted_until.fetch_max(until, Ordering::Relaxed);
    }
}

impl Feed {
    pub(super) fn new() -> Feed {
        Feed {
            sender: broadcast::channel(BACKLOG).0,
            cluster: None,
        }
    }

    /// A feed shared with the other nodes on the PostgreSQL database at `url` (`db`, the
    /// store's pool, sends the announcements). The listening task ends once every clone
    /// of the feed is gone.
    pub(super) fn across_nodes(url: &str, db: sea_orm::DatabaseConnection) -> Feed {
        let (outgoing, queued) = tokio::sync::mpsc::channel(OUTGOING);
        let cluster = Arc::new(Cluster {
            node: ulid::Ulid::new().to_string(),
            started: Instant::now(),
            wanted_until: AtomicU64::new(0),
            subscribed: tokio::sync::Notify::new(),
            outgoing,
            others: std::sync::atomic::AtomicBool::new(false),
        });
        tokio::spawn(send_to_other_nodes(queued, db.clone()));
        let feed = Feed {
            sender: broadcast::channel(BACKLOG).0,
            cluster: Some(cluster.clone()),
        };
        tokio::spawn(listen_to_other_nodes(
            url.to_string(),
            Arc::downgrade(&cluster),
            feed.sender.clone(),
            db,
        ));
        feed
    }

    /// Whether anyone listens: a dashboard of this node, or of another node lately.
    pub(super) fn listened(&self) -> bool {
        self.sender.receiver_count() > 0 || self.cluster.as_ref().is_some_and(|c| c.wanted())
    }

    /// The notifications that tell the other nodes of `changes`, while some node wants
    /// them: `node`, the workspace and a JSON array of changes, one line each, cut into
    /// pieces PostgreSQL accepts. A change too large alone for one is told as its
    /// monitor's change (the page reads that monitor again).
    pub(super) fn for_other_nodes(&self, changes: &[Seen]) -> Vec<String> {
        let Some(cluster) = self.cluster.as_ref().filter(|c| c.wanted()) else {
            return Vec::new();
        };
        let mut by_workspace: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for change in changes {
            let mut json = serde_json::to_string(change).unwrap_or_default();
            if json.len() > PAYLOAD / 2 {
                let monitor_id = match change {
                    Seen::Check { monitor_id, .. }
                    | Seen::Monitor { monitor_id, .. }
                    | Seen::Incident { monitor_id, .. } => Some(monitor_id.as_str()),
                    Seen::Delivery { .. } => None,
                };
                let Some(monitor_id) = monitor_id else {
                    continue;
                };
                json = serde_json::to_string(&Seen::monitor("", monitor_id, false))
                    .unwrap_or_default();
            }
            by_workspace
                .entry(change.workspace_id())
                .or_default()
                .push(json);
        }
        let mut out = Vec::new();
        for (workspace, items) in by_workspace {
            let head = format!("{}\n{workspace}\n", cluster.node);
            let mut piece = String::new();
            for item in items {
                if !piece.is_empty() && head.len() + piece.len() + item.len() + 2 > PAYLOAD {
                    out.push(format!("{head}[{piece}]"));
                    piece.clear();
                }
                if !piece.is_empty() {
                    piece.push(',');
                }
                piece.push_str(&item);
            }
            if !piece.is_empty() {
                out.push(format!("{head}[{piece}]"));
            }
        }
        out
    }

    pub(super) fn publish(&self, changes: Vec<Seen>) {
        if changes.is_empty() {
            return;
        }
        let payloads = self.for_other_nodes(&changes);
        if let Some(c) = self.cluster.as_ref().filter(|_| !payloads.is_empty())
            && c.outgoing.try_send(payloads).is_err()
        {
            tracing::debug!(
                "the other nodes' dashboards miss a committed change: too many waiting"
            );
        }
        if self.sender.receiver_count() == 0 {
            return;
        }
        let mut by_workspace: BTreeMap<&str, Vec<&Seen>> = BTreeMap::new();
        for change in &changes {
            by_workspace
                .entry(change.workspace_id())
                .or_default()
                .push(change);
        }
        let told: Vec<Told> = by_workspace
            .into_iter()
            .filter_map(|(workspace_id, list)| {
                Some(Told {
                    workspace_id: workspace_id.to_string(),
                    json: serde_json::to_string(&list).ok()?,
                })
            })
            .collect();
        // Nobody listening any more is fine.
        let _ = self.sender.send(told.into());
    }

    pub(super) fn subscribe(&self) -> broadcast::Receiver<Committed> {
        let receiver = self.sender.subscribe();
        if let Some(c) = &self.cluster {
            c.subscribed.notify_one();
        }
        receiver
    }
}

/// A notification from another node: its dashboards want changes, or it committed some.
fn heard(cluster: &Cluster, sender: &broadcast::Sender<Committed>, channel: &str, payload: &str) {
    if channel == WANTED {
        if payload != cluster.node {
            cluster.wanted_now();
            cluster.others.store(true, Ordering::Relaxed);
        }
        return;
    }
    let mut parts = payload.splitn(3, '\n');
    let (Some(node), Some(workspace_id), Some(json)) = (parts.next(), parts.next(), parts.next())
    else {
        return;
    };
    if node == cluster.node {
        return;
    }
    cluster.others.store(true, Ordering::Relaxed);
    if sender.receiver_count() == 0 {
        return;
    }
    let told = Told {
        workspace_id: workspace_id.to_string(),
        json: json.to_string(),
    };
    let _ = sender.send(Arc::from([told]));
}

/// Send committed changes to the other nodes, one transaction's after another's.
async fn send_to_other_nodes(
    mut queued: tokio::sync::mpsc::Receiver<Vec<String>>,
    db: sea_orm::DatabaseConnection,
) {
    use sea_orm::ConnectionTrait;
    while let Some(payloads) = queued.recv().await {
        for payload in payloads {
            let sent = db
                .execute_raw(sea_orm::Statement::from_sql_and_values(
                    sea_orm::DbBackend::Postgres,
                    "SELECT pg_notify($1, $2)",
                    [CHANGES.into(), payload.into()],
                ))
                .await;
            if let Err(error) = sent {
                tracing::debug!(%error, "could not tell the other nodes' dashboards of a change");
            }
        }
    }
}

/// Listen to the other nodes (see [`Cluster`]) and announce this node's open dashboards,
/// connecting again when the connection is lost; after a loss, this node's dashboards are
/// told they may have missed changes.
async fn listen_to_other_nodes(
    url: String,
    cluster: Weak<Cluster>,
    sender: broadcast::Sender<Committed>,
    db: sea_orm::DatabaseConnection,
) {
    use sea_orm::ConnectionTrait;
    let mut listener: Option<sqlx_postgres::PgListener> = None;
    let mut lost = false;
    let mut announced: Option<Instant> = None;
    // When this node last said it has open pages (`announced` is also reset to say again).
    let mut said: Option<Instant> = None;
    loop {
        let Some(c) = cluster.upgrade() else { return };
        let Some(active) = listener.as_mut() else {
            let connected = match super::keys::listener_on(&url).await {
                Ok(mut l) => l.listen_all([CHANGES, WANTED]).await.map(|()| l),
                Err(e) => Err(e),
            };
            match connected {
                Ok(l) => {
                    listener = Some(l);
                    announced = None;
                    if lost {
                        let _ = sender.send(Arc::from([Told {
                            workspace_id: Told::EVERYONE.to_string(),
                            json: String::new(),
                        }]));
                        tracing::info!("hearing the other nodes' changes again");
                        lost = false;
                    }
                }
                Err(e) => {
                    if !lost {
                        tracing::warn!(error = %e, "cannot listen to the other nodes; their changes reach this node's dashboards when a page is read again");
                        lost = true;
                    }
                    drop(c);
                    tokio::time::sleep(RETRY).await;
                }
            }
            continue;
        };
        // Announce this node's dashboards: when one opens and every few seconds while any
        // is open.
        let due = announced.is_none_or(|at| at.elapsed() >= ANNOUNCE);
        if sender.receiver_count() > 0 && due {
            let said_now = db
                .execute_raw(sea_orm::Statement::from_sql_and_values(
                    sea_orm::DbBackend::Postgres,
                    "SELECT pg_notify($1, $2)",
                    [WANTED.into(), c.node.clone().into()],
                ))
                .await;
            if let Err(error) = said_now {
                tracing::debug!(%error, "could not announce this node's dashboards");
            }
            // The other nodes had stopped sending (no page here for a while): what they
            // committed between this page being drawn and hearing of it was not sent, so
            // the pages read themselves again once they have.
            if said.is_none_or(|at| at.elapsed() >= WANTED_FOR) && c.others.load(Ordering::Relaxed)
            {
                let sender = sender.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    let _ = sender.send(Arc::from([Told {
                        workspace_id: Told::EVERYONE.to_string(),
                        json: String::new(),
                    }]));
                });
            }
            announced = Some(Instant::now());
            said = announced;
        }
        let received = tokio::select! {
            r = tokio::time::timeout(ANNOUNCE, active.try_recv()) => r,
            () = c.subscribed.notified() => {
                // At most one announcement a second for dashboards opening.
                if announced.is_some_and(|at| at.elapsed() >= Duration::from_secs(1)) {
                    announced = None;
                }
                continue;
            }
        };
        match received {
            Err(_) => {}
            Ok(Ok(Some(n))) => heard(&c, &sender, n.channel(), n.payload()),
            Ok(failed) => {
                let error = failed
                    .err()
                    .map_or("connection lost".to_string(), |e| e.to_string());
                tracing::warn!(%error, "lost the link to the other nodes' changes; connecting again");
                lost = true;
                listener = None;
                drop(c);
                tokio::time::sleep(RETRY).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    async fn store() -> Store {
        let store = Store::connect("sqlite::memory:").await.expect("store");
        store.migrate().await.expect("migrated");
        store
    }

    fn monitor(workspace: &str, id: &str) -> Seen {
        Seen::Monitor {
            workspace_id: workspace.into(),
            monitor_id: id.into(),
            deleted: false,
        }
    }

    #[tokio::test]
    async fn changes_are_told_after_commit_and_never_after_a_rollback() {
        let store = store().await;
        let mut feed = store.subscribe_changes();
        let tx = store.begin_write().await.expect("a transaction");
        assert!(tx.listened());
        tx.note(monitor("ws_a", "mon_1"));
        tx.note(monitor("ws_b", "mon_2"));
        assert!(feed.try_recv().is_err(), "told before the commit");
        tx.note(monitor("ws_a", "mon_3"));
        tx.commit().await.expect("committed");
        let told = feed.try_recv().expect("told");
        assert_eq!(
            &*told,
            &[
                Told {
                    workspace_id: "ws_a".into(),
                    json: r#"[{"kind":"monitor","monitorId":"mon_1","deleted":false},{"kind":"monitor","monitorId":"mon_3","deleted":false}]"#.into()
                },
                Told {
                    workspace_id: "ws_b".into(),
                    json: r#"[{"kind":"monitor","monitorId":"mon_2","deleted":false}]"#.into()
                },
            ]
        );

        let tx = store.begin_write().await.expect("a transaction");
        tx.note(monitor("ws_a", "mon_3"));
        drop(tx);
        let tx = store.begin_write().await.expect("a transaction");
        tx.note(monitor("ws_a", "mon_4"));
        assert!(!tx.commit_if(false).await.expect("rolled back"));
        assert!(feed.try_recv().is_err(), "a rolled-back change was told");
    }

    #[tokio::test]
    async fn nothing_is_built_for_nobody() {
        let store = store().await;
        let tx = store.begin_write().await.expect("a transaction");
        assert!(!tx.listened());
        let feed = store.subscribe_changes();
        assert!(tx.listened());
        drop(feed);
        assert!(!tx.listened());
    }

    fn clustered() -> (Feed, Arc<Cluster>) {
        let cluster = Arc::new(Cluster {
            node: "node_a".into(),
            started: Instant::now(),
            wanted_until: AtomicU64::new(0),
            subscribed: tokio::sync::Notify::new(),
            outgoing: tokio::sync::mpsc::channel(1).0,
            others: std::sync::atomic::AtomicBool::new(false),
        });
        let feed = Feed {
            sender: broadcast::channel(BACKLOG).0,
            cluster: Some(cluster.clone()),
        };
        (feed, cluster)
    }

    fn check(workspace: &str, id: &str, reason: &str) -> Seen {
        Seen::Check {
            workspace_id: workspace.into(),
            monitor_id: id.into(),
            checked_at: 5,
            ok: false,
            response_time_ms: Some(12),
            reason: Some(reason.into()),
            maintenance: false,
            state: "down",
            changed: false,
        }
    }

    #[test]
    fn other_nodes_are_told_only_while_one_wants_it_in_pieces_postgresql_takes() {
        let changes: Vec<Seen> = (0..200)
            .map(|i| {
                check(
                    if i % 2 == 0 { "ws_a" } else { "ws_b" },
                    &format!("mon_{i:03}"),
                    "HTTP 500",
                )
            })
            .chain([check("ws_a", "mon_big", &"x".repeat(10_000))])
            .collect();
        assert!(
            Feed::new().for_other_nodes(&changes).is_empty(),
            "SQLite: one node"
        );
        let (feed, cluster) = clustered();
        assert!(!feed.listened());
        assert!(
            feed.for_other_nodes(&changes).is_empty(),
            "nobody wants them"
        );
        heard(&cluster, &feed.sender, WANTED, "node_a");
        assert!(!feed.listened(), "its own announcement");
        heard(&cluster, &feed.sender, WANTED, "node_b");
        assert!(feed.listened(), "another node's dashboards");
        let payloads = feed.for_other_nodes(&changes);
        assert!(payloads.len() > 2, "{}", payloads.len());
        let mut told: BTreeMap<String, Vec<serde_json::Value>> = BTreeMap::new();
        for p in &payloads {
            assert!(p.len() <= PAYLOAD, "{}", p.len());
            let mut lines = p.splitn(3, '\n');
            assert_eq!(lines.next(), Some("node_a"));
            let workspace = lines.next().expect("workspace").to_string();
            let list: Vec<serde_json::Value> =
                serde_json::from_str(lines.next().expect("json")).expect("a JSON array");
            told.entry(workspace).or_default().extend(list);
        }
        let ids = |w: &str| -> Vec<String> {
            told[w]
                .iter()
                .map(|c| c["monitorId"].as_str().expect("id").to_string())
                .collect()
        };
        let mut want_a: Vec<String> = (0..200).step_by(2).map(|i| format!("mon_{i:03}")).collect();
        want_a.push("mon_big".into());
        assert_eq!(ids("ws_a"), want_a);
        assert_eq!(ids("ws_b").len(), 100);
        // Too large for a notification: told as its monitor's change instead.
        assert_eq!(told["ws_a"].last().expect("last")["kind"], "monitor");
    }

    #[test]
    fn a_node_hands_on_what_other_nodes_committed_and_skips_its_own() {
        let (feed, cluster) = clustered();
        let mut dashboard = feed.subscribe();
        heard(&cluster, &feed.sender, CHANGES, "node_a\nws_a\n[]");
        assert!(
            dashboard.try_recv().is_err(),
            "its own changes were told at commit"
        );
        heard(
            &cluster,
            &feed.sender,
            CHANGES,
            "node_b\nws_a\n[{\"kind\":\"monitor\"}]",
        );
        let told = dashboard.try_recv().expect("told");
        assert_eq!(
            &*told,
            &[Told {
                workspace_id: "ws_a".into(),
                json: "[{\"kind\":\"monitor\"}]".into()
            }]
        );
        heard(&cluster, &feed.sender, CHANGES, "garbage");
        assert!(dashboard.try_recv().is_err());
    }

    #[test]
    fn a_change_is_told_without_its_workspace() {
        let text = serde_json::to_string(&Seen::Check {
            workspace_id: "ws_secret".into(),
            monitor_id: "mon_1".into(),
            checked_at: 5,
            ok: false,
            response_time_ms: Some(12),
            reason: Some("HTTP 500".into()),
            maintenance: false,
            state: "down",
            changed: true,
        })
        .expect("JSON");
        assert_eq!(
            text,
            r#"{"kind":"check","monitorId":"mon_1","checkedAt":5,"ok":false,"responseTimeMs":12,"reason":"HTTP 500","maintenance":false,"state":"down","changed":true}"#
        );
    }
}
