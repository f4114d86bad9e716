//! Single sign-on end to end: a real OpenID Provider (the npm package `oidc-provider`,
//! installed on first use) on loopback, driven through its real redirects, login and
//! consent pages; the account created just in time, roles mapped from the `groups` claim
//! and re-evaluated at the next sign-in, a domain outside the allowed list refused, and
//! a pending invitation accepted by signing in; someone in no mapped group gets the
//! default role.

use crate::support;

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::{Server, free_port};

/// Install `oidc-provider` once per target directory.
fn provider_package() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("oidc-provider-9");
    // Both tests of this file start at once: one installs while the other waits.
    std::fs::create_dir_all(&dir).expect("dir");
    let lock = std::fs::File::create(dir.join(".lock")).expect("lock file");
    lock.lock().expect("lock");
    if !dir
        .join("node_modules/oidc-provider/package.json")
        .is_file()
    {
        std::fs::create_dir_all(&dir).expect("dir");
        let status = Command::new("npm")
            .args([
                "install",
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
                "--prefix",
            ])
            .arg(&dir)
            .arg("oidc-provider@9")
            .status()
            .expect("npm (Node.js) is needed for the single sign-on test");
        assert!(status.success(), "npm install oidc-provider failed");
    }
    dir
}

struct Provider {
    base: String,
    users: PathBuf,
    child: Child,
}

impl Drop for Provider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Provider {
    fn start(dir: &Path, redirect: &str, users: &Value) -> Provider {
        tocsin::crypto::install_provider();
        let package = provider_package();
        let script = package.join("provider.mjs");
        std::fs::copy(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oidc/provider.mjs"),
            &script,
        )
        .expect("copy the provider script");
        let users_file = dir.join("users.json");
        std::fs::write(&users_file, users.to_string()).expect("users");
        let port = free_port();
        let child = Command::new("node")
            .arg(&script)
            .arg(port.to_string())
            .arg(redirect)
            .arg(&users_file)
            .env("NODE_ENV", "development")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start node");
        let base = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if reqwest::blocking::get(format!("{base}/.well-known/openid-configuration"))
                .is_ok_and(|r| r.status().is_success())
            {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the OpenID provider did not start"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Provider {
            base,
            users: users_file,
            child,
        }
    }

    fn set_users(&self, users: &Value) {
        std::fs::write(&self.users, users.to_string()).expect("users");
    }
}

/// A browser with a cookie jar that follows redirects by hand.
fn browser() -> reqwest::blocking::Client {
    tocsin::crypto::install_provider();
    reqwest::blocking::Client::builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
}

fn absolute(base: &str, location: &str) -> String {
    if location.starts_with("http") {
        location.to_string()
    } else {
        format!("{base}{location}")
    }
}

/// Sign in through the provider as `login`; returns the last response (Tocsin's answer
/// to the callback).
fn sso(
    client: &reqwest::blocking::Client,
    tocsin: &str,
    provider: &str,
    login: &str,
) -> reqwest::blocking::Response {
    let mut response = client
        .get(format!("{tocsin}/v1/auth/oidc/corp/start"))
        .send()
        .expect("start");
    assert_eq!(response.status(), 302, "{:?}", response.text());
    for _ in 0..12 {
        let url = response.url().clone();
        let on_tocsin = url.as_str().starts_with(tocsin);
        if on_tocsin && url.path().ends_with("/callback") {
            return response;
        }
        if response.status().is_redirection() {
            let location = response.headers()["location"]
                .to_str()
                .expect("location")
                .to_string();
            let base = if on_tocsin { tocsin } else { provider };
            response = client
                .get(absolute(base, &location))
                .send()
                .expect("follow");
            continue;
        }
        // A provider page: the login form, then consent.
        let page = response.text().expect("page");
        let prompt = if page.contains(r#"value="login""#) {
            format!("prompt=login&login={login}&password=any")
        } else if page.contains(r#"value="consent""#) {
            "prompt=consent".to_string()
        } else {
            panic!("unexpected provider page at {url}: {page}");
        };
        response = client
            .post(url.as_str())
            .header("content-type", "application/x-www-form-urlencoded")
            .body(prompt)
            .send()
            .expect("submit");
    }
    panic!("too many steps in the sign-in");
}

