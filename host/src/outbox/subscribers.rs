//! A status page's messages to its subscribers: the confirmation of an e-mail
//! subscription, each update the workspace posts, and each state change of the page's
//! monitors. They are outbox rows like alerts, written in the transaction of what caused
//! them, so they share the alerts' guarantees (nothing lost, retried, sent once). Every
//! message carries a one-click unsubscribe link.
//!
//! Events: `status_page.confirm` (e-mail only), `status_page.update`,
//! `status_page.monitor`, `status_page.maintenance`.
//!
//! A subscriber's target is anonymous input: a webhook delivery names its subscriber, is
//! signed with the subscriber's own secret, and connects by the visitors' egress policy
//! (public addresses only), never the server's.

use super::{Origin, Target};
use crate::store::status_pages::StatusPageRow;
use crate::store::subscriptions::{StatusUpdateRow, SubscriberRow};
use crate::store::{StoreError, Tx};
use serde_json::{Value, json};

pub const CONFIRM: &str = "status_page.confirm";
pub const UPDATE: &str = "status_page.update";
pub const MONITOR: &str = "status_page.monitor";
pub const MAINTENANCE: &str = "status_page.maintenance";

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

/// The key of a subscriber delivery's channel configuration that names the subscriber
/// (taken out again before the plugin sees the configuration).
const SUBSCRIBER_KEY: &str = "subscriberId";

/// Every event of this module starts so; no other delivery's does.
pub const EVENT_PREFIX: &str = "status_page.";

/// A delivery to a target an anonymous visitor gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VisitorDelivery {
    /// The subscriber (None for deliveries queued before subscribers were named).
    pub subscriber_id: Option<String>,
    /// The channel configuration for the plugin.
    pub config: String,
}

/// Whether a delivery goes to a status page's subscriber, and if so, who it is and the
/// configuration to hand the channel plugin.
pub fn visitor_delivery(event: &str, config: &str) -> Option<VisitorDelivery> {
    if !event.starts_with(EVENT_PREFIX) {
        return None;
    }
    let mut value: Value = serde_json::from_str(config).unwrap_or(Value::Null);
    let subscriber_id = value
        .as_object_mut()
        .and_then(|o| o.remove(SUBSCRIBER_KEY))
        .and_then(|v| v.as_str().map(str::to_string));
    Some(VisitorDelivery {
        subscriber_id,
        config: if value.is_object() {
            value.to_string()
        } else {
            config.to_string()
        },
    })
}

/// The channel a subscriber is reached through.
fn target(sub: &SubscriberRow) -> Target {
    let config = match sub.kind.as_str() {
        crate::plugins::builtin::WEBHOOK => json!({"url": sub.target, SUBSCRIBER_KEY: sub.id}),
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

/// A confirmation mail's limits per hour (`[subscriptions]` in the configuration).
#[derive(Debug, Clone, Copy)]
pub struct MailLimits {
    pub per_mailbox: u32,
    pub per_page: u32,
    pub per_client: u32,
}

/// The window the limits count in.
const HOUR_MS: i64 = 3_600_000;

/// The mailbox an address reaches: lower case, without a `+tag` (`Victim+1@Example.test`
/// and `victim@example.test` are one mailbox).
pub fn mailbox(address: &str) -> String {
    let lower = address.trim().to_lowercase();
    match lower.rsplit_once('@') {
        Some((local, domain)) => {
            let local = local.split_once('+').map_or(local, |(base, _)| base);
            format!("{local}@{domain}")
        }
        None => lower,
    }
}

/// The client a limit counts: the address, or an IPv6 address's /64 (one host usually
/// holds the whole /64).
pub fn client_key(ip: &str) -> String {
    match ip.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V6(v6)) if v6.to_ipv4_mapped().is_none() => {
            let s = v6.segments();
            format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
        }
        Ok(std::net::IpAddr::V6(v6)) => v6
            .to_ipv4_mapped()
            .map_or(ip.to_string(), |v4| v4.to_string()),
        _ => ip.to_string(),
    }
}

/// May a confirmation mail go to `address` for this page, asked for by this client
/// address, or has the mailbox, the page or the client had its mails for the hour?
pub async fn confirmation_allowed(
    tx: &Tx,
    page: &StatusPageRow,
    address: &str,
    client_ip: &str,
    limits: MailLimits,
    now: i64,
) -> Result<bool, StoreError> {
    let counts = tx
        .confirmation_mails_since(
            &mailbox(address),
            &page.id,
            &client_key(client_ip),
            now - HOUR_MS,
        )
        .await?;
    let allowed = counts.mailbox < u64::from(limits.per_mailbox)
        && counts.page < u64::from(limits.per_page)
        && counts.client < u64::from(limits.per_client);
    if !allowed {
        tracing::info!(page = %page.slug, ?counts, "confirmation mail not sent: over the hour's limit");
    }
    Ok(allowed)
}

