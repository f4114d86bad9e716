//! End to end: `tocsin serve` checks a real axum target on loopback through the http
//! plugin, and reports passes and failures with the reasons a person would act on.

use crate::support;

use support::target;

use serde_json::{Value, json};
use std::time::Duration;
use support::{Api, Server, wait_for};
use target::Target;

fn create(api: &Api, body: Value) -> String {
    let r = api.post("/v1/monitors", &body);
    assert_eq!(r.status, 201, "create failed: {}", r.body);
    r.body["data"]["id"].as_str().expect("id").to_string()
}

/// Wait for a check of `id` whose reason is `reason` (or a pass when None).
fn wait_for_check(api: &Api, id: &str, reason: Option<&str>) -> Value {
    wait_for(
        &format!("a check of {id} with reason {reason:?}"),
        Duration::from_secs(30),
        || {
            let r = api.get(&format!("/v1/monitors/{id}/checks?limit=20"));
            assert_eq!(r.status, 200, "{}", r.body);
            r.body["data"]
                .as_array()?
                .iter()
                .find(|c| c["reason"].as_str() == reason)
                .cloned()
        },
    )
}

fn monitor_status(api: &Api, id: &str) -> String {
    api.get(&format!("/v1/monitors/{id}")).body["data"]["status"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn http_monitor_passes_then_fails_with_clear_reasons() {
    let target = Target::start();
    let server = Server::start(&[]);
    let api = server.client();

    // A healthy endpoint passes and the monitor comes up.
    let ok = create(
        &api,
        json!({"name": "ok", "type": "http", "url": target.url("/ok"), "method": "GET", "interval": 1, "bodyContains": "all ok"}),
    );
    let check = wait_for_check(&api, &ok, None);
    assert_eq!(check["ok"], true);
    assert_eq!(check["statusCode"], 200);
    assert!(check["responseTimeMs"].as_i64().is_some());
    assert_eq!(check["region"], "local");
    wait_for("ok monitor up", Duration::from_secs(10), || {
        (monitor_status(&api, &ok) == "up").then_some(())
    });

    // The target starts answering 503: the failures name both codes and, after the
    // default threshold of two, the monitor is down; recovery brings it back up.
    let flaky = create(
        &api,
        json!({"name": "flaky", "type": "http", "url": target.url("/status"), "method": "GET", "interval": 1}),
    );
    wait_for_check(&api, &flaky, None);
    target.set_status(503);
    let failed = wait_for_check(&api, &flaky, Some("Expected status 200, got 503"));
    assert_eq!(failed["ok"], false);
    assert_eq!(failed["statusCode"], 503);
    wait_for("flaky monitor down", Duration::from_secs(15), || {
        (monitor_status(&api, &flaky) == "down").then_some(())
    });
    let m = api.get(&format!("/v1/monitors/{flaky}")).body;
    assert!(
        m["data"]["consecutiveFailures"].as_i64().unwrap_or(0) >= 2,
        "{m}"
    );
    target.set_status(200);
    wait_for("flaky monitor up again", Duration::from_secs(15), || {
        (monitor_status(&api, &flaky) == "up").then_some(())
    });

    // A target slower than the timeout.
    let slow = create(
        &api,
        json!({"name": "slow", "type": "http", "url": target.url("/slow"), "method": "GET", "interval": 2, "timeout": 1}),
    );
    let timed_out = wait_for_check(&api, &slow, Some("Timed out after 1 s"));
    assert_eq!(timed_out["responseTimeMs"], Value::Null);

    // An endless redirect loop, and a chain that is just short enough.
    let looping = create(
        &api,
        json!({"name": "loop", "type": "http", "url": target.url("/loop"), "method": "GET", "interval": 1, "maxRedirects": 3}),
    );
    wait_for_check(&api, &looping, Some("Too many redirects (more than 3)"));
    let chain = create(
        &api,
        json!({"name": "chain", "type": "http", "url": target.url("/redirect/3"), "method": "GET", "interval": 1, "maxRedirects": 3, "bodyContains": "end of chain"}),
    );
    wait_for_check(&api, &chain, None);
    // Not following: the 302 itself is compared.
    let no_follow = create(
        &api,
        json!({"name": "302", "type": "http", "url": target.url("/redirect/1"), "method": "GET", "interval": 1, "followRedirects": false, "expectedStatusCode": 302}),
    );
    wait_for_check(&api, &no_follow, None);

    // A body that lacks the expected text, and one that has a forbidden text.
    let missing = create(
        &api,
        json!({"name": "body", "type": "http", "url": target.url("/ok"), "method": "GET", "interval": 1, "bodyContains": "goodbye"}),
    );
    wait_for_check(
        &api,
        &missing,
        Some("Response body does not contain \"goodbye\""),
    );
    let forbidden = create(
        &api,
        json!({"name": "nobody", "type": "http", "url": target.url("/ok"), "method": "GET", "interval": 1, "bodyNotContains": "ok"}),
    );
    wait_for_check(&api, &forbidden, Some("Response body contains \"ok\""));

    // Method, headers and body reach the target.
    let post = create(
        &api,
        json!({"name": "post", "type": "http", "url": target.url("/echo"), "method": "POST", "interval": 1,
        "headers": {"X-Probe": "tocsin"}, "body": "ping", "bodyContains": "POST tocsin ping"}),
    );
    wait_for_check(&api, &post, None);

    // Nothing listens: connection refused.
    let port = support::free_port();
    let refused = create(
        &api,
        json!({"name": "refused", "type": "http", "url": format!("http://127.0.0.1:{port}/"), "method": "HEAD", "interval": 1}),
    );
    wait_for_check(&api, &refused, Some("Connection refused"));

    // Uptime reflects the checks that ran.
    let uptime = api.get(&format!("/v1/monitors/{ok}/uptime")).body;
    assert_eq!(uptime["data"]["uptimePercent"], 100.0, "{uptime}");
    assert!(uptime["data"]["totalChecks"].as_u64().unwrap_or(0) >= 1);
    let uptime = api.get(&format!("/v1/monitors/{refused}/uptime")).body;
    assert_eq!(uptime["data"]["uptimePercent"], 0.0, "{uptime}");
}

#[test]
fn paused_monitors_stop_checking_and_resume() {
    let target = Target::start();
    let server = Server::start(&[]);
    let api = server.client();
    let id = create(
        &api,
        json!({"name": "p", "type": "http", "url": target.url("/status"), "method": "GET", "interval": 1}),
    );
    wait_for_check(&api, &id, None);

    let r = api.request("POST", &format!("/v1/monitors/{id}/pause"), None);
    assert_eq!(r.status, 200);
    assert_eq!(r.body["data"]["status"], "paused");
    std::thread::sleep(Duration::from_millis(1500));
    let hits = target.knobs.hits.load(std::sync::atomic::Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(
        target.knobs.hits.load(std::sync::atomic::Ordering::SeqCst),
        hits,
        "a paused monitor was checked"
    );
    assert_eq!(monitor_status(&api, &id), "paused");

    // Pausing again is a no-op; resuming checks at once.
    assert_eq!(
        api.request("POST", &format!("/v1/monitors/{id}/pause"), None)
            .status,
        200
    );
    let r = api.request("POST", &format!("/v1/monitors/{id}/resume"), None);
    assert_eq!(r.body["data"]["status"], "pending");
    wait_for("checks after resume", Duration::from_secs(10), || {
        (target.knobs.hits.load(std::sync::atomic::Ordering::SeqCst) > hits).then_some(())
    });
    wait_for("up after resume", Duration::from_secs(10), || {
        (monitor_status(&api, &id) == "up").then_some(())
    });

    // A deleted monitor is not checked any more, and its history is gone.
    assert_eq!(api.delete(&format!("/v1/monitors/{id}")).status, 204);
    std::thread::sleep(Duration::from_millis(1500));
    let hits = target.knobs.hits.load(std::sync::atomic::Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(2000));
    assert_eq!(
        target.knobs.hits.load(std::sync::atomic::Ordering::SeqCst),
        hits,
        "a deleted monitor was checked"
    );
    api.get(&format!("/v1/monitors/{id}/checks"))
        .assert_error(404, "MONITOR_NOT_FOUND");
}

#[test]
fn monitors_survive_a_restart() {
    let target = Target::start();
    let temp = tempfile::tempdir().expect("tempdir");
    let id = {
        let mut server = Server::start_in(temp.path(), &[]);
        let api = server.client();
        let id = create(
            &api,
            json!({"name": "r", "type": "http", "url": target.url("/ok"), "method": "GET", "interval": 1}),
        );
        wait_for_check(&api, &id, None);
        server.kill();
        id
    };
    let server = Server::start_in(temp.path(), &[]);
    let api = server.client();
    let before = api.get(&format!("/v1/monitors/{id}/checks")).body["pagination"]["total"]
        .as_u64()
        .unwrap_or(0);
    assert!(before >= 1);
    wait_for("checks after restart", Duration::from_secs(15), || {
        let total = api.get(&format!("/v1/monitors/{id}/checks")).body["pagination"]["total"]
            .as_u64()
            .unwrap_or(0);
        (total > before).then_some(())
    });
    // The bootstrap key file was written once, with owner-only permissions.
    let key_file = temp.path().join("bootstrap-admin.key");
    assert_eq!(
        std::fs::read_to_string(&key_file).expect("key file").trim(),
        support::ADMIN_KEY
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&key_file)
            .expect("metadata")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}

#[test]
fn keyword_monitors_look_for_text_in_the_body() {
    let target = Target::start();
    let server = Server::start(&[]);
    let api = server.client();
    let keyword = |name: &str, word: &str, mode: Option<&str>| {
        let mut body = json!({"name": name, "type": "keyword", "url": target.url("/ok"), "method": "GET", "interval": 1, "keyword": word});
        if let Some(m) = mode {
            body["keywordMode"] = json!(m);
        }
        create(&api, body)
    };
    let present = keyword("present", "all ok", None);
    let missing = keyword("missing", "goodbye", None);
    let unwanted = keyword("unwanted", "ok", Some("absent"));
    let clean = keyword("clean", "error", Some("absent"));

    let m = api.get(&format!("/v1/monitors/{present}")).body;
    assert_eq!(
        (
            m["data"]["keyword"].as_str(),
            m["data"]["keywordMode"].as_str()
        ),
        (Some("all ok"), Some("present"))
    );
    assert_eq!(wait_for_check(&api, &present, None)["ok"], true);
    assert_eq!(wait_for_check(&api, &clean, None)["ok"], true);
    wait_for_check(
        &api,
        &missing,
        Some("Keyword \"goodbye\" not found in the response"),
    );
    wait_for_check(
        &api,
        &unwanted,
        Some("Keyword \"ok\" found in the response"),
    );
    // The http rules still apply first.
    let status = create(
        &api,
        json!({"name": "s", "type": "keyword", "url": target.url("/status"), "method": "GET", "interval": 1, "keyword": "status", "expectedStatusCode": 201}),
    );
    wait_for_check(&api, &status, Some("Expected status 201, got 200"));

    // The incident's failure names the keyword (failure.keyword in events).
    let incident = wait_for(
        "an incident for the missing keyword",
        Duration::from_secs(20),
        || {
            api.get(&format!("/v1/incidents?monitorId={missing}")).body["data"]
                .as_array()?
                .first()
                .cloned()
        },
    );
    assert_eq!(incident["failure"]["keyword"], "goodbye");
    assert_eq!(
        incident["failure"]["reason"],
        "Keyword \"goodbye\" not found in the response"
    );

    // Validation.
    let r = api.post("/v1/monitors", &json!({"name": "k", "type": "keyword", "url": target.url("/ok"), "method": "GET", "interval": 60, "keywordMode": "maybe"}));
    r.assert_error(400, "VALIDATION_ERROR");
    let fields: Vec<&str> = r.body["error"]["details"]
        .as_array()
        .expect("details")
        .iter()
        .filter_map(|d| d["field"].as_str())
        .collect();
    assert_eq!(fields, ["keyword", "keywordMode"]);
    let plugins = api.get("/v1/plugins?kind=monitor").body;
    let schema = plugins["data"]
        .as_array()
        .expect("data")
        .iter()
        .find(|p| p["name"] == "keyword")
        .expect("keyword plugin")["configSchema"]
        .clone();
    assert_eq!(schema["required"], json!(["url", "keyword"]));
    assert_eq!(schema["properties"]["method"]["default"], "GET");
}

/// Checks run on threads of their own (`check_threads`); with several of them, checks,
/// failures, incidents and a graceful stop that writes the last results all still work.
#[test]
fn several_check_threads_check_record_and_stop_cleanly() {
    let target = Target::start();
    let temp = tempfile::tempdir().expect("tempdir");
    let env = [("TOCSIN_CHECK_THREADS", "3")];
    let mut server = Server::start_in(temp.path(), &env);
    let api = server.client();
    let ids: Vec<String> = (0..6)
        .map(|i| {
            create(
                &api,
                json!({"name": format!("t{i}"), "type": "http", "url": target.url("/status"), "method": "GET", "interval": 1}),
            )
        })
        .collect();
    for id in &ids {
        wait_for_check(&api, id, None);
        wait_for("monitor up", Duration::from_secs(15), || {
            (monitor_status(&api, id) == "up").then_some(())
        });
    }
    target.set_status(503);
    for id in &ids {
        wait_for_check(&api, id, Some("Expected status 200, got 503"));
        wait_for("monitor down", Duration::from_secs(15), || {
            (monitor_status(&api, id) == "down").then_some(())
        });
    }
    let incidents = api.get("/v1/incidents?status=open").body;
    for id in &ids {
        assert!(
            incidents["data"]
                .as_array()
                .is_some_and(|a| a.iter().any(|i| i["monitorId"] == id.as_str())),
            "no open incident for {id}: {incidents}"
        );
    }
    let total = |api: &Api, id: &str| {
        api.get(&format!("/v1/monitors/{id}/checks")).body["pagination"]["total"]
            .as_u64()
            .unwrap_or(0)
    };
    let before: Vec<u64> = ids.iter().map(|id| total(&api, id)).collect();
    server.stop();
    let server = Server::start_in(temp.path(), &env);
    let api = server.client();
    for (id, before) in ids.iter().zip(before) {
        assert!(total(&api, id) >= before, "{id} lost results in the stop");
    }
    target.set_status(200);
    for id in &ids {
        wait_for("monitor up again", Duration::from_secs(15), || {
            (monitor_status(&api, id) == "up").then_some(())
        });
    }
}
