//! `/act/{token}`: the one-click links in alerts (see [`crate::outbox::links`]). A GET
//! shows what the link will do, to which incident, and as whom; it changes nothing, so a
//! mail scanner or a link preview that follows it is harmless. Only the page's button (a
//! POST) acts, once. Without a session the action is recorded as the channel the alert was
//! sent to; a signed-in member of the workspace who clicks the page's own button is
//! recorded by name.

use super::AppState;
use super::error::ApiError;
use super::session::{ClientIp, still_signed_in};
use crate::engine::actions::{self, LinkRefusal};
use crate::outbox::links::{self, Action};
use crate::store::links::ActionLinkRow;
use crate::store::{IncidentState, State as _};
use crate::text::escape_html;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// What the link will do, to which incident, as whom; with the button that does it.
#[utoipa::path(get, path = "/act/{token}", tag = "incidents",
    params(("token" = String, Path, description = "From an alert's `actions`")),
    security(()),
    responses(
        (status = 200, description = "The confirmation page (HTML); nothing changed", content_type = "text/html"),
        (status = 404, description = "No such link (HTML)", content_type = "text/html"),
        (status = 409, description = "The incident is resolved already (HTML)", content_type = "text/html"),
        (status = 410, description = "The link expired or was used (HTML)", content_type = "text/html"),
    ))]
pub async fn confirm_page(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(token): Path<String>,
) -> Response {
    let now = state.clock.now_ms();
    let found = match read(&state, &token, now).await {
        Ok(f) => f,
        Err(r) => return refused(&state, r),
    };
    let (link, inc, action) = found;
    if inc.status == IncidentState::Resolved {
        return refused(&state, LinkRefusal::Resolved);
    }
    if action == Action::Acknowledge && inc.status == IncidentState::Acknowledged {
        return refused(&state, LinkRefusal::Acknowledged { by: String::new() });
    }
    let (by, _) = actor_name(&state, &headers, &link, true).await;
    let monitor = monitor_name(&inc.monitor);
    let zone = zone_of(&state, &link.workspace_id).await;
    let what = match action {
        Action::Acknowledge => format!("Acknowledge the incident on {monitor}?"),
        Action::SnoozeHour => format!("Snooze {monitor} for an hour?"),
        Action::SnoozeUntilMorning => format!(
            "Snooze {monitor} until {}?",
            local(actions::next_morning(now, zone), zone)
        ),
        Action::Resolve => format!("Resolve the incident on {monitor}?"),
    };
    let note = match action {
        Action::Acknowledge => {
            "Acknowledging tells the team someone is on it; reminders and escalation stop."
        }
        Action::SnoozeHour | Action::SnoozeUntilMorning => {
            "Its notifications are held until then; an incident still open when the snooze ends is told once."
        }
        Action::Resolve => {
            "Resolving closes the incident now; if the monitor still fails, a new incident opens after its threshold."
        }
    };
    let body = format!(
        "<dl><dt>Monitor</dt><dd>{m}</dd><dt>Incident</dt><dd>{status} since {since}</dd>\
         <dt>Recorded as</dt><dd>{by}</dd></dl><p>{note}</p>\
         <form method=\"post\"><button type=\"submit\">{label}</button></form>\
         <p><a href=\"{url}\">Open the incident</a></p>",
        m = escape_html(&monitor),
        status = inc.status.name(),
        since = escape_html(&local(inc.created_at, zone)),
        by = escape_html(&by),
        note = escape_html(note),
        label = escape_html(action.label()),
        url = escape_html(&incident_url(&state, &inc.id)),
    );
    page(StatusCode::OK, &what, &body)
}

/// Do what the link says, once, and say what was done.
#[utoipa::path(post, path = "/act/{token}", tag = "incidents",
    params(("token" = String, Path, description = "From an alert's `actions`")),
    security(()),
    responses(
        (status = 200, description = "Done (HTML)", content_type = "text/html"),
        (status = 404, description = "No such link (HTML)", content_type = "text/html"),
        (status = 409, description = "The incident is resolved already; nothing changed (HTML)", content_type = "text/html"),
        (status = 410, description = "The link expired or was used; nothing changed (HTML)", content_type = "text/html"),
    ))]
