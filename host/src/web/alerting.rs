//! `/alerting`: stored channels (with the test button and its result), alert policies,
//! recent deliveries with redeliver; `/alerting/channels/new`: a channel form generated
//! from the channel plugin's schema.

use super::{Layout, ago, forms, not_found, page, read_only, viewer};
use crate::api::AppState;
use crate::store::keys::Role;
use crate::store::{Page, State as _};
use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde::Deserialize;

struct ChannelLine {
    id: String,
    name: String,
    kind: String,
}

struct PolicyLine {
    id: String,
    name: String,
    failure: i32,
    recovery: i32,
    channels: String,
    /// The pipeline's steps, `business-hours → oncall-rota`; empty for none.
    pipeline: String,
}

struct DeliveryLine {
    id: String,
    at: String,
    event: String,
    channel: String,
    status: &'static str,
    attempts: i32,
    error: String,
}

#[derive(Template)]
#[template(path = "alerting.html")]
struct Alerting {
    layout: Layout,
    can_write: bool,
    channels: Vec<ChannelLine>,
    policies: Vec<PolicyLine>,
    deliveries: Vec<DeliveryLine>,
}

pub async fn show(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let (p, layout) = match viewer(&state, &headers, "alerting").await {
        Ok(v) => v,
        Err(r) => return r,
    };
    let now = state.clock.now_ms();
    let first = |limit| Page { page: 1, limit };
    let channels = state
        .store
        .list_channels(&p.workspace_id, first(100))
        .await
        .map(|(rows, _)| rows)
        .unwrap_or_default();
    let policies = state
        .store
        .list_alert_policies(&p.workspace_id, first(100))
        .await
        .map(|(rows, _)| rows)
        .unwrap_or_default();
    let deliveries = state
        .store
        .list_deliveries(&p.workspace_id, None, None, None, first(20))
        .await
        .map(|(rows, _)| rows)
        .unwrap_or_default();
    let channel_name = |id: &Option<String>, kind: &str| {
        id.as_ref()
            .and_then(|id| channels.iter().find(|c| c.id == *id))
            .map_or_else(|| format!("{kind} (inline)"), |c| c.name.clone())
    };
    let html = Alerting {
        layout,
        can_write: p.role != Role::Read,
        policies: policies
            .iter()
            .map(|x| PolicyLine {
                id: x.id.clone(),
                name: x.name.clone(),
                failure: x.failure_threshold,
                recovery: x.recovery_threshold,
                channels: serde_json::from_str::<Vec<serde_json::Value>>(&x.channels)
                    .map_or(0, |v| v.len())
                    .to_string(),
                pipeline: crate::outbox::pipeline::steps_of(x.pipeline.as_deref())
                    .into_iter()
                    .map(|s| s.plugin)
                    .collect::<Vec<_>>()
                    .join(" → "),
            })
            .collect(),
        deliveries: deliveries
            .iter()
            .map(|d| DeliveryLine {
                id: d.id.clone(),
                at: ago(now, d.created_at),
                event: d.event.clone(),
                channel: channel_name(&d.channel_id, &d.channel_kind),
                status: d.status.name(),
                attempts: d.attempts,
                error: d.last_error.clone().unwrap_or_default(),
            })
            .collect(),
        channels: channels
            .into_iter()
            .map(|c| ChannelLine {
                id: c.id,
                name: c.name,
                kind: c.kind,
            })
            .collect(),
    }
    .render();
    page(StatusCode::OK, html)
}

#[derive(Template)]
#[template(path = "channel_form.html")]
struct ChannelForm {
    layout: Layout,
    channel_id: Option<String>,
    name: String,
    kind: String,
    types: Vec<(String, String)>,
    fields: Vec<forms::Field>,
}

#[derive(Debug, Default, Deserialize)]
pub struct NewQuery {
    #[serde(rename = "type")]
    kind: Option<String>,
}

pub async fn new_channel(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<NewQuery>,
) -> Response {
    let (p, layout) = match viewer(&state, &headers, "alerting").await {
        Ok(v) => v,
        Err(r) => return r,
    };
    if p.role == Role::Read {
        return read_only(layout, "channels");
    }
    let mut types: Vec<(String, String, serde_json::Value)> = state
        .plugins
        .descriptions()
        .into_iter()
        .filter(|d| d.kind == "channel")
        .map(|d| (d.name, d.description, d.config_schema))
        .collect();
    types.sort_by(|a, b| a.0.cmp(&b.0));
    let kind = q
        .kind
        .filter(|k| types.iter().any(|t| t.0 == *k))
        .or_else(|| {
            types
                .iter()
                .find(|t| t.0 == crate::plugins::builtin::WEBHOOK)
                .map(|t| t.0.clone())
        })
        .or_else(|| types.first().map(|t| t.0.clone()))
        .unwrap_or_default();
    let schema = types
        .iter()
        .find(|t| t.0 == kind)
        .map(|t| t.2.clone())
        .unwrap_or_default();
    let html = ChannelForm {
        layout,
        channel_id: None,
        name: String::new(),
        fields: forms::fields(&schema, None, &["name", "type"]),
        kind,
        types: types.into_iter().map(|(n, d, _)| (n, d)).collect(),
    }
    .render();
    page(StatusCode::OK, html)
}

