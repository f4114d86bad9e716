//! End to end: two nodes of different regions share one database; a monitor's checks
//! rotate over its regions, one region per round and never both, a monitor limited to one
//! region is checked only there, and the failure that opens an incident names its region.

mod support;
#[path = "support/target.rs"]
mod target;

use serde_json::{Value, json};
use std::time::Duration;
use support::{Api, Server, wait_for};
use target::Target;

fn create(api: &Api, body: Value) -> String {
    let r = api.post("/v1/monitors", &body);
    assert_eq!(r.status, 201, "{}", r.body);
    r.body["data"]["id"].as_str().expect("id").to_string()
}

/// Checks of a monitor, oldest first.
fn checks(api: &Api, id: &str) -> Vec<Value> {
    let mut list = api.get(&format!("/v1/monitors/{id}/checks?limit=100")).body["data"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    list.reverse();
    list
}

#[test]
fn checks_rotate_over_regions_across_nodes() {
    let target = Target::start();
    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(
        dir.path().join("tocsin.toml"),
        "[[regions]]\nname = \"eu\"\nipv4 = [\"203.0.113.0/28\"]\n\n[[regions]]\nname = \"us\"\nipv4 = [\"198.51.100.0/28\"]\n",
    )
    .expect("config");
    let eu = Server::start_in(dir.path(), &[("TOCSIN_REGION", "eu")]);
    let api = eu.client();
    let everywhere = create(
        &api,
        json!({"name": "everywhere", "type": "http", "url": target.url("/ok"), "method": "GET", "interval": 1}),
    );
    target.set_status(500);
    let us_only = create(
        &api,
        json!({"name": "us only", "type": "http", "url": target.url("/status"), "method": "GET", "interval": 1, "regions": ["us"]}),
    );
    assert_eq!(
        api.get(&format!("/v1/monitors/{everywhere}")).body["data"]["regions"],
        json!(["eu", "us"])
    );
    // The second node joins the same database and picks the monitors up at start.
    let _us = Server::start_in(dir.path(), &[("TOCSIN_REGION", "us")]);

    // Wait for a run of rounds after both nodes settled into the shared rhythm.
    let settled = wait_for(
        "eight rounds from both nodes",
        Duration::from_secs(40),
        || {
            let all = checks(&api, &everywhere);
            let regions: Vec<&str> = all.iter().filter_map(|c| c["region"].as_str()).collect();
            (regions.contains(&"us") && all.len() >= 12).then_some(all)
        },
    );
    let tail: Vec<&str> = settled[settled.len() - 6..]
        .iter()
        .filter_map(|c| c["region"].as_str())
        .collect();
    assert!(
        tail.windows(2).all(|w| w[0] != w[1]),
        "rounds alternate between the regions: {tail:?}"
    );

    // Limited to us: only the us node checks it, and its incident says so.
    let limited = checks(&api, &us_only);
    assert!(!limited.is_empty());
    assert!(limited.iter().all(|c| c["region"] == "us"), "{limited:?}");
    let incident = wait_for("an incident from us", Duration::from_secs(20), || {
        api.get(&format!("/v1/incidents?monitorId={us_only}")).body["data"][0]
            .as_object()
            .cloned()
    });
    assert_eq!(incident["failure"]["region"], "us");
}