pub async fn act(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    headers: HeaderMap,
    Path(token): Path<String>,
) -> Response {
    let now = state.clock.now_ms();
    let link = match read(&state, &token, now).await {
        Ok((link, _, _)) => link,
        Err(r) => return refused(&state, r),
    };
    // The session names the person only when the click came from the page itself.
    let same_origin = headers
        .get("sec-fetch-site")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == "same-origin")
        || headers
            .get(header::ORIGIN)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|o| state.config.public_url.trim_end_matches('/') == o);
    let (by, user_id) = actor_name(&state, &headers, &link, same_origin).await;
    let zone = zone_of(&state, &link.workspace_id).await;
    let actor = crate::store::audit::Actor {
        kind: if user_id.is_some() { "user" } else { "link" },
        id: user_id.unwrap_or_else(|| {
            link.channel_id
                .clone()
                .unwrap_or_else(|| link.delivery_id.clone())
        }),
        name: by.clone(),
        ip: Some(ip),
    };
    let lifetime = lifetime_ms(&state);
    let done = crate::store::audit::scoped(actor, now, async {
        actions::use_link(
            &state.store,
            &state.engine,
            &links::hash(&token),
            &by,
            lifetime,
            zone,
            now,
        )
        .await
    })
    .await;
    let used = match done {
        Ok(u) => u,
        Err(r) => return refused(&state, r),
    };
    let monitor = monitor_name(&used.incident.monitor);
    let (title, lead) = match (used.action, used.snoozed_until) {
        (Action::Acknowledge, _) => (
            "Acknowledged".to_string(),
            format!("The incident on {monitor} is acknowledged as {by}."),
        ),
        (Action::Resolve, _) => (
            "Resolved".to_string(),
            format!("The incident on {monitor} is resolved, as {by}."),
        ),
        (_, until) => (
            "Snoozed".to_string(),
            format!(
                "{monitor} is snoozed until {}, as {by}.",
                until.map(|u| local(u, zone)).unwrap_or_default()
            ),
        ),
    };
    let body = format!(
        "<p>{}</p><p><a href=\"{}\">Open the incident</a></p>",
        escape_html(&lead),
        escape_html(&incident_url(&state, &used.incident.id))
    );
    page(StatusCode::OK, &title, &body)
}

fn lifetime_ms(state: &AppState) -> i64 {
    i64::try_from(state.config.action_link_lifetime.as_millis()).unwrap_or(i64::MAX / 2)
}

/// The link behind `token`, if it can be used now, with its incident and action.
async fn read(
    state: &AppState,
    token: &str,
    now: i64,
) -> Result<(ActionLinkRow, crate::store::IncidentRow, Action), LinkRefusal> {
    // Tokens are base62; anything else was never one (and is not worth a query).
    if token.is_empty() || token.len() > 64 || !token.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Err(LinkRefusal::NotFound);
    }
    let hash = links::hash(token);
    let link = state
        .store
        .action_link(&hash)
        .await?
        .ok_or(LinkRefusal::NotFound)?;
    actions::unspent(&link, lifetime_ms(state), now)?;
    let action = Action::parse(&link.action).ok_or(LinkRefusal::NotFound)?;
    let inc = state
        .store
        .incident(&link.workspace_id, &link.incident_id)
        .await?
        .ok_or(LinkRefusal::NotFound)?;
    Ok((link, inc, action))
}

/// Most characters of a name recorded on an incident (its `acknowledgedBy` column).
const MAX_NAME_CHARS: usize = 200;

/// Who the action is recorded as, and their user id: the signed-in member (when
/// `trust_session`), else the channel the alert went to (no user).
async fn actor_name(
    state: &AppState,
    headers: &HeaderMap,
    link: &ActionLinkRow,
    trust_session: bool,
) -> (String, Option<String>) {
    if trust_session
        && let Ok(signed) = still_signed_in(state, headers).await
        && let Ok(Some(_)) = state
            .store
            .membership(&signed.user.email, &link.workspace_id)
            .await
    {
        let name = signed.user.email.chars().take(MAX_NAME_CHARS).collect();
        return (name, Some(signed.user.id));
    }
    let channel = match &link.channel_id {
        Some(id) => state
            .store
            .channel(&link.workspace_id, id)
            .await
            .ok()
            .flatten(),
        None => None,
    };
    let suffix = format!(" ({} channel, from the alert)", link.channel_kind);
    let name = match channel {
        // The channel's name shortened so the whole fits.
        Some(c) => {
            let room = MAX_NAME_CHARS.saturating_sub(suffix.chars().count()).max(1);
            format!("{}{suffix}", c.name.chars().take(room).collect::<String>())
        }
        None => format!("the {} channel (from the alert)", link.channel_kind),
    };
    (name.chars().take(MAX_NAME_CHARS).collect(), None)
}

async fn zone_of(state: &AppState, workspace_id: &str) -> chrono_tz::Tz {
    state
        .store
        .workspace(workspace_id)
        .await
        .ok()
        .flatten()
        .and_then(|w| w.time_zone)
        .and_then(|z| z.parse().ok())
        .unwrap_or(chrono_tz::UTC)
}

