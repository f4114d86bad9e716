//! The REST interface: axum routers (one file per resource), the envelope, errors,
//! authentication, paging and the OpenAPI document. Handlers read the store and call the
//! engine; they never run checks or send anything themselves.

pub mod account;
pub mod alert_links;
pub mod alert_policies;
pub mod api_keys;
pub mod audit_log;
pub mod auth;
pub mod badges;
pub mod channel_input;
pub mod channels;
pub mod check_export;
pub mod deliveries;
pub mod envelope;
pub mod error;
pub mod extract;
pub mod fields;
pub mod health;
pub mod history;
pub mod incidents;
pub mod invitations;
pub mod maintenance;
pub mod managed;
pub mod members;
pub mod meta;
pub mod metrics;
pub mod monitor_input;
pub mod monitor_pages;
pub mod monitors;
pub mod openapi;
pub mod pages;
pub mod paging;
pub mod pings;
pub mod pipeline_input;
pub mod plugins;
pub mod probe_ips;
pub mod probes;
pub mod public_status;
pub mod public_subscribe;
pub mod quota;
pub mod ratelimit;
pub mod redact;
pub mod reports;
pub mod serve;
pub mod session;
pub mod snoozes;
pub mod status_pages;
pub mod status_updates;
pub mod workspace;

use crate::clock::SharedClock;
use crate::config::Config;
use crate::plugins::PluginHost;
use crate::store::Store;
use axum::extract::DefaultBodyLimit;
use axum::response::IntoResponse;
use axum::{Extension, Router};
use std::sync::Arc;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// What handlers share.
#[derive(Clone)]
pub struct AppState {
    pub store: Store,
    pub plugins: Arc<PluginHost>,
    pub config: Arc<Config>,
    pub clock: SharedClock,
    pub engine: crate::engine::EngineContext,
    /// Token buckets per key, workspace, client address and channel test.
    pub limits: Arc<ratelimit::Limits>,
    /// When keys were last used, written in batches.
    pub key_usage: Arc<api_keys::KeyUsage>,
    /// Single sign-on and the sign-in throttles.
    pub accounts: Arc<crate::accounts::Services>,
    /// Where heartbeat monitors' pings are recorded.
    pub recorder: crate::engine::Recorder,
    /// The monitor list's pages as rendered, while nothing was written since.
    pub monitor_pages: Arc<monitor_pages::MonitorPages>,
    /// The monitors' labels as `/metrics` last read them, while none changed since.
    pub metrics_labels: Arc<metrics::LabelCache>,
    /// Turns true when the server starts stopping: held requests (a probe's long poll)
    /// answer at once instead of holding the shutdown up.
    pub stopping: tokio::sync::watch::Receiver<bool>,
}