fn session(client: &reqwest::blocking::Client, tocsin: &str) -> Value {
    client
        .get(format!("{tocsin}/v1/auth/session"))
        .send()
        .expect("session")
        .json()
        .expect("json")
}

#[test]
fn single_sign_on_on_sqlite() {
    single_sign_on_through_a_real_openid_provider(None);
}

#[test]
fn single_sign_on_on_postgres() {
    support::pg::with_database("single_sign_on_on_postgres", |url| {
        single_sign_on_through_a_real_openid_provider(Some(url));
    });
}

fn single_sign_on_through_a_real_openid_provider(database_url: Option<&str>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let port = free_port();
    let tocsin = format!("http://127.0.0.1:{port}");
    let redirect = format!("{tocsin}/v1/auth/oidc/corp/callback");
    let users = json!({
        "alice": {"email": "alice@corp.test", "name": "Alice", "groups": ["sre", "staff"]},
        "bob": {"email": "bob@corp.test", "name": "Bob", "groups": ["staff"]},
        "mallory": {"email": "mallory@elsewhere.test", "name": "Mallory", "groups": ["sre"]},
        "carol": {"email": "carol@partner.test", "name": "Carol", "groups": []},
        "dave": {"email": "dave@corp.test", "name": "Dave", "groups": ["sales"]},
        "erin": {"email": "erin@corp.test", "name": "Erin", "groups": ["staff"]},
    });
    let provider = Provider::start(dir.path(), &redirect, &users);
    std::fs::write(
        dir.path().join("tocsin.toml"),
        format!(
            r#"
[[oidc]]
name = "corp"
display_name = "Corp SSO"
issuer = "{}"
client_id = "tocsin"
client_secret = "tocsin-client-secret"
scopes = ["email", "profile", "groups"]
allowed_domains = ["corp.test"]
default_role = "viewer"

[[oidc.roles]]
group = "sre"
role = "admin"

[[oidc.roles]]
group = "staff"
role = "viewer"
"#,
            provider.base
        ),
    )
    .expect("config");
    let listen = format!("127.0.0.1:{port}");
    let mut env = vec![("TOCSIN_LISTEN", listen.as_str())];
    if let Some(url) = database_url {
        env.push(("TOCSIN_DATABASE_URL", url));
    }
    let server = Server::start_in(dir.path(), &env);

    let providers = server.client().without_key().get("/v1/auth/providers");
    assert_eq!(
        providers.body["data"][0]["displayName"], "Corp SSO",
        "{}",
        providers.body
    );

    // Erin is the workspace's only owner; `staff` maps to viewer, but a group mapping
    // never takes the last owner away.
    let r = server.client().post(
        "/v1/workspace/members",
        &json!({"email": "erin@corp.test", "role": "owner"}),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let erin = browser();
    let answer = sso(&erin, &tocsin, &provider.base, "erin");
    assert_eq!(answer.status(), 302);
    let s = session(&erin, &tocsin);
    assert_eq!(s["data"]["workspace"]["role"], "owner", "{s}");

    // Alice: created on first sign-in, admin through `sre`.
    let alice = browser();
    let answer = sso(&alice, &tocsin, &provider.base, "alice");
    assert_eq!(answer.status(), 302);
    assert_eq!(answer.headers()["location"], format!("{tocsin}/").as_str());
    let s = session(&alice, &tocsin);
    assert_eq!(s["data"]["user"]["email"], "alice@corp.test", "{s}");
    assert_eq!(s["data"]["user"]["hasPassword"], false);
    assert_eq!(s["data"]["workspace"]["role"], "admin", "{s}");
    assert_eq!(s["data"]["session"]["method"], "oidc:corp");
    let csrf = s["data"]["csrfToken"].as_str().expect("csrf").to_string();
    let write = alice
        .post(format!("{tocsin}/v1/status-pages"))
        .header("x-csrf-token", &csrf)
        .json(&json!({"name": "Public", "slug": "public", "monitorIds": []}))
        .send()
        .expect("write");
    assert_eq!(write.status(), 201);

    // Bob: viewer through `staff`; refused on writes.
    let bob = browser();
    sso(&bob, &tocsin, &provider.base, "bob");
    let s = session(&bob, &tocsin);
    assert_eq!(s["data"]["workspace"]["role"], "viewer", "{s}");
    let csrf = s["data"]["csrfToken"].as_str().expect("csrf").to_string();
    let refused = bob
        .post(format!("{tocsin}/v1/status-pages"))
        .header("x-csrf-token", &csrf)
        .json(&json!({"name": "Bob", "slug": "bobs", "monitorIds": []}))
        .send()
        .expect("write");
    assert_eq!(refused.status(), 403);

    // Bob joins `sre` at the provider: his next sign-in makes him an admin.
    let mut changed = users.clone();
    changed["bob"]["groups"] = json!(["sre"]);
    provider.set_users(&changed);
    let bob_again = browser();
    sso(&bob_again, &tocsin, &provider.base, "bob");
    assert_eq!(
        session(&bob_again, &tocsin)["data"]["workspace"]["role"],
        "admin"
    );

    // Dave is in no mapped group: the default role in the first workspace, not none.
    let dave = browser();
    let answer = sso(&dave, &tocsin, &provider.base, "dave");
    assert_eq!(answer.status(), 302);
    let s = session(&dave, &tocsin);
    assert_eq!(s["data"]["workspace"]["role"], "viewer", "{s}");
    assert_eq!(
        s["data"]["workspaces"].as_array().map(Vec::len),
        Some(1),
        "{s}"
    );

    // With another owner, Erin's next sign-in applies her group: viewer.
    let r = server.client().post(
        "/v1/workspace/members",
        &json!({"email": "olga@corp.test", "role": "owner"}),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let erin_again = browser();
    sso(&erin_again, &tocsin, &provider.base, "erin");
    assert_eq!(
        session(&erin_again, &tocsin)["data"]["workspace"]["role"],
        "viewer"
    );

    // Mallory's domain is not allowed and she has no invitation.
    let mallory = browser();
    let refused = sso(&mallory, &tocsin, &provider.base, "mallory");
    assert_eq!(refused.status(), 401);
    assert_eq!(session(&mallory, &tocsin)["success"], false);

    // Carol, outside the domain, was invited: signing in accepts the invitation.
    let invited = server.client().post(
        "/v1/workspace/invitations",
        &json!({"email": "carol@partner.test", "role": "member"}),
    );
    assert_eq!(invited.status, 201, "{}", invited.body);
    let carol = browser();
    let answer = sso(&carol, &tocsin, &provider.base, "carol");
    assert_eq!(answer.status(), 302);
    assert_eq!(
        session(&carol, &tocsin)["data"]["workspace"]["role"],
        "member"
    );

    // The audit log shows the accounts and role changes made by signing in.
    let log = server.client().get("/v1/audit-log?limit=100");
    let actions: Vec<&str> = log.body["data"]
        .as_array()
        .expect("log")
        .iter()
        .filter_map(|e| e["action"].as_str())
        .collect();
    for expected in [
        "user.create",
        "member.add",
        "member.update",
        "invitation.accept",
    ] {
        assert!(
            actions.contains(&expected),
            "{expected} missing from {actions:?}"
        );
    }
}

/// An identity provider that lets people claim any address (`email_verified` false) must
/// not sign anyone in to the account of that address, nor accept its invitations, unless
/// the operator says the provider's addresses are trusted.
#[test]
fn an_unverified_address_reaches_no_account() {
    let dir = tempfile::tempdir().expect("tempdir");
    let port = free_port();
    let tocsin = format!("http://127.0.0.1:{port}");
    let redirect = format!("{tocsin}/v1/auth/oidc/corp/callback");
    let users = json!({
        "olga": {"email": "olga@corp.test", "name": "Olga", "groups": []},
        // Eve claims Olga's address, and then an invited one.
        "eve": {"email": "olga@corp.test", "email_verified": false, "name": "Eve", "groups": []},
        "eve2": {"email": "mark@corp.test", "email_verified": false, "name": "Eve", "groups": []},
        "mark": {"email": "mark@corp.test", "name": "Mark", "groups": []},
    });
    let provider = Provider::start(dir.path(), &redirect, &users);
    let config = |trust: bool| {
        format!(
            r#"
[[oidc]]
name = "corp"
issuer = "{}"
client_id = "tocsin"
client_secret = "tocsin-client-secret"
scopes = ["email", "profile", "groups"]
{}
"#,
            provider.base,
            if trust { "trust_email = true" } else { "" }
        )
    };
    std::fs::write(dir.path().join("tocsin.toml"), config(false)).expect("config");
    let listen = format!("127.0.0.1:{port}");
    let server = Server::start_in(dir.path(), &[("TOCSIN_LISTEN", listen.as_str())]);
    let operator = server.client();

    // Olga, invited as owner, signs in with her verified address.
    let r = operator.post(
        "/v1/workspace/invitations",
        &json!({"email": "olga@corp.test", "role": "owner"}),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let olga = browser();
    assert_eq!(sso(&olga, &tocsin, &provider.base, "olga").status(), 302);
    assert_eq!(
        session(&olga, &tocsin)["data"]["workspace"]["role"],
        "owner"
    );

    // Eve's unverified claim to Olga's address is refused.
    let eve = browser();
    let refused = sso(&eve, &tocsin, &provider.base, "eve");
    assert_eq!(refused.status(), 401);
    let body: Value = refused.json().expect("envelope");
    assert_eq!(body["error"]["code"], "UNAUTHORIZED", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("not verified")),
        "{body}"
    );
    assert_eq!(session(&eve, &tocsin)["success"], false);

    // ... and so is her claim to an address with a pending invitation, which stays pending.
    let r = operator.post(
        "/v1/workspace/invitations",
        &json!({"email": "mark@corp.test", "role": "admin"}),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let eve = browser();
    assert_eq!(sso(&eve, &tocsin, &provider.base, "eve2").status(), 401);
    assert_eq!(session(&eve, &tocsin)["success"], false);
    let pending = operator.get("/v1/workspace/invitations").body;
    assert_eq!(
        pending["data"].as_array().map(Vec::len),
        Some(1),
        "{pending}"
    );
    let members = operator.get("/v1/workspace/members?limit=100").body;
    assert!(!members.to_string().contains("mark@corp.test"), "{members}");

    // Mark's own, verified sign-in accepts it.
    let mark = browser();
    assert_eq!(sso(&mark, &tocsin, &provider.base, "mark").status(), 302);
    assert_eq!(
        session(&mark, &tocsin)["data"]["workspace"]["role"],
        "admin"
    );
    drop(server);

    // An operator who trusts the provider's addresses (it verifies them without saying
    // so) lets the same sign-in through.
    std::fs::write(dir.path().join("tocsin.toml"), config(true)).expect("config");
    let server = Server::start_in(dir.path(), &[("TOCSIN_LISTEN", listen.as_str())]);
    let eve = browser();
    assert_eq!(sso(&eve, &tocsin, &provider.base, "eve").status(), 302);
    assert_eq!(
        session(&eve, &tocsin)["data"]["user"]["email"],
        "olga@corp.test"
    );
    drop(server);
}
