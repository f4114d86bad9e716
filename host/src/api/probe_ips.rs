//! `/v1/probe-ips`: the addresses checks come from, per region, for firewall allow-lists.

use super::AppState;
use super::envelope::{Success, SuccessBody};
use serde::Serialize;
use utoipa::ToSchema;

/// One region's source addresses.
#[derive(Debug, Serialize, ToSchema)]
pub struct ProbeRegion {
    #[schema(example = "eu-west")]
    pub region: String,
    /// CIDR blocks, e.g. `203.0.113.0/28`.
    pub ipv4: Vec<String>,
    pub ipv6: Vec<String>,
}

/// The configured regions and the addresses their checks come from.
#[utoipa::path(get, path = "/v1/probe-ips", tag = "regions",
    responses((status = 200, description = "Every region's source addresses", body = SuccessBody<Vec<ProbeRegion>>)))]
pub async fn list_probe_ips(
    axum::extract::State(state): axum::extract::State<AppState>,
) -> Success<Vec<ProbeRegion>> {
    Success::ok(
        state
            .config
            .regions
            .iter()
            .map(|r| ProbeRegion {
                region: r.name.clone(),
                ipv4: r.ipv4.clone(),
                ipv6: r.ipv6.clone(),
            })
            .collect(),
    )
}
