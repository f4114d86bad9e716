//! People sign in, end to end against a running server: the setup link, login and logout,
//! sessions revoked, roles and CSRF, invitations and password resets by e-mail (to an
//! SMTP sink), two-factor with TOTP and recovery codes, the login throttle, the offline
//! `tocsin user create`, and the audit log. On SQLite, and on PostgreSQL when
//! `TOCSIN_TEST_DATABASE_URL` is set.

use crate::support;

use serde_json::json;
use std::time::Duration;
use support::browser::{Browser, token_in};
use support::sinks::SmtpSink;
use support::{Server, wait_for};

fn mail_to(smtp: &SmtpSink, to: &str, count: usize) -> String {
    wait_for(
        &format!("mail number {count} to {to}"),
        Duration::from_secs(30),
        || {
            let mails: Vec<_> = smtp
                .mails()
                .into_iter()
                .filter(|m| m.to.iter().any(|t| t.contains(to)))
                .collect();
            (mails.len() >= count).then(|| {
                mails[count - 1]
                    .data
                    .replace("=\r\n", "")
                    .replace("=\n", "")
                    .replace("=3D", "=")
            })
        },
    )
}

fn start(database_url: Option<&str>, smtp: &SmtpSink) -> Server {
    let port = smtp.port.to_string();
    let mut env = vec![
        ("TOCSIN_SMTP_HOST", "127.0.0.1"),
        ("TOCSIN_SMTP_PORT", port.as_str()),
        ("TOCSIN_SMTP_TLS", "none"),
        ("TOCSIN_SMTP_FROM", "Tocsin <tocsin@tocsin.test>"),
    ];
    if let Some(url) = database_url {
        env.push(("TOCSIN_DATABASE_URL", url));
    }
    Server::start(&env)
}

