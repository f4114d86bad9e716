//! `/v1/workspace`: the caller's workspace and its webhook signing secret.

use super::AppState;
use super::envelope::{Success, SuccessBody};
use super::error::{ApiError, ErrorBody, FieldError};
use super::extract::ApiObject;
use crate::store::keys::Principal;
use axum::Extension;
use axum::extract::State;
use serde::Serialize;
use utoipa::ToSchema;

/// A workspace.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceView {
    pub id: String,
    pub name: String,
    /// `free`, `pro`, `business` or `enterprise`.
    pub plan: String,
    /// Members must have two-factor authentication on to use the workspace.
    pub require_two_factor: bool,
    /// IANA time zone of the workspace (`UTC` until set): the one-click "snooze until
    /// 09:00" of alerts means 09:00 there.
    #[schema(example = "Europe/Paris")]
    pub time_zone: String,
    /// Where the previous month's uptime report of every monitor goes on the 1st (at
    /// midnight in `timeZone`); null: no monthly report.
    pub monthly_report: Option<MonthlyReportView>,
    pub created_at: String,
}

/// The monthly report setting.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MonthlyReportView {
    /// Channels that get it: e-mail with the report's PDF attached, chat channels a
    /// summary with a link, webhooks the `report.monthly` payload.
    pub channel_ids: Vec<String>,
    /// The last month whose report is done (`2026-10`): sent, or the month before the
    /// report was turned on (the first one is the month after).
    pub last_sent_for: Option<String>,
}

/// Channels one monthly report goes to at most.
const MAX_REPORT_CHANNELS: usize = 20;

/// The webhook signing secret.
#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookSecretView {
    /// `whsec_...`: the HMAC-SHA256 key of `X-Service-Signature`.
    pub secret: String,
}

/// The caller's workspace.
#[utoipa::path(get, path = "/v1/workspace", tag = "workspace",
    responses((status = 200, description = "The workspace", body = SuccessBody<WorkspaceView>)))]
pub async fn get_workspace(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
) -> Result<Success<WorkspaceView>, ApiError> {
    let ws = state
        .store
        .workspace(&p.workspace_id)
        .await?
        .ok_or_else(|| ApiError::internal("workspace vanished"))?;
    let monthly_report = match state.store.monthly_report(&p.workspace_id).await? {
        Some(r) => {
            // A channel deleted since is not shown (the report skips it).
            let ids: Vec<String> = serde_json::from_str(&r.channel_ids).unwrap_or_default();
            let live = state
                .store
                .channels_by_ids(&p.workspace_id, ids.clone())
                .await?;
            Some(MonthlyReportView {
                channel_ids: ids
                    .into_iter()
                    .filter(|id| live.iter().any(|c| &c.id == id))
                    .collect(),
                last_sent_for: r.sent_for,
            })
        }
        None => None,
    };
    Ok(Success::ok(WorkspaceView {
        id: ws.id,
        name: ws.name,
        plan: ws.plan,
        require_two_factor: ws.require_two_factor,
        time_zone: ws.time_zone.unwrap_or_else(|| "UTC".into()),
        monthly_report,
        created_at: crate::time::format_ms(ws.created_at),
    }))
}

/// Body of `PATCH /v1/workspace`.
#[derive(Debug, serde::Deserialize, ToSchema)]
#[allow(dead_code)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceUpdate {
    /// 1 to 200 characters.
    pub name: Option<String>,
    /// Owners only: require two-factor authentication of every member signing in.
    pub require_two_factor: Option<bool>,
    /// An IANA time zone, e.g. `Europe/Paris`.
    pub time_zone: Option<String>,
    /// Admins: `{"channelIds": [...]}` (1 to 20 distinct channels of the workspace) sends
    /// the previous month's uptime report there on the 1st, starting next month; null
    /// turns it off.
    pub monthly_report: Option<MonthlyReportUpdate>,
}

/// Body of `monthlyReport`.
#[derive(Debug, serde::Deserialize, ToSchema)]
#[allow(dead_code)]
#[serde(rename_all = "camelCase")]
pub struct MonthlyReportUpdate {
    pub channel_ids: Vec<String>,
}

/// Change the caller's workspace: its name, time zone and monthly report (admins), and
/// the two-factor requirement (owners). The plan is the operator's to set
/// (`tocsin workspace`).
#[utoipa::path(patch, path = "/v1/workspace", tag = "workspace", request_body = WorkspaceUpdate,
    responses(
        (status = 200, description = "The workspace", body = SuccessBody<WorkspaceView>),
        (status = 400, description = "Invalid or read-only fields", body = ErrorBody),
    ))]
