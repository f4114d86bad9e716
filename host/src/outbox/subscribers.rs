//! A status page's messages to its subscribers: the confirmation of an e-mail
//! subscription, each update the workspace posts, and each state change of the page's
//! monitors. They are outbox rows like alerts, written in the transaction of what caused
//! them, so they share the alerts' guarantees (nothing lost, retried, sent once). Every
//! message carries a one-click unsubscribe link.
//!
//! Events: `status_page.confirm` (e-mail only), `status_page.update`,
//! `status_page.monitor`.

use super::{Origin, Target};
use crate::store::status_pages::StatusPageRow;
use crate::store::subscriptions::{StatusUpdateRow, SubscriberRow};
use crate::store::{StoreError, Tx};
use serde_json::{Value, json};

pub const CONFIRM: &str = "status_page.confirm";
pub const UPDATE: &str = "status_page.update";
pub const MONITOR: &str = "status_page.monitor";

/// The `page` object of a payload.
pub fn page_object(page: &StatusPageRow, public_url: &str) -> Value {
    json!({
        "id": page.id,
        "slug": page.slug,
        "name": page.title,
        "url": format!("{public_url}/status/{}", page.slug),
    })
}

/// Where a subscriber confirms.
pub fn confirm_url(public_url: &str, slug: &str, token: &str) -> String {
    format!("{public_url}/status/{slug}/confirm/{token}")
}

/// Where a subscriber leaves, in one click.
pub fn unsubscribe_url(public_url: &str, slug: &str, token: &str) -> String {
    format!("{public_url}/status/{slug}/unsubscribe/{token}")
}

/// The channel a subscriber is reached through.
fn target(sub: &SubscriberRow) -> Target {
    let config = match sub.kind.as_str() {
        "webhook" => json!({"url": sub.target}),
        _ => json!({"target": sub.target}),
    };
    Target {
        kind: sub.kind.clone(),
        config: config.to_string(),
        channel_id: None,
    }
}

async fn send(
    tx: &Tx,
    public_url: &str,
    page: &StatusPageRow,
    sub: &SubscriberRow,
    event: &str,
    fields: Value,
    now: i64,
) -> Result<(), StoreError> {
    let origin = Origin {
        workspace_id: &page.workspace_id,
        incident_id: None,
        monitor_id: None,
    };
    let page_obj = page_object(page, public_url);
    let unsubscribe = unsubscribe_url(public_url, &page.slug, &sub.token);
    let payload = |id: &str| {
        let mut o = json!({
            "event": event,
            "timestamp": crate::time::format_ms(now),
            "webhookId": id,
            "page": page_obj,
            "unsubscribeUrl": unsubscribe,
        });
        if let (Some(o), Value::Object(f)) = (o.as_object_mut(), fields) {
            o.extend(f);
        }
        o.to_string()
    };
    super::enqueue_raw(tx, &origin, &target(sub), event, payload, now).await?;
    Ok(())
}

/// Ask a new e-mail subscriber to confirm.
pub async fn send_confirmation(
    tx: &Tx,
    public_url: &str,
    page: &StatusPageRow,
    sub: &SubscriberRow,
    now: i64,
) -> Result<(), StoreError> {
    let confirm = confirm_url(public_url, &page.slug, &sub.token);
    send(
        tx,
        public_url,
        page,
        sub,
        CONFIRM,
        json!({"confirmUrl": confirm}),
        now,
    )
    .await
}

/// The `update` object of a payload.
pub fn update_object(u: &StatusUpdateRow) -> Value {
    json!({
        "id": u.id,
        "status": u.status,
        "body": u.body,
        "incidentId": u.incident_id,
        "createdAt": crate::time::format_ms(u.created_at),
    })
}

/// Tell a page's confirmed subscribers of an update. Returns how many were queued.
pub async fn announce_update(
    tx: &Tx,
    public_url: &str,
    page: &StatusPageRow,
    update: &StatusUpdateRow,
    now: i64,
) -> Result<usize, StoreError> {
    let subs = tx.confirmed_subscribers(vec![page.id.clone()]).await?;
    for sub in &subs {
        let fields = json!({"update": update_object(update)});
        send(tx, public_url, page, sub, UPDATE, fields, now).await?;
    }
    Ok(subs.len())
}

/// Tell the confirmed subscribers of every public page showing a monitor that it went
/// `down` or came back `up`. Returns how many were queued.
pub async fn announce_monitor_state(
    tx: &Tx,
    public_url: &str,
    workspace_id: &str,
    monitor_id: &str,
    monitor_name: &str,
    state: &str,
    now: i64,
) -> Result<usize, StoreError> {
    let pages = tx.public_pages_showing(workspace_id, monitor_id).await?;
    if pages.is_empty() {
        return Ok(0);
    }
    let subs = tx
        .confirmed_subscribers(pages.iter().map(|p| p.id.clone()).collect())
        .await?;
    for sub in &subs {
        let Some(page) = pages.iter().find(|p| p.id == sub.page_id) else {
            continue;
        };
        // Visitors see names and states only, never targets or reasons.
        let fields = json!({"monitor": {"name": monitor_name, "status": state}});
        send(tx, public_url, page, sub, MONITOR, fields, now).await?;
    }
    Ok(subs.len())
}
