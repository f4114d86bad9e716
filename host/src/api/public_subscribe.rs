//! The visitor's side of status-page updates: subscribing by e-mail (double opt-in: a
//! confirmation link first) or webhook, confirming, leaving in one click, and the Atom
//! feed of updates. No key is needed; a private or unknown page answers 404.

use super::AppState;
use super::envelope::Success;
use super::error::{ApiError, FieldError, Resource};
use super::session::ClientIp;
use crate::ids;
use crate::outbox::subscribers;
use crate::store::status_pages::StatusPageRow;
use crate::store::subscriptions::{SubscriberRow, pending_expired};
use crate::text::escape_html;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::{Map, Value, json};
use utoipa::ToSchema;

/// Most subscribers one page keeps.
pub const MAX_SUBSCRIBERS: u64 = 10_000;
/// Entries in the feed.
const FEED_ENTRIES: u64 = 50;

/// What a subscription request got. The answer is the same whether the address or URL
/// is new, waiting for confirmation or subscribed already, so it tells nobody who is
/// subscribed.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionView {
    /// `email` or `webhook`.
    #[serde(rename = "type")]
    pub kind: String,
    pub message: String,
    /// For a webhook: the secret its deliveries are signed with (`X-Service-Signature`,
    /// as the workspace's own webhooks are), shown only in this answer. Only the first
    /// answer's secret is ever used: a repeated request for the same URL gets a secret of
    /// the same shape that is never stored, so nobody can take a subscriber's secret over.
    /// A subscriber that lost its secret asks the page's members to remove it, then
    /// subscribes again.
    #[schema(example = "whsec_8Jq2VtN0bW3kXc5LmZr7Ty1Pd4Hs6Ga9")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

async fn public_page(state: &AppState, slug: &str) -> Result<Option<StatusPageRow>, ApiError> {
    Ok(state
        .store
        .status_page_by_slug(slug)
        .await?
        .filter(|p| p.public))
}

/// A small HTML page in the status page's style.
fn html_page(status: StatusCode, title: &str, lead: &str, back: Option<&str>) -> Response {
    let back = back
        .map(|u| {
            format!(
                "<p><a href=\"{}\">Back to the status page</a></p>",
                escape_html(u)
            )
        })
        .unwrap_or_default();
    let body = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <title>{t}</title><style>body{{font:16px/1.5 system-ui,sans-serif;color:#1f2933;\
         background:#f5f7fa}}main{{max-width:640px;margin:0 auto;padding:32px 16px}}</style>\
         </head><body><main><h1>{t}</h1><p>{l}</p>{back}</main></body></html>",
        t = escape_html(title),
        l = escape_html(lead),
    );
    (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        body,
    )
        .into_response()
}

fn wants_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("application/json"))
}

/// Read `{"email": ...}` or `{"webhookUrl": ...}` from JSON or a form.
fn read_request(headers: &HeaderMap, body: &Bytes) -> Result<Map<String, Value>, ApiError> {
    if wants_json(headers) {
        match serde_json::from_slice::<Value>(body) {
            Ok(Value::Object(o)) => Ok(o),
            _ => Err(ApiError::bad_request("The body must be a JSON object")),
        }
    } else {
        Ok(url::form_urlencoded::parse(body)
            .map(|(k, v)| (k.into_owned(), Value::String(v.into_owned())))
            .collect())
    }
}

