//! `/ping/{token}`: heartbeat monitors' ping URLs. No API key (the token is the secret);
//! GET or POST; `/start`, `/fail` and `/<exit status>` variants. The answer comes once the
//! ping's check is committed, so an answered ping is never lost.

use super::AppState;
use super::error::{ApiError, ErrorBody};
use super::session::ClientIp;
use crate::engine::heartbeat::{self, Ping, PingOutcome, Signal};
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};

fn unknown() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "PING_URL_NOT_FOUND",
        "No heartbeat monitor has this ping URL: use /ping/<token>, /ping/<token>/start, /ping/<token>/fail or /ping/<token>/<exit status 0-255>",
    )
}

async fn take(
    state: AppState,
    token: String,
    action: Option<String>,
    method: Method,
    ClientIp(ip): ClientIp,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    // A wrong token is a refused credential: it spends from the client address's bucket
    // (a right one never does: one host may run many jobs).
    let refused = |state: &AppState, ip: &str| {
        Ok(super::auth::refused_credential(
            state,
            ip,
            unknown().into_response(),
        ))
    };
    let Some(signal) = Signal::parse(action.as_deref()) else {
        return refused(&state, &ip);
    };
    if token.len() > 64 {
        return refused(&state, &ip);
    }
    let ping = Ping {
        signal,
        method: method.as_str(),
        body: &body,
        source: Some(ip.clone()),
        user_agent: headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string),
    };
    let now = state.clock.now_ms();
    let outcome = heartbeat::ping(
        &state.store,
        &state.recorder,
        &state.engine.work,
        &state.config.region,
        &token,
        ping,
        now,
    )
    .await?;
    let text = match outcome {
        PingOutcome::Unknown => return refused(&state, &ip),
        PingOutcome::Paused => "OK (the monitor is paused: the ping was not recorded)\n",
        PingOutcome::Recorded => "OK\n",
    };
    Ok((
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        text,
    )
        .into_response())
}

/// Ping a heartbeat monitor: the job succeeded (or, after `/start`, finished). The body
/// (up to 10 KiB kept) is stored with the check, e.g. the job's output.
#[utoipa::path(post, path = "/ping/{token}", tag = "heartbeats", security(()),
    params(("token" = String, Path, description = "The secret of the monitor's ping URL (`pingUrl`)")),
    request_body(content = String, content_type = "text/plain", description = "Anything, e.g. the job's output; the first 10 KiB are kept"),
    responses(
        (status = 200, description = "Recorded (`OK`), or ignored because the monitor is paused", body = String, content_type = "text/plain"),
        (status = 404, description = "PING_URL_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn ping_post(
    State(state): State<AppState>,
    Path(token): Path<String>,
    method: Method,
    ip: ClientIp,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    take(state, token, None, method, ip, headers, body).await
}

/// The same as `POST /ping/{token}`, for clients that can only GET.
#[utoipa::path(get, path = "/ping/{token}", tag = "heartbeats", security(()),
    params(("token" = String, Path, description = "The secret of the monitor's ping URL (`pingUrl`)")),
    responses(
        (status = 200, description = "Recorded (`OK`), or ignored because the monitor is paused", body = String, content_type = "text/plain"),
        (status = 404, description = "PING_URL_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn ping_get(
    State(state): State<AppState>,
    Path(token): Path<String>,
    method: Method,
    ip: ClientIp,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    take(state, token, None, method, ip, headers, Bytes::new()).await
}

/// Ping with a signal: `start` (a run began; with `maxDuration` it must finish in time),
/// `fail` (the job failed: the check fails at once), or the job's exit status (`0`
/// succeeds, `1` to `255` fail).
#[utoipa::path(post, path = "/ping/{token}/{signal}", tag = "heartbeats", security(()),
    params(
        ("token" = String, Path, description = "The secret of the monitor's ping URL"),
        ("signal" = String, Path, description = "`start`, `fail`, or an exit status from 0 to 255"),
    ),
    request_body(content = String, content_type = "text/plain", description = "Anything, e.g. the job's output; the first 10 KiB are kept"),
    responses(
        (status = 200, description = "Recorded (`OK`), or ignored because the monitor is paused", body = String, content_type = "text/plain"),
        (status = 404, description = "PING_URL_NOT_FOUND: unknown token or signal", body = ErrorBody),
    ))]
pub async fn signal_post(
    State(state): State<AppState>,
    Path((token, signal)): Path<(String, String)>,
    method: Method,
    ip: ClientIp,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    take(state, token, Some(signal), method, ip, headers, body).await
}

/// The same as `POST /ping/{token}/{signal}`, for clients that can only GET.
#[utoipa::path(get, path = "/ping/{token}/{signal}", tag = "heartbeats", security(()),
    params(
        ("token" = String, Path, description = "The secret of the monitor's ping URL"),
        ("signal" = String, Path, description = "`start`, `fail`, or an exit status from 0 to 255"),
    ),
    responses(
        (status = 200, description = "Recorded (`OK`), or ignored because the monitor is paused", body = String, content_type = "text/plain"),
        (status = 404, description = "PING_URL_NOT_FOUND: unknown token or signal", body = ErrorBody),
    ))]
pub async fn signal_get(
    State(state): State<AppState>,
    Path((token, signal)): Path<(String, String)>,
    method: Method,
    ip: ClientIp,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    take(
        state,
        token,
        Some(signal),
        method,
        ip,
        headers,
        Bytes::new(),
    )
    .await
}
