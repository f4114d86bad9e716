//! `GET /v1/plugins`: the loaded monitor and channel plugins.

use super::AppState;
use super::envelope::{ListBody, Paged, Pagination};
use super::error::{ApiError, ErrorBody};
use super::extract::ApiQuery;
use super::paging::{self, PageParams};
use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

/// A loaded plugin.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginView {
    /// The monitor type, channel type or pipeline step it provides.
    #[schema(example = "http")]
    pub name: String,
    /// `monitor`, `channel` or `pipeline`.
    pub kind: String,
    pub version: String,
    pub description: String,
    /// JSON Schema of the type's settings.
    #[schema(value_type = Object)]
    pub config_schema: serde_json::Value,
    /// Host capabilities it uses: `http`, `net`, `tls`, `smtp`, `tcp`, `udp`.
    pub capabilities: Vec<String>,
    /// Contract version it was built against, e.g. `0.1.0`.
    pub contract: String,
    /// `builtin` or the file it was loaded from.
    pub source: String,
    /// Monitor types: whether the type's fields sit at the top level of a monitor object
    /// (its schema says `"x-tocsin-top-level": true`, as the built-in types do) rather than
    /// under `config`.
    pub top_level_fields: bool,
    /// Capabilities the server grants it. Built-ins get what they declare; a plugin from
    /// the plugins directory only what `[plugin_grants.<name>]` in the configuration allows.
    pub granted: Vec<String>,
    /// Channel types: what the plugin asks of the server beyond delivering:
    /// `acknowledgements` (told of `incident.acknowledged`), `pauses` (told of
    /// `monitor.paused` and `monitor.resumed`), `grouping` (a policy's group window
    /// gathers its incidents into one delivery), `signing` (deliveries carry the
    /// workspace's signature headers). Empty for monitor types.
    #[schema(example = json!(["acknowledgements", "pauses", "signing"]))]
    pub abilities: Vec<String>,
    /// Channel types: top-level settings holding a URL that must be `https://` unless the
    /// server allows insecure webhooks. Empty for monitor types.
    #[schema(example = json!(["url"]))]
    pub https_only: Vec<String>,
}

/// Query of the plugin list.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PluginListParams {
    /// `monitor`, `channel` or `pipeline`.
    pub kind: Option<String>,
}

/// List loaded plugins, monitors first, then channels, then pipeline steps, by name.
#[utoipa::path(get, path = "/v1/plugins", tag = "plugins", params(PageParams, PluginListParams),
    responses(
        (status = 200, description = "Loaded plugins", body = ListBody<PluginView>),
        (status = 400, description = "Invalid parameters", body = ErrorBody),
    ))]
pub async fn list_plugins(
    State(state): State<AppState>,
    ApiQuery(pg): ApiQuery<PageParams>,
    ApiQuery(q): ApiQuery<PluginListParams>,
) -> Result<Paged<PluginView>, ApiError> {
    let mut errors = Vec::new();
    let page = pg.page(&mut errors);
    if let Some(kind) = &q.kind
        && kind != "monitor"
        && kind != "channel"
        && kind != "pipeline"
    {
        errors.push(super::error::FieldError::new(
            "kind",
            "must be monitor, channel or pipeline",
        ));
    }
    paging::finish(errors)?;
    let all: Vec<PluginView> = state
        .plugins
        .descriptions()
        .into_iter()
        .filter(|d| q.kind.as_deref().is_none_or(|k| k == d.kind))
        .map(|d| PluginView {
            name: d.name,
            kind: d.kind.to_string(),
            version: d.version,
            description: d.description,
            config_schema: d.config_schema,
            capabilities: d.capabilities.into_iter().map(String::from).collect(),
            contract: d.contract,
            source: d.source,
            top_level_fields: d.top_level_fields,
            granted: d.granted.iter().map(|c| c.to_string()).collect(),
            abilities: d.abilities.into_iter().map(String::from).collect(),
            https_only: d.https_only,
        })
        .collect();
    let total = all.len() as u64;
    let items = all
        .into_iter()
        .skip(usize::try_from(page.offset()).unwrap_or(usize::MAX))
        .take(page.limit as usize)
        .collect();
    Ok(Paged {
        items,
        pagination: Pagination::new(page, total),
    })
}
