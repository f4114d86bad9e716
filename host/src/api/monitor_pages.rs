//! The monitor list's pages, kept as rendered while nothing has been written.
//!
//! `GET /v1/monitors` is what scripts, exporters and dashboards poll, most of them the
//! same first page over and over. Reading a page costs the database a join and an index
//! walk and the server a parse and a render per monitor (docs/performance.md, "The
//! monitor list"). On SQLite one process makes every write and the store counts its
//! commits ([`Store::commits`](crate::store::Store::commits)): a page read while the
//! count was N is still what the database holds while the count is N, so it is served
//! again as the same bytes. Any commit (a check's result, an edit, a pause) makes the
//! next request read the database again; the count is taken before the read, so a page
//! read while a write committed is kept under the count from before that write and never
//! served after it. On PostgreSQL other nodes write too, and every request reads.
//! Several nodes may also share one SQLite file (regions tried out on one machine; the
//! docs put several nodes on PostgreSQL): their writes are not counted here, so a page is
//! also kept for a second at most, as API keys are (`store::keys::KeyCache`), and another
//! node's write shows within that second.
//!
//! A page is kept per workspace, per query and per view (a read key sees secrets
//! redacted, so it has pages of its own), and every page goes at the next commit.

use crate::store::Page;
use crate::store::monitors::MonitorListQuery;
use serde_json::value::RawValue;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::envelope::Pagination;

/// Pages kept at most (about 70 KB each at 100 monitors a page): past it, a new page is
/// not kept until the next commit clears them.
const MAX_PAGES: usize = 256;
/// How long a page is kept at most, even with nothing committed here.
const MAX_AGE: Duration = Duration::from_secs(1);

/// A rendered page: its items as JSON and its paging facts.
#[derive(Clone)]
pub struct RenderedPage {
    pub items: Arc<RawValue>,
    pub pagination: Pagination,
}

/// The kept pages and the commit count they were read at.
#[derive(Default)]
pub struct MonitorPages {
    kept: Mutex<Kept>,
}

#[derive(Default)]
struct Kept {
    commits: u64,
    pages: HashMap<String, (RenderedPage, Instant)>,
}

/// Which page of which list, seen by whom.
pub fn key(workspace_id: &str, redacted: bool, query: &MonitorListQuery) -> String {
    let Page { page, limit } = query.page;
    format!(
        "{workspace_id}\n{redacted}\n{page}\n{limit}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}",
        query.sort, query.order, query.status, query.tag, query.kind, query.search
    )
}

impl MonitorPages {
    /// The page under `key`, if it was read at `commits` (the store's count now).
    pub fn get(&self, key: &str, commits: u64) -> Option<RenderedPage> {
        let kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        if kept.commits != commits {
            return None;
        }
        kept.pages
            .get(key)
            .filter(|(_, read_at)| read_at.elapsed() < MAX_AGE)
            .map(|(page, _)| page.clone())
    }

    /// Keep `page`, read from `read_at` on, after the store's count was `commits`. A page
    /// read before a commit that is already counted is not kept.
    pub fn put(&self, key: String, page: RenderedPage, commits: u64, read_at: Instant) {
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        if commits > kept.commits {
            kept.commits = commits;
            kept.pages.clear();
        }
        if kept.commits != commits
            || (kept.pages.len() >= MAX_PAGES && !kept.pages.contains_key(&key))
        {
            return;
        }
        kept.pages.insert(key, (page, read_at));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Order;
    use crate::store::monitors::MonitorSort;

    fn query(page: u64) -> MonitorListQuery {
        MonitorListQuery {
            status: None,
            search: None,
            kind: None,
            tag: None,
            sort: MonitorSort::CreatedAt,
            order: Order::Desc,
            page: Page { page, limit: 100 },
        }
    }

    fn rendered(json: &str) -> RenderedPage {
        RenderedPage {
            items: Arc::from(RawValue::from_string(json.to_string()).expect("json")),
            pagination: Pagination::new(
                Page {
                    page: 1,
                    limit: 100,
                },
                1,
            ),
        }
    }

    #[test]
    fn a_page_is_served_only_while_nothing_was_committed_since_it_was_read() {
        let pages = MonitorPages::default();
        let k = key("ws_1", false, &query(1));
        pages.put(k.clone(), rendered("[1]"), 7, Instant::now());
        assert_eq!(
            pages.get(&k, 7).map(|p| p.items.get().to_string()),
            Some("[1]".into())
        );
        // A commit since: read again.
        assert!(pages.get(&k, 8).is_none());
        // A page read before that commit, put after it, is not kept.
        pages.put(k.clone(), rendered("[2]"), 9, Instant::now());
        pages.put(k.clone(), rendered("[3]"), 8, Instant::now());
        assert_eq!(
            pages.get(&k, 9).map(|p| p.items.get().to_string()),
            Some("[2]".into())
        );
    }

    #[test]
    fn a_page_is_kept_a_second_at_most() {
        let pages = MonitorPages::default();
        let k = key("ws_1", false, &query(1));
        let long_ago = Instant::now()
            .checked_sub(MAX_AGE + Duration::from_millis(1))
            .expect("an instant a second ago");
        pages.put(k.clone(), rendered("[1]"), 3, long_ago);
        assert!(pages.get(&k, 3).is_none());
    }

    #[test]
    fn pages_are_kept_per_workspace_view_and_query() {
        let pages = MonitorPages::default();
        pages.put(
            key("ws_1", false, &query(1)),
            rendered("[1]"),
            1,
            Instant::now(),
        );
        assert!(pages.get(&key("ws_2", false, &query(1)), 1).is_none());
        assert!(pages.get(&key("ws_1", true, &query(1)), 1).is_none());
        assert!(pages.get(&key("ws_1", false, &query(2)), 1).is_none());
        let mut tagged = query(1);
        tagged.tag = Some("db".into());
        assert!(pages.get(&key("ws_1", false, &tagged), 1).is_none());
    }
}
