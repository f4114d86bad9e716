//! `/v1/probe-ips`: the addresses checks come from, per region with a live node, for
//! firewall allow-lists.

use super::AppState;
use super::envelope::{Success, SuccessBody};
use super::error::ApiError;
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
    /// Nodes of the region that sent a heartbeat in the last 15 seconds.
    pub nodes: usize,
}

/// The regions that have live nodes, and the addresses their checks come from.
#[utoipa::path(get, path = "/v1/probe-ips", tag = "regions",
    responses((status = 200, description = "Every region with a live node, and its source addresses", body = SuccessBody<Vec<ProbeRegion>>)))]
pub async fn list_probe_ips(
    axum::extract::State(state): axum::extract::State<AppState>,
) -> Result<Success<Vec<ProbeRegion>>, ApiError> {
    let live = state.store.live_nodes(state.clock.now_ms()).await?;
    Ok(Success::ok(
        state
            .config
            .regions
            .iter()
            .map(|r| ProbeRegion {
                region: r.name.clone(),
                ipv4: r.ipv4.clone(),
                ipv6: r.ipv6.clone(),
                nodes: live.iter().filter(|n| n.region == r.name).count(),
            })
            .filter(|r| r.nodes > 0)
            .collect(),
    ))
}
