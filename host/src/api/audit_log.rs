//! `GET /v1/audit-log` (admin): every change made through the API in the workspace,
//! newest first: who (person or key), what (action and resource), when, from which
//! address, and before/after for settings, secrets never included.

use super::AppState;
use super::envelope::{ListBody, Paged, Pagination};
use super::error::{ApiError, ErrorBody};
use super::extract::ApiQuery;
use super::paging;
use crate::store::audit::{AuditFilter, AuditRow};
use crate::store::keys::Principal;
use axum::Extension;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

/// One entry.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuditEntryView {
    #[schema(example = "aud_01JD6Z3Y5N8Q2W7R4T6V9X0B1C")]
    pub id: String,
    /// `{type: user|key|system|link, id, name}`; `link`: an alert's one-click link, named
    /// after the channel it was sent to (its id is the channel's).
    #[schema(value_type = Object)]
    pub actor: serde_json::Value,
    /// `monitor.create`, `api_key.revoke`, `member.update`, ...
    pub action: String,
    /// `{type, id}` of what changed.
    #[schema(value_type = Object)]
    pub resource: serde_json::Value,
    /// The client address.
    pub ip: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub before: Option<serde_json::Value>,
    #[schema(value_type = Option<Object>)]
    pub after: Option<serde_json::Value>,
    pub created_at: String,
}

/// Filters.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AuditQuery {
    pub page: Option<String>,
    pub limit: Option<String>,
    /// `usr_...` or `key_...`.
    pub actor_id: Option<String>,
    pub resource_id: Option<String>,
    pub action: Option<String>,
    /// From this time (inclusive), ISO 8601.
    pub from: Option<String>,
    /// Before this time, ISO 8601.
    pub to: Option<String>,
}

fn view(r: AuditRow) -> AuditEntryView {
    let json = |t: Option<String>| t.and_then(|t| serde_json::from_str(&t).ok());
    AuditEntryView {
        id: r.id,
        actor: serde_json::json!({"type": r.actor_type, "id": r.actor_id, "name": r.actor_name}),
        action: r.action,
        resource: serde_json::json!({"type": r.resource_type, "id": r.resource_id}),
        ip: r.ip,
        before: json(r.before),
        after: json(r.after),
        created_at: crate::time::format_ms(r.created_at),
    }
}

/// The audit log (admin).
#[utoipa::path(get, path = "/v1/audit-log", tag = "workspace", params(AuditQuery),
    responses(
        (status = 200, description = "Entries, newest first", body = ListBody<AuditEntryView>),
        (status = 400, description = "VALIDATION_ERROR", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: not an admin", body = ErrorBody),
    ))]
pub async fn list_audit_log(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiQuery(q): ApiQuery<AuditQuery>,
) -> Result<Paged<AuditEntryView>, ApiError> {
    let mut errors = Vec::new();
    let page = paging::page(q.page.as_deref(), q.limit.as_deref(), &mut errors);
    let from = paging::timestamp("from", q.from.as_deref(), &mut errors);
    let to = paging::timestamp("to", q.to.as_deref(), &mut errors);
    paging::finish(errors)?;
    let filter = AuditFilter {
        actor_id: q.actor_id.clone(),
        resource_id: q.resource_id.clone(),
        action: q.action.clone(),
        from,
        to,
    };
    let (rows, total) = state
        .store
        .audit_log(&p.workspace_id, &filter, page)
        .await?;
    Ok(Paged {
        items: rows.into_iter().map(view).collect(),
        pagination: Pagination::new(page, total),
    })
}