pub async fn update_workspace(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiObject(object): ApiObject,
) -> Result<Success<WorkspaceView>, ApiError> {
    let mut errors = Vec::new();
    let mut name = None;
    let mut require_two_factor = None;
    let mut time_zone = None;
    let mut monthly_report: Option<Vec<String>> = None;
    for (key, value) in &object {
        match key.as_str() {
            "name" => name = super::fields::name(Some(value), &mut errors),
            "requireTwoFactor" => match value.as_bool() {
                Some(b) => require_two_factor = Some(b),
                None => errors.push(FieldError::new(key, "must be true or false")),
            },
            "timeZone" => match value.as_str().map(str::trim) {
                Some(zone) if zone.parse::<chrono_tz::Tz>().is_ok() => {
                    time_zone = Some(zone.to_string());
                }
                _ => errors.push(FieldError::new(
                    key,
                    "must be an IANA time zone name, e.g. Europe/Paris or UTC",
                )),
            },
            "monthlyReport" => monthly_report = report_channels(value, &mut errors),
            "plan" => errors.push(FieldError::new(
                "plan",
                "is set by the server operator (tocsin workspace set-plan)",
            )),
            "id" | "createdAt" => errors.push(FieldError::new(key, "is read-only")),
            _ => errors.push(FieldError::new(key, "is not a field of a workspace")),
        }
    }
    if let Some(ids) = &monthly_report
        && !ids.is_empty()
    {
        let known = state
            .store
            .channels_by_ids(&p.workspace_id, ids.clone())
            .await?;
        for (i, id) in ids.iter().enumerate() {
            if !known.iter().any(|c| &c.id == id) {
                errors.push(FieldError::new(
                    format!("monthlyReport.channelIds[{i}]"),
                    "is not a channel of this workspace",
                ));
            }
        }
    }
    super::paging::finish(errors)?;
    if monthly_report.is_some() && !p.role.is_admin() {
        return Err(ApiError::forbidden(
            "Only admins may choose where the monthly report goes: it carries every monitor's figures",
        ));
    }
    if require_two_factor.is_some() && !p.is_owner() {
        return Err(ApiError::forbidden(
            "Only owners may change the two-factor requirement",
        ));
    }
    if require_two_factor == Some(true)
        && let Some(s) = &p.session
        && state
            .store
            .user(&s.user_id)
            .await?
            .is_some_and(|u| u.totp_secret.is_none())
    {
        return Err(ApiError::new(
            axum::http::StatusCode::CONFLICT,
            "CONFLICT",
            "Turn on two-factor authentication for your own account first (POST /v1/auth/totp/enroll), or you would lock yourself out",
        ));
    }
    if name.is_some() || require_two_factor.is_some() || time_zone.is_some() {
        let before = state
            .store
            .workspace(&p.workspace_id)
            .await?
            .ok_or_else(|| ApiError::internal("workspace vanished"))?;
        let after_name = name.clone().unwrap_or_else(|| before.name.clone());
        let after_2fa = require_two_factor.unwrap_or(before.require_two_factor);
        let after_zone = time_zone.or_else(|| before.time_zone.clone());
        crate::store::audit::note(
            crate::store::audit::Change::new(
                Some(&p.workspace_id),
                "workspace.update",
                "workspace",
                Some(&p.workspace_id),
            )
            .before(serde_json::json!({"name": before.name, "requireTwoFactor": before.require_two_factor, "timeZone": before.time_zone}))
            .after(serde_json::json!({"name": after_name, "requireTwoFactor": after_2fa, "timeZone": after_zone})),
        );
        state
            .store
            .update_workspace(
                &p.workspace_id,
                &after_name,
                after_2fa,
                after_zone.as_deref(),
                state.clock.now_ms(),
            )
            .await?;
    }
    if let Some(ids) = monthly_report {
        let ws = state
            .store
            .workspace(&p.workspace_id)
            .await?
            .ok_or_else(|| ApiError::internal("workspace vanished"))?;
        let zone = ws
            .time_zone
            .as_deref()
            .and_then(|z| z.parse().ok())
            .unwrap_or(chrono_tz::UTC);
        let now = state.clock.now_ms();
        // The month just ended counts as sent: the first report is next month's.
        let first = crate::reports::monthly::previous_month(now, zone).label;
        crate::store::audit::note(
            crate::store::audit::Change::new(
                Some(&p.workspace_id),
                "workspace.monthly_report",
                "workspace",
                Some(&p.workspace_id),
            )
            .after(serde_json::json!({"channelIds": ids})),
        );
        state
            .store
            .set_monthly_report(&p.workspace_id, &ids, &first, now)
            .await?;
    }
    get_workspace(State(state), Extension(p)).await
}