/// Edit a stored channel: its plugin's form, filled with what the API shows (secret
/// settings left out; left empty, they are kept).
pub async fn edit_channel(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let (p, layout) = match viewer(&state, &headers, "alerting").await {
        Ok(v) => v,
        Err(r) => return r,
    };
    if p.role == Role::Read {
        return read_only(layout, "alerting");
    }
    let Ok(Some(c)) = state.store.channel(&p.workspace_id, &id).await else {
        return not_found(layout, "channel");
    };
    let schema = state
        .plugins
        .descriptions()
        .into_iter()
        .find(|d| d.kind == "channel" && d.name == c.kind)
        .map(|d| d.config_schema)
        .unwrap_or_default();
    let visible =
        crate::api::channel_input::visible(&state.plugins.channel_secrets(&c.kind), &c.config);
    let html = ChannelForm {
        layout,
        channel_id: Some(c.id.clone()),
        name: c.name.clone(),
        fields: {
            let mut fields = forms::fields(&schema, Some(&visible), &["name", "type"]);
            forms::mark_kept(&mut fields, &forms::left_out(&c.config, &visible));
            fields
        },
        kind: c.kind.clone(),
        types: Vec::new(),
    }
    .render();
    page(StatusCode::OK, html)
}

#[derive(Template)]
#[template(path = "policy_form.html")]
struct PolicyForm {
    layout: Layout,
    id: String,
    name: String,
    failure: i32,
    recovery: i32,
    notify: bool,
    group_window: i32,
    repeat_every: i32,
    repeat_limit: i32,
    degraded_threshold: i32,
    notify_degraded: bool,
    /// Channels defined on the policy itself, as the API shows them (write-only settings
    /// left out; sent back as shown, the API keeps them): (position in the list, JSON,
    /// what it is).
    inline: Vec<(usize, String, String)>,
    /// (id, name, chosen)
    channels: Vec<(String, String, bool)>,
}

/// An inline channel in a few words: its type and where it goes, where the view shows it.
fn inline_summary(channel: &serde_json::Value) -> String {
    let kind = channel
        .get("type")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("channel");
    let target = ["target", "chatId", "url", "roomId", "topic", "routingKey"]
        .iter()
        .find_map(|k| channel.get(*k).and_then(serde_json::Value::as_str))
        .filter(|t| *t != crate::api::redact::REDACTED);
    match target {
        Some(t) => format!("{kind}: {t}"),
        None => format!("{kind} (its address is kept secret)"),
    }
}

pub async fn edit_policy(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let (p, layout) = match viewer(&state, &headers, "alerting").await {
        Ok(v) => v,
        Err(r) => return r,
    };
    if p.role == Role::Read {
        return read_only(layout, "alerting");
    }
    let Ok(Some(policy)) = state.store.alert_policy(&p.workspace_id, &id).await else {
        return not_found(layout, "alert policy");
    };
    let stored: serde_json::Value =
        serde_json::from_str(&policy.channels).unwrap_or(serde_json::Value::Array(Vec::new()));
    let shown = crate::api::channel_input::visible_list(&state.plugins, &stored);
    let listed: Vec<serde_json::Value> = shown.as_array().cloned().unwrap_or_default();
    let inline = listed
        .iter()
        .enumerate()
        .filter(|(_, c)| c.get("channelId").is_none())
        .map(|(at, c)| (at, c.to_string(), inline_summary(c)))
        .collect();
    let chosen: Vec<&str> = listed
        .iter()
        .filter_map(|c| c.get("channelId").and_then(|v| v.as_str()))
        .collect();
    let channels = super::channel_choices(&state, &p.workspace_id).await;
    let html = PolicyForm {
        layout,
        id: policy.id.clone(),
        name: policy.name.clone(),
        failure: policy.failure_threshold,
        recovery: policy.recovery_threshold,
        notify: policy.notify_on_recovery,
        group_window: policy.group_window_secs,
        repeat_every: policy.repeat_every_minutes,
        repeat_limit: policy.repeat_limit,
        degraded_threshold: policy.degraded_threshold,
        notify_degraded: policy.notify_degraded,
        inline,
        channels: channels
            .into_iter()
            .map(|(id, name)| {
                let on = chosen.contains(&id.as_str());
                (id, name, on)
            })
            .collect(),
    }
    .render();
    page(StatusCode::OK, html)
}

#[derive(Template)]
#[template(path = "inline_channel_form.html")]
struct InlineChannelForm {
    layout: Layout,
    policy_id: String,
    policy_name: String,
    /// The channel's position in the policy's list.
    at: usize,
    /// The channel as the API shows it, JSON: the form sends its edit only while the policy
    /// still holds it there.
    was: String,
    what: String,
    kind: String,
    fields: Vec<forms::Field>,
    /// Some write-only setting is stored and not shown.
    kept: bool,
}