/// Subscribe to a status page: `{"email": "..."}` (a confirmation link is sent; nothing
/// else is until it is followed) or `{"webhookUrl": "https://..."}` (a public address only;
/// nothing is sent until a member of the page's workspace approves it, and its deliveries
/// are signed with its own secret, shown once in the answer). JSON or a form post from the
/// page; a form gets an HTML answer. Every accepted request gets the same 202 and the same
/// words, whether the address is new, waiting or subscribed. Confirmation mails are limited
/// per mailbox, page and client address per hour, new webhook subscribers per page and
/// client address per hour; over a limit nothing is sent or stored. A subscriber's secret
/// never changes here. An address not confirmed within 2 days, or a webhook not approved
/// within 7, is forgotten and no longer counts toward the page's limit.
#[utoipa::path(post, path = "/status/{slug}/subscribe", tag = "status-pages",
    params(("slug" = String, Path, description = "The page's slug")),
    security(()),
    request_body(content = Object, description = "`{\"email\": \"you@example.com\"}` or `{\"webhookUrl\": \"https://...\"}`"),
    responses(
        (status = 202, description = "Accepted: the same answer whether the address or URL is new, waiting or subscribed (a webhook's answer carries its signing secret)", body = SubscriptionView),
        (status = 400, description = "Neither a valid address nor a valid URL, or a URL that is not a public address (an HTML page when the request is a form)",
            content((super::error::ErrorBody = "application/json"), (String = "text/html"))),
        (status = 404, description = "No public page with this slug (an HTML page when the request is a form)",
            content((super::error::ErrorBody = "application/json"), (String = "text/html"))),
        (status = 422, description = "The page has 10,000 subscribers (an HTML page when the request is a form)",
            content((super::error::ErrorBody = "application/json"), (String = "text/html"))),
    ))]
pub async fn subscribe(
    State(state): State<AppState>,
    Path(slug): Path<String>,
    ClientIp(client): ClientIp,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let json = wants_json(&headers);
    match subscribe_inner(&state, &slug, &client, &headers, &body).await {
        Ok(view) if json => Success(StatusCode::ACCEPTED, view).into_response(),
        Ok(view) => {
            let lead = match &view.secret {
                Some(secret) => {
                    format!("{} Signing secret (shown only now): {secret}", view.message)
                }
                None => view.message.clone(),
            };
            let title = if view.secret.is_some() {
                "Waiting for approval"
            } else {
                "Check your inbox"
            };
            html_page(
                StatusCode::ACCEPTED,
                title,
                &lead,
                Some(&format!("{}/status/{slug}", state.config.public_url)),
            )
        }
        Err(e) if json => e.into_response(),
        Err(e) => html_page(e.status, "Could not subscribe", &e.message, None),
    }
}

/// The one answer to an e-mail subscription.
fn email_answer(page: &StatusPageRow) -> SubscriptionView {
    SubscriptionView {
        kind: "email".into(),
        message: format!(
            "If this address may receive {}'s updates, a confirmation link is on its way to it; \
             nothing else is sent until the link is followed.",
            page.title
        ),
        secret: None,
    }
}

/// The one answer to a webhook subscription.
fn webhook_answer(page: &StatusPageRow, secret: String) -> SubscriptionView {
    SubscriptionView {
        kind: "webhook".into(),
        message: format!(
            "This URL receives {}'s updates once a member of its team approves it. \
             Deliveries are signed with the secret in this answer, shown only now.",
            page.title
        ),
        secret: Some(secret),
    }
}

/// A visitor's webhook URL, refused unless its host may be reached by the visitors'
/// egress policy (public addresses only, unless the operator allows private targets).
fn check_visitor_url(state: &AppState, url: &str) -> Result<(), ApiError> {
    let host = url::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
        .unwrap_or_default();
    state
        .config
        .egress
        .check_visitor_host(&host)
        .map_err(|why| {
            ApiError::validation(vec![FieldError::new(
                "webhookUrl",
                format!("must be a public address: {why}"),
            )])
        })
}

