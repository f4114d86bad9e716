//! `POST /v1/monitors/{id}/history`: checks a monitor had before it was here (another
//! tool's history, brought by `tocsin import kuma --with-history`), written as its own
//! checks were: in the check history, the uptime figures and the reports. Only times
//! before the monitor was created are taken, so history never mixes with what the server
//! measured; each check's `key` makes a repeated request write nothing twice.

use super::AppState;
use super::envelope::{Success, SuccessBody};
use super::error::{ApiError, ErrorBody, FieldError, OrNotFound, Resource};
use super::extract::ApiJson;
use crate::store::checks::{CheckRow, HistoryWrite};
use crate::store::keys::Principal;
use axum::Extension;
use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use utoipa::ToSchema;

/// Checks one request writes at most.
pub const MAX_CHECKS: usize = 2_000;
/// The longest `key`.
const MAX_KEY: usize = 200;

/// Body of `POST /v1/monitors/{id}/history`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HistoryInput {
    /// 1 to 2,000 checks, oldest first (equal times allowed).
    pub checks: Vec<PastCheck>,
}

/// One check from before the monitor was created.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PastCheck {
    /// Names the check in its source (`kuma:heartbeat:1734`), 1 to 200 characters: the
    /// same key for the same monitor is written once, however often it is sent.
    pub key: String,
    /// ISO 8601, before the monitor's `createdAt`.
    pub checked_at: String,
    pub ok: bool,
    /// Milliseconds, 0 to 3,600,000.
    pub response_time: Option<i64>,
    /// An HTTP status, 100 to 599.
    pub status_code: Option<i64>,
    /// Why it failed (kept to 1 KiB).
    pub reason: Option<String>,
    /// Taken in a maintenance window: it counts neither as up nor as down.
    #[serde(default)]
    pub maintenance: bool,
}

/// What a history request wrote.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct HistoryResult {
    /// Checks written now.
    pub written: u64,
    /// Checks whose key was written before: unchanged.
    pub already_there: u64,
    /// Checks older than the server keeps (`retention.checks_days`): left out.
    pub too_old: u64,
}

/// The stored id of a past check: its monitor and key, hashed, so the same check is the
/// same row.
fn check_id(monitor_id: &str, key: &str) -> String {
    let digest = Sha256::digest(format!("{monitor_id}\n{key}").as_bytes());
    format!("chk_h{}", hex::encode(&digest[..13]))
}

