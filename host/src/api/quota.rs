//! Plan quotas: how many monitors, channels, status pages, members and API keys a
//! workspace may have, and how often its monitors may run (`[plans.<plan>]` in the
//! configuration). Reaching one answers 403 `PLAN_UPGRADE_REQUIRED` naming the limit.

use super::AppState;
use super::error::ApiError;
use crate::plans::{Counted, Plan, Quota};
use axum::http::StatusCode;

/// The plan of a workspace and its quota.
pub async fn of(state: &AppState, workspace_id: &str) -> Result<(Plan, Quota), ApiError> {
    let ws = state
        .store
        .workspace(workspace_id)
        .await?
        .ok_or_else(|| ApiError::internal("workspace vanished"))?;
    // A plan the server does not know (edited by hand) gets the strictest quota.
    let plan = Plan::parse(&ws.plan).unwrap_or(Plan::Free);
    Ok((plan, *state.config.quotas.of(plan)))
}

fn upgrade(message: String) -> ApiError {
    ApiError::new(StatusCode::FORBIDDEN, "PLAN_UPGRADE_REQUIRED", message)
}

/// Refuse to add one more of `what` when the workspace has its plan's number already.
pub async fn room_for(state: &AppState, workspace_id: &str, what: Counted) -> Result<(), ApiError> {
    let (plan, quota) = of(state, workspace_id).await?;
    let Some(limit) = quota.of(what) else {
        return Ok(());
    };
    let have = state.store.count_owned(workspace_id, what).await?;
    if have >= u64::from(limit) {
        return Err(upgrade(format!(
            "The {} plan allows {limit} {}; this workspace has {have}. Delete one or move to a larger plan",
            plan.as_str(),
            what.noun()
        )));
    }
    Ok(())
}

/// Refuse a monitor interval shorter than the plan allows.
pub async fn interval(state: &AppState, workspace_id: &str, secs: u32) -> Result<(), ApiError> {
    cadence(state, workspace_id, "interval", secs).await
}

/// Refuse `field` (`interval`, or `retryInterval`: fast re-checks are checks too) shorter
/// than the plan's shortest interval.
pub async fn cadence(
    state: &AppState,
    workspace_id: &str,
    field: &str,
    secs: u32,
) -> Result<(), ApiError> {
    let (plan, quota) = of(state, workspace_id).await?;
    match quota.min_interval {
        Some(min) if secs < min => Err(upgrade(format!(
            "The {} plan checks at most every {min} s; {field} {secs} s needs a larger plan",
            plan.as_str()
        ))
        .with_details(vec![super::error::FieldError::new(
            field,
            format!("must be at least {min} on the {} plan", plan.as_str()),
        )])),
        _ => Ok(()),
    }
}
