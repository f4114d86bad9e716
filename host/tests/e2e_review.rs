//! End to end: the security review's attack list, played against the real server.
//! A role that tries to rise (an admin's key made owner, a key outliving its maker's
//! rights), a read principal that tries to change state with a ping URL, and refused
//! deletes that must leave no audit entry.

use crate::support;

use serde_json::{Value, json};
use support::browser::{Browser, token_in};
use support::{Api, Server};

fn create(api: &Api, path: &str, body: Value) -> String {
    let r = api.post(path, &body);
    assert_eq!(r.status, 201, "{path}: {}", r.body);
    r.body["data"]["id"].as_str().expect("id").to_string()
}

fn new_key(api: &Api, role: &str) -> String {
    let r = api.post(
        "/v1/api-keys",
        &json!({"name": format!("{role} key"), "role": role}),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    r.body["data"]["secret"]
        .as_str()
        .expect("secret")
        .to_string()
}

/// A person with `role` in the server's first workspace, signed in; (member id, browser).
fn person(server: &Server, email: &str, role: &str) -> (String, Browser) {
    let admin = server.client();
    let ws = admin.workspace_id();
    let out = server.cli(&[
        "user",
        "create",
        "--email",
        email,
        "--workspace",
        &ws,
        "--role",
        role,
    ]);
    let token = token_in(&out, "/reset-password");
    let mut b = Browser::new(&server.base);
    let r = b.post(
        "/v1/auth/password-reset/confirm",
        &json!({"token": token, "password": "a-long-password-1"}),
    );
    assert_eq!(r.status, 204, "{}", r.body);
    let r = b.login(email, "a-long-password-1");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(b.get("/v1/auth/session").status, 200);
    let members = admin.get("/v1/workspace/members?limit=100").body;
    let id = members["data"]
        .as_array()
        .expect("members")
        .iter()
        .find(|m| m["email"] == email)
        .and_then(|m| m["id"].as_str())
        .expect("the person is a member")
        .to_string();
    (id, b)
}

#[test]
fn an_admin_cannot_make_itself_owner() {
    let server = Server::start(&[]);
    // The first start's key is the operator's: an owner key.
    let owner = server.client();
    let owner_member = create(
        &owner,
        "/v1/workspace/members",
        json!({"email": "olga@example.com", "role": "owner"}),
    );
    let (admin_member, mut admin_person) = person(&server, "adam@example.com", "admin");

    // The admin's session makes an admin key: allowed, its own rights.
    let r = admin_person.post("/v1/api-keys", &json!({"name": "adam's", "role": "admin"}));
    assert_eq!(r.status, 201, "{}", r.body);
    let admin_key = owner.with_key(r.body["data"]["secret"].as_str().expect("secret"));
    // ... but never an owner key, from the session or from its key.
    admin_person
        .post("/v1/api-keys", &json!({"name": "up", "role": "owner"}))
        .assert_error(403, "FORBIDDEN");
    admin_key
        .post("/v1/api-keys", &json!({"name": "up", "role": "owner"}))
        .assert_error(403, "FORBIDDEN");

    // Every owner-only action refuses the admin's key.
    admin_key
        .patch(
            &format!("/v1/workspace/members/{admin_member}"),
            &json!({"role": "owner"}),
        )
        .assert_error(403, "FORBIDDEN");
    admin_key
        .patch(
            &format!("/v1/workspace/members/{owner_member}"),
            &json!({"role": "viewer"}),
        )
        .assert_error(403, "FORBIDDEN");
    admin_key
        .delete(&format!("/v1/workspace/members/{owner_member}"))
        .assert_error(403, "FORBIDDEN");
    admin_key
        .post(
            "/v1/workspace/members",
            &json!({"email": "mallory@example.com", "role": "owner"}),
        )
        .assert_error(403, "FORBIDDEN");
    admin_key
        .post(
            "/v1/workspace/invitations",
            &json!({"email": "mallory@example.com", "role": "owner"}),
        )
        .assert_error(403, "FORBIDDEN");
    admin_key
        .patch("/v1/workspace", &json!({"requireTwoFactor": true}))
        .assert_error(403, "FORBIDDEN");
    // Nothing changed.
    let members = owner.get("/v1/workspace/members?limit=100").body;
    let role_of = |id: &str| {
        members["data"]
            .as_array()
            .expect("members")
            .iter()
            .find(|m| m["id"] == id)
            .map(|m| m["role"].clone())
    };
    assert_eq!(role_of(&admin_member), Some(json!("admin")));
    assert_eq!(role_of(&owner_member), Some(json!("owner")));
    assert_eq!(
        owner.get("/v1/workspace").body["data"]["requireTwoFactor"],
        false
    );

    // An owner key may do all of it, and mint an owner key, which an admin cannot revoke.
    let r = owner.post("/v1/api-keys", &json!({"name": "second", "role": "owner"}));
    assert_eq!(r.status, 201, "{}", r.body);
    let minted_id = r.body["data"]["id"].as_str().expect("id").to_string();
    let second_owner = owner.with_key(r.body["data"]["secret"].as_str().expect("secret"));
    admin_key
        .delete(&format!("/v1/api-keys/{minted_id}"))
        .assert_error(403, "FORBIDDEN");
    admin_person
        .send("DELETE", &format!("/v1/api-keys/{minted_id}"), None, true)
        .assert_error(403, "FORBIDDEN");
    assert_eq!(second_owner.get("/v1/monitors").status, 200);
    let r = second_owner.patch(
        &format!("/v1/workspace/members/{admin_member}"),
        &json!({"role": "owner"}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["data"]["role"], "owner");
}

#[test]
fn a_key_never_outranks_its_maker() {
    let server = Server::start(&[]);
    let owner = server.client();
    let (member_id, mut person) = person(&server, "ada@example.com", "admin");
    let r = person.post("/v1/api-keys", &json!({"name": "ada ci", "role": "admin"}));
    assert_eq!(r.status, 201, "{}", r.body);
    let key = owner.with_key(r.body["data"]["secret"].as_str().expect("secret"));
    let monitor = json!({"name": "m", "type": "http", "url": "http://127.0.0.1:9/", "method": "GET", "interval": 60});
    assert_eq!(key.post("/v1/monitors", &monitor).status, 201);

    // The maker becomes a viewer: the key reads, and no more.
    let r = owner.patch(
        &format!("/v1/workspace/members/{member_id}"),
        &json!({"role": "viewer"}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let refused = support::wait_for(
        "the key to lose its rights",
        std::time::Duration::from_secs(10),
        || {
            let r = key.post("/v1/monitors", &monitor);
            (r.status == 403).then_some(r)
        },
    );
    refused.assert_error(403, "FORBIDDEN");
    key.get("/v1/api-keys").assert_error(403, "FORBIDDEN");
    assert_eq!(key.get("/v1/monitors").status, 200);

    // The maker leaves: the key stops working.
    assert_eq!(
        owner
            .delete(&format!("/v1/workspace/members/{member_id}"))
            .status,
        204
    );
    support::wait_for(
        "the key to stop",
        std::time::Duration::from_secs(10),
        || (key.get("/v1/monitors").status == 401).then_some(()),
    );
}

#[test]
fn a_read_principal_is_not_shown_the_ping_token() {
    let server = Server::start(&[]);
    let admin = server.client();
    let r = admin.post(
        "/v1/monitors",
        &json!({"name": "nightly", "type": "heartbeat", "period": 3600, "grace": 60}),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let id = r.body["data"]["id"].as_str().expect("id").to_string();
    let full = r.body["data"]["pingUrl"]
        .as_str()
        .expect("ping url")
        .to_string();
    let token = full.rsplit('/').next().expect("token").to_string();
    assert!(token.len() >= 20, "{full}");

    let read = admin.with_key(&new_key(&admin, "read"));
    for path in [format!("/v1/monitors/{id}"), "/v1/monitors".to_string()] {
        let body = read.get(&path).body.to_string();
        assert!(!body.contains(&token), "{path} shows the token: {body}");
        assert!(body.contains("/ping/[redacted]"), "{path}: {body}");
    }
    // A writer still sees it whole.
    let write = admin.with_key(&new_key(&admin, "write"));
    assert!(
        write
            .get(&format!("/v1/monitors/{id}"))
            .body
            .to_string()
            .contains(&token)
    );
    // Nor does the audit log keep it.
    let log = admin.get("/v1/audit-log?limit=100").body.to_string();
    assert!(log.contains("monitor.create"), "{log}");
    assert!(
        !log.contains(&token),
        "the audit log keeps the ping token: {log}"
    );
    // A viewer's dashboard page does not show it either.
    let (_, viewer) = person(&server, "vic@example.com", "viewer");
    let page = viewer
        .http
        .get(format!("{}/monitors/{id}", viewer.base))
        .header(
            "cookie",
            format!("tocsin_session={}", viewer.cookie.clone().expect("cookie")),
        )
        .send()
        .expect("page");
    assert_eq!(page.status(), 200);
    let html = page.text().expect("html");
    assert!(html.contains("nightly"), "{html}");
    assert!(!html.contains(&token), "{html}");
}

#[test]
fn refused_deletes_write_no_audit_entry() {
    let server = Server::start(&[]);
    let admin = server.client();
    let before = admin.get("/v1/audit-log?limit=100").body["pagination"]["total"].clone();
    let doc = admin.get("/v1/openapi.json").body;
    let mut tried = 0;
    for (path, item) in doc["paths"].as_object().expect("paths") {
        if !path.starts_with("/v1/")
            || path.starts_with("/v1/auth/") && path != "/v1/auth/sessions/{id}"
        {
            continue;
        }
        if item.get("delete").is_none() || !path.contains('{') {
            continue;
        }
        let path = path
            .replace("{id}", "zz_01JD6Z3Y5N8Q2W7R4T6V9X0B1C")
            .replace("{tag}", "no-such-tag")
            .replace("{update_id}", "zz_01JD6Z3Y5N8Q2W7R4T6V9X0B1C")
            .replace("{subscriber_id}", "zz_01JD6Z3Y5N8Q2W7R4T6V9X0B1C");
        let r = admin.delete(&path);
        assert!(
            (400..500).contains(&r.status),
            "DELETE {path} of nothing answers {}: {}",
            r.status,
            r.body
        );
        tried += 1;
    }
    assert!(tried >= 8, "only {tried} delete routes found");
    // The person's own sessions: deleting an unknown one.
    let (_, mut person) = person(&server, "sam@example.com", "admin");
    let r = person.send(
        "DELETE",
        "/v1/auth/sessions/ses_01JD6Z3Y5N8Q2W7R4T6V9X0B1C",
        None,
        true,
    );
    assert_eq!(r.status, 404, "{}", r.body);
    let log = admin.get("/v1/audit-log?limit=100").body;
    let after: Vec<&str> = log["data"]
        .as_array()
        .expect("entries")
        .iter()
        .filter_map(|e| e["action"].as_str())
        .filter(|a| a.ends_with(".delete") || a.ends_with(".revoke") || a.ends_with(".remove"))
        .collect();
    assert!(
        after.is_empty(),
        "refused deletes were audited: {after:?} (total before {before})"
    );
}

/// Invite `email` as `role` with `who`'s session; the link's token.
fn invite(who: &mut Browser, email: &str, role: &str) -> String {
    let r = who.post(
        "/v1/workspace/invitations",
        &json!({"email": email, "role": role}),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    token_in(r.body["data"]["link"].as_str().expect("link"), "/invite")
}

/// Accept an invitation as a new account.
fn accept(server: &Server, token: &str) -> support::Reply {
    server.client().without_key().post(
        "/v1/auth/invitations/accept",
        &json!({"token": token, "name": "Newcomer", "password": "a-long-password-2"}),
    )
}

fn member_role(api: &Api, email: &str) -> Option<Value> {
    api.get("/v1/workspace/members?limit=100").body["data"]
        .as_array()
        .expect("members")
        .iter()
        .find(|m| m["email"] == email)
        .map(|m| m["role"].clone())
}

#[test]
fn an_invitation_never_outlives_its_makers_rights() {
    let server = Server::start(&[]);
    let owner = server.client();

    // An admin invites an admin, then is demoted to viewer: the invitation grants viewer.
    let (admin_id, mut admin) = person(&server, "admin2@example.com", "admin");
    let token = invite(&mut admin, "alt2@example.com", "admin");
    let r = owner.patch(
        &format!("/v1/workspace/members/{admin_id}"),
        &json!({"role": "viewer"}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let r = accept(&server, &token);
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.body["data"]["role"], "viewer", "{}", r.body);
    assert_eq!(
        member_role(&owner, "alt2@example.com"),
        Some(json!("viewer"))
    );

    // An owner invites an owner, then is demoted to admin (another owner stays): the
    // invitation grants admin.
    create(
        &owner,
        "/v1/workspace/members",
        json!({"email": "olga@example.com", "role": "owner"}),
    );
    let (second_id, mut second) = person(&server, "owner2@example.com", "owner");
    let token = invite(&mut second, "alt4@example.com", "owner");
    let r = owner.patch(
        &format!("/v1/workspace/members/{second_id}"),
        &json!({"role": "admin"}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let r = accept(&server, &token);
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.body["data"]["role"], "admin", "{}", r.body);
    assert_eq!(
        member_role(&owner, "alt4@example.com"),
        Some(json!("admin"))
    );

    // An inviter who left: the invitation is refused and changes nothing.
    let (gone_id, mut gone) = person(&server, "gone@example.com", "admin");
    let token = invite(&mut gone, "alt5@example.com", "member");
    assert_eq!(
        owner
            .delete(&format!("/v1/workspace/members/{gone_id}"))
            .status,
        204
    );
    accept(&server, &token).assert_error(400, "INVALID_TOKEN");
    assert_eq!(member_role(&owner, "alt5@example.com"), None);
    let mut newcomer = Browser::new(&server.base);
    assert_eq!(
        newcomer
            .login("alt5@example.com", "a-long-password-2")
            .status,
        401
    );

    // The operator's key stands for no member: its invitation keeps its role.
    let r = owner.post(
        "/v1/workspace/invitations",
        &json!({"email": "alt6@example.com", "role": "owner"}),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let token = token_in(r.body["data"]["link"].as_str().expect("link"), "/invite");
    let r = accept(&server, &token);
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.body["data"]["role"], "owner", "{}", r.body);
}

#[test]
fn an_invitation_never_lowers_a_membership() {
    let server = Server::start(&[]);
    let owner = server.client();
    let (_, mut admin) = person(&server, "adam@example.com", "admin");

    // An admin's viewer invitation, then the owner makes the address an owner.
    let token = invite(&mut admin, "vo@example.com", "viewer");
    let r = owner.post(
        "/v1/workspace/members",
        &json!({"email": "vo@example.com", "role": "owner"}),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let r = accept(&server, &token);
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.body["data"]["role"], "owner", "{}", r.body);
    assert_eq!(member_role(&owner, "vo@example.com"), Some(json!("owner")));
    let log = owner.get("/v1/audit-log?limit=100").body;
    let demotions: Vec<&Value> = log["data"]
        .as_array()
        .expect("entries")
        .iter()
        .filter(|e| e["action"] == "member.update")
        .collect();
    assert!(demotions.is_empty(), "{demotions:?}");

    // An invitation may still raise a membership.
    let token = invite(&mut admin, "up@example.com", "admin");
    let r = owner.post(
        "/v1/workspace/members",
        &json!({"email": "up@example.com", "role": "viewer"}),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let r = accept(&server, &token);
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.body["data"]["role"], "admin", "{}", r.body);
    assert_eq!(member_role(&owner, "up@example.com"), Some(json!("admin")));
}

/// The review's attack list in one run against one server, each step as an attacker
/// plays it. The deeper sweeps are beside it: every secret field of every plugin in
/// e2e_plugin_secrets, every private-address trick in e2e_subscribe_security, the
/// connection bound in e2e_slow_clients.
#[test]
fn the_review_attack_list_fails_at_every_step() {
    use std::io::{Read, Write};
    let receiver = support::sinks::Receiver::start();
    // The server's own preset lets members' monitors and channels reach loopback, as a
    // self-hoster's does; none of it may be lent to a visitor or a lesser key.
    let server = Server::start(&[
        ("TOCSIN_ALLOW_INSECURE_WEBHOOKS", "true"),
        ("TOCSIN_REQUEST_BODY_TIMEOUT", "2s"),
    ]);
    let owner = server.client();

    // 1. A role that tries to rise: an admin key mints an owner key, makes itself owner.
    let admin = owner.with_key(&new_key(&owner, "admin"));
    admin
        .post("/v1/api-keys", &json!({"name": "up", "role": "owner"}))
        .assert_error(403, "FORBIDDEN");
    let (adam, _) = person(&server, "adam@example.com", "admin");
    admin
        .patch(
            &format!("/v1/workspace/members/{adam}"),
            &json!({"role": "owner"}),
        )
        .assert_error(403, "FORBIDDEN");

    // 2. Anonymous input that tries to reach loopback: refused, and nothing is posted.
    let page = create(
        &owner,
        "/v1/status-pages",
        json!({"slug": "acme", "name": "Acme", "monitorIds": []}),
    );
    owner
        .without_key()
        .post(
            "/status/acme/subscribe",
            &json!({"webhookUrl": receiver.url("/steal")}),
        )
        .assert_error(400, "VALIDATION_ERROR");
    create(
        &owner,
        &format!("/v1/status-pages/{page}/updates"),
        json!({"status": "investigating", "body": "Looking into it."}),
    );

    // 3. Secret-bearing fields read by a read key: a chat webhook URL (the URL is the
    //    credential) and a stored password.
    let hook = "https://hooks.slack.com/services/T000/B000/XoXoSecretPath";
    create(
        &owner,
        "/v1/channels",
        json!({"name": "ops", "type": "slack", "webhookUrl": hook}),
    );
    let password = "Zq-review-redis-password";
    let monitor = create(
        &owner,
        "/v1/monitors",
        json!({"name": "cache", "type": "redis", "interval": 60,
               "config": {"host": "127.0.0.1", "port": 9, "password": password}}),
    );
    let read = owner.with_key(&new_key(&owner, "read"));
    for path in [
        "/v1/channels".to_string(),
        "/v1/monitors".to_string(),
        format!("/v1/monitors/{monitor}"),
    ] {
        let seen = read.get(&path);
        assert_eq!(seen.status, 200, "{path}: {}", seen.body);
        let text = seen.body.to_string();
        assert!(
            !text.contains("XoXoSecretPath") && !text.contains(password),
            "{path}: {text}"
        );
    }

    // 4. A slow body: the whole body has a deadline, not each byte.
    let address = server.base.trim_start_matches("http://").to_string();
    let mut s = std::net::TcpStream::connect(&address).expect("connect");
    s.set_read_timeout(Some(std::time::Duration::from_secs(20)))
        .expect("timeout");
    let head = format!(
        "POST /v1/monitors HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{{",
        support::ADMIN_KEY
    );
    s.write_all(head.as_bytes()).expect("write");
    let mut answer = Vec::new();
    let mut sent = 0;
    let mut buf = [0u8; 4096];
    s.set_nonblocking(true).expect("nonblocking");
    // At most 60 bytes at 5 a second: 12 s, far past the 2 s deadline.
    while sent < 60 {
        std::thread::sleep(std::time::Duration::from_millis(200));
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                answer.extend_from_slice(&buf[..n]);
                break;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(_) => break,
        }
        if s.write_all(b" ").is_err() {
            break;
        }
        sent += 1;
    }
    let answer = String::from_utf8_lossy(&answer);
    assert!(
        answer.starts_with("HTTP/1.1 408") && answer.contains("REQUEST_TIMEOUT"),
        "after {sent} trickled bytes: {answer}"
    );
    assert!(sent < 60, "the whole trickle was waited for");

    // 5. A changed target with a kept secret: a write key points the monitor at itself.
    let write = owner.with_key(&new_key(&owner, "write"));
    let r = write.patch(
        &format!("/v1/monitors/{monitor}"),
        &json!({"config": {"host": "localhost", "port": 6390}}),
    );
    r.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(r.body["error"]["details"][0]["field"], "config.password");
    assert_eq!(
        owner.get(&format!("/v1/monitors/{monitor}")).body["data"]["config"]["port"],
        9
    );

    // Nothing reached the loopback receiver meanwhile.
    std::thread::sleep(std::time::Duration::from_secs(2));
    assert!(receiver.received().is_empty(), "{:?}", receiver.received());
}