/// The routes of `/v1`, with their OpenAPI description.
fn v1_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(openapi::ApiDoc::openapi())
        .routes(routes!(monitors::create_monitor, monitors::list_monitors))
        .routes(routes!(
            monitors::get_monitor,
            monitors::update_monitor,
            monitors::replace_monitor,
            monitors::delete_monitor
        ))
        .routes(routes!(monitors::pause_monitor))
        .routes(routes!(monitors::resume_monitor))
        .routes(routes!(monitors::list_checks))
        .routes(routes!(history::write_history))
        .routes(routes!(reports::uptime_report))
        .routes(routes!(snoozes::snooze_monitor, snoozes::unsnooze_monitor))
        .routes(routes!(snoozes::snooze_tag, snoozes::unsnooze_tag))
        .routes(routes!(snoozes::list_snoozes))
        .routes(routes!(
            badges::get_badge,
            badges::put_badge,
            badges::delete_badge
        ))
        .routes(routes!(monitors::monitor_uptime))
        .routes(routes!(
            alert_policies::create_policy,
            alert_policies::list_policies
        ))
        .routes(routes!(
            alert_policies::get_policy,
            alert_policies::update_policy,
            alert_policies::replace_policy,
            alert_policies::delete_policy
        ))
        .routes(routes!(channels::create_channel, channels::list_channels))
        .routes(routes!(
            channels::get_channel,
            channels::update_channel,
            channels::replace_channel,
            channels::delete_channel
        ))
        .routes(routes!(channels::test_channel))
        .routes(routes!(incidents::list_incidents))
        .routes(routes!(incidents::get_incident))
        .routes(routes!(incidents::acknowledge))
        .routes(routes!(incidents::resolve))
        .routes(routes!(deliveries::list_deliveries))
        .routes(routes!(deliveries::get_delivery))
        .routes(routes!(deliveries::redeliver))
        .routes(routes!(workspace::get_workspace))
        .routes(routes!(workspace::get_webhook_secret))
        .routes(routes!(workspace::rotate_webhook_secret))
        .routes(routes!(api_keys::list_api_keys, api_keys::create_api_key))
        .routes(routes!(api_keys::revoke_api_key))
        .routes(routes!(workspace::update_workspace))
        .routes(routes!(workspace::test_monthly_report))
        .routes(routes!(members::list_members, members::add_member))
        .routes(routes!(members::update_member, members::remove_member))
        .routes(routes!(probe_ips::list_probe_ips))
        .routes(routes!(probes::list_probes, probes::create_probe))
        .routes(routes!(probes::update_probe, probes::revoke_probe))
        .routes(routes!(probes::rotate_probe_token))
        .routes(routes!(probes::list_locations))
        .routes(routes!(
            status_pages::create_status_page,
            status_pages::list_status_pages
        ))
        .routes(routes!(
            status_pages::get_status_page,
            status_pages::update_status_page,
            status_pages::replace_status_page,
            status_pages::delete_status_page
        ))
        .routes(routes!(
            status_updates::create_update,
            status_updates::list_updates
        ))
        .routes(routes!(
            status_updates::edit_update,
            status_updates::delete_update
        ))
        .routes(routes!(status_updates::list_subscribers))
        .routes(routes!(status_updates::delete_subscriber))
        .routes(routes!(status_updates::approve_subscriber))
        .routes(routes!(
            maintenance::create_window,
            maintenance::list_windows
        ))
        .routes(routes!(
            maintenance::get_window,
            maintenance::update_window,
            maintenance::replace_window,
            maintenance::delete_window
        ))
        .routes(routes!(plugins::list_plugins))
        .routes(routes!(
            invitations::create_invitation,
            invitations::list_invitations
        ))
        .routes(routes!(invitations::revoke_invitation))
        .routes(routes!(audit_log::list_audit_log))
        .routes(routes!(openapi::openapi_json))
}

/// A signed-in person's own routes (a session cookie, not an API key).
fn session_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(account::get_session, account::update_session))
        .routes(routes!(account::logout))
        .routes(routes!(
            account::list_sessions,
            account::revoke_all_sessions
        ))
        .routes(routes!(account::revoke_session))
        .routes(routes!(account::change_password))
        .routes(routes!(account::totp_enroll))
        .routes(routes!(account::totp_confirm))
        .routes(routes!(account::totp_disable))
}

/// Routes without authentication.
fn public_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(account::login))
        .routes(routes!(account::setup))
        .routes(routes!(account::accept_invitation))
        .routes(routes!(account::request_reset))
        .routes(routes!(account::confirm_reset))
        .routes(routes!(account::list_providers))
        .routes(routes!(account::oidc_start))
        .routes(routes!(account::oidc_callback))
        .routes(routes!(badges::status_svg))
        .routes(routes!(badges::uptime_svg))
        .routes(routes!(badges::response_svg))
        .routes(routes!(health::healthz))
        .routes(routes!(health::readyz))
        .routes(routes!(metrics::metrics))
        .routes(routes!(public_status::status_page))
        .routes(routes!(alert_links::confirm_page, alert_links::act))
        .routes(routes!(alert_links::telegram_update))
        .routes(routes!(public_subscribe::feed))
        .routes(routes!(public_subscribe::subscribe))
        .routes(routes!(
            public_subscribe::confirm,
            public_subscribe::confirm_post
        ))
        .routes(routes!(
            public_subscribe::unsubscribe,
            public_subscribe::unsubscribe_post
        ))
}

/// What probes in private locations call, with their own tokens (not API keys).
fn probe_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(probes::probe_assignments))
        .routes(routes!(probes::probe_results))
}