async fn subscribe_inner(
    state: &AppState,
    slug: &str,
    client: &str,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<SubscriptionView, ApiError> {
    let page = public_page(state, slug)
        .await?
        .ok_or_else(|| Resource::STATUS_PAGE.not_found(slug))?;
    let request = read_request(headers, body)?;
    let (kind, target) = match (
        request.get("email").and_then(Value::as_str),
        request.get("webhookUrl").and_then(Value::as_str),
    ) {
        (Some(email), None) => {
            let mut settings = Map::new();
            settings.insert("target".into(), Value::from(email.trim()));
            let normal = super::channel_input::validate_settings(state, "email", settings, "")
                .await
                .map_err(|_| {
                    ApiError::validation(vec![FieldError::new(
                        "email",
                        "must be an e-mail address",
                    )])
                })?;
            let v: Value = serde_json::from_str(&normal).unwrap_or(Value::Null);
            let address = v["target"].as_str().unwrap_or(email.trim()).to_lowercase();
            ("email", address)
        }
        (None, Some(url)) => {
            let mut settings = Map::new();
            settings.insert("url".into(), Value::from(url.trim()));
            let normal = super::channel_input::validate_settings(state, "webhook", settings, "")
                .await
                .map_err(|e| {
                    ApiError::validation(vec![FieldError::new("webhookUrl", e.message)])
                })?;
            let v: Value = serde_json::from_str(&normal).unwrap_or(Value::Null);
            let url = v["url"].as_str().unwrap_or(url.trim()).to_string();
            check_visitor_url(state, &url)?;
            ("webhook", url)
        }
        _ => {
            return Err(ApiError::validation(vec![FieldError::new(
                "email",
                "give `email` (an address) or `webhookUrl` (an https:// URL), not both",
            )]));
        }
    };
    let now = state.clock.now_ms();
    let subs = &state.config.subscriptions;
    let txn = state.store.begin_write().await?;
    // Who waited too long for confirmation or approval is forgotten first, so they
    // neither stay nor count toward the page's limit.
    txn.prune_page_pending_subscribers(&page.id, now).await?;
    // Asked of every request alike, so a full page says nothing about who is on it.
    if txn.count_page_subscribers(&page.id).await? >= MAX_SUBSCRIBERS {
        return Err(ApiError::unprocessable(
            "This status page has as many subscribers as it can keep",
        ));
    }
    let existing = txn.page_subscriber_by_target(&page.id, &target).await?;
    // A webhook's answer always carries a new secret. Only a new subscriber's is stored:
    // a subscriber's secret never changes through this anonymous route, so the secret in
    // a repeated request's answer is never used (and the answer still reveals nothing).
    let secret = (kind == "webhook").then(crate::store::keys::generate_webhook_secret);
    let mail_limits = subscribers::MailLimits {
        per_mailbox: subs.confirmations_per_mailbox,
        per_page: subs.confirmations_per_page,
        per_client: subs.confirmations_per_client,
    };
    match existing {
        Some(row) if kind == "email" && !row.confirmed => {
            subscribers::send_confirmation_within_limits(
                &txn,
                &state.config.public_url,
                &page,
                &row,
                client,
                mail_limits,
                now,
            )
            .await?;
        }
        Some(_) => {}
        None => {
            let row = SubscriberRow {
                id: ids::new_id(ids::prefix::SUBSCRIBER),
                workspace_id: page.workspace_id.clone(),
                page_id: page.id.clone(),
                kind: kind.to_string(),
                target: target.clone(),
                token: ids::random_base62(40),
                confirmed: false,
                created_at: now,
                secret: secret.clone(),
            };
            if kind == "email" {
                // No row without its mail: over a limit, nothing is stored either.
                if subscribers::confirmation_allowed(&txn, &page, &target, client, mail_limits, now)
                    .await?
                {
                    txn.insert_subscriber(row.clone()).await?;
                    subscribers::send_confirmation_within_limits(
                        &txn,
                        &state.config.public_url,
                        &page,
                        &row,
                        client,
                        mail_limits,
                        now,
                    )
                    .await?;
                }
            } else {
                let limits = subscribers::WebhookLimits {
                    per_page: subs.webhooks_per_page,
                    per_client: subs.webhooks_per_client,
                };
                subscribers::add_webhook_within_limits(&txn, row, client, limits, now).await?;
            }
        }
    }
    txn.commit().await?;
    Ok(match secret {
        Some(secret) => webhook_answer(&page, secret),
        None => email_answer(&page),
    })
}

async fn confirm_inner(state: &AppState, slug: &str, token: &str) -> Response {
    let page = match public_page(state, slug).await {
        Ok(Some(p)) => p,
        Ok(None) => return html_page(StatusCode::NOT_FOUND, "No status page here", "", None),
        Err(e) => return e.into_response(),
    };
    let back = format!("{}/status/{slug}", state.config.public_url);
    let now = state.clock.now_ms();
    match state.store.subscriber_by_token(token).await {
        // A link not followed in time confirms nothing (the sweep forgets its subscriber).
        Ok(Some(s)) if s.page_id == page.id && !pending_expired(&s, now) => {
            match state.store.confirm_subscriber(token).await {
                Ok(_) => html_page(
                    StatusCode::OK,
                    "Subscribed",
                    &format!(
                        "{} will receive {}'s updates. Every message has a link to unsubscribe.",
                        s.target, page.title
                    ),
                    Some(&back),
                ),
                Err(e) => ApiError::from(e).into_response(),
            }
        }
        Ok(_) => html_page(
            StatusCode::NOT_FOUND,
            "Link not valid",
            "This confirmation link is not (or no longer) valid; subscribe again from the status page.",
            Some(&back),
        ),
        Err(e) => ApiError::from(e).into_response(),
    }
}

/// Confirm an e-mail subscription (the link in the confirmation message).
#[utoipa::path(get, path = "/status/{slug}/confirm/{token}", tag = "status-pages",
    params(("slug" = String, Path, description = "The page's slug"), ("token" = String, Path, description = "From the confirmation message")),
    security(()),
    responses(
        (status = 200, description = "Confirmed (HTML)", content_type = "text/html"),
        (status = 404, description = "No such page or link (HTML)", content_type = "text/html"),
    ))]
