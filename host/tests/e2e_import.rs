//! End to end: `tocsin import` brings another tool's monitors to a running server over the
//! API. The files are real: a 2.x `kuma.db` and a 1.x backup made by running Uptime Kuma,
//! a Healthchecks API export made by running Healthchecks (tests/fixtures/import/README.md
//! says how), and a Gatus config.yaml written from Gatus's documented format. Every mapped
//! field is read back from the API; every unmapped one must be in the report; a dry run
//! changes nothing; importing again changes nothing.

use crate::support;

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use support::{ADMIN_KEY, Server, create};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/import")
        .join(name)
}

/// Run `tocsin import <args>` against `server`; the output, which must be a success.
fn import(server: &Server, args: &[&str], env: &[(&str, &str)]) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut all = vec![
        ("TOCSIN_URL", server.base.as_str()),
        ("TOCSIN_API_KEY", ADMIN_KEY),
    ];
    all.extend_from_slice(env);
    let mut line = vec!["import"];
    line.extend_from_slice(args);
    let (ok, out) = support::run_tocsin(dir.path(), &line, &all);
    assert!(ok, "tocsin {line:?} failed:\n{out}");
    out
}

fn items(server: &Server, path: &str) -> Vec<Value> {
    let reply = server.client().get(&format!("{path}?limit=100"));
    assert_eq!(reply.status, 200, "{}", reply.body);
    reply.body["data"].as_array().cloned().unwrap_or_default()
}

fn keyed<'a>(list: &'a [Value], key: &str) -> &'a Value {
    list.iter()
        .find(|m| m["key"] == key)
        .unwrap_or_else(|| panic!("no `{key}` in {list:#?}"))
}

/// The id of the object with `key` in `list`.
fn id_of(list: &[Value], key: &str) -> Value {
    keyed(list, key)["id"].clone()
}

/// Each of `fields` of `object` is as expected.
fn assert_fields(object: &Value, expected: Value) {
    for (field, want) in expected.as_object().expect("an object") {
        assert_eq!(&object[field], want, "{field} of {object:#}");
    }
}

/// Every line of `lines` is in `out`.
fn assert_reported(out: &str, lines: &[&str]) {
    for line in lines {
        assert!(out.contains(line), "the report lacks `{line}`:\n{out}");
    }
}

