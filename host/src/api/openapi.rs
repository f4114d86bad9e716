//! The OpenAPI 3.1 document, generated from the handlers and schemas themselves.

use super::error::ErrorBody;
use axum::Extension;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

/// The document's fixed parts; paths are added by the router.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Tocsin API",
        description = "Uptime monitoring and alerting. Every `/v1` route takes `Authorization: Bearer <API key>`.",
    ),
    modifiers(&BearerAuth),
    security(("bearer" = [])),
    components(schemas(ErrorBody, super::error::FieldError)),
    tags(
        (name = "monitors", description = "Monitors and their checks"),
        (name = "alert-policies", description = "When incidents open and resolve, and who hears"),
        (name = "channels", description = "Stored notification channels"),
        (name = "incidents", description = "Outages and their timelines"),
        (name = "reports", description = "Uptime reports over a period, as JSON, CSV or a printable page"),
        (name = "deliveries", description = "Notifications sent (the outbox) and their attempts"),
        (name = "workspace", description = "The caller's workspace and its webhook secret"),
        (name = "plugins", description = "Loaded monitor and channel plugins"),
        (name = "health", description = "Liveness and readiness, without authentication"),
        (name = "maintenance", description = "Maintenance windows: planned work during which checks count for nothing and nothing is sent"),
        (name = "snoozes", description = "Holding a monitor's or a tag's notifications until a time"),
        (name = "heartbeats", description = "Heartbeat monitors' ping URLs, without authentication"),
        (name = "badges", description = "Public SVG badges of a monitor's state, uptime and response time: a token per monitor, revocable"),
        (name = "probes", description = "Probes in private locations: `/v1/probes` (admin) manages them; `/v1/probe/*` is what a probe calls, with its own `tpb_` token"),
        (name = "meta", description = "The API description"),
    )
)]
pub struct ApiDoc;

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("tcs_...")
                    .build(),
            ),
        );
        components.add_security_scheme(
            "probeToken",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("tpb_...")
                    .build(),
            ),
        );
    }
}

/// The rendered document, built once.
#[derive(Clone)]
pub struct OpenApiJson(pub Arc<String>);

/// Serve the document (not wrapped in the envelope: tools expect the bare document).
#[utoipa::path(get, path = "/v1/openapi.json", tag = "meta",
    responses(
        (status = 200, description = "This document", content_type = "application/json"),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
    ))]
pub async fn openapi_json(Extension(doc): Extension<OpenApiJson>) -> Response {
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        doc.0.as_str().to_owned(),
    )
        .into_response()
}

/// Give every operation every error status it can answer, in the error envelope, beside
/// the specific ones its handler lists (those keep their wording): what authentication,
/// role checks, rate limits, extractors and the database can answer anywhere.
pub fn complete_responses(doc: &mut utoipa::openapi::OpenApi) {
    for (path, item) in doc.paths.paths.iter_mut() {
        let operations = [
            ("GET", &mut item.get),
            ("PUT", &mut item.put),
            ("POST", &mut item.post),
            ("DELETE", &mut item.delete),
            ("PATCH", &mut item.patch),
        ];
        for (method, operation) in operations {
            if let Some(op) = operation.as_mut() {
                for (status, why) in statuses(path, method, op) {
                    op.responses
                        .responses
                        .entry(status.to_string())
                        .or_insert_with(|| error_response(why));
                }
            }
        }
    }
}

/// The statuses `method path` can answer whatever its handler does.
fn statuses(
    path: &str,
    method: &str,
    op: &utoipa::openapi::path::Operation,
) -> Vec<(u16, &'static str)> {
    let mut out = Vec::new();
    let has_params = op.parameters.as_ref().is_some_and(|p| !p.is_empty());
    let has_body = op.request_body.is_some();
    let has_path_param = path.contains('{');
    if path.starts_with("/v1/") {
        out.push((
            401,
            "UNAUTHORIZED: missing, malformed, unknown or revoked key",
        ));
        out.push((
            429,
            "RATE_LIMITED: over the key's or the workspace's rate (or, with a bad key, the client address's)",
        ));
        out.push((
            503,
            "SERVICE_UNAVAILABLE: the database is unavailable; retry later",
        ));
        let admin_only = path.starts_with("/v1/api-keys")
            || path.starts_with("/v1/workspace/webhook-secret")
            || (path.starts_with("/v1/workspace/members") && method != "GET");
        if method != "GET" || admin_only {
            out.push((403, "FORBIDDEN: the key's role does not allow this"));
        }
    } else if path.starts_with("/status/") || path.starts_with("/ping/") {
        // Pings spend from the address's bucket only with a wrong token.
        out.push((429, "RATE_LIMITED: over the client address's rate"));
        out.push((
            503,
            "SERVICE_UNAVAILABLE: the database is unavailable; retry later",
        ));
    }
    if has_params || has_body || has_path_param {
        out.push((
            400,
            "VALIDATION_ERROR (or INVALID_CONTENT_TYPE for a body that is not JSON)",
        ));
    }
    if has_body {
        out.push((413, "PAYLOAD_TOO_LARGE: body over 1 MiB"));
        out.push((
            408,
            "REQUEST_TIMEOUT: the body did not arrive within `request_body_timeout`",
        ));
    }
    if has_path_param {
        out.push((404, "Not found (or another workspace's)"));
    }
    out
}

fn error_response(description: &str) -> utoipa::openapi::RefOr<utoipa::openapi::Response> {
    use utoipa::openapi::{ContentBuilder, Ref, ResponseBuilder};
    ResponseBuilder::new()
        .description(description)
        .content(
            "application/json",
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name("ErrorBody")))
                .build(),
        )
        .build()
        .into()
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_operation_lists_the_errors_it_can_answer() {
        let doc = super::super::openapi_document();
        let mut checked = 0;
        for (path, item) in &doc.paths.paths {
            for (method, op) in [
                ("GET", &item.get),
                ("POST", &item.post),
                ("PATCH", &item.patch),
                ("DELETE", &item.delete),
            ] {
                let Some(op) = op else { continue };
                let has = |code: &str| op.responses.responses.contains_key(code);
                if path.starts_with("/v1/") {
                    for code in ["401", "429", "503"] {
                        assert!(has(code), "{method} {path} lacks {code}");
                    }
                    if method != "GET" {
                        assert!(has("403"), "{method} {path} lacks 403");
                    }
                }
                if path.contains('{') {
                    assert!(has("404") && has("400"), "{method} {path} lacks 404 or 400");
                }
                if op.request_body.is_some() {
                    assert!(has("413") && has("400"), "{method} {path} lacks 413 or 400");
                }
                checked += 1;
            }
        }
        assert!(checked > 40, "{checked}");
    }
}
