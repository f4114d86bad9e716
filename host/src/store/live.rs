//! What open dashboards are told: each committed change to a check, a monitor, an
//! incident or a delivery, published by the transaction that wrote it once it committed
//! (never before, so a page that reads again on hearing of a change finds it; never for a
//! transaction rolled back). One broadcast per server: a listener filters by workspace.
//!
//! The writes note their changes on the [`Tx`](super::Tx) ([`Tx::note`](super::Tx::note));
//! writes that are not noted are not told. A server with no listener builds nothing:
//! [`Tx::listened`](super::Tx::listened) says whether anyone would hear.

use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;
use tokio::sync::broadcast;

/// Committed changes a listener may fall behind by before it is told it missed some.
const BACKLOG: usize = 1024;

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

/// The changes of one committed transaction, by workspace.
pub type Committed = Arc<[Told]>;

/// The server's feed of committed changes.
#[derive(Clone)]
pub struct Feed {
    sender: broadcast::Sender<Committed>,
}

impl Feed {
    pub(super) fn new() -> Feed {
        Feed {
            sender: broadcast::channel(BACKLOG).0,
        }
    }

    /// Whether anyone listens.
    pub(super) fn listened(&self) -> bool {
        self.sender.receiver_count() > 0
    }

    pub(super) fn publish(&self, changes: Vec<Seen>) {
        if changes.is_empty() || !self.listened() {
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
        self.sender.subscribe()
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