/// `monthlyReport`: null (off) or `{"channelIds": [...]}` with 1 to 20 distinct ids.
fn report_channels(value: &serde_json::Value, errors: &mut Vec<FieldError>) -> Option<Vec<String>> {
    if value.is_null() {
        return Some(Vec::new());
    }
    let Some(object) = value.as_object() else {
        errors.push(FieldError::new(
            "monthlyReport",
            "must be an object with channelIds, or null to turn the report off",
        ));
        return None;
    };
    if let Some(other) = object.keys().find(|k| k.as_str() != "channelIds") {
        errors.push(FieldError::new(
            format!("monthlyReport.{other}"),
            "is not a field of the monthly report",
        ));
        return None;
    }
    let ids: Option<Vec<String>> = object
        .get("channelIds")
        .and_then(serde_json::Value::as_array)
        .and_then(|a| a.iter().map(|v| v.as_str().map(str::to_string)).collect());
    match ids {
        Some(mut ids) if (1..=MAX_REPORT_CHANNELS).contains(&ids.len()) => {
            let before = ids.len();
            ids.sort();
            ids.dedup();
            if ids.len() == before {
                return Some(ids);
            }
            errors.push(FieldError::new(
                "monthlyReport.channelIds",
                "names a channel twice",
            ));
        }
        _ => errors.push(FieldError::new(
            "monthlyReport.channelIds",
            format!("must be a list of 1 to {MAX_REPORT_CHANNELS} channel ids"),
        )),
    }
    None
}

/// The webhook signing secret (admin keys only).
#[utoipa::path(get, path = "/v1/workspace/webhook-secret", tag = "workspace",
    responses(
        (status = 200, description = "The secret", body = SuccessBody<WebhookSecretView>),
        (status = 403, description = "FORBIDDEN: not an admin key", body = ErrorBody),
    ))]
pub async fn get_webhook_secret(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
) -> Result<Success<WebhookSecretView>, ApiError> {
    let ws = state
        .store
        .workspace(&p.workspace_id)
        .await?
        .ok_or_else(|| ApiError::internal("workspace vanished"))?;
    Ok(Success::ok(WebhookSecretView {
        secret: ws.webhook_secret,
    }))
}

/// Replace the webhook signing secret (admin keys only). Deliveries signed from now on use
/// the new secret, retries of older ones included.
#[utoipa::path(post, path = "/v1/workspace/webhook-secret/rotate", tag = "workspace",
    responses(
        (status = 200, description = "The new secret", body = SuccessBody<WebhookSecretView>),
        (status = 403, description = "FORBIDDEN: not an admin key", body = ErrorBody),
    ))]
pub async fn rotate_webhook_secret(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
) -> Result<Success<WebhookSecretView>, ApiError> {
    crate::store::audit::note(crate::store::audit::Change::new(
        Some(&p.workspace_id),
        "workspace.webhook_secret_rotate",
        "workspace",
        Some(&p.workspace_id),
    ));
    let ws = state
        .store
        .rotate_webhook_secret(&p.workspace_id, state.clock.now_ms())
        .await?
        .ok_or_else(|| ApiError::internal("workspace vanished"))?;
    Ok(Success::ok(WebhookSecretView {
        secret: ws.webhook_secret,
    }))
}

/// What a test of the monthly report queued.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MonthlyReportTestView {
    /// The month reported (`2026-10`): the one before this one, in the workspace's zone.
    pub month: String,
    /// Deliveries queued, one per channel.
    pub deliveries: usize,
}

/// Send last month's report to the monthly report's channels now (admins), marked
/// `"test": true`; the month due on the 1st is left as it is.
#[utoipa::path(post, path = "/v1/workspace/monthly-report/test", tag = "workspace",
    responses(
        (status = 202, description = "Queued", body = SuccessBody<MonthlyReportTestView>),
        (status = 403, description = "FORBIDDEN: not an admin", body = ErrorBody),
        (status = 409, description = "CONFLICT: no monthly report, or none of its channels exists", body = ErrorBody),
    ))]
pub async fn test_monthly_report(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
) -> Result<Success<MonthlyReportTestView>, ApiError> {
    if !p.role.is_admin() {
        return Err(ApiError::forbidden(
            "Only admins may send the monthly report: it carries every monitor's figures",
        ));
    }
    let conflict = |message: &'static str| {
        ApiError::new(axum::http::StatusCode::CONFLICT, "CONFLICT", message)
    };
    let row = state
        .store
        .monthly_report(&p.workspace_id)
        .await?
        .ok_or_else(|| {
            conflict("Choose the monthly report's channels first (PATCH /v1/workspace)")
        })?;
    let queued = crate::reports::monthly::queue(
        &state.store,
        &row,
        state.clock.now_ms(),
        &state.config.public_url,
        true,
    )
    .await?;
    let Some((month, deliveries)) = queued else {
        return Err(conflict(
            "None of the monthly report's channels exists any more: choose them again",
        ));
    };
    state.engine.outbox_wakeup.notify_one();
    Ok(Success(
        axum::http::StatusCode::ACCEPTED,
        MonthlyReportTestView { month, deliveries },
    ))
}
