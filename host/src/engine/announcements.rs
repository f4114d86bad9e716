//! Planned maintenance told to status-page subscribers: each window's next occurrence,
//! `subscriber_notice_minutes` before it starts (`scheduled`), and again when it has ended
//! (`ended`, only for an occurrence that was told). Subscribers hear of it through the
//! public pages showing a monitor the window covers, with those monitors' names, as
//! outbox rows written in the transaction that notes the notice, so each is given once
//! across restarts and nodes. Whether a notice is due and who would hear it are read
//! first, without a write: a window with nothing to tell costs reads only.

use super::context::EngineContext;
use super::maintenance::{Occurrence, Window};
use crate::outbox::subscribers;
use crate::store::maintenance::MaintenanceWindowRow;
use crate::store::status_pages::StatusPageRow;
use crate::store::{Store, StoreError};
use serde_json::json;

/// The phase told before an occurrence starts.
pub const SCHEDULED: &str = "scheduled";
/// The phase told once it has ended.
pub const ENDED: &str = "ended";
/// An end noticed this late (the server was down when it came) is still told; later, not.
const ENDED_WITHIN_MS: i64 = 6 * 3_600_000;
/// Occurrences looked at for a recent end (a window repeating every minute has 360 in
/// six hours; only the last ones can have been told).
const ENDED_LOOKED_AT: usize = 400;
/// Notices kept this long after their occurrence started (the pass looks back six hours).
const NOTICES_KEPT_MS: i64 = 7 * 86_400_000;

/// Tell subscribers of the occurrences due a notice at `now`. Returns how many messages
/// were queued.
pub async fn announce_due(
    store: &Store,
    ctx: &EngineContext,
    now: i64,
) -> Result<usize, StoreError> {
    let mut queued = 0;
    for row in store.windows_announcing().await? {
        let Ok(window) = Window::from_row(&row) else {
            continue;
        };
        let lead = i64::from(row.subscriber_notice_minutes) * 60_000;
        // The next occurrence only: an hourly window with a day's notice tells one at a
        // time, not twenty-four.
        let next = window
            .occurrences(now, now + lead + 1, 4)
            .into_iter()
            .find(|o| o.start > now);
        if let Some(o) = next.filter(|o| o.start - lead <= now)
            && !store
                .maintenance_notice_given(&row.id, o.start, SCHEDULED)
                .await?
        {
            queued += announce(store, ctx, &row, &window, o, SCHEDULED, now).await?;
        }
        // The latest ends: only an occurrence told it was coming is told it ended.
        let ended: Vec<Occurrence> = window
            .occurrences(now - ENDED_WITHIN_MS, now, ENDED_LOOKED_AT)
            .into_iter()
            .filter(|o| o.end <= now)
            .collect();
        for o in ended.into_iter().rev().take(2) {
            if store
                .maintenance_notice_given(&row.id, o.start, SCHEDULED)
                .await?
                && !store
                    .maintenance_notice_given(&row.id, o.start, ENDED)
                    .await?
            {
                queued += announce(store, ctx, &row, &window, o, ENDED, now).await?;
            }
        }
    }
    store
        .prune_maintenance_notices(now - NOTICES_KEPT_MS)
        .await?;
    Ok(queued)
}

/// The workspace's public pages showing a monitor the window covers, each with the names
/// of those monitors, in the page's order (visitors see names only).
async fn audience(
    store: &Store,
    row: &MaintenanceWindowRow,
    window: &Window,
) -> Result<Vec<(StatusPageRow, Vec<String>)>, StoreError> {
    let pages = store.public_pages_of(&row.workspace_id).await?;
    let shown: Vec<String> = pages
        .iter()
        .flat_map(|p| serde_json::from_str::<Vec<String>>(&p.monitor_ids).unwrap_or_default())
        .collect();
    if shown.is_empty() {
        return Ok(Vec::new());
    }
    let monitors = store
        .monitors_in_workspace(&row.workspace_id, shown)
        .await?;
    Ok(pages
        .into_iter()
        .filter_map(|page| {
            let on_page: Vec<String> = serde_json::from_str(&page.monitor_ids).unwrap_or_default();
            let covered: Vec<String> = on_page
                .iter()
                .filter_map(|id| monitors.iter().find(|m| &m.id == id))
                .filter(|m| window.covers_parts(&m.id, &m.tag_list()))
                .map(|m| m.name.clone())
                .collect();
            (!covered.is_empty()).then_some((page, covered))
        })
        .collect())
}

/// Tell `phase` of occurrence `o` of `row`'s window to the subscribers of the pages that
/// show a monitor it covers, once. Nothing is noted when no page does (a later edit that
/// puts a covered monitor on a page is told then).
async fn announce(
    store: &Store,
    ctx: &EngineContext,
    row: &MaintenanceWindowRow,
    window: &Window,
    o: Occurrence,
    phase: &str,
    now: i64,
) -> Result<usize, StoreError> {
    let pages = audience(store, row, window).await?;
    if pages.is_empty() {
        return Ok(0);
    }
    let tx = store.begin_write().await?;
    if !tx
        .claim_maintenance_notice(&row.id, o.start, phase, now)
        .await?
    {
        return Ok(0); // another node told it first
    }
    // What the public page shows of a window: no id.
    let maintenance = json!({
        "name": row.name,
        "description": row.description,
        "startsAt": crate::time::format_ms(o.start),
        "endsAt": crate::time::format_ms(o.end),
        "phase": phase,
    });
    let mut queued = 0;
    for (page, covered) in &pages {
        queued += subscribers::announce_maintenance(
            &tx,
            &ctx.public_url,
            page,
            &maintenance,
            covered,
            now,
        )
        .await?;
    }
    tx.commit().await?;
    if queued > 0 {
        ctx.outbox_wakeup.notify_one();
    }
    Ok(queued)
}