/// `Tue 1 Dec 09:00 (Europe/Paris)`.
fn local(ms: i64, zone: chrono_tz::Tz) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| {
            format!(
                "{} ({})",
                t.with_timezone(&zone).format("%a %-d %b %H:%M"),
                zone.name()
            )
        })
        .unwrap_or_default()
}

fn monitor_name(snapshot: &str) -> String {
    serde_json::from_str::<serde_json::Value>(snapshot)
        .ok()
        .and_then(|m| m["name"].as_str().map(str::to_string))
        .unwrap_or_else(|| "the monitor".into())
}

fn incident_url(state: &AppState, id: &str) -> String {
    format!(
        "{}/incidents/{id}",
        state.config.public_url.trim_end_matches('/')
    )
}

fn refused(state: &AppState, r: LinkRefusal) -> Response {
    let zone = chrono_tz::UTC;
    let (status, title, lead) = match r {
        LinkRefusal::NotFound => (
            StatusCode::NOT_FOUND,
            "Link not valid",
            "This link is not (or no longer) valid. Open the incident in Tocsin instead."
                .to_string(),
        ),
        LinkRefusal::Expired => (
            StatusCode::GONE,
            "Link expired",
            "This link has expired; nothing was changed. Open the incident in Tocsin instead."
                .to_string(),
        ),
        // Who used it stays on the incident, for members to see.
        LinkRefusal::Used { at, .. } => (
            StatusCode::GONE,
            "Link already used",
            format!(
                "This link was used on {}; it works once, so nothing more was changed.",
                local(at, zone)
            ),
        ),
        LinkRefusal::Acknowledged { .. } => (
            StatusCode::CONFLICT,
            "Already acknowledged",
            "The incident is acknowledged already; nothing was changed.".to_string(),
        ),
        LinkRefusal::Resolved => (
            StatusCode::CONFLICT,
            "Already resolved",
            "The incident is resolved already; nothing was changed.".to_string(),
        ),
        LinkRefusal::Store(e) => return ApiError::from(e).into_response(),
    };
    let body = format!(
        "<p>{}</p><p><a href=\"{}\">Open Tocsin</a></p>",
        escape_html(&lead),
        escape_html(&state.config.public_url)
    );
    page(status, title, &body)
}

/// A small page of its own (no script; the status pages' strict policy applies).
fn page(status: StatusCode, title: &str, body: &str) -> Response {
    let html = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <meta name=\"robots\" content=\"noindex\">\
         <title>{t}</title><style>body{{font:16px/1.5 system-ui,sans-serif;color:#1f2933;\
         background:#f5f7fa}}main{{max-width:640px;margin:0 auto;padding:32px 16px}}\
         dt{{font-weight:600}}dd{{margin:0 0 8px}}button{{font:inherit;padding:8px 20px;\
         border:0;border-radius:6px;background:#1f6feb;color:#fff;cursor:pointer}}</style>\
         </head><body><main><h1>{t}</h1>{body}</main></body></html>",
        t = escape_html(title),
    );
    (
        status,
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        html,
    )
        .into_response()
}

/// The secret token header Telegram sends with every update to a webhook set with one.
const TELEGRAM_SECRET_HEADER: &str = "x-telegram-bot-api-secret-token";

/// The server's bot's updates (its webhook, set with `telegram.webhook_secret`): a press
/// of an alert's inline button (`callback_data` `a:<token>`) acts as the link would, at
/// once (a press is a deliberate act, never a prefetch), recorded as the Telegram user in
/// the channel; the button's answer says what happened. Other updates are ignored.
#[utoipa::path(post, path = "/telegram/updates", tag = "incidents",
    request_body(content = Object, description = "A Telegram Bot API `Update`"),
    security(()),
    responses(
        (status = 200, description = "Handled or ignored"),
        (status = 401, description = "UNAUTHORIZED: no or a wrong X-Telegram-Bot-Api-Secret-Token", body = super::error::ErrorBody),
        (status = 404, description = "NOT_CONFIGURED: the server does not receive its bot's updates", body = super::error::ErrorBody),
    ))]
