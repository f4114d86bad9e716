//! A person's browser for API tests: the session cookie and the CSRF token, kept by hand
//! (no cookie jar), and the one-time tokens of links.

use super::Reply;
use serde_json::{Value, json};

/// A person's browser: the session cookie and the CSRF token.
pub struct Browser {
    pub base: String,
    pub http: reqwest::blocking::Client,
    pub cookie: Option<String>,
    pub csrf: Option<String>,
}

impl Browser {
    pub fn new(base: &str) -> Browser {
        tocsin::crypto::install_provider();
        Browser {
            base: base.to_string(),
            http: reqwest::blocking::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .expect("client"),
            cookie: None,
            csrf: None,
        }
    }

    pub fn send(&mut self, method: &str, path: &str, body: Option<&Value>, csrf: bool) -> Reply {
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let mut req = self.http.request(method, format!("{}{path}", self.base));
        if let Some(c) = &self.cookie {
            req = req.header("cookie", format!("tocsin_session={c}"));
        }
        if csrf && let Some(t) = &self.csrf {
            req = req.header("x-csrf-token", t);
        }
        if let Some(b) = body {
            req = req.json(b);
        }
        let reply = super::reply(req.send().expect("request"));
        if let Some(set) = reply
            .headers
            .get("set-cookie")
            .and_then(|v| v.to_str().ok())
        {
            assert!(set.contains("HttpOnly"), "{set}");
            assert!(set.contains("SameSite=Lax"), "{set}");
            let value = set
                .trim_start_matches("tocsin_session=")
                .split(';')
                .next()
                .unwrap_or_default();
            self.cookie = (!value.is_empty()).then(|| value.to_string());
        }
        if let Some(t) = reply.body["data"]["csrfToken"].as_str() {
            self.csrf = Some(t.to_string());
        }
        reply
    }

    pub fn get(&mut self, path: &str) -> Reply {
        self.send("GET", path, None, true)
    }

    pub fn post(&mut self, path: &str, body: &Value) -> Reply {
        self.send("POST", path, Some(body), true)
    }

    /// A dashboard page (or any non-JSON answer) with the session: status, headers, text.
    pub fn html(&self, path: &str) -> (u16, reqwest::header::HeaderMap, String) {
        let mut req = self.http.get(format!("{}{path}", self.base));
        if let Some(c) = &self.cookie {
            req = req.header("cookie", format!("tocsin_session={c}"));
        }
        let r = req.send().expect("page");
        let status = r.status().as_u16();
        let headers = r.headers().clone();
        (status, headers, r.text().expect("html"))
    }

    pub fn login(&mut self, email: &str, password: &str) -> Reply {
        self.post(
            "/v1/auth/login",
            &json!({"email": email, "password": password}),
        )
    }
}

/// The `token` parameter of the first link to `path` in `text`.
pub fn token_in(text: &str, path: &str) -> String {
    let start = text
        .find(&format!("{path}?token="))
        .unwrap_or_else(|| panic!("no {path} link in {text}"));
    text[start + path.len() + 7..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric())
        .collect()
}

/// The owner of a fresh `server` (Olive), signed up through its setup link, with a session.
pub fn sign_up_owner(server: &super::Server) -> Browser {
    let link = std::fs::read_to_string(server.data_dir.join("setup-link.txt")).expect("link");
    let mut owner = Browser::new(&server.base);
    let r = owner.post(
        "/v1/auth/setup",
        &json!({"token": token_in(&link, "/setup"), "name": "Olive", "email": "olive@example.com", "password": "olive-password-1"}),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    owner
}