/// Heartbeat monitors' ping URLs: public, and not limited per address (one host may run
/// many jobs); each ping costs a lookup by an indexed token.
fn ping_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(pings::ping_post, pings::ping_get))
        .routes(routes!(pings::signal_post, pings::signal_get))
}

/// The complete OpenAPI document.
pub fn openapi_document() -> utoipa::openapi::OpenApi {
    let (_, mut doc) = v1_routes().split_for_parts();
    let (_, public) = public_routes().split_for_parts();
    let (_, own) = session_routes().split_for_parts();
    let (_, pings) = ping_routes().split_for_parts();
    let (_, probes) = probe_routes().split_for_parts();
    doc.merge(public);
    doc.merge(own);
    doc.merge(pings);
    doc.merge(probes);
    openapi::complete_responses(&mut doc);
    doc
}

/// After a request that may have written (any method but GET, HEAD and OPTIONS, answered
/// with success or a redirect), tell the
/// engine's background passes to look again: a new heartbeat deadline, a snooze, a queued
/// delivery. They sleep while nothing is pending. Pings (anonymous, and many) tell them
/// only when they bring a deadline forward (see `engine::heartbeat::ping`).
async fn tell_engine_of_writes(
    axum::extract::State(state): axum::extract::State<AppState>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let writes = !matches!(
        *req.method(),
        axum::http::Method::GET | axum::http::Method::HEAD | axum::http::Method::OPTIONS
    ) && !req.uri().path().starts_with("/ping/");
    let response = next.run(req).await;
    // A refused request changed nothing: it wakes nobody.
    let status = response.status();
    if writes && (status.is_success() || status.is_redirection()) {
        state.engine.work.tell();
    }
    response
}

/// The whole HTTP application; `pages` (the dashboard) are served beside the API.
pub fn router(state: AppState, pages: Router<AppState>) -> Router {
    let (v1, mut doc) = v1_routes().split_for_parts();
    let (public, public_doc) = public_routes().split_for_parts();
    let (own, own_doc) = session_routes().split_for_parts();
    let (pings, pings_doc) = ping_routes().split_for_parts();
    let (probes, probes_doc) = probe_routes().split_for_parts();
    doc.merge(public_doc);
    doc.merge(own_doc);
    doc.merge(pings_doc);
    doc.merge(probes_doc);
    openapi::complete_responses(&mut doc);
    let rendered = openapi::OpenApiJson(Arc::new(
        doc.to_pretty_json().unwrap_or_else(|_| "{}".into()),
    ));
    let v1 = v1
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            auth::require_key,
        ))
        .layer(Extension(rendered));
    let public = public.route_layer(axum::middleware::from_fn_with_state(
        state.clone(),
        auth::limit_by_address,
    ));
    let own = own.route_layer(axum::middleware::from_fn_with_state(
        state.clone(),
        auth::require_session,
    ));
    let probes = probes.route_layer(axum::middleware::from_fn_with_state(
        state.clone(),
        probes::require_probe,
    ));
    let pages = pages
        .route("/setup", axum::routing::get(pages::page))
        .route("/invite", axum::routing::get(pages::page))
        .route("/reset-password", axum::routing::get(pages::page))
        .route("/assets/account.js", axum::routing::get(pages::script))
        .route("/assets/account.css", axum::routing::get(pages::style))
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            auth::count_refused_sessions,
        ));
    Router::new()
        .merge(v1)
        .merge(own)
        .merge(public)
        .merge(pings)
        .merge(probes)
        .merge(pages)
        .fallback(error::not_found)
        .method_not_allowed_fallback(error::method_not_allowed)
        .layer(axum::middleware::from_fn(metrics::count_requests))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            tell_engine_of_writes,
        ))
        .layer(DefaultBodyLimit::max(extract::MAX_BODY_BYTES))
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(|_| {
            error::ApiError::internal("a request handler panicked").into_response()
        }))
        .layer(axum::middleware::from_fn(extract::envelope_failures))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            public_status::page_headers,
        ))
        .layer(axum::middleware::from_fn(envelope::request_id))
        .layer(tower_http::trace::TraceLayer::new_for_http())
        .with_state(state)
}