#[test]
fn a_gatus_config_imports_with_every_mapped_field_and_every_gap_reported() {
    let server = Server::start(&[]);
    let file = fixture("gatus.yaml");
    let f = file.to_str().expect("path");
    let env = [(
        "GATUS_SLACK_URL",
        "https://hooks.slack.example/services/T0/B0/xyz",
    )];

    // A dry run shows the plan and what cannot come, and changes nothing.
    let dry = import(&server, &["gatus", f, "--dry-run"], &env);
    assert_reported(
        &dry,
        &[
            "+ create monitor `gatus:core_front-end`",
            "+ create channel `gatus:alerting.slack`",
            "Dry run: nothing was changed.",
            "1 heartbeat monitor(s) get new ping addresses when imported.",
            "1 monitor(s) paused in Gatus would be paused after import.",
        ],
    );
    assert!(
        !dry.contains("hooks.slack.example"),
        "a secret in the plan:\n{dry}"
    );
    assert!(items(&server, "/v1/monitors").is_empty());
    assert!(items(&server, "/v1/channels").is_empty());

    // A monitor made by hand with an imported endpoint's name is never taken over.
    let by_hand = support::create(
        &server.client(),
        "/v1/monitors",
        json!({"name": "front-end", "type": "http", "url": "http://127.0.0.1:9/mine", "interval": 600}),
    );

    let out = import(&server, &["gatus", f], &env);
    assert_reported(
        &out,
        &[
            "Applied.",
            // What has no equivalent, each with the reason.
            "alerting provider `twilio`: Tocsin has no channel of this kind",
            "endpoint `websocket`: Tocsin has no monitor for `ws://` endpoints",
            "external endpoint `ad hoc push`: it has no heartbeat.interval",
            "endpoint `front-end`: client.insecure",
            "endpoint `front-end`: condition `[STATUS] == any(200, 429)`",
            "endpoint `front-end`: alert of type `twilio`",
            "endpoint `search api`: condition `len([BODY].hits) > 0`",
            "`web`: server-wide Gatus settings",
            "`ui`: server-wide Gatus settings",
            "alerting provider `custom`: its request body",
            "alerting provider `email`: its SMTP relay",
            // What was approximated.
            "endpoint `fast poll`: interval 10 s is outside 30 to 86400 s; imported as 30 s",
            "endpoint `front-end`: its alerts have different thresholds",
            "became the ssl monitor `front-end (certificate)`, critical at 2 days",
            "Paused 1 monitor(s), as they were in Gatus.",
            "nightly backup\n    POST /api/v1/endpoints/jobs_nightly-backup/external?success=true\n  → ",
        ],
    );

    let channels = items(&server, "/v1/channels");
    assert_eq!(channels.len(), 5, "{channels:#?}");
    assert_fields(
        keyed(&channels, "gatus:alerting.slack"),
        json!({"type": "slack", "name": "Gatus slack", "managedBy": "tocsin-import"}),
    );
    assert_fields(
        keyed(&channels, "gatus:alerting.email.ops-example.test"),
        json!({"type": "email", "target": "ops@example.test"}),
    );
    assert_fields(
        keyed(&channels, "gatus:alerting.email.oncall-example.test"),
        json!({"type": "email", "target": "oncall@example.test"}),
    );
    assert_fields(
        keyed(&channels, "gatus:alerting.telegram"),
        json!({"type": "telegram", "chatId": "-100123"}),
    );
    assert_fields(
        keyed(&channels, "gatus:alerting.custom"),
        json!({"type": "webhook", "url": "https://hooks.example.test/gatus"}),
    );

    let policies = items(&server, "/v1/alert-policies");
    assert_eq!(policies.len(), 3, "{policies:#?}");
    let channel_ids = |p: &Value| -> Vec<Value> {
        let mut ids: Vec<Value> = p["channels"]
            .as_array()
            .expect("channels")
            .iter()
            .map(|c| c["channelId"].clone())
            .collect();
        ids.sort_by_key(|v| v.to_string());
        ids
    };
    let ids_of = |keys: &[&str]| -> Vec<Value> {
        let mut ids: Vec<Value> = keys.iter().map(|k| id_of(&channels, k)).collect();
        ids.sort_by_key(|v| v.to_string());
        ids
    };
    // front-end: slack (its default-alert: 4 failures, send on resolved) and email (2
    // failures, 3 successes): one policy with the lowest of each.
    let front_policy = keyed(&policies, "gatus:policy:email-slack:2:2:true");
    assert_fields(
        front_policy,
        json!({"failureThreshold": 2, "recoveryThreshold": 2, "notifyOnRecovery": true}),
    );
    assert_eq!(
        channel_ids(front_policy),
        ids_of(&[
            "gatus:alerting.slack",
            "gatus:alerting.email.ops-example.test",
            "gatus:alerting.email.oncall-example.test"
        ])
    );
    let search_policy = keyed(&policies, "gatus:policy:custom-telegram:3:2:true");
    assert_eq!(
        channel_ids(search_policy),
        ids_of(&["gatus:alerting.custom", "gatus:alerting.telegram"])
    );
    let slack_policy = keyed(&policies, "gatus:policy:slack:4:2:true");
    assert_fields(
        slack_policy,
        json!({"failureThreshold": 4, "recoveryThreshold": 2, "notifyOnRecovery": true}),
    );

    let monitors = items(&server, "/v1/monitors");
    assert_eq!(monitors.len(), 11, "{monitors:#?}");
    let mine = monitors
        .iter()
        .find(|m| m["id"] == by_hand["id"])
        .expect("the hand-made monitor");
    assert_fields(
        mine,
        json!({"url": "http://127.0.0.1:9/mine", "interval": 600, "key": null}),
    );
    let front = keyed(&monitors, "gatus:core_front-end");
    assert_fields(
        front,
        json!({
            "name": "front-end", "type": "http", "url": "https://127.0.0.1:18443/health",
            "interval": 300, "timeout": 15, "tags": ["core"], "expectedStatusCode": 200,
            "maxResponseTimeMs": 299, "alertPolicyId": front_policy["id"],
            "jsonAssertions": [
                {"path": "$.status", "op": "eq", "value": "UP"},
                {"path": "$.checks[0].count", "op": "gt", "value": 1},
            ],
        }),
    );
    assert_fields(
        keyed(&monitors, "gatus:core_front-end:certificate"),
        json!({"name": "front-end (certificate)", "type": "ssl", "hostname": "127.0.0.1",
               "port": 18443, "criticalDays": 2, "warningDays": 30, "interval": 300,
               "tags": ["core"], "alertPolicyId": front_policy["id"]}),
    );
    let search = keyed(&monitors, "gatus:core_search-api");
    assert_fields(
        search,
        json!({"name": "search api", "method": "POST", "body": "{\"q\": \"health\"}",
               "interval": 45, "expectedStatusRange": true, "bodyContains": "results",
               "jsonAssertions": [{"path": "$.hits", "op": "exists"}],
               "alertPolicyId": search_policy["id"]}),
    );
    assert_eq!(
        search["headers"]["Content-Type"], "application/json",
        "{search:#}"
    );
    let database = keyed(&monitors, "gatus:infra_database");
    assert_fields(
        database,
        json!({"type": "tcp", "interval": 30, "tags": ["infra"],
               "alertPolicyId": slack_policy["id"]}),
    );
    assert_eq!(database["config"]["host"], "127.0.0.1");
    assert_eq!(database["config"]["port"], 5432);
    assert_fields(
        keyed(&monitors, "gatus:infra_gateway-ping"),
        json!({"type": "ping", "hostname": "127.0.0.1", "interval": 60}),
    );
    let resolver = keyed(&monitors, "gatus:_resolver");
    assert_fields(resolver, json!({"type": "dns", "interval": 120}));
    for (field, want) in [
        ("hostname", "localhost"),
        ("recordType", "A"),
        ("resolver", "127.0.0.1"),
    ] {
        assert_eq!(resolver["config"][field], want, "{resolver:#}");
    }
    assert_eq!(resolver["config"]["expected"], json!(["127.0.0.1"]));
    assert_fields(
        keyed(&monitors, "gatus:_tls-service"),
        json!({"type": "ssl", "hostname": "127.0.0.1", "port": 18443, "criticalDays": 10,
               "interval": 600}),
    );
    let relay = keyed(&monitors, "gatus:_mail-relay");
    assert_eq!(relay["type"], "smtp");
    assert_eq!(relay["config"]["port"], 2525);
    assert_eq!(relay["config"]["tls"], "starttls");
    assert_fields(
        keyed(&monitors, "gatus:_fast-poll"),
        json!({"interval": 30, "expectedStatusCode": 204, "status": "paused"}),
    );
    let backup = keyed(&monitors, "gatus:jobs_nightly-backup");
    assert_fields(
        backup,
        json!({"type": "heartbeat", "period": 1800, "tags": ["jobs"],
               "alertPolicyId": slack_policy["id"]}),
    );
    let ping_url = backup["pingUrl"].as_str().expect("a ping URL");
    assert!(
        out.contains(ping_url),
        "the new ping URL is not printed:\n{out}"
    );

    let windows = items(&server, "/v1/maintenance-windows");
    assert_eq!(windows.len(), 2, "{windows:#?}");
    let all = keyed(&windows, "gatus:maintenance");
    assert_fields(
        all,
        json!({"name": "Gatus maintenance", "rrule": "FREQ=WEEKLY;BYDAY=MO,TH",
               "durationMinutes": 60, "timezone": "Europe/Amsterdam"}),
    );
    assert_eq!(all["monitorIds"].as_array().map(Vec::len), Some(10));
    let local = chrono::DateTime::parse_from_rfc3339(all["start"].as_str().expect("start"))
        .expect("a time")
        .with_timezone(&chrono_tz::Europe::Amsterdam);
    assert_eq!(local.format("%H:%M").to_string(), "23:00");
    let own = keyed(&windows, "gatus:maintenance:core_search-api:0");
    assert_fields(
        own,
        json!({"rrule": "FREQ=DAILY", "durationMinutes": 40, "timezone": "Europe/Berlin",
               "monitorIds": [search["id"]]}),
    );

    // Importing again changes nothing, and leaves a monitor resumed since as it is.
    let fast = id_of(&monitors, "gatus:_fast-poll");
    let resumed = server.client().post(
        &format!("/v1/monitors/{}/resume", fast.as_str().expect("id")),
        &json!({}),
    );
    assert_eq!(resumed.status, 200, "{}", resumed.body);
    let again = import(&server, &["gatus", f], &env);
    assert_reported(
        &again,
        &["Plan: 0 to create, 0 to change", "Nothing to do."],
    );
    assert!(!again.contains("Paused"), "{again}");
    let monitors = items(&server, "/v1/monitors");
    assert_eq!(monitors.len(), 11);
    assert_ne!(keyed(&monitors, "gatus:_fast-poll")["status"], "paused");
}