/// Write checks a monitor had before it was created (admins).
#[utoipa::path(post, path = "/v1/monitors/{id}/history", tag = "monitors",
    params(("id" = String, Path, description = "Monitor id")),
    request_body = HistoryInput,
    responses(
        (status = 200, description = "What was written", body = SuccessBody<HistoryResult>),
        (status = 400, description = "VALIDATION_ERROR: a check after the monitor's creation, out of time order, a key twice, more than 2,000 checks", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: not an admin", body = ErrorBody),
        (status = 409, description = "CONFLICT: another request wrote some of the same checks meanwhile; send again", body = ErrorBody),
        (status = 404, description = "MONITOR_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn write_history(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    Path(id): Path<String>,
    ApiJson(input): ApiJson<HistoryInput>,
) -> Result<Success<HistoryResult>, ApiError> {
    // Past checks feed the uptime reports handed to customers: writing them is an
    // admin's act, recorded in the audit log.
    if !p.role.is_admin() {
        return Err(ApiError::forbidden(
            "Only admins may write a monitor's past checks",
        ));
    }
    let monitor = state
        .store
        .monitor(&p.workspace_id, &id)
        .await?
        .or_not_found(Resource::MONITOR, &id)?;
    let mut errors = Vec::new();
    if input.checks.is_empty() || input.checks.len() > MAX_CHECKS {
        errors.push(FieldError::new(
            "checks",
            format!("must hold 1 to {MAX_CHECKS} checks"),
        ));
    }
    let now = state.clock.now_ms();
    let days = i64::from(state.config.retention.checks_days);
    let kept_from = (days > 0).then(|| now - days * 86_400_000);
    let mut keys = std::collections::HashSet::new();
    let mut previous = i64::MIN;
    let mut rows = Vec::with_capacity(input.checks.len());
    let mut too_old = 0;
    for (i, c) in input.checks.iter().enumerate() {
        let field = |name: &str| format!("checks[{i}].{name}");
        if c.key.is_empty() || c.key.chars().count() > MAX_KEY {
            errors.push(FieldError::new(
                field("key"),
                format!("must be 1 to {MAX_KEY} characters"),
            ));
        } else if !keys.insert(c.key.as_str()) {
            errors.push(FieldError::new(field("key"), "is given twice"));
        }
        if c.response_time
            .is_some_and(|ms| !(0..=3_600_000).contains(&ms))
        {
            errors.push(FieldError::new(
                field("responseTime"),
                "must be 0 to 3,600,000 milliseconds",
            ));
        }
        if c.status_code.is_some_and(|s| !(100..=599).contains(&s)) {
            errors.push(FieldError::new(field("statusCode"), "must be 100 to 599"));
        }
        let Some(at) =
            super::paging::timestamp(&field("checkedAt"), Some(&c.checked_at), &mut errors)
        else {
            continue;
        };
        if at >= monitor.created_at {
            errors.push(FieldError::new(
                field("checkedAt"),
                format!(
                    "must be before the monitor was created ({}): history comes before the checks this server takes",
                    crate::time::format_ms(monitor.created_at)
                ),
            ));
        }
        if at < previous {
            errors.push(FieldError::new(
                field("checkedAt"),
                "is earlier than the check before it: send checks oldest first",
            ));
        }
        previous = at;
        if kept_from.is_some_and(|from| at < from) {
            too_old += 1;
            continue;
        }
        rows.push(CheckRow {
            id: check_id(&monitor.id, &c.key),
            monitor_id: monitor.id.clone(),
            workspace_id: monitor.workspace_id.clone(),
            checked_at: at,
            ok: c.ok,
            reason: c
                .reason
                .as_deref()
                .filter(|r| !r.trim().is_empty())
                .map(|r| crate::text::bounded(r, crate::text::MAX_REASON_BYTES)),
            status_code: c.status_code.and_then(|s| i32::try_from(s).ok()),
            response_time_ms: c.response_time.and_then(|ms| i32::try_from(ms).ok()),
            region: "imported".into(),
            details: "{}".into(),
            counted: !c.maintenance,
            maintenance: c.maintenance,
        });
        if errors.len() > 20 {
            break;
        }
    }
    super::paging::finish(errors)?;
    // Noted before the write: the note is written in its transaction.
    crate::store::audit::note(
        crate::store::audit::Change::new(
            Some(&p.workspace_id),
            "monitor.history",
            "monitor",
            Some(&monitor.id),
        )
        .after(serde_json::json!({"checks": rows.len()})),
    );
    let (written, already_there) = match state.store.write_history(&monitor.id, rows).await? {
        HistoryWrite::Written { written, already } => (written, already),
        HistoryWrite::MonitorGone => return Err(Resource::MONITOR.not_found(&id)),
        HistoryWrite::Raced => {
            return Err(ApiError::new(
                axum::http::StatusCode::CONFLICT,
                "CONFLICT",
                "Another request is writing this monitor's history: send this one again",
            ));
        }
    };
    Ok(Success::ok(HistoryResult {
        written,
        already_there,
        too_old,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_check_is_named_by_its_monitor_and_key() {
        let a = check_id("mon_1", "kuma:heartbeat:1");
        assert_eq!(a, check_id("mon_1", "kuma:heartbeat:1"));
        assert_ne!(a, check_id("mon_2", "kuma:heartbeat:1"));
        assert_ne!(a, check_id("mon_1", "kuma:heartbeat:2"));
        assert_eq!(a.len(), 5 + 26);
    }
}
