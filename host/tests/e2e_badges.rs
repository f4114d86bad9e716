//! Public badges against a running server: a writer makes a monitor's badge public, anyone
//! with the link sees its state, uptime and response time as SVG (and nothing else of the
//! monitor), the link follows the monitor down, a new token or a revocation ends the old
//! links, and neither a read key nor another workspace can make or see one.

use crate::support;

use serde_json::json;
use std::time::Duration;
use support::target::Target;
use support::{Reply, Server, wait_for};

fn svg(r: &Reply) -> &str {
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.headers["content-type"], "image/svg+xml; charset=utf-8");
    assert_eq!(r.headers["content-security-policy"], "default-src 'none'");
    r.body.as_str().expect("an SVG document")
}

/// The path of a badge URL (the server's public URL is this server's address).
fn path_of(url: &serde_json::Value) -> String {
    let url = url.as_str().expect("a URL");
    url[url.find("/badge/").expect("a badge path")..].to_string()
}

#[test]
fn a_public_badge_shows_a_monitors_state_uptime_and_response_and_no_more() {
    let target = Target::start();
    let server = Server::start(&[]);
    let api = server.client();
    let anyone = api.without_key();
    let made = api.post(
        "/v1/monitors",
        &json!({"name": "Secret billing backend", "type": "http", "url": target.url("/status"), "method": "GET", "interval": 1, "timeout": 1}),
    );
    assert_eq!(made.status, 201, "{}", made.body);
    let id = made.body["data"]["id"].as_str().expect("id").to_string();
    wait_for("the monitor to be up", Duration::from_secs(30), || {
        (api.get(&format!("/v1/monitors/{id}")).body["data"]["status"] == "up").then_some(())
    });

    // Not public until someone makes it so; a read key may not.
    api.get(&format!("/v1/monitors/{id}/badge"))
        .assert_error(404, "BADGE_NOT_FOUND");
    let read = api.post("/v1/api-keys", &json!({"name": "reader", "role": "read"}));
    assert_eq!(read.status, 201, "{}", read.body);
    let read = read.body["data"]["secret"]
        .as_str()
        .expect("secret")
        .to_string();
    api.with_key(&read)
        .request("PUT", &format!("/v1/monitors/{id}/badge"), None)
        .assert_error(403, "FORBIDDEN");
    let badge = api.request("PUT", &format!("/v1/monitors/{id}/badge"), None);
    assert_eq!(badge.status, 200, "{}", badge.body);
    let data = &badge.body["data"];
    let token = data["token"].as_str().expect("token").to_string();
    assert_eq!(
        data["markdown"],
        format!("![status]({})", data["statusUrl"].as_str().expect("url"))
    );
    assert_eq!(
        api.with_key(&read)
            .get(&format!("/v1/monitors/{id}/badge"))
            .body["data"]["token"],
        token.as_str()
    );

    // Anyone with the link: the state, and nothing of the monitor's name or target.
    let status = anyone.get(&path_of(&data["statusUrl"]));
    let text = svg(&status);
    assert!(
        text.contains(">status</text>") && text.contains(">up</text>"),
        "{text}"
    );
    assert!(
        !text.contains("billing") && !text.contains("127.0.0.1"),
        "{text}"
    );
    assert!(
        status.headers["cache-control"]
            .to_str()
            .is_ok_and(|c| c.contains("max-age=60"))
    );
    let uptime = anyone.get(&path_of(&data["uptimeUrl"]));
    let text = svg(&uptime);
    assert!(
        text.contains(">uptime 30d</text>") && text.contains(">100%</text>"),
        "{text}"
    );
    let week = anyone.get(&format!(
        "/badge/{token}/uptime.svg?window=7d&label=api%20%3Cuptime%3E"
    ));
    let text = svg(&week);
    assert!(text.contains(">api &lt;uptime&gt;</text>"), "{text}");
    let response = anyone.get(&path_of(&data["responseUrl"]));
    let text = svg(&response);
    assert!(
        text.contains(">response</text>") && text.contains(" ms</text>"),
        "{text}"
    );
    anyone
        .get(&format!("/badge/{token}/uptime.svg?window=2d"))
        .assert_error(400, "VALIDATION_ERROR");
    anyone
        .get(&format!("/badge/{token}/status.svg?label="))
        .assert_error(400, "VALIDATION_ERROR");

    // It follows the monitor down.
    target.set_status(500);
    wait_for("the badge to read down", Duration::from_secs(30), || {
        svg(&anyone.get(&format!("/badge/{token}/status.svg")))
            .contains(">down</text>")
            .then_some(())
    });

    // Another workspace can neither see nor make it.
    let ws_b = server.cli(&["workspace", "create", "--name", "B"]);
    let key_b = server.cli(&["key", "create", "--workspace", &ws_b, "--role", "admin"]);
    let b = api.with_key(&key_b);
    b.get(&format!("/v1/monitors/{id}/badge"))
        .assert_error(404, "MONITOR_NOT_FOUND");
    b.request("PUT", &format!("/v1/monitors/{id}/badge"), None)
        .assert_error(404, "MONITOR_NOT_FOUND");

    // A new token ends the old links; a revocation ends the new ones.
    let again = api.request("PUT", &format!("/v1/monitors/{id}/badge"), None);
    assert_eq!(again.status, 200, "{}", again.body);
    let fresh = again.body["data"]["token"]
        .as_str()
        .expect("token")
        .to_string();
    assert_ne!(fresh, token);
    anyone
        .get(&format!("/badge/{token}/status.svg"))
        .assert_error(404, "BADGE_NOT_FOUND");
    svg(&anyone.get(&format!("/badge/{fresh}/status.svg")));
    let revoked = api.delete(&format!("/v1/monitors/{id}/badge"));
    assert_eq!(revoked.status, 204, "{}", revoked.body);
    anyone
        .get(&format!("/badge/{fresh}/status.svg"))
        .assert_error(404, "BADGE_NOT_FOUND");
    api.delete(&format!("/v1/monitors/{id}/badge"))
        .assert_error(404, "BADGE_NOT_FOUND");

    // A deleted monitor takes its badge with it.
    let last = api.request("PUT", &format!("/v1/monitors/{id}/badge"), None);
    let last = last.body["data"]["token"]
        .as_str()
        .expect("token")
        .to_string();
    assert_eq!(api.delete(&format!("/v1/monitors/{id}")).status, 204);
    anyone
        .get(&format!("/badge/{last}/status.svg"))
        .assert_error(404, "BADGE_NOT_FOUND");

    // Each change is in the audit log, never the token.
    let log = api.get("/v1/audit-log?limit=50").body;
    let text = log.to_string();
    assert!(
        text.contains("badge.set") && text.contains("badge.delete"),
        "{log}"
    );
    assert!(!text.contains(&fresh) && !text.contains(&last), "{log}");
}
