//! End to end: `ping` monitors send real ICMP echo requests (IPv4 and IPv6 loopback, and a
//! test host in a network namespace that stops answering), and `ssl` monitors complete real
//! TLS handshakes with certificates made for the test: untrusted until their CA is added
//! through `tls_extra_roots`, then trusted; a certificate about to expire is announced
//! with `ssl.expiry_critical` exactly once.

use crate::support;

use support::{sinks, tls};

use serde_json::{Value, json};
use sinks::Receiver;
use std::time::Duration;
use support::{Api, Server, wait_for};
use tls::{NetnsHost, TestCa, TlsServer};

fn create(api: &Api, body: Value) -> String {
    let r = api.post("/v1/monitors", &body);
    assert_eq!(r.status, 201, "create failed: {}", r.body);
    r.body["data"]["id"].as_str().expect("id").to_string()
}

fn checks(api: &Api, id: &str) -> Vec<Value> {
    let r = api.get(&format!("/v1/monitors/{id}/checks?limit=50"));
    assert_eq!(r.status, 200, "{}", r.body);
    r.body["data"].as_array().cloned().unwrap_or_default()
}

/// Wait for a check of `id` that `pred` accepts.
fn wait_for_check(api: &Api, id: &str, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
    wait_for(&format!("{what} ({id})"), Duration::from_secs(30), || {
        checks(api, id).into_iter().find(|c| pred(c))
    })
}

#[test]
fn ping_monitors_reach_loopback_and_report_silence() {
    let server = Server::start(&[]);
    let api = server.client();

    let v4 = create(
        &api,
        json!({"name": "v4", "type": "ping", "hostname": "127.0.0.1", "packetCount": 2, "interval": 1}),
    );
    let v6 = create(
        &api,
        json!({"name": "v6", "type": "ping", "hostname": "::1", "interval": 1}),
    );
    let named = create(
        &api,
        json!({"name": "named", "type": "ping", "hostname": "localhost", "interval": 1}),
    );
    let m = api.get(&format!("/v1/monitors/{v6}")).body;
    assert_eq!(m["data"]["packetCount"], 3, "default packet count");

    for (id, address) in [(&v4, "127.0.0.1"), (&v6, "::1")] {
        let c = wait_for_check(&api, id, "a passing ping", |c| c["ok"] == true);
        assert_eq!(c["details"]["address"], address, "{c}");
        assert!(c["responseTimeMs"].is_u64(), "{c}");
        assert_eq!(c["details"]["received"], c["details"]["sent"], "{c}");
    }
    assert_eq!(
        wait_for_check(&api, &named, "a passing ping", |c| c["ok"] == true)["ok"],
        true
    );
    assert_eq!(
        api.get(&format!("/v1/monitors/{v4}")).body["data"]["status"],
        "up"
    );

    // A test host of our own that answers, then drops every echo request.
    let host = match NetnsHost::create() {
        Ok(h) => h,
        Err(why) => {
            eprintln!("SKIPPED the unanswered-ping part: cannot create a test host: {why}");
            return;
        }
    };
    let quiet = create(
        &api,
        json!({"name": "quiet", "type": "ping", "hostname": host.address, "packetCount": 2, "interval": 2, "timeout": 2}),
    );
    wait_for_check(&api, &quiet, "a reply from the test host", |c| {
        c["ok"] == true
    });
    host.ignore_echo(true);
    let expected = format!("No reply from {} to 2 echo requests", host.address);
    let failed = wait_for_check(&api, &quiet, "silence from the test host", |c| {
        c["reason"] == expected.as_str()
    });
    assert_eq!(failed["ok"], false);
    assert_eq!(failed["responseTimeMs"], Value::Null);
    assert_eq!(failed["details"]["packetLossPercent"], 100.0);
}

