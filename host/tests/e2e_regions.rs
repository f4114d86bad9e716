//! End to end: two nodes of different regions share one database; a monitor's checks
//! rotate over its regions, one region per round and never both, a monitor limited to one
//! region is checked only there, and the failure that opens an incident names its region.
//! With `regionalConfirmation`, a failure only one region sees is cleared by the other
//! region and never alerts, while a failure both see still opens one incident.

use crate::support;

use support::{sinks, target};

use serde_json::{Value, json};
use std::time::Duration;
use support::{Api, Server, verdicts, wait_for};
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

/// When a check ran, in milliseconds since the epoch.
fn millis(check: &Value) -> Option<i64> {
    let at = check["checkedAt"].as_str()?;
    Some(
        chrono::DateTime::parse_from_rfc3339(at)
            .ok()?
            .timestamp_millis(),
    )
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
    let _us = Server::start_node_sharing(dir.path(), &[("TOCSIN_REGION", "us")]);

    // Wait for a run of rounds after both nodes settled into the shared rhythm. A node
    // under load may skip a round it is late for (never run it twice), so wait for six
    // rounds in a row that alternate rather than judging the first twelve.
    let tail = wait_for(
        "six alternating rounds from both nodes",
        Duration::from_secs(60),
        || {
            let all = checks(&api, &everywhere);
            let tail: Vec<(String, i64)> = all
                .iter()
                .rev()
                .take(6)
                .rev()
                .filter_map(|c| Some((c["region"].as_str()?.to_string(), millis(c)?)))
                .collect();
            (tail.len() == 6 && tail.windows(2).all(|w| w[0].0 != w[1].0)).then_some(tail)
        },
    );
    // One region per round, never both: had both nodes checked every round, six checks
    // would come in three rounds (about 2 s); one per round takes five intervals.
    let span = tail[5].1 - tail[0].1;
    assert!(
        span >= 4_000,
        "six checks came in {span} ms, so some rounds ran in both regions: {tail:?}"
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

const TWO_REGIONS: &str = "[[regions]]\nname = \"eu\"\nipv4 = [\"203.0.113.0/28\"]\n\n[[regions]]\nname = \"us\"\nipv4 = [\"198.51.100.0/28\"]\n";

#[test]
fn regional_confirmation_clears_a_failure_one_region_sees() {
    let target = Target::start();
    let receiver = sinks::Receiver::start();
    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(dir.path().join("tocsin.toml"), TWO_REGIONS).expect("config");
    let env = [
        ("TOCSIN_REGION", "eu"),
        ("TOCSIN_ALLOW_INSECURE_WEBHOOKS", "true"),
    ];
    let eu = Server::start_in(dir.path(), &env);
    let _us = Server::start_node_sharing(
        dir.path(),
        &[
            ("TOCSIN_REGION", "us"),
            ("TOCSIN_ALLOW_INSECURE_WEBHOOKS", "true"),
        ],
    );
    let api = eu.client();
    let policy = api.post(
        "/v1/alert-policies",
        &json!({"name": "at once", "failureThreshold": 1, "recoveryThreshold": 1,
                "channels": [{"type": "webhook", "url": receiver.url("/hook")}]}),
    );
    assert_eq!(policy.status, 201, "{}", policy.body);
    let policy = policy.body["data"]["id"].as_str().expect("id").to_string();
    // Let both nodes see each other alive before the first failure.
    std::thread::sleep(Duration::from_secs(3));

    // Only eu sees these fail.
    let monitor = |name: &str, path: &str, confirm: bool| {
        create(
            &api,
            json!({"name": name, "type": "http", "url": target.url(path), "method": "GET",
                   "interval": 1, "regions": ["eu", "us"], "alertPolicyId": policy,
                   "regionalConfirmation": confirm}),
        )
    };
    let confirmed = monitor("eu-local, confirmed", "/fails-in/eu", true);
    let plain = monitor("eu-local, plain", "/fails-in/eu", false);
    assert_eq!(
        api.get(&format!("/v1/monitors/{confirmed}")).body["data"]["regionalConfirmation"],
        true
    );
    // Both regions see this one fail.
    target.set_status(500);
    let outage = monitor("real outage, confirmed", "/status", true);

    // The plain monitor alerts on eu's failure: the failure is real enough to alert
    // without confirmation.
    let plain_incident = wait_for(
        "an incident for the plain monitor",
        Duration::from_secs(30),
        || {
            api.get(&format!("/v1/incidents?monitorId={plain}")).body["data"][0]
                .as_object()
                .cloned()
        },
    );
    assert_eq!(plain_incident["failure"]["region"], "eu");

    // The confirmed one: eu's failures are cleared by us, several times over.
    let history = wait_for(
        "three eu failures cleared by us",
        Duration::from_secs(40),
        || {
            let v = verdicts(&api, &confirmed);
            let cleared = v.iter().filter(|c| c.3 == "cleared").count();
            (cleared >= 3).then_some(v)
        },
    );
    for (region, ok, counted, status) in &history {
        match status.as_str() {
            "unconfirmed" => assert!(region == "eu" && !ok && !counted, "{history:?}"),
            "cleared" => assert!(region == "us" && *ok && *counted, "{history:?}"),
            "" => assert!(
                *ok && *counted,
                "unconfirmed failures never count alone: {history:?}"
            ),
            other => panic!("unexpected confirmation status {other}: {history:?}"),
        }
    }
    assert!(
        history.iter().any(|c| c.3 == "unconfirmed"),
        "eu did fail: {history:?}"
    );
    assert_eq!(
        api.get(&format!("/v1/incidents?monitorId={confirmed}"))
            .body["pagination"]["total"],
        0,
        "a failure only eu sees never opens an incident"
    );
    let uptime = api.get(&format!("/v1/monitors/{confirmed}/uptime")).body["data"].clone();
    assert_eq!(uptime["uptimePercent"], 100.0, "{uptime}");
    assert_eq!(
        api.get(&format!("/v1/monitors/{confirmed}")).body["data"]["status"],
        "up"
    );

    // The outage both regions see: confirmed, one incident, one notification.
    let incident = wait_for(
        "an incident for the outage",
        Duration::from_secs(30),
        || {
            api.get(&format!("/v1/incidents?monitorId={outage}")).body["data"][0]
                .as_object()
                .cloned()
        },
    );
    let first = incident["failure"]["region"]
        .as_str()
        .expect("region")
        .to_string();
    let v = verdicts(&api, &outage);
    let opening = v.iter().find(|c| c.2).expect("a counted check");
    assert_eq!(
        (opening.0.as_str(), opening.1, opening.3.as_str()),
        (first.as_str(), false, "confirmed"),
        "the failure that counts is the first region's, confirmed by the other: {v:?}"
    );
    assert!(
        v.iter()
            .any(|c| c.3 == "confirming" && c.0 != first && !c.2),
        "the confirming check is kept as history: {v:?}"
    );
    std::thread::sleep(Duration::from_secs(2));
    let created: Vec<_> = receiver
        .at("/hook")
        .into_iter()
        .filter(|r| r.json["event"] == "incident.created" && r.json["monitor"]["id"] == outage)
        .collect();
    assert_eq!(created.len(), 1, "one notification for the outage");
    assert_eq!(
        api.get(&format!("/v1/incidents?monitorId={outage}")).body["pagination"]["total"],
        1
    );
}
