//! End to end: the REST contract of a running server: envelope, authentication, every
//! error code a client can cause, paging and sorting, and the OpenAPI document.

use crate::support;

use serde_json::{Value, json};
use support::Server;

fn http_monitor(name: &str) -> Value {
    json!({"name": name, "type": "http", "url": "http://127.0.0.1:9/", "method": "GET", "interval": 3600})
}

/// A monitor created as "Public API" and renamed "Renamed" through PATCH; its id.
fn created_and_renamed(api: &support::Api) -> String {
    let r = api.post("/v1/monitors", &http_monitor("Public API"));
    assert_eq!(r.status, 201, "{}", r.body);
    let id = r.body["data"]["id"].as_str().expect("id").to_string();
    let r = api.patch(&format!("/v1/monitors/{id}"), &json!({"name": "Renamed"}));
    assert_eq!(r.status, 200, "{}", r.body);
    id
}

#[test]
/// Authentication: every /v1 route needs a valid key; health routes are public.
fn keys_are_required_except_on_public_routes() {
    let server = Server::start(&[]);
    let api = server.client();

    // --- authentication -------------------------------------------------------------
    api.without_key()
        .get("/v1/monitors")
        .assert_error(401, "UNAUTHORIZED");
    api.with_key("tcs_0000000000000000000000000000000000000000")
        .get("/v1/monitors")
        .assert_error(401, "UNAUTHORIZED");
    api.with_key("not-a-key")
        .get("/v1/openapi.json")
        .assert_error(401, "UNAUTHORIZED");
    let r = api.raw("GET", "/v1/monitors", None, vec![]);
    assert_eq!(r.status, 200);
    // Public routes need no key.
    assert_eq!(api.without_key().get("/healthz").status, 200);
    assert_eq!(
        api.without_key().get("/readyz").body["data"]["status"],
        "ok"
    );
}

#[test]
/// Create fills in defaults; a failed patch changes nothing; delete answers 204 then 404.
fn a_monitor_is_created_with_defaults_read_patched_and_deleted() {
    let server = Server::start(&[]);
    let api = server.client();

    // --- create, with defaults filled in ------------------------------------------------
    let r = api.post("/v1/monitors", &http_monitor("Public API"));
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.body["success"], true);
    assert!(
        r.body["meta"]["requestId"]
            .as_str()
            .is_some_and(|s| s.starts_with("req_"))
    );
    assert!(
        r.body["meta"]["timestamp"]
            .as_str()
            .is_some_and(|s| s.ends_with('Z') && s.len() == 24)
    );
    assert_eq!(
        r.headers["x-request-id"].to_str().ok(),
        r.body["meta"]["requestId"].as_str()
    );
    let m = &r.body["data"];
    let id = m["id"].as_str().expect("id").to_string();
    assert!(id.starts_with("mon_") && id.len() == 30);
    assert_eq!(m["status"], "pending");
    assert_eq!(m["timeout"], 10);
    assert_eq!(m["expectedStatusCode"], 200);
    assert_eq!(m["followRedirects"], true);
    assert_eq!(m["maxRedirects"], 10);
    assert_eq!(m["expectedStatusRange"], false);
    assert_eq!(m["regions"], json!(["local"]));
    assert_eq!(m["alertPolicyId"], Value::Null);
    assert!(m["createdAt"].as_str().is_some_and(|s| s.ends_with('Z')));

    // --- read, patch --------------------------------------------------------------------
    let r = api.get(&format!("/v1/monitors/{id}"));
    assert_eq!(r.body["data"]["name"], "Public API");
    let r = api.patch(
        &format!("/v1/monitors/{id}"),
        &json!({"name": "Renamed", "bodyContains": "ok", "timeout": 5}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["data"]["name"], "Renamed");
    assert_eq!(r.body["data"]["bodyContains"], "ok");
    assert_eq!(r.body["data"]["url"], "http://127.0.0.1:9/");
    let r = api.patch(
        &format!("/v1/monitors/{id}"),
        &json!({"bodyContains": null}),
    );
    assert_eq!(r.body["data"]["bodyContains"], Value::Null);
    // A failed patch changes nothing.
    api.patch(
        &format!("/v1/monitors/{id}"),
        &json!({"name": "", "maxRedirects": 99}),
    )
    .assert_error(400, "VALIDATION_ERROR");
    api.patch(&format!("/v1/monitors/{id}"), &json!({"type": "ping"}))
        .assert_error(400, "VALIDATION_ERROR");
    assert_eq!(
        api.get(&format!("/v1/monitors/{id}")).body["data"]["name"],
        "Renamed"
    );

    // --- delete ---------------------------------------------------------------------------------
    let r = api.delete(&format!("/v1/monitors/{id}"));
    assert_eq!(r.status, 204);
    assert_eq!(r.body, Value::Null);
    api.get(&format!("/v1/monitors/{id}"))
        .assert_error(404, "MONITOR_NOT_FOUND");
}