#[test]
fn ping_and_ssl_fields_are_validated() {
    let server = Server::start(&[]);
    let api = server.client();
    let bad = |body: Value, field: &str| {
        let r = api.post("/v1/monitors", &body);
        r.assert_error(400, "VALIDATION_ERROR");
        let fields: Vec<&str> = r.body["error"]["details"]
            .as_array()
            .expect("details")
            .iter()
            .filter_map(|d| d["field"].as_str())
            .collect();
        assert!(fields.contains(&field), "{field} not in {}", r.body);
    };
    let ping = |extra: Value| {
        let mut b = json!({"name": "p", "type": "ping", "interval": 30});
        b.as_object_mut()
            .expect("object")
            .extend(extra.as_object().expect("object").clone());
        b
    };
    bad(ping(json!({})), "hostname");
    bad(ping(json!({"hostname": "https://example.com"})), "hostname");
    bad(
        ping(json!({"hostname": "a", "packetCount": "3"})),
        "packetCount",
    );
    bad(
        ping(json!({"hostname": "a", "packetCount": 11})),
        "packetCount",
    );
    bad(ping(json!({"hostname": "a", "port": 443})), "port");
    let ssl = |extra: Value| {
        let mut b = json!({"name": "s", "type": "ssl", "hostname": "localhost", "interval": 30});
        b.as_object_mut()
            .expect("object")
            .extend(extra.as_object().expect("object").clone());
        b
    };
    bad(ssl(json!({"port": 0})), "port");
    bad(ssl(json!({"warningDays": "30"})), "warningDays");
    bad(
        ssl(json!({"warningDays": 5, "criticalDays": 10})),
        "criticalDays",
    );
    bad(
        ssl(json!({"warningDays": 30, "warningPercent": 20})),
        "warningPercent",
    );
    bad(ssl(json!({"criticalPercent": 0})), "criticalPercent");
    let r = api.get("/v1/monitors");
    assert_eq!(r.body["data"], json!([]), "nothing was created");

    // Defaults are filled in; a threshold can be a share of the lifetime instead of days.
    let id = create(&api, ssl(json!({"warningPercent": 33.3})));
    let m = api.get(&format!("/v1/monitors/{id}")).body["data"].clone();
    assert_eq!(
        (&m["port"], &m["warningPercent"], &m["criticalDays"]),
        (&json!(443), &json!(33.3), &json!(7))
    );
    assert!(m.get("warningDays").is_none(), "{m}");
    // Switching back to days replaces the percentage.
    let r = api.patch(&format!("/v1/monitors/{id}"), &json!({"warningDays": 20}));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["data"]["warningDays"], 20);
    assert!(r.body["data"].get("warningPercent").is_none(), "{}", r.body);

    // Both plugins are listed with their schemas.
    let plugins = api.get("/v1/plugins").body["data"].clone();
    for name in ["ping", "ssl"] {
        let p = plugins
            .as_array()
            .expect("list")
            .iter()
            .find(|p| p["name"] == name)
            .unwrap_or_else(|| panic!("{name} in {plugins}"));
        assert_eq!(p["kind"], "monitor");
        assert_eq!(p["configSchema"]["required"], json!(["hostname"]));
    }
}