fn people_sign_in(server: &Server, smtp: &SmtpSink, database_url: Option<&str>) {
    let admin_key = server.client();
    let ws = admin_key.workspace_id();

    // First run: the setup link, once. It opens a page with the form (which posts to the
    // API, as below).
    let link = std::fs::read_to_string(server.data_dir.join("setup-link.txt")).expect("setup link");
    let setup_token = token_in(&link, "/setup");
    let page = reqwest::blocking::get(link.trim()).expect("setup page");
    assert_eq!(page.status(), 200);
    assert_eq!(page.headers()["referrer-policy"], "no-referrer");
    let html = page.text().expect("html");
    assert!(
        html.contains(r#"<form id="setup""#) && html.contains("/assets/account.js"),
        "{html}"
    );
    let script =
        reqwest::blocking::get(format!("{}/assets/account.js", server.base)).expect("script");
    assert!(script.text().expect("js").contains("/v1/auth/setup"));
    let mut owner = Browser::new(&server.base);
    let r = owner.post(
        "/v1/auth/setup",
        &json!({"token": setup_token, "name": "Olive Owner", "email": "Olive@Example.com", "password": "olive-password-1"}),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.body["data"]["workspace"]["role"], "owner");
    assert_eq!(r.body["data"]["user"]["email"], "olive@example.com");
    Browser::new(&server.base)
        .post(
            "/v1/auth/setup",
            &json!({"token": setup_token, "name": "Eve", "email": "eve@example.com", "password": "eve-password-1"}),
        )
        .assert_error(400, "INVALID_TOKEN");

    // A cookie write needs the CSRF token; with it, the owner creates a monitor whose
    // header carries a secret.
    let monitor = json!({"name": "api", "type": "http", "url": "http://127.0.0.1:9/health", "method": "GET",
        "interval": 60, "headers": {"Authorization": "Bearer s3cret-header-token"}});
    owner
        .send("POST", "/v1/monitors", Some(&monitor), false)
        .assert_error(403, "FORBIDDEN");
    let created = owner.post("/v1/monitors", &monitor);
    assert_eq!(created.status, 201, "{}", created.body);
    let monitor_id = created.body["data"]["id"].as_str().expect("id").to_string();

    // An invitation arrives by e-mail and is accepted with a new password.
    let inv = owner.post(
        "/v1/workspace/invitations",
        &json!({"email": "vic@example.com", "role": "viewer"}),
    );
    assert_eq!(inv.status, 201, "{}", inv.body);
    assert_eq!(inv.body["data"]["emailSent"], true, "{}", inv.body);
    let invite_token = token_in(&mail_to(smtp, "vic@example.com", 1), "/invite");
    let mut viewer = Browser::new(&server.base);
    let r = viewer.post(
        "/v1/auth/invitations/accept",
        &json!({"token": invite_token, "name": "Vic Viewer", "password": "vic-password-1"}),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.body["data"]["role"], "viewer");
    let r = viewer.get("/v1/auth/session");
    assert_eq!(r.body["data"]["workspace"]["role"], "viewer", "{}", r.body);

    // A viewer reads and may not write.
    assert_eq!(viewer.get("/v1/monitors").status, 200);
    viewer
        .post("/v1/monitors", &monitor)
        .assert_error(403, "FORBIDDEN");

    // Sessions: a second sign-in, the first revoked, refused on its next request.
    let first_cookie = viewer.cookie.clone();
    let mut laptop = Browser::new(&server.base);
    assert_eq!(
        laptop.login("VIC@example.com", "vic-password-1").status,
        200
    );
    let sessions = laptop.get("/v1/auth/sessions");
    let list = sessions.body["data"].as_array().expect("sessions").clone();
    assert_eq!(list.len(), 2, "{}", sessions.body);
    let other = list
        .iter()
        .find(|s| s["current"] == false)
        .expect("the other session");
    let path = format!("/v1/auth/sessions/{}", other["id"].as_str().expect("id"));
    assert_eq!(laptop.send("DELETE", &path, None, true).status, 204);
    viewer.cookie = first_cookie;
    viewer.get("/v1/monitors").assert_error(401, "UNAUTHORIZED");
    // Logout ends the laptop's session too.
    assert_eq!(laptop.post("/v1/auth/logout", &json!({})).status, 204);
    assert_eq!(laptop.cookie, None);

    // Password reset by e-mail: the same answer for any address.
    let mut anon = Browser::new(&server.base);
    let unknown = anon.post(
        "/v1/auth/password-reset",
        &json!({"email": "nobody@example.com"}),
    );
    let known = anon.post(
        "/v1/auth/password-reset",
        &json!({"email": "vic@example.com"}),
    );
    assert_eq!(unknown.status, 202);
    assert_eq!(known.status, 202);
    assert_eq!(unknown.body["data"], known.body["data"]);
    let reset_token = token_in(&mail_to(smtp, "vic@example.com", 2), "/reset-password");
    let r = anon.post(
        "/v1/auth/password-reset/confirm",
        &json!({"token": reset_token, "password": "vic-new-password"}),
    );
    assert_eq!(r.status, 204, "{}", r.body);
    anon.post(
        "/v1/auth/password-reset/confirm",
        &json!({"token": reset_token, "password": "another-password"}),
    )
    .assert_error(400, "INVALID_TOKEN");
    Browser::new(&server.base)
        .login("vic@example.com", "vic-password-1")
        .assert_error(401, "UNAUTHORIZED");
    let mut viewer = Browser::new(&server.base);
    assert_eq!(
        viewer.login("vic@example.com", "vic-new-password").status,
        200
    );

    // Two-factor: enrol, confirm with a code, then sign in with a code and with a
    // recovery code (once).
    let enrol = owner.post("/v1/auth/totp/enroll", &json!({}));
    assert_eq!(enrol.status, 200, "{}", enrol.body);
    assert!(
        enrol.body["data"]["qrSvg"]
            .as_str()
            .expect("svg")
            .contains("<svg")
    );
    let secret = enrol.body["data"]["secret"]
        .as_str()
        .expect("secret")
        .to_string();
    let code = || {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("time")
            .as_secs();
        tocsin::accounts::totp::code_at(&secret, now).expect("code")
    };
    let confirmed = owner.post("/v1/auth/totp/confirm", &json!({"code": code()}));
    assert_eq!(confirmed.status, 200, "{}", confirmed.body);
    let recovery: Vec<String> = confirmed.body["data"]["recoveryCodes"]
        .as_array()
        .expect("codes")
        .iter()
        .map(|c| c.as_str().expect("code").to_string())
        .collect();
    assert_eq!(recovery.len(), 10);
    let mut phone = Browser::new(&server.base);
    phone
        .login("olive@example.com", "olive-password-1")
        .assert_error(401, "TWO_FACTOR_REQUIRED");
    let r = phone.post(
        "/v1/auth/login",
        &json!({"email": "olive@example.com", "password": "olive-password-1", "totpCode": code()}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let with_recovery = json!({"email": "olive@example.com", "password": "olive-password-1", "recoveryCode": recovery[3]});
    assert_eq!(
        Browser::new(&server.base)
            .post("/v1/auth/login", &with_recovery)
            .status,
        200
    );
    Browser::new(&server.base)
        .post("/v1/auth/login", &with_recovery)
        .assert_error(401, "UNAUTHORIZED");

    // Changes by key and by person, for the audit log: a key created and revoked, a role
    // changed.
    let key = admin_key.post("/v1/api-keys", &json!({"name": "ci", "role": "write"}));
    let key_id = key.body["data"]["id"].as_str().expect("key id").to_string();
    let key_secret = key.body["data"]["secret"]
        .as_str()
        .expect("secret")
        .to_string();
    // The key works (and is now remembered), and gets 401 on the request right after its
    // revocation.
    let ci = admin_key.with_key(&key_secret);
    assert_eq!(ci.get("/v1/monitors").status, 200);
    assert_eq!(
        admin_key.delete(&format!("/v1/api-keys/{key_id}")).status,
        204
    );
    ci.get("/v1/monitors").assert_error(401, "UNAUTHORIZED");
    let members = owner.get("/v1/workspace/members");
    let vic = members.body["data"]
        .as_array()
        .expect("members")
        .iter()
        .find(|m| m["email"] == "vic@example.com")
        .expect("vic")
        .clone();
    let member_path = format!("/v1/workspace/members/{}", vic["id"].as_str().expect("id"));
    let r = owner.send(
        "PATCH",
        &member_path,
        Some(&json!({"role": "member"})),
        true,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    // The viewer's live session follows the new role at once.
    assert_eq!(viewer.post("/v1/monitors", &json!({"name": "x", "type": "http", "url": "http://127.0.0.1:9/", "method": "GET", "interval": 60})).status, 201);

    // The offline command creates an account with a link to set its password.
    let env: Vec<(&str, &str)> = database_url
        .map(|u| vec![("TOCSIN_DATABASE_URL", u)])
        .unwrap_or_default();
    let out = server.cli_with(
        &[
            "user",
            "create",
            "--email",
            "ops@example.com",
            "--workspace",
            &ws,
            "--role",
            "admin",
        ],
        &env,
    );
    let set_token = token_in(&out, "/reset-password");
    assert_eq!(
        anon.post(
            "/v1/auth/password-reset/confirm",
            &json!({"token": set_token, "password": "ops-password-1"})
        )
        .status,
        204
    );
    let mut ops = Browser::new(&server.base);
    let r = ops.login("ops@example.com", "ops-password-1");
    assert_eq!(r.body["data"]["workspace"]["role"], "admin", "{}", r.body);

    // The audit log: who did what, with before and after, and no secret anywhere.
    viewer.get("/v1/audit-log").assert_error(403, "FORBIDDEN");
    let log = owner.get("/v1/audit-log?limit=100");
    assert_eq!(log.status, 200, "{}", log.body);
    let entries = log.body["data"].as_array().expect("entries").clone();
    let find = |action: &str, resource: &str| {
        entries
            .iter()
            .find(|e| e["action"] == action && e["resource"]["id"] == resource)
            .unwrap_or_else(|| panic!("no {action} of {resource} in {}", log.body))
            .clone()
    };
    let created = find("monitor.create", &monitor_id);
    assert_eq!(created["actor"]["type"], "user");
    assert_eq!(created["actor"]["name"], "olive@example.com");
    assert_eq!(created["ip"], "127.0.0.1");
    assert_eq!(created["after"]["name"], "api");
    let revoked = find("api_key.revoke", &key_id);
    assert_eq!(revoked["actor"]["type"], "key");
    let role = find("member.update", vic["id"].as_str().expect("id"));
    assert_eq!(role["before"]["role"], "viewer");
    assert_eq!(role["after"]["role"], "member");
    let text = log.body.to_string();
    for secret in [
        "s3cret-header-token",
        key_secret.as_str(),
        "olive-password-1",
        "vic-new-password",
    ] {
        assert!(
            !text.contains(secret),
            "the audit log holds a secret: {secret}"
        );
    }
    // Filters.
    let by_key = owner.get(&format!("/v1/audit-log?resourceId={key_id}"));
    assert_eq!(
        by_key.body["data"].as_array().map(Vec::len),
        Some(2),
        "{}",
        by_key.body
    );
    let by_actor = owner.get(&format!(
        "/v1/audit-log?actorId={}",
        created["actor"]["id"].as_str().expect("actor")
    ));
    assert!(
        by_actor.body["data"]
            .as_array()
            .expect("list")
            .iter()
            .all(|e| e["actor"]["type"] == "user")
    );

    // An owner requires two-factor: a member without it is refused until they enrol.
    let r = owner.send(
        "PATCH",
        "/v1/workspace",
        Some(&json!({"requireTwoFactor": true})),
        true,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    viewer.get("/v1/monitors").assert_error(403, "FORBIDDEN");
    assert_eq!(owner.get("/v1/monitors").status, 200);
}

#[test]
fn people_sign_in_on_sqlite() {
    let smtp = SmtpSink::start();
    let server = start(None, &smtp);
    people_sign_in(&server, &smtp, None);
}

#[test]
fn people_sign_in_on_postgres() {
    support::pg::with_database("people_sign_in_on_postgres", |url| {
        let smtp = SmtpSink::start();
        {
            let server = start(Some(url), &smtp);
            people_sign_in(&server, &smtp, Some(url));
        }
    });
}

#[test]
fn failed_logins_slow_down_and_read_the_same_on_sqlite() {
    failed_logins_slow_down_and_read_the_same(None);
}

#[test]
fn failed_logins_slow_down_and_read_the_same_on_postgres() {
    support::pg::with_database("failed_logins_on_postgres", |url| {
        failed_logins_slow_down_and_read_the_same(Some(url));
    });
}

fn failed_logins_slow_down_and_read_the_same(database_url: Option<&str>) {
    let smtp = SmtpSink::start();
    let server = start(database_url, &smtp);
    let ws = server.client().workspace_id();
    let env: Vec<(&str, &str)> = database_url
        .map(|u| vec![("TOCSIN_DATABASE_URL", u)])
        .unwrap_or_default();
    server.cli_with(
        &[
            "user",
            "create",
            "--email",
            "sam@example.com",
            "--workspace",
            &ws,
            "--role",
            "member",
        ],
        &env,
    );
    let mut b = Browser::new(&server.base);
    let unknown = b.login("nobody@example.com", "whatever-password");
    let wrong = b.login("sam@example.com", "wrong-password-1");
    unknown.assert_error(401, "UNAUTHORIZED");
    wrong.assert_error(401, "UNAUTHORIZED");
    assert_eq!(
        unknown.body["error"]["message"],
        wrong.body["error"]["message"]
    );
    // Five failures are free per account; the next attempt must wait, growing each time.
    for _ in 0..4 {
        b.login("sam@example.com", "wrong-password-1")
            .assert_error(401, "UNAUTHORIZED");
    }
    let limited = b.login("sam@example.com", "wrong-password-1");
    limited.assert_error(429, "RATE_LIMITED");
    let wait: u64 = limited.headers["retry-after"]
        .to_str()
        .expect("header")
        .parse()
        .expect("seconds");
    assert!(wait >= 1, "{wait}");
    // Other accounts from elsewhere are not held up by it.
    let other = b.login("nobody-else@example.com", "whatever-password");
    other.assert_error(401, "UNAUTHORIZED");
}

#[test]
fn a_restart_keeps_people_signed_in_and_revocation_is_immediate() {
    let smtp = SmtpSink::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut server = Server::start_in(dir.path(), &[]);
    let ws = server.client().workspace_id();
    let out = server.cli(&[
        "user",
        "create",
        "--email",
        "kim@example.com",
        "--workspace",
        &ws,
        "--role",
        "admin",
    ]);
    let token = token_in(&out, "/reset-password");
    let mut b = Browser::new(&server.base);
    assert_eq!(
        b.post(
            "/v1/auth/password-reset/confirm",
            &json!({"token": token, "password": "kim-password-1"})
        )
        .status,
        204
    );
    assert_eq!(b.login("kim@example.com", "kim-password-1").status, 200);
    server.stop();
    drop(smtp);
    let server = Server::start_in(dir.path(), &[]);
    b.base = server.base.clone();
    let s = b.get("/v1/auth/session");
    assert_eq!(s.status, 200, "{}", s.body);
    assert_eq!(s.body["data"]["user"]["email"], "kim@example.com");
    // Signing out everywhere ends this session too.
    assert_eq!(
        b.send("DELETE", "/v1/auth/sessions", None, true).status,
        204
    );
    b.get("/v1/auth/session").assert_error(401, "UNAUTHORIZED");
}