#[test]
/// Validation problems are 400 with every field; well-formed but unusable input is 422.
fn invalid_bodies_answer_400_or_422_with_details() {
    let server = Server::start(&[]);
    let api = server.client();

    // --- validation: 400 with details -----------------------------------------------------
    let r = api.post(
        "/v1/monitors",
        &json!({"type": "http", "method": "FETCH", "interval": 0, "url": "ftp://x", "surprise": 1}),
    );
    r.assert_error(400, "VALIDATION_ERROR");
    let fields: Vec<&str> = r.body["error"]["details"]
        .as_array()
        .expect("details")
        .iter()
        .filter_map(|d| d["field"].as_str())
        .collect();
    for f in ["name", "interval", "url", "method", "surprise"] {
        assert!(fields.contains(&f), "missing {f} in {fields:?}");
    }
    // Without a method an http monitor sends GET.
    let get = api.post(
        "/v1/monitors?dryRun=true",
        &json!({"name": "x", "type": "http", "url": "http://a/", "interval": 60}),
    );
    assert_eq!(get.status, 200, "{}", get.body);
    assert_eq!(get.body["data"]["method"], "GET", "{}", get.body);
    api.post("/v1/monitors", &json!({"name": "x", "type": "http", "url": "http://a/", "method": "GET", "interval": "60"})).assert_error(400, "VALIDATION_ERROR");
    api.post("/v1/monitors", &json!({"name": "x", "type": "http", "url": "http://a/", "method": "GET", "interval": 60, "id": "mon_x"})).assert_error(400, "VALIDATION_ERROR");
    api.post("/v1/monitors", &json!({"name": "x", "type": "http", "url": "http://a/", "method": "GET", "interval": 60, "regions": ["mars"]})).assert_error(400, "VALIDATION_ERROR");
    api.post("/v1/monitors", &json!([1, 2]))
        .assert_error(400, "VALIDATION_ERROR");

    // --- 422: well-formed but unusable ------------------------------------------------------
    api.post(
        "/v1/monitors",
        &json!({"name": "x", "type": "carrier-pigeon", "interval": 60}),
    )
    .assert_error(422, "UNPROCESSABLE_ENTITY");
    api.post("/v1/monitors", &json!({"name": "x", "type": "http", "url": "http://a/", "method": "GET", "interval": 5, "timeout": 6})).assert_error(422, "UNPROCESSABLE_ENTITY");
    api.post("/v1/monitors", &json!({"name": "x", "type": "http", "url": "http://a/", "method": "GET", "interval": 60, "alertPolicyId": "pol_01JD6Z3Y5N8Q2W7R4T6V9X0B1C"})).assert_error(422, "UNPROCESSABLE_ENTITY");
}

#[test]
/// Bad JSON, content types, sizes, routes, methods and query parameters answer in the envelope.
fn framework_rejections_speak_the_envelope() {
    let server = Server::start(&[]);
    let api = server.client();

    let id = created_and_renamed(&api);

    // --- framework rejections in the envelope ----------------------------------------------
    api.raw(
        "POST",
        "/v1/monitors",
        Some("application/json"),
        b"{not json".to_vec(),
    )
    .assert_error(400, "VALIDATION_ERROR");
    api.raw("POST", "/v1/monitors", Some("text/plain"), b"{}".to_vec())
        .assert_error(400, "INVALID_CONTENT_TYPE");
    api.raw("POST", "/v1/monitors", None, b"{}".to_vec())
        .assert_error(400, "INVALID_CONTENT_TYPE");
    let big = format!("{{\"name\": \"{}\"}}", "x".repeat(1_100_000));
    api.raw(
        "POST",
        "/v1/monitors",
        Some("application/json"),
        big.into_bytes(),
    )
    .assert_error(413, "PAYLOAD_TOO_LARGE");
    api.get("/v1/nothing-here").assert_error(404, "NOT_FOUND");
    api.without_key()
        .get("/nothing")
        .assert_error(404, "NOT_FOUND");
    api.request("PUT", "/v1/monitors", None)
        .assert_error(405, "METHOD_NOT_ALLOWED");
    api.get("/v1/monitors?limit=0")
        .assert_error(400, "VALIDATION_ERROR");
    api.get("/v1/monitors?limit=101")
        .assert_error(400, "VALIDATION_ERROR");
    api.get("/v1/monitors?page=0")
        .assert_error(400, "VALIDATION_ERROR");
    api.get("/v1/monitors?status=sideways")
        .assert_error(400, "VALIDATION_ERROR");
    api.get("/v1/monitors?sortBy=colour")
        .assert_error(400, "VALIDATION_ERROR");
    api.get("/v1/monitors?order=up")
        .assert_error(400, "VALIDATION_ERROR");
    api.get(&format!("/v1/monitors/{id}/checks?from=yesterday"))
        .assert_error(400, "VALIDATION_ERROR");
}