pub async fn telegram_update(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    let (Some(secret), Some(bot)) = (
        state.config.telegram.webhook_secret.as_deref(),
        state.config.telegram.bot_token.as_deref(),
    ) else {
        let missing = if state.config.telegram.webhook_secret.is_none() {
            "telegram.webhook_secret"
        } else {
            "telegram.bot_token"
        };
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "NOT_CONFIGURED",
            format!(
                "This server does not receive its Telegram bot's updates ({missing} is not set)"
            ),
        ));
    };
    let sent = headers
        .get(TELEGRAM_SECRET_HEADER)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if !super::session::constant_eq(sent.as_bytes(), secret.as_bytes()) {
        return Err(ApiError::unauthorized(
            "The X-Telegram-Bot-Api-Secret-Token header does not match telegram.webhook_secret",
        ));
    }
    let update: serde_json::Value = serde_json::from_slice(&body)
        .map_err(|_| ApiError::bad_request("The body must be a Telegram Update (JSON)"))?;
    let ignored = || {
        (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            "{}",
        )
            .into_response()
    };
    let query = &update["callback_query"];
    let (Some(query_id), Some(token)) = (
        query["id"].as_str(),
        query["data"].as_str().and_then(|d| d.strip_prefix("a:")),
    ) else {
        return Ok(ignored());
    };
    let now = state.clock.now_ms();
    let answer = match read(&state, token, now).await {
        Err(r) => refusal_words(&r),
        // Only a link sent to a Telegram channel is a Telegram button.
        Ok((link, _, _)) if link.channel_kind != crate::plugins::builtin::TELEGRAM => {
            refusal_words(&LinkRefusal::NotFound)
        }
        Ok((link, _, _)) => {
            let (channel, _) = actor_name(&state, &headers, &link, false).await;
            let by: String = format!(
                "{} in Telegram, via {channel}",
                telegram_user(&query["from"])
            )
            .chars()
            .take(MAX_NAME_CHARS)
            .collect();
            let zone = zone_of(&state, &link.workspace_id).await;
            let actor = crate::store::audit::Actor {
                kind: "link",
                id: link
                    .channel_id
                    .clone()
                    .unwrap_or_else(|| link.delivery_id.clone()),
                name: by.clone(),
                ip: Some(ip),
            };
            let done = crate::store::audit::scoped(actor, now, async {
                actions::use_link(
                    &state.store,
                    &state.engine,
                    &links::hash(token),
                    &by,
                    lifetime_ms(&state),
                    zone,
                    now,
                )
                .await
            })
            .await;
            match done {
                Ok(used) => match (used.action, used.snoozed_until) {
                    (Action::Acknowledge, _) => "Acknowledged".to_string(),
                    (Action::Resolve, _) => "Resolved".to_string(),
                    (_, until) => format!(
                        "Snoozed until {}",
                        until.map(|u| local(u, zone)).unwrap_or_default()
                    ),
                },
                Err(LinkRefusal::Store(e)) => return Err(e.into()),
                Err(r) => refusal_words(&r),
            }
        }
    };
    answer_callback(&state, bot, query_id, &answer).await;
    Ok(ignored())
}

/// What a refused button press is told.
fn refusal_words(r: &LinkRefusal) -> String {
    match r {
        LinkRefusal::NotFound => "This button is not valid".into(),
        LinkRefusal::Expired => "This button has expired; nothing changed".into(),
        LinkRefusal::Used { .. } => "This button was used already; nothing changed".into(),
        LinkRefusal::Resolved => "The incident is resolved already".into(),
        LinkRefusal::Acknowledged { .. } => "The incident is acknowledged already".into(),
        LinkRefusal::Store(_) => "Tocsin could not record it; try again".into(),
    }
}

/// `@alice`, else the person's name, else their Telegram id.
fn telegram_user(from: &serde_json::Value) -> String {
    if let Some(name) = from["username"].as_str().filter(|n| !n.is_empty()) {
        return format!("@{name}");
    }
    let full = [from["first_name"].as_str(), from["last_name"].as_str()]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" ");
    if full.trim().is_empty() {
        format!("Telegram user {}", from["id"])
    } else {
        full
    }
}

/// Tell Telegram what the press did (the small notice the person sees). Best effort: the
/// action is recorded whatever Telegram answers.
async fn answer_callback(state: &AppState, bot: &str, query_id: &str, text: &str) {
    let url = format!(
        "{}/bot{bot}/answerCallbackQuery",
        state.config.telegram.api_base.trim_end_matches('/')
    );
    let client = match reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(5))
        .build()
    {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(error = %e, "no HTTP client for the Telegram answer");
            return;
        }
    };
    let body = serde_json::json!({"callback_query_id": query_id, "text": text});
    let sent = client
        .post(&url)
        .header(header::CONTENT_TYPE, "application/json")
        .body(body.to_string())
        .send()
        .await;
    match sent {
        Ok(r) if r.status().is_success() => {}
        Ok(r) => tracing::warn!(status = %r.status(), "Telegram refused a button's answer"),
        Err(e) => {
            tracing::warn!(error = %e.without_url(), "Telegram could not be told a button's answer")
        }
    }
}
