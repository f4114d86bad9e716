//! `/import`: another tool's file (Uptime Kuma, Gatus, Healthchecks) brought into the
//! workspace with the same plan as `tocsin import`. The page sends the file; the server
//! keeps it in its data directory for the length of the request and runs the import
//! against its own API as the signed-in person (their session, their role, their
//! workspace), so an import can do nothing the person could not do by hand.

use super::{Layout, page, viewer};
use crate::api::AppState;
use crate::api::session;
use crate::declared::apply::remote::{Credentials, Remote};
use crate::declared::import::{self, ImportOptions, Source};
use crate::store::keys::Role;
use askama::Template;
use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde::Deserialize;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use tokio::io::AsyncWriteExt;

/// The longest an import may run.
const IMPORT_DEADLINE: std::time::Duration = std::time::Duration::from_secs(600);

/// Imports running now (at most one).
static RUNNING: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(1);

/// The largest file the page takes (a Kuma database holds its check history too).
pub const MAX_FILE_BYTES: usize = 256 * 1024 * 1024;

#[derive(Template)]
#[template(path = "import.html")]
struct ImportPage {
    layout: Layout,
    can_write: bool,
}

fn writes(role: Role) -> bool {
    !matches!(role, Role::Read)
}

pub async fn show(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let (p, layout) = match viewer(&state, &headers, "import").await {
        Ok(v) => v,
        Err(r) => return r,
    };
    page(
        StatusCode::OK,
        ImportPage {
            layout,
            can_write: writes(p.role),
        }
        .render(),
    )
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImportQuery {
    source: Option<String>,
    dry_run: Option<String>,
    with_history: Option<String>,
}

fn plain(status: StatusCode, text: impl Into<String>) -> Response {
    let mut r = (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        text.into(),
    )
        .into_response();
    crate::api::pages::secure_headers(r.headers_mut());
    r
}

/// Where the server's own API answers: its listening address, on loopback when it
/// listens on every address.
fn own_address(listen: SocketAddr) -> String {
    let ip = match listen.ip() {
        IpAddr::V4(v4) if v4.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(v6) if v6.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        other => other,
    };
    format!("http://{}", SocketAddr::new(ip, listen.port()))
}

/// `POST /import?source=kuma|gatus|healthchecks&dryRun=true|false&withHistory=true|false`, the file as the body,
/// with the session's CSRF token: the import's report as text.
pub async fn run(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<ImportQuery>,
    body: Body,
) -> Response {
    let signed = match session::signed_in(&state, &headers).await {
        Ok(s) => s,
        Err(e) => return plain(e.status, e.message),
    };
    if let Err(e) = session::check_csrf(&Method::POST, &headers, &signed.token) {
        return plain(e.status, e.message);
    }
    let principal = match session::principal(&state, &headers, &signed).await {
        Ok(p) => p,
        Err(e) => return plain(e.status, e.message),
    };
    if !writes(principal.role) {
        return plain(
            StatusCode::FORBIDDEN,
            "Importing changes the workspace: it needs the write role or above.",
        );
    }
    let source = match q.source.as_deref() {
        Some("kuma") => Source::Kuma,
        Some("gatus") => Source::Gatus,
        Some("healthchecks") => Source::Healthchecks,
        _ => {
            return plain(
                StatusCode::BAD_REQUEST,
                "source must be kuma, gatus or healthchecks",
            );
        }
    };
    let dry_run = match q.dry_run.as_deref() {
        None | Some("true") => true,
        Some("false") => false,
        Some(_) => return plain(StatusCode::BAD_REQUEST, "dryRun must be true or false"),
    };
    let with_history = match q.with_history.as_deref() {
        None | Some("false") => false,
        Some("true") => true,
        Some(_) => {
            return plain(StatusCode::BAD_REQUEST, "withHistory must be true or false");
        }
    };
    if with_history && !principal.role.is_admin() {
        return plain(
            StatusCode::FORBIDDEN,
            "Importing check history needs the admin role: past checks feed the uptime reports",
        );
    }
    // One import at a time: each reads a file of up to 256 MiB and makes a request per
    // object, and imports are rare.
    let Ok(running) = RUNNING.try_acquire() else {
        return plain(
            StatusCode::TOO_MANY_REQUESTS,
            "Another import is running on this server; try again when it has finished.",
        );
    };
    let folder = state.config.data_dir.join("imports");
    sweep(&folder).await;
    // The file lives in a folder of its own, removed when the request ends however it
    // ends (answered, failed, or dropped by a client that went away).
    let held = std::sync::Arc::new(Held {
        _running: running,
        scratch: Scratch(folder.join(ulid::Ulid::new().to_string())),
    });
    if let Err(e) = tokio::fs::create_dir_all(&held.scratch.0).await {
        tracing::error!(error = %e, "cannot make the imports folder");
        return plain(
            StatusCode::SERVICE_UNAVAILABLE,
            "the server cannot keep the file",
        );
    }
    let path = held.scratch.0.join("upload");
    let answer = match receive(body, &path).await {
        Ok(0) => plain(StatusCode::BAD_REQUEST, "the file is empty"),
        Ok(_) => {
            let credentials = Credentials::Session {
                cookie: headers
                    .get(header::COOKIE)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_string(),
                csrf: crate::accounts::csrf_token(&signed.token),
                workspace: principal.workspace_id.clone(),
            };
            let options = ImportOptions {
                dry_run,
                min_interval: state.config.min_interval,
                environment: false,
                with_history,
            };
            // The import runs on as a task of its own: a browser that goes away does not
            // stop it half way (its objects made, its paused monitors not yet paused).
            let base = own_address(state.config.listen);
            let file = path.clone();
            let kept = held.clone();
            let work = tokio::spawn(async move {
                // The file and the import's turn last as long as the task.
                let _kept = kept;
                let remote = Remote::acting_as(&base, credentials)?;
                tokio::time::timeout(
                    IMPORT_DEADLINE,
                    import::import(source, &file, &remote, &options),
                )
                .await
                .map_err(|_| {
                    anyhow::anyhow!(
                        "the import took more than {} minutes and was stopped; what it made so far stays (importing again finishes it)",
                        IMPORT_DEADLINE.as_secs() / 60
                    )
                })?
            });
            match work.await {
                Ok(Ok(report)) => plain(StatusCode::OK, report),
                Ok(Err(e)) => plain(StatusCode::UNPROCESSABLE_ENTITY, format!("{e:#}")),
                Err(e) => {
                    tracing::error!(error = %e, "an import task failed");
                    plain(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "the import failed; try again",
                    )
                }
            }
        }
        Err(Received::TooLarge) => plain(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the file is larger than {} MiB", MAX_FILE_BYTES >> 20),
        ),
        Err(Received::Failed(e)) => {
            tracing::warn!(error = %e, "an import upload failed");
            plain(StatusCode::BAD_REQUEST, "the file could not be received")
        }
    };
    drop(held);
    answer
}

/// What one import holds until it ends: its turn, and its folder.
struct Held {
    _running: tokio::sync::SemaphorePermit<'static>,
    scratch: Scratch,
}

/// A folder removed with everything in it when dropped.
struct Scratch(std::path::PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Remove what an import left in `folder` more than an hour ago (a server stopped in the
/// middle of one).
async fn sweep(folder: &std::path::Path) {
    let Ok(mut entries) = tokio::fs::read_dir(folder).await else {
        return;
    };
    while let Ok(Some(entry)) = entries.next_entry().await {
        let old = entry
            .metadata()
            .await
            .ok()
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > std::time::Duration::from_secs(3600));
        if old && tokio::fs::remove_dir_all(entry.path()).await.is_err() {
            let _ = tokio::fs::remove_file(entry.path()).await;
        }
    }
}

enum Received {
    TooLarge,
    Failed(String),
}

/// Write the request's body to `path`, at most [`MAX_FILE_BYTES`]; its length.
async fn receive(body: Body, path: &std::path::Path) -> Result<usize, Received> {
    let mut file = tokio::fs::File::create(path)
        .await
        .map_err(|e| Received::Failed(e.to_string()))?;
    let mut stream = body.into_data_stream();
    let mut total = 0usize;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| Received::Failed(e.to_string()))?;
        total += chunk.len();
        if total > MAX_FILE_BYTES {
            return Err(Received::TooLarge);
        }
        file.write_all(&chunk)
            .await
            .map_err(|e| Received::Failed(e.to_string()))?;
    }
    file.flush()
        .await
        .map_err(|e| Received::Failed(e.to_string()))?;
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_own_address_is_on_loopback_when_listening_everywhere() {
        assert_eq!(
            own_address("0.0.0.0:8080".parse().expect("addr")),
            "http://127.0.0.1:8080"
        );
        assert_eq!(
            own_address("[::]:80".parse().expect("addr")),
            "http://[::1]:80"
        );
        assert_eq!(
            own_address("10.0.0.5:9000".parse().expect("addr")),
            "http://10.0.0.5:9000"
        );
    }
}