#[test]
/// Unknown monitor ids answer 404 on every monitor route.
fn unknown_ids_answer_404() {
    let server = Server::start(&[]);
    let api = server.client();

    // --- 404 for unknown ids -----------------------------------------------------------------
    let ghost = "mon_01JD6Z3Y5N8Q2W7R4T6V9X0B1C";
    api.get(&format!("/v1/monitors/{ghost}"))
        .assert_error(404, "MONITOR_NOT_FOUND");
    api.patch(&format!("/v1/monitors/{ghost}"), &json!({"name": "x"}))
        .assert_error(404, "MONITOR_NOT_FOUND");
    api.delete(&format!("/v1/monitors/{ghost}"))
        .assert_error(404, "MONITOR_NOT_FOUND");
    api.request("POST", &format!("/v1/monitors/{ghost}/pause"), None)
        .assert_error(404, "MONITOR_NOT_FOUND");
    api.get(&format!("/v1/monitors/{ghost}/uptime"))
        .assert_error(404, "MONITOR_NOT_FOUND");
}

#[test]
/// Lists page, sort and filter by state.
fn lists_page_sort_and_filter() {
    let server = Server::start(&[]);
    let api = server.client();

    let id = created_and_renamed(&api);

    // --- listing: paging, sorting, filtering ---------------------------------------------------
    for name in ["b", "c", "a"] {
        assert_eq!(api.post("/v1/monitors", &http_monitor(name)).status, 201);
    }
    let r = api.get("/v1/monitors?limit=2");
    assert_eq!(
        r.body["pagination"],
        json!({"page": 1, "limit": 2, "total": 4, "pages": 2, "hasNext": true, "hasPrev": false})
    );
    // Newest first by default.
    assert_eq!(r.body["data"][0]["name"], "a");
    let r = api.get("/v1/monitors?page=2&limit=2");
    assert_eq!(r.body["data"].as_array().map(Vec::len), Some(2));
    assert_eq!(r.body["pagination"]["hasPrev"], true);
    let r = api.get("/v1/monitors?page=9");
    assert_eq!(r.status, 200);
    assert_eq!(r.body["data"], json!([]));
    let r = api.get("/v1/monitors?sortBy=name&order=asc");
    let names: Vec<&str> = r.body["data"]
        .as_array()
        .expect("data")
        .iter()
        .filter_map(|m| m["name"].as_str())
        .collect();
    assert_eq!(names, ["Renamed", "a", "b", "c"]);
    assert_eq!(
        api.request("POST", &format!("/v1/monitors/{id}/pause"), None)
            .status,
        200
    );
    let r = api.get("/v1/monitors?status=paused");
    assert_eq!(r.body["pagination"]["total"], 1);
    assert_eq!(r.body["data"][0]["id"], id.as_str());
    assert_eq!(
        api.get("/v1/monitors?status=down").body["pagination"]["total"],
        0
    );
}