#[test]
fn ssl_monitors_check_trust_names_and_expiry() {
    let ca = TestCa::new("Tocsin Test CA");
    let healthy = TlsServer::start(&ca.leaf(&["localhost", "127.0.0.1"], -1, 90));
    let expiring = TlsServer::start(&ca.leaf(&["localhost"], -85, 5));
    let expired = TlsServer::start(&ca.leaf(&["localhost"], -90, -2));

    // Without the CA, the chain leads nowhere trusted.
    let untrusting = Server::start(&[]);
    let api = untrusting.client();
    let id = create(
        &api,
        json!({"name": "private", "type": "ssl", "hostname": "localhost", "port": healthy.port, "interval": 1}),
    );
    let c = wait_for_check(&api, &id, "an untrusted chain", |c| c["ok"] == false);
    let reason = c["reason"].as_str().unwrap_or_default();
    assert!(
        reason.starts_with("Certificate is not trusted:") && reason.contains("tls_extra_roots"),
        "{c}"
    );
    assert_eq!(c["details"]["certificate"]["chainValid"], false);
    drop(untrusting);

    // With the CA as an extra root, the same service passes.
    let dir = tempfile::tempdir().expect("dir");
    let roots = dir.path().join("roots.pem");
    std::fs::write(&roots, &ca.pem).expect("write roots");
    let receiver = Receiver::start();
    let server = Server::start(&[
        ("TOCSIN_TLS_EXTRA_ROOTS", roots.to_str().expect("path")),
        ("TOCSIN_ALLOW_INSECURE_WEBHOOKS", "true"),
    ]);
    let api = server.client();
    let secret = api.get("/v1/workspace/webhook-secret").body["data"]["secret"]
        .as_str()
        .expect("secret")
        .to_string();
    receiver.set_secret(&secret);
    let policy = api.post(
        "/v1/alert-policies",
        &json!({"name": "certs", "channels": [{"type": "webhook", "url": receiver.url("/certs")}]}),
    );
    assert_eq!(policy.status, 201, "{}", policy.body);
    let policy_id = policy.body["data"]["id"].as_str().expect("id").to_string();

    let trusted = create(
        &api,
        json!({"name": "private", "type": "ssl", "hostname": "localhost", "port": healthy.port, "interval": 1, "alertPolicyId": policy_id}),
    );
    let c = wait_for_check(&api, &trusted, "a trusted chain", |c| c["ok"] == true);
    let cert = &c["details"]["certificate"];
    assert_eq!(cert["chainValid"], true, "{c}");
    assert_eq!(cert["hostnameMatches"], true, "{c}");
    assert!(
        cert["issuer"]
            .as_str()
            .unwrap_or("")
            .contains("Tocsin Test CA"),
        "{c}"
    );
    assert_eq!(cert["sans"], json!(["localhost", "127.0.0.1"]));
    // The API's one timestamp form, milliseconds included, in details too.
    for field in ["notBefore", "expiresAt"] {
        let text = cert[field].as_str().unwrap_or("");
        assert!(
            text.len() == 24 && text.ends_with(".000Z") && text.as_bytes()[10] == b'T',
            "{field}: {c}"
        );
    }
    assert!(
        c.get("details").and_then(|d| d.get("expiry")).is_none(),
        "{c}"
    );

    // https checks trust the extra roots too.
    let https = create(
        &api,
        json!({"name": "https", "type": "http", "url": format!("https://localhost:{}/", healthy.port), "method": "GET", "interval": 1}),
    );
    wait_for_check(&api, &https, "an https check through the private CA", |c| {
        c["ok"] == true
    });

    // A name the certificate does not cover.
    let mismatch = TlsServer::start(&ca.leaf(&["svc.internal"], -1, 90));
    let other = create(
        &api,
        json!({"name": "other", "type": "ssl", "hostname": "localhost", "port": mismatch.port, "interval": 1}),
    );
    let c = wait_for_check(&api, &other, "a name mismatch", |c| c["ok"] == false);
    assert!(
        c["reason"]
            .as_str()
            .unwrap_or("")
            .starts_with("Certificate does not match localhost:"),
        "{c}"
    );
    assert!(
        c["reason"].as_str().unwrap_or("").contains("svc.internal"),
        "{c}"
    );

    // Expired: fails, and says when.
    let old = create(
        &api,
        json!({"name": "old", "type": "ssl", "hostname": "localhost", "port": expired.port, "interval": 1}),
    );
    let c = wait_for_check(&api, &old, "an expired certificate", |c| c["ok"] == false);
    assert!(
        c["reason"]
            .as_str()
            .unwrap_or("")
            .starts_with("Certificate expired on"),
        "{c}"
    );

    // Five days left: the check passes, and the channel hears ssl.expiry_critical once.
    let soon = create(
        &api,
        json!({"name": "soon", "type": "ssl", "hostname": "localhost", "port": expiring.port, "interval": 1, "alertPolicyId": policy_id}),
    );
    let first = wait_for_check(&api, &soon, "a check of the expiring certificate", |c| {
        c["ok"] == true
    });
    assert_eq!(first["details"]["expiry"], "critical", "{first}");
    let ssl_events = || -> Vec<sinks::Received> {
        receiver
            .at("/certs")
            .into_iter()
            .filter(|r| r.json["event"].as_str().unwrap_or("").starts_with("ssl."))
            .collect()
    };
    wait_for("the expiry notice", Duration::from_secs(20), || {
        (!ssl_events().is_empty()).then_some(())
    });
    // Several more checks of the same certificate must not repeat it.
    let seen = checks(&api, &soon).len();
    wait_for("four more checks", Duration::from_secs(30), || {
        (checks(&api, &soon).len() >= seen + 4).then_some(())
    });
    std::thread::sleep(Duration::from_millis(500));
    let notices = ssl_events();
    assert_eq!(notices.len(), 1, "{notices:?}");
    let n = &notices[0];
    assert!(n.verified, "signed like every webhook");
    assert_eq!(n.json["event"], "ssl.expiry_critical");
    assert_eq!(n.json["monitor"]["id"], soon.as_str());
    assert_eq!(n.json["monitor"]["hostname"], "localhost");
    let days = n.json["ssl"]["daysRemaining"].as_i64().expect("days");
    assert!((4..=5).contains(&days), "{}", n.json);
    assert!(
        n.json["ssl"]["expiresAt"]
            .as_str()
            .is_some_and(|t| t.len() == 24 && t.ends_with(".000Z")),
        "{}",
        n.json
    );
    assert!(
        n.json["ssl"]["issuer"]
            .as_str()
            .unwrap_or("")
            .contains("Tocsin Test CA")
    );
    assert!(n.json.get("incident").is_none(), "{}", n.json);
    // The healthy certificate on the same policy caused nothing.
    assert!(
        notices
            .iter()
            .all(|r| r.json["monitor"]["id"] != trusted.as_str())
    );
}