pub async fn confirm(
    State(state): State<AppState>,
    Path((slug, token)): Path<(String, String)>,
) -> Response {
    confirm_inner(&state, &slug, &token).await
}

/// Confirm an e-mail subscription (the same as GET).
#[utoipa::path(post, path = "/status/{slug}/confirm/{token}", tag = "status-pages",
    params(("slug" = String, Path, description = "The page's slug"), ("token" = String, Path, description = "From the confirmation message")),
    security(()),
    responses(
        (status = 200, description = "Confirmed (HTML)", content_type = "text/html"),
        (status = 404, description = "No such page or link (HTML)", content_type = "text/html"),
    ))]
pub async fn confirm_post(
    State(state): State<AppState>,
    Path((slug, token)): Path<(String, String)>,
) -> Response {
    confirm_inner(&state, &slug, &token).await
}

async fn unsubscribe_inner(state: &AppState, slug: &str, token: &str) -> Response {
    let back = format!("{}/status/{slug}", state.config.public_url);
    let owned = match state.store.subscriber_by_token(token).await {
        Ok(s) => s,
        Err(e) => return ApiError::from(e).into_response(),
    };
    if let Some(s) = owned {
        if let Err(e) = state.store.unsubscribe(token).await {
            return ApiError::from(e).into_response();
        }
        return html_page(
            StatusCode::OK,
            "Unsubscribed",
            &format!(
                "{} will receive nothing more from this status page.",
                s.target
            ),
            Some(&back),
        );
    }
    html_page(
        StatusCode::OK,
        "Unsubscribed",
        "This link's subscription has ended already; nothing more will be sent.",
        Some(&back),
    )
}

/// Leave in one click (the link in every message). Answers 200 even when the
/// subscription has ended already.
#[utoipa::path(get, path = "/status/{slug}/unsubscribe/{token}", tag = "status-pages",
    params(("slug" = String, Path, description = "The page's slug"), ("token" = String, Path, description = "From any message")),
    security(()),
    responses((status = 200, description = "Unsubscribed (HTML)", content_type = "text/html")))]
pub async fn unsubscribe(
    State(state): State<AppState>,
    Path((slug, token)): Path<(String, String)>,
) -> Response {
    unsubscribe_inner(&state, &slug, &token).await
}

