//! The monitors' labels as the last scrape read them, kept while no monitor was added,
//! removed or relabelled (SQLite only; see [`Store::monitor_labels_version`]).
//!
//! A scrape writes one info series per monitor with its workspace, name, type and tags,
//! and the other series need each monitor's id (and, with Uptime Kuma's names, its target).
//! At a million monitors, reading those rows was most of a scrape (their pages no longer
//! fit the readers' cache; docs/performance.md, goal 5), though they change only when
//! someone edits a monitor. Kept here are the info series' text, the ids and Kuma labels
//! in id order, and each monitor's last response time as read; a scrape under the same
//! count writes the text as it is and reads only the states that are not `up` (an index
//! holds them) and, from the process's own counters, the response times of the checks
//! made since. Nodes sharing one SQLite file (regions tried on one machine) do not see
//! each other's checks in their counters, so labels are read again after
//! [`MAX_AGE`] whatever the count says: another node's response times show at most that
//! late there.
//!
//! [`Store::monitor_labels_version`]: crate::store::Store::monitor_labels_version

use super::exposition::Strings;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Labels are read again after this long, even with no change counted.
pub const MAX_AGE: Duration = Duration::from_secs(600);

/// What one scrape read, under the count it was read at.
pub(super) struct Labels {
    pub version: i64,
    /// The workspace scraped (None: every workspace), and whether Kuma's labels were read.
    pub workspace: Option<String>,
    pub kuma: bool,
    /// The info series' samples, one line per monitor, without the family's header.
    pub info: String,
    pub ids: Strings,
    /// Five per monitor, when `kuma`.
    pub kuma_labels: Strings,
    /// The last response time of each monitor as read from the database; a check made
    /// since is in the process's counters.
    pub response_ms: Vec<Option<i32>>,
    /// When they were read.
    pub read_at: Instant,
}

/// The labels of the last scrapes: of every workspace (`metrics = "public"`), or of each
/// workspace scraped with its key, the most recent first. At most [`MAX_KEPT`] views and
/// [`MAX_KEPT_BYTES`] of text are kept (the most recent always), so servers scraped per
/// workspace keep their busiest ones and memory stays bounded.
#[derive(Default)]
pub struct LabelCache {
    kept: Mutex<Vec<Arc<Labels>>>,
}

/// Views kept at most.
const MAX_KEPT: usize = 4;
/// Bytes of info text kept at most, beyond the most recent view's.
const MAX_KEPT_BYTES: usize = 256 << 20;

impl LabelCache {
    /// The labels kept for this scrape, if read at `version`.
    pub(super) fn get(
        &self,
        version: i64,
        workspace: Option<&str>,
        kuma: bool,
    ) -> Option<Arc<Labels>> {
        let kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        kept.iter()
            .find(|l| {
                l.version == version
                    && l.workspace.as_deref() == workspace
                    && l.kuma == kuma
                    && l.read_at.elapsed() < MAX_AGE
            })
            .cloned()
    }

    /// Keep `labels`, in place of what was kept for the same view, and of the oldest
    /// views past the bounds.
    pub(super) fn keep(&self, labels: Labels) {
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        kept.retain(|l| {
            (l.workspace.as_deref(), l.kuma) != (labels.workspace.as_deref(), labels.kuma)
                && l.version == labels.version
        });
        kept.insert(0, Arc::new(labels));
        let mut bytes = 0;
        let mut views = 0;
        kept.retain(|l| {
            bytes += l.info.len();
            views += 1;
            views == 1 || (views <= MAX_KEPT && bytes <= MAX_KEPT_BYTES)
        });
    }
}