#[test]
/// The plugin list and the workspace with its webhook secret.
fn plugins_and_the_workspace_are_described() {
    let server = Server::start(&[]);
    let api = server.client();

    // --- plugins ----------------------------------------------------------------------------------
    let r = api.get("/v1/plugins");
    let http = r.body["data"]
        .as_array()
        .expect("data")
        .iter()
        .find(|p| p["name"] == "http")
        .cloned()
        .expect("http plugin");
    assert_eq!(http["kind"], "monitor");
    assert_eq!(http["contract"], "0.3.0");
    assert_eq!(http["source"], "builtin");
    assert_eq!(http["topLevelFields"], true);
    assert_eq!(
        http["configSchema"]["properties"]["maxRedirects"]["maximum"],
        20
    );

    // --- workspace and its webhook secret -----------------------------------------------------------
    let ws = api.get("/v1/workspace").body;
    assert_eq!(
        (ws["data"]["name"].as_str(), ws["data"]["plan"].as_str()),
        (Some("Default"), Some("enterprise"))
    );
    assert!(
        ws["data"]["id"]
            .as_str()
            .is_some_and(|id| id.starts_with("ws_"))
    );
    let before = api.get("/v1/workspace/webhook-secret").body["data"]["secret"]
        .as_str()
        .expect("secret")
        .to_string();
    assert!(before.starts_with("whsec_") && before.len() == 38);
    let rotated = api
        .request("POST", "/v1/workspace/webhook-secret/rotate", None)
        .body["data"]["secret"]
        .as_str()
        .expect("secret")
        .to_string();
    assert_ne!(before, rotated);
    assert_eq!(
        api.get("/v1/workspace/webhook-secret").body["data"]["secret"],
        rotated.as_str()
    );
}

#[test]
/// The OpenAPI document describes what the server serves.
fn the_openapi_document_lists_every_route() {
    let server = Server::start(&[]);
    let api = server.client();

    // --- the OpenAPI document describes what the server serves -----------------------------------
    let r = api.get("/v1/openapi.json");
    assert_eq!(r.status, 200);
    let doc = r.body;
    assert!(
        doc["openapi"]
            .as_str()
            .is_some_and(|v| v.starts_with("3.1")),
        "{}",
        doc["openapi"]
    );
    for path in [
        "/v1/monitors",
        "/v1/monitors/{id}",
        "/v1/monitors/{id}/pause",
        "/v1/monitors/{id}/resume",
        "/v1/monitors/{id}/checks",
        "/v1/monitors/{id}/uptime",
        "/v1/plugins",
        "/v1/openapi.json",
        "/v1/alert-policies",
        "/v1/alert-policies/{id}",
        "/v1/channels",
        "/v1/channels/{id}",
        "/v1/channels/{id}/test",
        "/v1/incidents",
        "/v1/incidents/{id}",
        "/v1/incidents/{id}/acknowledge",
        "/v1/incidents/{id}/resolve",
        "/v1/webhook-deliveries",
        "/v1/webhook-deliveries/{id}",
        "/v1/webhook-deliveries/{id}/redeliver",
        "/v1/workspace",
        "/v1/workspace/webhook-secret",
        "/v1/workspace/webhook-secret/rotate",
        "/healthz",
        "/readyz",
    ] {
        assert!(
            doc["paths"][path].is_object(),
            "{path} missing from the OpenAPI document"
        );
    }
    assert!(doc["paths"]["/v1/monitors/{id}"]["delete"].is_object());
    assert!(
        doc["components"]["schemas"]["MonitorCreate"]["properties"]["expectedStatusRange"]
            .is_object()
    );
    assert!(doc["components"]["securitySchemes"]["bearer"].is_object());
}