/// Leave in one click (RFC 8058's POST form of the same link).
#[utoipa::path(post, path = "/status/{slug}/unsubscribe/{token}", tag = "status-pages",
    params(("slug" = String, Path, description = "The page's slug"), ("token" = String, Path, description = "From any message")),
    security(()),
    responses((status = 200, description = "Unsubscribed (HTML)", content_type = "text/html")))]
pub async fn unsubscribe_post(
    State(state): State<AppState>,
    Path((slug, token)): Path<(String, String)>,
) -> Response {
    unsubscribe_inner(&state, &slug, &token).await
}

fn at(ms: i64) -> atom_syndication::FixedDateTime {
    chrono::DateTime::from_timestamp_millis(ms)
        .unwrap_or_default()
        .fixed_offset()
}

/// Capitalised status word.
pub fn status_word(status: &str) -> String {
    let mut c = status.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// The Atom feed of a page's updates, newest first.
#[utoipa::path(get, path = "/status/{slug}/feed.atom", tag = "status-pages",
    params(("slug" = String, Path, description = "The page's slug")),
    security(()),
    responses(
        (status = 200, description = "The feed", content_type = "application/atom+xml"),
        (status = 404, description = "No public page with this slug"),
    ))]
pub async fn feed(State(state): State<AppState>, Path(slug): Path<String>) -> Response {
    let page = match public_page(&state, &slug).await {
        Ok(Some(p)) => p,
        Ok(None) => return Resource::STATUS_PAGE.not_found(&slug).into_response(),
        Err(e) => return e.into_response(),
    };
    let updates = match state
        .store
        .list_status_updates(
            &page.id,
            crate::store::Page {
                page: 1,
                limit: FEED_ENTRIES,
            },
        )
        .await
    {
        Ok((rows, _)) => rows,
        Err(e) => return ApiError::from(e).into_response(),
    };
    let page_url = format!("{}/status/{}", state.config.public_url, page.slug);
    let mut f = atom_syndication::Feed::default();
    f.set_title(atom_syndication::Text::plain(page.title.clone()));
    f.set_id(page_url.clone());
    // An edited entry counts as updated when it was edited (Atom's `updated`), so feed
    // readers show the corrected text.
    let edited =
        |u: &crate::store::subscriptions::StatusUpdateRow| u.updated_at.unwrap_or(u.created_at);
    f.set_updated(at(updates
        .iter()
        .map(edited)
        .max()
        .unwrap_or(page.updated_at)));
    let mut alternate = atom_syndication::Link::default();
    alternate.set_href(page_url.clone());
    alternate.set_rel("alternate");
    let mut own = atom_syndication::Link::default();
    own.set_href(format!("{page_url}/feed.atom"));
    own.set_rel("self");
    f.set_links(vec![alternate, own]);
    let entries = updates
        .iter()
        .map(|u| {
            let mut e = atom_syndication::Entry::default();
            e.set_title(atom_syndication::Text::plain(format!(
                "{}: {}",
                status_word(&u.status),
                page.title
            )));
            e.set_id(format!("{page_url}#{}", u.id));
            e.set_updated(at(edited(u)));
            e.set_published(Some(at(u.created_at)));
            let mut link = atom_syndication::Link::default();
            link.set_href(page_url.clone());
            e.set_links(vec![link]);
            let mut content = atom_syndication::Content::default();
            content.set_content_type(Some("text".to_string()));
            content.set_value(Some(u.body.clone()));
            e.set_content(Some(content));
            e
        })
        .collect::<Vec<_>>();
    f.set_entries(entries);
    (
        [
            (header::CONTENT_TYPE, "application/atom+xml; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=60"),
        ],
        f.to_string(),
    )
        .into_response()
}

/// The page's recent updates for its HTML and JSON (the public status page).
pub fn update_json(u: &crate::store::subscriptions::StatusUpdateRow) -> Value {
    json!({
        "status": u.status,
        "body": u.body,
        "createdAt": crate::time::format_ms(u.created_at),
        "updatedAt": u.updated_at.map(crate::time::format_ms),
    })
}
