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
//! redacted, so it has pages of its own), and every page goes at the next commit. At most
//! 256 pages (32 of one workspace) and 32 MiB are kept, a page over 2 MiB never; a page
//! past its second makes room.

use crate::store::Page;
use crate::store::monitors::MonitorListQuery;
use serde_json::value::RawValue;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::envelope::Pagination;

/// Pages kept at most, in all.
const MAX_PAGES: usize = 256;
/// Pages kept at most for one workspace, so one workspace's queries cannot take every
/// place.
const MAX_PAGES_PER_WORKSPACE: usize = 32;
/// Bytes of JSON kept at most, in all (a page of 100 monitors is about 70 KB; one of
/// monitors with the largest configurations the schemas allow, tens of MB).
const MAX_BYTES: usize = 32 << 20;
/// A page larger than this is not kept.
const MAX_PAGE_BYTES: usize = 2 << 20;
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
    /// The JSON bytes of `pages`.
    bytes: usize,
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
        let size = page.items.get().len();
        if size > MAX_PAGE_BYTES {
            return;
        }
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        if commits > kept.commits {
            kept.commits = commits;
            kept.pages.clear();
            kept.bytes = 0;
        }
        if kept.commits != commits {
            return;
        }
        if let Some((old, _)) = kept.pages.remove(&key) {
            kept.bytes -= old.items.get().len();
        }
        if kept.pages.len() >= MAX_PAGES || kept.bytes + size > MAX_BYTES {
            // Pages past their second take room for nothing.
            let pages = std::mem::take(&mut kept.pages);
            kept.pages = pages
                .into_iter()
                .filter(|(_, (_, at))| at.elapsed() < MAX_AGE)
                .collect();
            kept.bytes = kept.pages.values().map(|(p, _)| p.items.get().len()).sum();
        }
        let workspace = key.split('\n').next().unwrap_or_default();
        let of_workspace = kept
            .pages
            .keys()
            .filter(|k| k.split('\n').next() == Some(workspace))
            .count();
        if kept.pages.len() >= MAX_PAGES
            || kept.bytes + size > MAX_BYTES
            || of_workspace >= MAX_PAGES_PER_WORKSPACE
        {
            return;
        }
        kept.bytes += size;
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
    fn one_workspace_cannot_take_every_place_and_large_pages_are_not_kept() {
        let pages = MonitorPages::default();
        for n in 1..=(MAX_PAGES_PER_WORKSPACE as u64 + 5) {
            pages.put(
                key("ws_1", false, &query(n)),
                rendered("[1]"),
                1,
                Instant::now(),
            );
        }
        let kept = (1..=(MAX_PAGES_PER_WORKSPACE as u64 + 5))
            .filter(|n| pages.get(&key("ws_1", false, &query(*n)), 1).is_some())
            .count();
        assert_eq!(kept, MAX_PAGES_PER_WORKSPACE);
        pages.put(
            key("ws_2", false, &query(1)),
            rendered("[2]"),
            1,
            Instant::now(),
        );
        assert!(pages.get(&key("ws_2", false, &query(1)), 1).is_some());

        let large = format!("[\"{}\"]", "x".repeat(MAX_PAGE_BYTES));
        pages.put(
            key("ws_3", false, &query(1)),
            rendered(&large),
            1,
            Instant::now(),
        );
        assert!(pages.get(&key("ws_3", false, &query(1)), 1).is_none());
    }

    #[test]
    fn pages_past_their_second_make_room() {
        let pages = MonitorPages::default();
        let long_ago = Instant::now()
            .checked_sub(MAX_AGE + Duration::from_millis(1))
            .expect("an instant a second ago");
        for n in 0..MAX_PAGES {
            pages.put(
                key(&format!("ws_{n}"), false, &query(1)),
                rendered("[1]"),
                1,
                long_ago,
            );
        }
        pages.put(
            key("ws_new", false, &query(1)),
            rendered("[2]"),
            1,
            Instant::now(),
        );
        assert!(pages.get(&key("ws_new", false, &query(1)), 1).is_some());
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