/// One of a policy's inline channels, its settings on a form generated from its type's
/// schema (write-only ones shown as "set, unchanged"); saving sends the policy's list with
/// this channel changed in place, so the API keeps its stored secrets unless the channel
/// now sends elsewhere.
pub async fn edit_inline_channel(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path((id, at)): Path<(String, String)>,
) -> Response {
    let (p, layout) = match viewer(&state, &headers, "alerting").await {
        Ok(v) => v,
        Err(r) => return r,
    };
    let Ok(at) = at.parse::<usize>() else {
        return not_found(layout, "channel on this policy");
    };
    if p.role == Role::Read {
        return read_only(layout, "alerting");
    }
    let Ok(Some(policy)) = state.store.alert_policy(&p.workspace_id, &id).await else {
        return not_found(layout, "alert policy");
    };
    let stored: serde_json::Value =
        serde_json::from_str(&policy.channels).unwrap_or(serde_json::Value::Array(Vec::new()));
    let shown = crate::api::channel_input::visible_list(&state.plugins, &stored);
    let (Some(serde_json::Value::Object(old)), Some(serde_json::Value::Object(visible))) =
        (stored.get(at), shown.get(at))
    else {
        return not_found(layout, "channel on this policy");
    };
    let Some(kind) = visible.get("type").and_then(serde_json::Value::as_str) else {
        // A saved channel is edited on its own form.
        return not_found(layout, "channel on this policy");
    };
    let schema = state
        .plugins
        .descriptions()
        .into_iter()
        .find(|d| d.kind == "channel" && d.name == kind)
        .map(|d| d.config_schema)
        .unwrap_or_default();
    let kept = forms::left_out(&serde_json::Value::Object(old.clone()).to_string(), visible);
    let mut fields = forms::fields(&schema, Some(visible), &["type"]);
    forms::mark_kept(&mut fields, &kept);
    let html = InlineChannelForm {
        layout,
        policy_id: policy.id.clone(),
        policy_name: policy.name.clone(),
        at,
        was: serde_json::Value::Object(visible.clone()).to_string(),
        what: inline_summary(&serde_json::Value::Object(visible.clone())),
        kind: kind.to_string(),
        fields,
        kept: !kept.is_empty(),
    }
    .render();
    page(StatusCode::OK, html)
}

struct AttemptLine {
    n: i32,
    at: String,
    ok: bool,
    code: String,
    took: i32,
    error: String,
}

#[derive(Template)]
#[template(path = "delivery.html")]
struct DeliveryPage {
    layout: Layout,
    can_write: bool,
    id: String,
    event: String,
    channel: String,
    status: &'static str,
    attempts: Vec<AttemptLine>,
    /// The event payload as the channel was given it, indented (tokens hidden as the API
    /// hides them from this member).
    payload: String,
    /// Where the delivery's incident and monitor are, when it has them.
    incident_id: Option<String>,
    /// (id, name)
    monitor: Option<(String, String)>,
}

/// One delivery with its payload and every attempt (time, result, status code, duration,
/// error).
pub async fn delivery(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let (p, layout) = match viewer(&state, &headers, "alerting").await {
        Ok(v) => v,
        Err(r) => return r,
    };
    let Ok(Some(d)) = state.store.delivery(&p.workspace_id, &id).await else {
        return not_found(layout, "delivery");
    };
    let now = state.clock.now_ms();
    let attempts = state
        .store
        .delivery_attempts(&d.id)
        .await
        .unwrap_or_default();
    let channel = match &d.channel_id {
        Some(cid) => state
            .store
            .channel(&p.workspace_id, cid)
            .await
            .ok()
            .flatten()
            .map_or_else(|| cid.clone(), |c| c.name),
        None => format!("{} (inline)", d.channel_kind),
    };
    let monitor = match &d.monitor_id {
        Some(mid) => {
            let name = state
                .store
                .monitor(&p.workspace_id, mid)
                .await
                .ok()
                .flatten()
                .map_or_else(|| format!("{mid} (deleted)"), |m| m.name);
            Some((mid.clone(), name))
        }
        None => None,
    };
    let view = crate::api::deliveries::view_for(&p, &d, None);
    let payload = serde_json::from_str::<serde_json::Value>(view.payload.get())
        .and_then(|v| serde_json::to_string_pretty(&v))
        .unwrap_or_else(|_| view.payload.get().to_string());
    let html = DeliveryPage {
        layout,
        can_write: p.role != Role::Read,
        payload,
        incident_id: d.incident_id.clone(),
        monitor,
        id: d.id.clone(),
        event: d.event.clone(),
        channel,
        status: d.status.name(),
        attempts: attempts
            .iter()
            .map(|a| AttemptLine {
                n: a.attempt,
                at: ago(now, a.at),
                ok: a.ok,
                code: a.status_code.map(|c| c.to_string()).unwrap_or_default(),
                took: a.duration_ms,
                error: a.error.clone().unwrap_or_default(),
            })
            .collect(),
    }
    .render();
    page(StatusCode::OK, html)
}