#[test]
fn a_healthchecks_export_imports_as_heartbeats_with_new_ping_urls() {
    let server = Server::start(&[]);
    let file = fixture("healthchecks.json");
    let f = file.to_str().expect("path");
    let export: Value =
        serde_json::from_str(&std::fs::read_to_string(&file).expect("read")).expect("json");
    let checks = export["checks"].as_array().expect("checks");

    let out = import(&server, &["healthchecks", f], &[]);
    assert_reported(
        &out,
        &[
            "Applied.",
            "check `Calendar job`: its schedule `Mon..Fri 08:00` is an OnCalendar expression",
            "check `Nightly backup`: description `Runs pg_dump`",
            "check `Nightly backup`: 2 integration(s)",
            "check `Queue worker`: 1 integration(s)",
            "check `Hourly report`: methods POST",
            "check `Mail job`: keyword filters",
            "check `Weekdays sync`: manual_resume",
            "Paused 1 monitor(s), as they were in Healthchecks.",
        ],
    );
    let monitors = items(&server, "/v1/monitors");
    // Every check but the OnCalendar one.
    assert_eq!(monitors.len(), checks.len() - 1, "{monitors:#?}");
    for check in checks {
        let name = check["name"].as_str().expect("name");
        if name == "Calendar job" {
            continue;
        }
        let key = format!("healthchecks:{}", check["uuid"].as_str().expect("uuid"));
        let m = keyed(&monitors, &key);
        assert_fields(
            m,
            json!({"name": name, "type": "heartbeat", "grace": check["grace"]}),
        );
        match check.get("timeout") {
            Some(timeout) => assert_eq!(&m["period"], timeout, "{m:#}"),
            None => {
                assert_eq!(m["cron"], check["schedule"], "{m:#}");
                assert_eq!(m["timezone"], check["tz"], "{m:#}");
            }
        }
        let tags: Vec<&str> = check["tags"]
            .as_str()
            .unwrap_or_default()
            .split_whitespace()
            .collect();
        let got: Vec<&str> = m["tags"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut want = tags.clone();
        want.sort();
        assert_eq!(got, want, "{m:#}");
        let paused = check["status"] == "paused";
        assert_eq!(m["status"] == "paused", paused, "{m:#}");
        // The old ping URL and the new one, side by side.
        let old = check["ping_url"].as_str().expect("ping_url");
        let new = m["pingUrl"].as_str().expect("pingUrl");
        assert!(
            out.contains(&format!("  {name}\n    {old}\n  → {new}")),
            "{name}'s ping URLs are not printed side by side:\n{out}"
        );
    }
    // A new ping URL works: the job's first ping makes its monitor up.
    let queue = keyed(
        &monitors,
        &format!("healthchecks:{}", checks[1]["uuid"].as_str().expect("uuid")),
    );
    let reply = support::client()
        .get(queue["pingUrl"].as_str().expect("pingUrl"))
        .send()
        .expect("ping");
    assert!(reply.status().is_success(), "{}", reply.status());
    support::wait_for(
        "the pinged monitor up",
        std::time::Duration::from_secs(20),
        || {
            let m = server
                .client()
                .get(&format!("/v1/monitors/{}", queue["id"].as_str()?));
            (m.body["data"]["status"] == "up").then_some(())
        },
    );

    let again = import(&server, &["healthchecks", f], &[]);
    assert_reported(
        &again,
        &["Plan: 0 to create, 0 to change", "Nothing to do."],
    );
}

/// What a Kuma database and a Kuma backup share (the same instance's monitors and
/// notifications, made by one script): checked for both.
fn assert_kuma_monitors(server: &Server, out: &str) -> (Vec<Value>, Vec<Value>, Vec<Value>) {
    assert_reported(
        out,
        &[
            "notification `Signal phone`: Tocsin has no channel of type `signal`",
            "monitor `TCP redis port (upside down)`: it is in upside-down mode",
            "monitor `Docker container (paused)`: Tocsin has no monitor of type `docker`",
            "monitor `GameDig Minecraft`: Tocsin has no monitor of type `gamedig`",
            "monitor `HTTP up`: accepted status codes 301",
            "monitor `HTTP up`: ignore TLS errors",
            "monitor `HTTP up`: resend every few checks while down",
            "monitor `MQTT (paused)`: expected message",
            "notification `SMTP mail`: its SMTP server",
            "notification `Webhook hook`: default for new monitors",
            // A plain-HTTP webhook: the server refuses it, and says why.
            "channel `kuma:notification:1`: the server refuses it: 400 VALIDATION_ERROR: url must be an https:// URL",
            // The policy of its monitors had no other channel.
            "alert policy `kuma:policy:1:0`: the server refuses it",
            "monitor `DNS localhost`: 1 retries before down",
            "monitor `Keyword ok`: interval 20 s is outside 30 to 86400 s; imported as 30 s",
            "monitor `HTTP POST with auth`: its basic auth became an Authorization header",
            "Paused 1 monitor(s), as they were in Uptime Kuma.",
        ],
    );
    let channels = items(server, "/v1/channels");
    let policies = items(server, "/v1/alert-policies");
    let monitors = items(server, "/v1/monitors");
    assert_fields(
        keyed(&channels, "kuma:notification:2"),
        json!({"name": "Telegram ops", "type": "telegram", "chatId": "-100123"}),
    );
    assert_fields(
        keyed(&channels, "kuma:notification:3"),
        json!({"name": "SMTP mail", "type": "email", "target": "ops@example.test"}),
    );
    // 16 monitors less the group, the upside-down one, docker and gamedig.
    assert_eq!(monitors.len(), 14, "{monitors:#?}");
    let http = keyed(&monitors, "kuma:1");
    assert_fields(
        http,
        json!({"name": "HTTP up", "type": "http", "url": "http://127.0.0.1:18080/health",
               "interval": 30, "timeout": 12, "maxRedirects": 5, "expectedStatusRange": true,
               "tags": ["critical", "env:prod"]}),
    );
    // Its notifications (the refused webhook and Telegram) and two retries.
    let policy = policies
        .iter()
        .find(|p| Some(&p["id"]) == Some(&http["alertPolicyId"]))
        .expect("HTTP up has a policy");
    assert_fields(
        policy,
        json!({"failureThreshold": 3, "recoveryThreshold": 1, "notifyOnRecovery": true}),
    );
    assert_eq!(
        policy["channels"]
            .as_array()
            .expect("channels")
            .iter()
            .map(|c| c["channelId"].clone())
            .collect::<Vec<_>>(),
        vec![id_of(&channels, "kuma:notification:2")]
    );
    let post = keyed(&monitors, "kuma:2");
    assert_fields(
        post,
        json!({"method": "POST", "interval": 45, "retryInterval": 30, "timeout": 8,
               "body": "{\n    \"ping\": true,\n    \"source\": \"tocsin\"\n}",
               "tags": ["team-web"]}),
    );
    assert_eq!(post["headers"]["X-Tocsin"], "fixture", "{post:#}");
    assert_fields(
        keyed(&monitors, "kuma:3"),
        json!({"type": "keyword", "keyword": "ok", "interval": 30, "tags": ["env:staging"]}),
    );
    assert_fields(
        keyed(&monitors, "kuma:4"),
        json!({"type": "keyword", "keyword": "error", "keywordMode": "absent"}),
    );
    assert_fields(
        keyed(&monitors, "kuma:5"),
        json!({"type": "http", "timeout": 15, "tags": ["team-web"],
               "jsonAssertions": [{"path": "$.status", "op": "eq", "value": "ok"}]}),
    );
    assert_fields(
        keyed(&monitors, "kuma:6"),
        json!({"type": "ping", "hostname": "127.0.0.1", "interval": 60}),
    );
    let dns = keyed(&monitors, "kuma:8");
    assert_fields(
        dns,
        json!({"type": "dns", "interval": 120, "retryInterval": 60}),
    );
    assert_eq!(dns["config"]["hostname"], "localhost");
    assert_eq!(dns["config"]["resolver"], "127.0.0.1");
    assert_eq!(dns["config"]["recordType"], "A");
    let push = keyed(&monitors, "kuma:9");
    assert_fields(push, json!({"type": "heartbeat", "period": 60}));
    assert!(
        out.contains("/api/push/TocsinPushToken0123456789abcdefX"),
        "the push token's old address is not printed:\n{out}"
    );
    assert!(
        out.contains(push["pingUrl"].as_str().expect("pingUrl")),
        "{out}"
    );
    let mysql = keyed(&monitors, "kuma:10");
    assert_eq!(mysql["type"], "mysql");
    for (field, want) in [
        ("host", json!("127.0.0.1")),
        ("port", json!(3306)),
        ("user", json!("root")),
        ("database", json!("test")),
        ("query", json!("SELECT 1")),
    ] {
        assert_eq!(mysql["config"][field], want, "{mysql:#}");
    }
    let pg = keyed(&monitors, "kuma:11");
    assert_eq!(pg["config"]["user"], "postgres", "{pg:#}");
    assert_eq!(pg["tags"], json!(["critical"]));
    assert_eq!(keyed(&monitors, "kuma:12")["config"]["port"], 6379);
    let mqtt = keyed(&monitors, "kuma:13");
    assert_fields(mqtt, json!({"type": "mqtt", "status": "paused"}));
    assert_eq!(mqtt["config"]["topic"], "tocsin/test");
    assert_eq!(mqtt["config"]["username"], "mq");
    // A group's children carry its name as a tag.
    assert_fields(
        keyed(&monitors, "kuma:15"),
        json!({"type": "http", "url": "http://127.0.0.1:18080/child", "tags": ["Web-stack"]}),
    );
    let child = keyed(&monitors, "kuma:16");
    assert_fields(child, json!({"type": "tcp", "tags": ["Web-stack"]}));
    assert_eq!(child["config"]["host"], "127.0.0.1");
    assert_eq!(child["config"]["port"], 18080);
    (channels, policies, monitors)
}

#[test]
fn a_kuma_database_imports_monitors_maintenance_and_its_status_page() {
    let server = Server::start(&[]);
    let file = fixture("kuma2.db");
    let f = file.to_str().expect("path");
    let dry = import(&server, &["kuma", f, "--dry-run"], &[]);
    assert_reported(
        &dry,
        &["+ create monitor `kuma:1`", "Dry run: nothing was changed."],
    );
    assert!(items(&server, "/v1/monitors").is_empty());

    let out = import(&server, &["kuma", f], &[]);
    let (_, _, monitors) = assert_kuma_monitors(&server, &out);
    assert_reported(
        &out,
        &["status page `public`: its groups (Web, Infrastructure)"],
    );
    let windows = items(&server, "/v1/maintenance-windows");
    assert_eq!(windows.len(), 1, "{windows:#?}");
    let mut covered = windows[0]["monitorIds"].as_array().cloned().expect("ids");
    covered.sort_by_key(|v| v.to_string());
    let mut want = vec![id_of(&monitors, "kuma:10"), id_of(&monitors, "kuma:11")];
    want.sort_by_key(|v| v.to_string());
    assert_eq!(covered, want);
    assert_fields(
        &windows[0],
        json!({"name": "Weekly DB patching", "description": "Postgres and MySQL patch window",
               "cron": "0 2 * * 2,4", "durationMinutes": 90, "timezone": "UTC",
               "start": "2026-01-01T00:00:00.000Z", "end": "2027-12-31T23:59:00.000Z"}),
    );
    let pages = items(&server, "/v1/status-pages");
    assert_eq!(pages.len(), 1, "{pages:#?}");
    // The groups' monitors in order, less the one not imported (upside down).
    let order: Vec<Value> = ["kuma:1", "kuma:3", "kuma:5", "kuma:8", "kuma:11"]
        .iter()
        .map(|k| id_of(&monitors, k))
        .collect();
    assert_fields(
        &pages[0],
        json!({"slug": "public", "name": "Tocsin Public Status",
               "description": "Public status of the fixture services", "public": true,
               "monitorIds": order}),
    );

    let again = import(&server, &["kuma", f], &[]);
    assert_reported(
        &again,
        &["Plan: 0 to create, 0 to change", "Nothing to do."],
    );
}

#[test]
fn a_kuma_backup_imports_its_monitors_and_notifications() {
    let server = Server::start(&[]);
    let file = fixture("kuma1-backup.json");
    let out = import(&server, &["kuma", file.to_str().expect("path")], &[]);
    assert_kuma_monitors(&server, &out);
    assert!(items(&server, "/v1/maintenance-windows").is_empty());
    assert!(items(&server, "/v1/status-pages").is_empty());
}

/// `POST /import` as the dashboard's page sends it: the file as the body, the session's
/// cookie and CSRF token.
fn upload(
    person: &support::browser::Browser,
    query: &str,
    file: &Path,
    csrf: bool,
) -> (u16, String) {
    let mut request = person
        .http
        .post(format!("{}/import?{query}", person.base))
        .header("content-type", "application/octet-stream")
        .body(std::fs::read(file).expect("read the file"));
    if let Some(c) = &person.cookie {
        request = request.header("cookie", format!("tocsin_session={c}"));
    }
    if csrf && let Some(t) = &person.csrf {
        request = request.header("x-csrf-token", t);
    }
    let reply = request.send().expect("upload");
    (reply.status().as_u16(), reply.text().expect("text"))
}

#[test]
fn the_dashboards_import_page_runs_the_same_plan_as_the_person_signed_in() {
    let server = Server::start(&[]);
    let mut owner = support::browser::sign_up_owner(&server);
    owner.get("/v1/auth/session");
    let (status, _, html) = owner.html("/import");
    assert_eq!(status, 200);
    assert!(html.contains(r#"<form id="import-form""#), "{html}");
    assert!(html.contains(r#"<option value="kuma">"#), "{html}");

    let file = fixture("healthchecks.json");
    // A write needs the session's CSRF token.
    let (status, text) = upload(&owner, "source=healthchecks&dryRun=false", &file, false);
    assert_eq!(status, 403, "{text}");
    assert!(items(&server, "/v1/monitors").is_empty());

    // The preview is the command line's plan, and changes nothing.
    let (status, text) = upload(&owner, "source=healthchecks&dryRun=true", &file, true);
    assert_eq!(status, 200, "{text}");
    assert_reported(
        &text,
        &[
            "Importing from Healthchecks",
            "Plan: 6 to create, 0 to change, 0 to delete",
            "Dry run: nothing was changed.",
            "check `Calendar job`: its schedule `Mon..Fri 08:00` is an OnCalendar expression",
        ],
    );
    assert!(items(&server, "/v1/monitors").is_empty());

    let (status, text) = upload(&owner, "source=healthchecks&dryRun=false", &file, true);
    assert_eq!(status, 200, "{text}");
    assert_reported(&text, &["Applied.", "Paused 1 monitor(s)"]);
    let monitors = items(&server, "/v1/monitors");
    assert_eq!(monitors.len(), 6, "{monitors:#?}");
    // Made by the person, through the API: the audit log names them.
    let audit = server.client().get("/v1/audit-log?limit=100");
    assert!(
        audit.body.to_string().contains("olive@example.com"),
        "{}",
        audit.body
    );

    // The server's own environment never fills an uploaded file's variables.
    let dir = tempfile::tempdir().expect("tempdir");
    let gatus = dir.path().join("config.yaml");
    std::fs::write(
        &gatus,
        "alerting:\n  custom:\n    url: \"https://${HOME}/hook\"\nendpoints:\n  - name: x\n    url: https://127.0.0.1:9/\n    conditions: [\"[STATUS] == 200\"]\n",
    )
    .expect("write");
    let (status, text) = upload(&owner, "source=gatus&dryRun=false", &gatus, true);
    assert_eq!(status, 422, "{text}");
    assert!(text.contains("the file uses $HOME"), "{text}");
    assert!(items(&server, "/v1/channels").is_empty());

    let (status, text) = upload(&owner, "source=nagios&dryRun=true", &file, true);
    assert_eq!(status, 400, "{text}");
    // Every upload's file is gone once it is answered.
    let left: Vec<_> = std::fs::read_dir(server.data_dir.join("imports"))
        .expect("the imports folder")
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// Run a Python script on `file`; what it printed.
fn python(script: &str, file: &Path) -> Vec<u8> {
    let out = std::process::Command::new("python3")
        .args(["-c", script])
        .arg(file)
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// (monitor id, heartbeat id, time, status, msg, ping).
type KumaHeartbeat = (i64, i64, String, i64, Option<String>, Option<i64>);

/// The fixture's heartbeats of each Kuma monitor, oldest first, read by Python's sqlite3:
/// (monitor id, heartbeat id, time as ISO 8601, status, msg, ping).
fn kuma_heartbeats() -> Vec<KumaHeartbeat> {
    let out = python(
        "import sqlite3, json, sys\n\
c = sqlite3.connect('file:' + sys.argv[1] + '?mode=ro&immutable=1', uri=True)\n\
print(json.dumps(c.execute('select monitor_id, id, time, status, msg, ping from heartbeat order by monitor_id, time, id').fetchall()))",
        &fixture("kuma2.db"),
    );
    let rows: Vec<Value> = serde_json::from_slice(&out).expect("json");
    rows.iter()
        .map(|r| {
            let time = r[2].as_str().expect("time").replace(' ', "T") + "Z";
            (
                r[0].as_i64().expect("monitor"),
                r[1].as_i64().expect("id"),
                time,
                r[3].as_i64().expect("status"),
                r[4].as_str().map(str::to_string),
                r[5].as_i64(),
            )
        })
        .collect()
}

#[test]
fn a_kuma_database_brings_its_check_history_oldest_first() {
    // Checks kept for ever: the fixture's history is from 2026-11-30.
    let server = Server::start(&[("TOCSIN_RETENTION_CHECKS_DAYS", "0")]);
    let api = server.client();
    // A backup has no history: refused before anything is made.
    let dir = tempfile::tempdir().expect("dir");
    let backup = fixture("kuma1-backup.json");
    let (ok, out) = support::run_tocsin(
        dir.path(),
        &[
            "import",
            "kuma",
            backup.to_str().expect("path"),
            "--with-history",
        ],
        &[
            ("TOCSIN_URL", server.base.as_str()),
            ("TOCSIN_API_KEY", ADMIN_KEY),
        ],
    );
    assert!(!ok && out.contains("import its kuma.db"), "{out}");
    assert!(items(&server, "/v1/monitors").is_empty());
    // A key that may not write history: refused before anything is made.
    let writer = create(
        &api,
        "/v1/api-keys",
        json!({"name": "writer", "role": "write"}),
    );
    let (ok, out) = support::run_tocsin(
        dir.path(),
        &[
            "import",
            "kuma",
            fixture("kuma2.db").to_str().expect("path"),
            "--with-history",
        ],
        &[
            ("TOCSIN_URL", server.base.as_str()),
            ("TOCSIN_API_KEY", writer["secret"].as_str().expect("secret")),
        ],
    );
    assert!(!ok && out.contains("only admins"), "{out}");
    assert!(items(&server, "/v1/monitors").is_empty());

    let file = fixture("kuma2.db");
    let out = import(
        &server,
        &["kuma", file.to_str().expect("path"), "--with-history"],
        &[],
    );
    let monitors = items(&server, "/v1/monitors");
    let heartbeats = kuma_heartbeats();
    let mut compared = 0;
    let mut with_history = 0;
    for m in &monitors {
        let kuma_id: i64 = m["key"]
            .as_str()
            .and_then(|k| k.strip_prefix("kuma:"))
            .and_then(|k| k.parse().ok())
            .expect("a kuma key");
        let want: Vec<_> = heartbeats.iter().filter(|h| h.0 == kuma_id).collect();
        let id = m["id"].as_str().expect("id");
        let got = api.get(&format!("/v1/monitors/{id}/checks?limit=100")).body["data"]
            .as_array()
            .cloned()
            .expect("checks");
        // The server may have checked it since: only checks before its creation are history.
        let created = m["createdAt"].as_str().expect("createdAt").to_string();
        let mut past: Vec<&Value> = got
            .iter()
            .filter(|c| c["checkedAt"].as_str().expect("time") < created.as_str())
            .collect();
        past.reverse();
        assert_eq!(
            past.len(),
            want.len(),
            "{} ({kuma_id}): {got:#?}",
            m["name"]
        );
        with_history += usize::from(!want.is_empty());
        for (c, h) in past.iter().zip(&want) {
            let (_, _, time, status, msg, ping) = h;
            assert_eq!(c["checkedAt"], time.as_str(), "{c}");
            assert_eq!(c["ok"], *status == 1 || *status == 3, "{c} {h:?}");
            assert_eq!(c["maintenance"], *status == 3, "{c}");
            assert_eq!(c["responseTimeMs"].as_i64(), *ping, "{c}");
            assert_eq!(c["region"], "imported");
            if *status == 0 || *status == 2 {
                assert_eq!(c["reason"].as_str(), msg.as_deref(), "{c}");
            } else {
                assert_eq!(c["reason"], Value::Null, "{c}");
            }
            let code = msg
                .as_deref()
                .and_then(|m| m.split_once(" - "))
                .and_then(|(code, _)| code.parse::<i64>().ok());
            assert_eq!(c["statusCode"].as_i64(), code, "{c}");
            compared += 1;
        }
    }
    assert!(
        compared >= 40,
        "most of the fixture's 73 heartbeats: {compared}"
    );
    assert_reported(
        &out,
        &[&format!(
            "Check history: {compared} check(s) of {with_history} monitor(s) written, oldest first."
        )],
    );
    // Again: every check is there already, nothing is written twice.
    let again = import(
        &server,
        &["kuma", file.to_str().expect("path"), "--with-history"],
        &[],
    );
    assert_reported(
        &again,
        &[
            &format!(
                "Check history: 0 check(s) of {with_history} monitor(s) written, oldest first."
            ),
            &format!("{compared} were there already (an earlier import): unchanged."),
        ],
    );
    // The uptime counts them (the daily rollup).
    let http = keyed(&monitors, "kuma:1");
    let uptime = api.get(&format!(
        "/v1/monitors/{}/uptime",
        http["id"].as_str().expect("id")
    ));
    assert_eq!(uptime.status, 200, "{}", uptime.body);

    // The endpoint itself: history only before the monitor was created, oldest first,
    // each key once, never for a read key.
    let id = http["id"].as_str().expect("id");
    let path = format!("/v1/monitors/{id}/history");
    let check = |key: &str, at: &str| json!({"key": key, "checkedAt": at, "ok": true});
    api.post(
        &path,
        &json!({"checks": [check("late", "2099-01-01T00:00:00Z")]}),
    )
    .assert_error(400, "VALIDATION_ERROR");
    api.post(
        &path,
        &json!({"checks": [check("b", "2026-11-02T00:00:00Z"), check("a", "2026-11-01T00:00:00Z")]}),
    )
    .assert_error(400, "VALIDATION_ERROR");
    api.post(
        &path,
        &json!({"checks": [check("a", "2026-11-01T00:00:00Z"), check("a", "2026-11-02T00:00:00Z")]}),
    )
    .assert_error(400, "VALIDATION_ERROR");
    api.post(&path, &json!({"checks": []}))
        .assert_error(400, "VALIDATION_ERROR");
    let two = json!({"checks": [check("x1", "2026-11-01T00:00:00Z"), check("x2", "2026-11-01T00:05:00Z")]});
    let first = api.post(&path, &two);
    assert_eq!(first.status, 200, "{}", first.body);
    assert_eq!(
        first.body["data"],
        json!({"written": 2, "alreadyThere": 0, "tooOld": 0})
    );
    let again = api.post(&path, &two);
    assert_eq!(
        again.body["data"],
        json!({"written": 0, "alreadyThere": 2, "tooOld": 0})
    );
    // Past checks feed the reports: admins only.
    for role in ["read", "write"] {
        let key = create(&api, "/v1/api-keys", json!({"name": role, "role": role}));
        api.with_key(key["secret"].as_str().expect("secret"))
            .post(&path, &two)
            .assert_error(403, "FORBIDDEN");
    }
}

#[test]
fn a_long_kuma_history_arrives_whole_in_requests_under_the_body_limit() {
    // The fixture with 2,500 more failures of `HTTP up`, each with a long message: more
    // than one page of the heartbeat table, and pages far over the API's 1 MiB body.
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("kuma.db");
    std::fs::copy(fixture("kuma2.db"), &file).expect("copy");
    let script = "import sqlite3, sys\n\
c = sqlite3.connect(sys.argv[1])\n\
rows = [(1, 0, '2026-11-29 %02d:%02d:%02d.000' % (i // 3600, i // 60 % 60, i % 60), '503 - ' + 'x' * 1500, 30 + i % 7, 0, 0) for i in range(2500)]\n\
c.executemany('insert into heartbeat (monitor_id, status, time, msg, ping, important, duration) values (?, ?, ?, ?, ?, ?, ?)', rows)\n\
c.commit()\n\
c.execute('pragma journal_mode=delete')\n\
c.close()\n";
    python(script, &file);
    let server = Server::start(&[("TOCSIN_RETENTION_CHECKS_DAYS", "0")]);
    let api = server.client();
    let out = import(
        &server,
        &["kuma", file.to_str().expect("path"), "--with-history"],
        &[],
    );
    let fixture_checks = kuma_heartbeats().iter().filter(|h| h.0 == 1).count();
    let monitors = items(&server, "/v1/monitors");
    let id = keyed(&monitors, "kuma:1")["id"]
        .as_str()
        .expect("id")
        .to_string();
    let created = keyed(&monitors, "kuma:1")["createdAt"]
        .as_str()
        .expect("createdAt")
        .to_string();
    let mut past = Vec::new();
    for page in 1.. {
        let body = api
            .get(&format!("/v1/monitors/{id}/checks?limit=100&page={page}"))
            .body;
        let list = body["data"].as_array().cloned().expect("checks");
        if list.is_empty() {
            break;
        }
        past.extend(
            list.into_iter()
                .filter(|c| c["checkedAt"].as_str().expect("time") < created.as_str()),
        );
    }
    assert_eq!(past.len(), fixture_checks + 2_500, "every heartbeat, once");
    let long = past
        .iter()
        .find(|c| c["checkedAt"] == "2026-11-29T00:41:38.000Z")
        .expect("the 2,499th heartbeat");
    assert_eq!(long["statusCode"], 503);
    // Heartbeat 2,498 (0-based): 30 + 2,498 % 7.
    assert_eq!(long["responseTimeMs"], 36);
    let reason = long["reason"].as_str().expect("reason");
    assert!(
        reason.starts_with("503 - xxx") && reason.len() <= 1_024,
        "kept to the API's 1 KiB: {} bytes",
        reason.len()
    );
    assert!(
        out.contains("Check history: ") && !out.contains("Not imported, for"),
        "{out}"
    );
    // About 2.5 MB of history went in several requests, each under the 1 MiB body.
    let requests = api.get(&format!(
        "/v1/audit-log?action=monitor.history&resourceId={id}"
    ));
    let n = requests.body["pagination"]["total"]
        .as_u64()
        .expect("total");
    assert!(n >= 3, "{n} requests: {}", requests.body);
}
