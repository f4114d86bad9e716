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
        (name = "deliveries", description = "Notifications sent (the outbox) and their attempts"),
        (name = "workspace", description = "The caller's workspace and its webhook secret"),
        (name = "plugins", description = "Loaded monitor and channel plugins"),
        (name = "health", description = "Liveness and readiness, without authentication"),
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
