//! `GET /events`: server-sent events for every dashboard page. Each committed change of
//! the signed-in person's workspace (a check stored, a monitor created, edited or
//! deleted, an incident opened or moved on, a delivery attempted) comes as one `changes`
//! event, a JSON array of what one transaction changed (see
//! [`Seen`](crate::store::live::Seen)), told by the store after the commit: nothing is
//! read from the database per open page. A page updates in place what it can and reads
//! itself again for the rest.
//!
//! On PostgreSQL the changes committed by the cluster's other nodes come too (see
//! [`live`](crate::store::live)). A stream that falls behind the server's feed, or whose
//! node lost its link to the other nodes for a while, gets a `missed` event (the page
//! reads itself again). The session is looked at again every [`RECHECK`]: a stream ends when
//! its session ends or its person leaves the workspace.

use crate::api::AppState;
use crate::api::session;
use crate::store::live::{Committed, Told};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use std::time::Duration;
use tokio::sync::broadcast::{self, error::RecvError};

/// How often an open stream checks that its session and membership still hold.
const RECHECK: Duration = Duration::from_secs(30);

struct Listener {
    state: AppState,
    headers: HeaderMap,
    workspace: String,
    feed: broadcast::Receiver<Committed>,
    recheck: tokio::time::Interval,
}

pub async fn events(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let principal = match session::signed_in(&state, &headers).await {
        Ok(signed) => match session::principal(&state, &headers, &signed).await {
            Ok(p) => p,
            Err(e) => return (e.status, e.message).into_response(),
        },
        Err(e) => return (StatusCode::UNAUTHORIZED, e.message).into_response(),
    };
    let mut recheck = tokio::time::interval(RECHECK);
    recheck.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    recheck.reset();
    let listener = Listener {
        feed: state.store.subscribe_changes(),
        state,
        headers,
        workspace: principal.workspace_id,
        recheck,
    };
    let stream = futures::stream::unfold(listener, |mut l| async move {
        let event = l.next().await?;
        Some((Ok::<_, std::convert::Infallible>(event), l))
    });
    let mut r = Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response();
    r.headers_mut().insert(
        axum::http::header::CACHE_CONTROL,
        axum::http::HeaderValue::from_static("no-store"),
    );
    r
}

impl Listener {
    /// The next event for this page; `None` ends the stream.
    async fn next(&mut self) -> Option<Event> {
        loop {
            tokio::select! {
                received = self.feed.recv() => match received {
                    Ok(committed) => {
                        if let Some(event) = self.of(&committed) {
                            return Some(event);
                        }
                    }
                    Err(RecvError::Lagged(_)) => return Some(Event::default().event("missed").data("{}")),
                    Err(RecvError::Closed) => return None,
                },
                _ = self.recheck.tick() => {
                    if !self.still_a_member().await {
                        return None;
                    }
                }
            }
        }
    }

    /// The `changes` event of one transaction's changes to this workspace, if any.
    fn of(&self, committed: &Committed) -> Option<Event> {
        if committed.iter().any(|t| t.workspace_id == Told::EVERYONE) {
            return Some(Event::default().event("missed").data("{}"));
        }
        let mine = committed
            .iter()
            .find(|t| t.workspace_id == self.workspace)?;
        Some(Event::default().event("changes").data(&mine.json))
    }

    async fn still_a_member(&self) -> bool {
        let Ok(signed) = session::still_signed_in(&self.state, &self.headers).await else {
            return false;
        };
        matches!(
            session::principal(&self.state, &self.headers, &signed).await,
            Ok(p) if p.workspace_id == self.workspace
        )
    }
}