#[test]
fn broken_and_clashing_plugins_do_not_stop_the_server() {
    let temp = tempfile::tempdir().expect("tempdir");
    let plugins = temp.path().join("plugins");
    std::fs::create_dir_all(&plugins).expect("plugins dir");
    std::fs::write(plugins.join("garbage.wasm"), b"\0asm but not really").expect("write");
    // The same plugin twice: the second is refused for its name.
    let trap = std::fs::read(
        std::path::Path::new(env!("TOCSIN_TEST_GUESTS_DIR")).join("tocsin_guest_trap.wasm"),
    )
    .expect("trap guest");
    std::fs::write(plugins.join("a-trap.wasm"), &trap).expect("write");
    std::fs::write(plugins.join("b-trap-again.wasm"), &trap).expect("write");
    let server = Server::start_in(temp.path(), &[]);
    let api = server.client();
    let names: Vec<String> = api.get("/v1/plugins").body["data"]
        .as_array()
        .expect("data")
        .iter()
        .filter_map(|p| p["name"].as_str().map(String::from))
        .collect();
    assert!(names.contains(&"http".to_string()));
    assert_eq!(names.iter().filter(|n| *n == "test-trap").count(), 1);
    let log = server.log();
    assert!(
        log.contains("garbage.wasm"),
        "the broken plugin is named in the log"
    );
    assert!(
        log.contains("already loaded"),
        "the clash is explained in the log"
    );

    // A monitor of the trapping type fails its own checks, and the server keeps serving.
    let r = api.post(
        "/v1/monitors",
        &json!({"name": "t", "type": "test-trap", "interval": 1, "config": {}}),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let id = r.body["data"]["id"].as_str().expect("id").to_string();
    let check = support::wait_for("a failed check", std::time::Duration::from_secs(20), || {
        api.get(&format!("/v1/monitors/{id}/checks")).body["data"]
            .as_array()?
            .first()
            .cloned()
    });
    assert_eq!(check["ok"], false);
    assert!(
        check["reason"]
            .as_str()
            .is_some_and(|r| r.starts_with("Monitor plugin failed: plugin crashed")),
        "{check}"
    );
    assert_eq!(api.get("/healthz").status, 200);
}

#[test]
fn every_documented_route_is_served_and_every_served_route_is_documented() {
    let server = Server::start(&[]);
    let api = server.client();
    let doc = api.get("/v1/openapi.json").body;
    let paths = doc["paths"].as_object().expect("paths");

    // Documented -> served: no documented route answers the router's own 404 or 405.
    let mut documented = Vec::new();
    for (path, item) in paths {
        for method in ["get", "post", "put", "patch", "delete"] {
            if item.get(method).is_none() {
                continue;
            }
            let concrete = path.replace("{id}", "x_1").replace("{slug}", "nobody");
            let body = (method != "get" && method != "delete").then(|| json!({}));
            let r = api.request(&method.to_uppercase(), &concrete, body.as_ref());
            assert!(
                r.body["error"]["code"] != "NOT_FOUND" && r.status != 405,
                "{method} {path} is documented but not served: {} {}",
                r.status,
                r.body
            );
            documented.push(format!("{} {path}", method.to_uppercase()));
        }
    }

    // Served -> documented: every route a client of this version may call.
    let served = [
        "GET /v1/monitors",
        "POST /v1/monitors",
        "GET /v1/monitors/{id}",
        "PATCH /v1/monitors/{id}",
        "PUT /v1/monitors/{id}",
        "DELETE /v1/monitors/{id}",
        "POST /v1/monitors/{id}/pause",
        "POST /v1/monitors/{id}/resume",
        "GET /v1/monitors/{id}/checks",
        "GET /v1/monitors/{id}/uptime",
        "GET /v1/alert-policies",
        "POST /v1/alert-policies",
        "GET /v1/alert-policies/{id}",
        "PATCH /v1/alert-policies/{id}",
        "PUT /v1/alert-policies/{id}",
        "DELETE /v1/alert-policies/{id}",
        "GET /v1/channels",
        "POST /v1/channels",
        "GET /v1/channels/{id}",
        "PATCH /v1/channels/{id}",
        "PUT /v1/channels/{id}",
        "DELETE /v1/channels/{id}",
        "POST /v1/channels/{id}/test",
        "GET /v1/incidents",
        "GET /v1/incidents/{id}",
        "POST /v1/incidents/{id}/acknowledge",
        "POST /v1/incidents/{id}/resolve",
        "GET /v1/webhook-deliveries",
        "GET /v1/webhook-deliveries/{id}",
        "POST /v1/webhook-deliveries/{id}/redeliver",
        "GET /v1/workspace",
        "PATCH /v1/workspace",
        "GET /v1/workspace/webhook-secret",
        "POST /v1/workspace/webhook-secret/rotate",
        "GET /v1/workspace/members",
        "POST /v1/workspace/members",
        "PATCH /v1/workspace/members/{id}",
        "DELETE /v1/workspace/members/{id}",
        "GET /v1/api-keys",
        "POST /v1/api-keys",
        "DELETE /v1/api-keys/{id}",
        "GET /v1/status-pages",
        "POST /v1/status-pages",
        "GET /v1/status-pages/{id}",
        "PATCH /v1/status-pages/{id}",
        "PUT /v1/status-pages/{id}",
        "GET /v1/maintenance-windows",
        "POST /v1/maintenance-windows",
        "GET /v1/maintenance-windows/{id}",
        "PATCH /v1/maintenance-windows/{id}",
        "PUT /v1/maintenance-windows/{id}",
        "DELETE /v1/maintenance-windows/{id}",
        "DELETE /v1/status-pages/{id}",
        "GET /v1/probe-ips",
        "GET /v1/plugins",
        "GET /v1/openapi.json",
        "GET /v1/workspace/invitations",
        "POST /v1/workspace/invitations",
        "DELETE /v1/workspace/invitations/{id}",
        "GET /v1/audit-log",
        "POST /v1/auth/login",
        "POST /v1/auth/logout",
        "GET /v1/auth/session",
        "PATCH /v1/auth/session",
        "GET /v1/auth/sessions",
        "DELETE /v1/auth/sessions",
        "DELETE /v1/auth/sessions/{id}",
        "POST /v1/auth/password",
        "POST /v1/auth/setup",
        "POST /v1/auth/invitations/accept",
        "POST /v1/auth/password-reset",
        "POST /v1/auth/password-reset/confirm",
        "POST /v1/auth/totp/enroll",
        "POST /v1/auth/totp/confirm",
        "DELETE /v1/auth/totp",
        "GET /v1/auth/providers",
        "GET /v1/auth/oidc/{provider}/start",
        "GET /v1/auth/oidc/{provider}/callback",
        "GET /status/{slug}",
        "GET /healthz",
        "GET /readyz",
    ];
    for route in served {
        assert!(
            documented.iter().any(|d| d == route),
            "{route} is served but missing from the OpenAPI document"
        );
    }
    // And nothing else is served: a route outside the document is the router's 404.
    for (method, path) in [
        ("GET", "/v1/members"),
        ("GET", "/v1/keys"),
        ("GET", "/status"),
    ] {
        let r = api.request(method, path, None);
        assert_eq!(r.body["error"]["code"], "NOT_FOUND", "{method} {path}");
    }
}

#[test]
/// The monitor list is served again as rendered while nothing was written: each write
/// (an edit, a heartbeat's ping, a pause, a delete) shows in the very next list, and a
/// read key's list never comes from an admin's.
fn the_monitor_list_is_never_older_than_the_last_write() {
    let server = Server::start(&[]);
    let api = server.client();
    let hb = support::create(
        &api,
        "/v1/monitors",
        json!({"name": "Nightly backup", "type": "heartbeat", "period": 3600, "grace": 60}),
    );
    let id = hb["id"].as_str().expect("id");
    let list = |api: &support::Api| {
        let r = api.get("/v1/monitors?limit=10");
        assert_eq!(r.status, 200, "{}", r.body);
        r.body
    };
    let first = list(&api);
    let again = list(&api);
    assert_eq!(first["data"], again["data"]);
    assert_eq!(first["pagination"], again["pagination"]);
    assert_ne!(
        first["meta"]["requestId"], again["meta"]["requestId"],
        "each answer has its own request id"
    );
    assert_eq!(first["data"][0]["status"], "pending");
    assert_eq!(first["data"][0]["lastCheckedAt"], Value::Null);

    // A read key sees the ping URL without its token, even right after an admin's list.
    let r = api.post("/v1/api-keys", &json!({"name": "reader", "role": "read"}));
    assert_eq!(r.status, 201, "{}", r.body);
    let reader = api.with_key(r.body["data"]["secret"].as_str().expect("secret"));
    list(&api);
    let seen = list(&reader);
    let token_url = first["data"][0]["pingUrl"].as_str().expect("pingUrl");
    assert!(!token_url.ends_with("/ping/[redacted]"), "{token_url}");
    assert_eq!(
        seen["data"][0]["pingUrl"]
            .as_str()
            .map(|u| u.ends_with("/ping/[redacted]")),
        Some(true),
        "{}",
        seen["data"][0]
    );

    // An edit.
    list(&api);
    let r = api.patch(&format!("/v1/monitors/{id}"), &json!({"name": "Backup"}));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(list(&api)["data"][0]["name"], "Backup");

    // A ping: the check it records (its answer comes once committed).
    support::ping(&api, &hb, "");
    let after_ping = list(&api);
    assert_eq!(
        after_ping["data"][0]["status"], "up",
        "{}",
        after_ping["data"][0]
    );
    assert!(after_ping["data"][0]["lastCheckedAt"].is_string());

    // A pause, then a second monitor, then a delete.
    let r = api.request("POST", &format!("/v1/monitors/{id}/pause"), None);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(list(&api)["data"][0]["status"], "paused");
    let other = support::create(&api, "/v1/monitors", http_monitor("Second"));
    let both = list(&api);
    assert_eq!(both["pagination"]["total"], 2);
    assert_eq!(both["data"][0]["id"], other["id"]);
    assert_eq!(api.delete(&format!("/v1/monitors/{id}")).status, 204);
    let left = list(&api);
    assert_eq!(left["pagination"]["total"], 1);
    assert_eq!(left["data"].as_array().map(Vec::len), Some(1));
}