/// Webhook subscribers added per hour (`[subscriptions]` in the configuration).
#[derive(Debug, Clone, Copy)]
pub struct WebhookLimits {
    pub per_page: u32,
    pub per_client: u32,
}

/// Add a webhook subscriber from a visitor, unless the page or the client address has had
/// its new webhook subscribers for the hour. True when it was added.
pub async fn add_webhook_within_limits(
    tx: &Tx,
    sub: SubscriberRow,
    client_ip: &str,
    limits: WebhookLimits,
    now: i64,
) -> Result<bool, StoreError> {
    let client = client_key(client_ip);
    let since = now - HOUR_MS;
    let (page, by_client) = tx
        .webhook_subscribes_since(&sub.page_id, &client, since)
        .await?;
    if page >= u64::from(limits.per_page) || by_client >= u64::from(limits.per_client) {
        tracing::info!(page = %sub.page_id, page_count = page, client_count = by_client,
            "webhook subscriber not added: over the hour's limit");
        return Ok(false);
    }
    tx.record_confirmation_mail(
        crate::store::subscriptions::SentMail {
            id: &crate::ids::random_base62(26),
            page_id: &sub.page_id,
            mailbox: crate::store::subscriptions::WEBHOOK_MAILBOX,
            client: &client,
            sent_at: now,
        },
        since,
    )
    .await?;
    tx.insert_subscriber(sub).await?;
    Ok(true)
}

/// Ask an e-mail subscriber to confirm, unless the mailbox, the page or the client address
/// has had its confirmation mails for the hour. True when a mail was queued.
pub async fn send_confirmation_within_limits(
    tx: &Tx,
    public_url: &str,
    page: &StatusPageRow,
    sub: &SubscriberRow,
    client_ip: &str,
    limits: MailLimits,
    now: i64,
) -> Result<bool, StoreError> {
    if !confirmation_allowed(tx, page, &sub.target, client_ip, limits, now).await? {
        return Ok(false);
    }
    let mailbox = mailbox(&sub.target);
    let client = client_key(client_ip);
    let since = now - HOUR_MS;
    tx.record_confirmation_mail(
        crate::store::subscriptions::SentMail {
            id: &crate::ids::random_base62(26),
            page_id: &page.id,
            mailbox: &mailbox,
            client: &client,
            sent_at: now,
        },
        since,
    )
    .await?;
    send_confirmation(tx, public_url, page, sub, now).await?;
    Ok(true)
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

/// Tell the confirmed subscribers of `page` of planned maintenance (`maintenance`, the
/// payload's object) affecting `monitors` (their names, as the page shows them). Returns
/// how many were queued.
pub async fn announce_maintenance(
    tx: &Tx,
    public_url: &str,
    page: &StatusPageRow,
    maintenance: &Value,
    monitors: &[String],
    now: i64,
) -> Result<usize, StoreError> {
    let subs = tx.confirmed_subscribers(vec![page.id.clone()]).await?;
    let names: Vec<Value> = monitors.iter().map(|n| json!({"name": n})).collect();
    for sub in &subs {
        let fields = json!({"maintenance": maintenance, "monitors": names});
        send(tx, public_url, page, sub, MAINTENANCE, fields, now).await?;
    }
    Ok(subs.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subscriber_delivery_names_its_subscriber_and_the_plugin_never_sees_it() {
        let sub = SubscriberRow {
            id: "sub_1".into(),
            workspace_id: "ws_1".into(),
            page_id: "sp_1".into(),
            kind: "webhook".into(),
            target: "https://hooks.example.com/x".into(),
            token: "t".into(),
            confirmed: true,
            created_at: 0,
            secret: Some("whsec_x".into()),
        };
        let t = target(&sub);
        let v = visitor_delivery(UPDATE, &t.config).expect("a visitor's delivery");
        assert_eq!(v.subscriber_id.as_deref(), Some("sub_1"));
        assert_eq!(
            serde_json::from_str::<Value>(&v.config).expect("json"),
            json!({"url": "https://hooks.example.com/x"})
        );
        assert_eq!(visitor_delivery("incident.created", &t.config), None);
        let old = visitor_delivery(MONITOR, r#"{"url":"https://a.example/"}"#).expect("old");
        assert_eq!(old.subscriber_id, None);
    }

    #[test]
    fn tags_and_case_make_no_new_mailbox() {
        assert_eq!(mailbox("Victim+1@Example.test"), "victim@example.test");
        assert_eq!(mailbox("victim+a+b@example.test"), "victim@example.test");
        assert_eq!(mailbox(" victim@example.test "), "victim@example.test");
        assert_eq!(client_key("192.0.2.7"), "192.0.2.7");
        assert_eq!(client_key("2001:db8:1:2:3:4:5:6"), "2001:db8:1:2::/64");
        assert_eq!(client_key("2001:db8:1:2:ffff::9"), "2001:db8:1:2::/64");
        assert_eq!(client_key("::ffff:192.0.2.7"), "192.0.2.7");
    }
}
