//! Shared pieces of the end-to-end tests: a `tocsin serve` child process on loopback and
//! a small API client (here), a loopback HTTP target (`target`), webhook, SMTP and Telegram
//! sinks (`sinks`), TLS servers and network-namespace hosts (`tls`) and the plugin
//! conformance kit (`conformance`). Each test gets its own data directory and port. Every
//! test file includes it the same way: `mod support;` and `use support::...`.

#![allow(dead_code)]

pub mod browser;
pub mod chromium;
pub mod conformance;
pub mod debian;
pub mod pg;
pub mod providers;
pub mod rows;
pub mod sinks;
pub mod target;
pub mod tls;

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The admin key every test server starts with.
pub const ADMIN_KEY: &str = "tcs_TestAdminKey0000000000000000000000000001";

/// A free loopback port (the listener is closed again before the server binds it).
/// Never the same port twice in one test process: tests run in parallel.
pub fn free_port() -> u16 {
    static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        if !given.contains(&port) {
            given.push(port);
            return port;
        }
    }
}

/// Run `tocsin <args>` in `dir` with only `env` (and PATH) set; (success, stdout + stderr).
pub fn run_tocsin(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tocsin"))
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("TOCSIN_LOG", "warn")
        .envs(env.iter().copied())
        .current_dir(dir)
        .output()
        .expect("run tocsin");
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// A running `tocsin serve`.
pub struct Server {
    pub base: String,
    pub data_dir: PathBuf,
    child: Child,
    _temp: Option<tempfile::TempDir>,
}

impl Server {
    /// Start a server on SQLite in a fresh data directory, with `min_interval` 1.
    pub fn start(extra_env: &[(&str, &str)]) -> Server {
        let temp = tempfile::tempdir().expect("tempdir");
        let data_dir = temp.path().to_path_buf();
        let mut server = Server::start_in(&data_dir, extra_env);
        server._temp = Some(temp);
        server
    }

    /// Start another node on the SQLite database of `primary` (a data directory holding
    /// `tocsin.db` and, if any, `tocsin.toml`), with a data directory of its own: each
    /// server holds its directory's lock.
    pub fn start_node_sharing(primary: &Path, extra_env: &[(&str, &str)]) -> Server {
        let temp = tempfile::tempdir().expect("tempdir");
        let config = primary.join("tocsin.toml");
        if config.is_file() {
            std::fs::copy(&config, temp.path().join("tocsin.toml")).expect("copy config");
        }
        let database = format!("sqlite://{}", primary.join("tocsin.db").display());
        let mut env: Vec<(&str, &str)> = vec![("TOCSIN_DATABASE_URL", &database)];
        env.extend_from_slice(extra_env);
        let mut server = Server::start_in(temp.path(), &env);
        server._temp = Some(temp);
        server
    }

    /// Start a server on an existing data directory (for restarts).
    /// The server binds a port the kernel picks and the test reads it from the server's
    /// own "listening" line, so two servers never race for one port. A `TOCSIN_LISTEN` in
    /// `extra_env` picks the port instead (for tests that must know the address before
    /// the server starts).
    pub fn start_in(data_dir: &Path, extra_env: &[(&str, &str)]) -> Server {
        static STARTED: AtomicUsize = AtomicUsize::new(0);
        let n = STARTED.fetch_add(1, Ordering::Relaxed);
        let log_path = data_dir.join(format!("server-{}-{n}.log", std::process::id()));
        let log = std::fs::File::create(&log_path).expect("log file");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_tocsin"));
        cmd.arg("serve")
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("TOCSIN_LISTEN", "127.0.0.1:0")
            .env("TOCSIN_DATA_DIR", data_dir)
            .env("TOCSIN_MIN_INTERVAL", "1")
            // Every test server shares one compile cache: each component is compiled once
            // per test run, not once per server.
            .env(
                "TOCSIN_PLUGIN_CACHE_DIR",
                Path::new(env!("CARGO_TARGET_TMPDIR")).join("plugin-cache"),
            )
            .env("TOCSIN_BOOTSTRAP_KEY", ADMIN_KEY)
            .env("TOCSIN_LOG", "info,tower_http=warn")
            // Tests poll the API quickly; the rate-limit test sets its own limits.
            .env("TOCSIN_RATE_LIMIT_PER_MINUTE", "1000000")
            .env("TOCSIN_RATE_LIMIT_BURST", "100000")
            .current_dir(data_dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log);
        for (k, v) in extra_env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("start tocsin");
        let stdout = child.stdout.take().expect("piped stdout");
        let (tell, told) = std::sync::mpsc::channel();
        // Read the address, then keep draining stdout until the server ends.
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(address) = line.strip_prefix("Tocsin is listening on ") {
                    let _ = tell.send(address.trim().to_string());
                }
            }
        });
        // Generous: a server compiling large plugins (Python, JavaScript) on a busy machine.
        let base = match told.recv_timeout(Duration::from_secs(240)) {
            Ok(address) => address,
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "tocsin did not start listening ({e}); log:\n{}",
                    std::fs::read_to_string(&log_path).unwrap_or_default()
                );
            }
        };
        let server = Server {
            base,
            data_dir: data_dir.to_path_buf(),
            child,
            _temp: None,
        };
        server.wait_ready();
        server
    }

    fn wait_ready(&self) {
        tocsin::crypto::install_provider();
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if let Ok(r) = reqwest::blocking::get(format!("{}/readyz", self.base))
                && r.status().is_success()
            {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("tocsin did not become ready; log:\n{}", self.log());
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        let mut out = String::new();
        if let Ok(entries) = std::fs::read_dir(&self.data_dir) {
            for e in entries.flatten() {
                if e.file_name().to_string_lossy().starts_with("server-") {
                    out.push_str(&std::fs::read_to_string(e.path()).unwrap_or_default());
                }
            }
        }
        out
    }

    /// Run `tocsin <args>` against this server's data directory and return its stdout.
    pub fn cli(&self, args: &[&str]) -> String {
        self.cli_with(args, &[])
    }

    /// [`Server::cli`] with extra environment (e.g. the server's `TOCSIN_DATABASE_URL`).
    pub fn cli_with(&self, args: &[&str], env: &[(&str, &str)]) -> String {
        let out = Command::new(env!("CARGO_BIN_EXE_tocsin"))
            .args(args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("TOCSIN_DATA_DIR", &self.data_dir)
            .env("TOCSIN_LOG", "warn")
            .envs(env.iter().copied())
            .current_dir(&self.data_dir)
            .output()
            .expect("run tocsin");
        assert!(
            out.status.success(),
            "tocsin {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// A client with the admin key.
    pub fn client(&self) -> Api {
        tocsin::crypto::install_provider();
        Api {
            base: self.base.clone(),
            key: Some(ADMIN_KEY.to_string()),
            http: client(),
        }
    }

    /// Stop gracefully (SIGTERM) and wait for the process to end.
    pub fn stop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }

    /// Stop with SIGKILL.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
        // A failing test shows what the server complained of.
        if std::thread::panicking() {
            let log = self.log();
            let lines: Vec<&str> = log
                .lines()
                .filter(|l| l.contains("WARN") || l.contains("ERROR") || l.contains("panicked"))
                .collect();
            let tail = &lines[lines.len().saturating_sub(40)..];
            eprintln!(
                "server {} warnings and errors:\n{}",
                self.base,
                tail.join("\n")
            );
        }
    }
}

/// A response: status and JSON body (Null when empty).
pub struct Reply {
    pub status: u16,
    pub body: Value,
    pub headers: reqwest::header::HeaderMap,
}

/// A small blocking API client.
#[derive(Clone)]
pub struct Api {
    pub base: String,
    pub key: Option<String>,
    pub http: reqwest::blocking::Client,
}

impl Api {
    /// The id of the workspace this key acts in.
    pub fn workspace_id(&self) -> String {
        self.get("/v1/workspace").body["data"]["id"]
            .as_str()
            .expect("workspace id")
            .to_string()
    }

    pub fn without_key(&self) -> Api {
        Api {
            base: self.base.clone(),
            key: None,
            http: self.http.clone(),
        }
    }

    pub fn with_key(&self, key: &str) -> Api {
        Api {
            base: self.base.clone(),
            key: Some(key.to_string()),
            http: self.http.clone(),
        }
    }

    pub fn request(&self, method: &str, path: &str, body: Option<&Value>) -> Reply {
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let mut req = self.http.request(method, format!("{}{path}", self.base));
        if let Some(k) = &self.key {
            req = req.bearer_auth(k);
        }
        if let Some(b) = body {
            req = req.json(b);
        }
        Reply::from(req.send().expect("request"))
    }

    pub fn raw(
        &self,
        method: &str,
        path: &str,
        content_type: Option<&str>,
        body: Vec<u8>,
    ) -> Reply {
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let mut req = self
            .http
            .request(method, format!("{}{path}", self.base))
            .body(body);
        if let Some(k) = &self.key {
            req = req.bearer_auth(k);
        }
        if let Some(ct) = content_type {
            req = req.header("content-type", ct);
        }
        Reply::from(req.send().expect("request"))
    }

    pub fn get(&self, path: &str) -> Reply {
        self.request("GET", path, None)
    }

    pub fn post(&self, path: &str, body: &Value) -> Reply {
        self.request("POST", path, Some(body))
    }

    pub fn patch(&self, path: &str, body: &Value) -> Reply {
        self.request("PATCH", path, Some(body))
    }

    pub fn delete(&self, path: &str) -> Reply {
        self.request("DELETE", path, None)
    }
}

/// A response read into a [`Reply`].
pub fn reply(r: reqwest::blocking::Response) -> Reply {
    Reply::from(r)
}

impl Reply {
    fn from(r: reqwest::blocking::Response) -> Reply {
        let status = r.status().as_u16();
        let headers = r.headers().clone();
        let text = r.text().unwrap_or_default();
        let body = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        Reply {
            status,
            body,
            headers,
        }
    }

    /// Assert the error envelope with `status` and `code`.
    pub fn assert_error(&self, status: u16, code: &str) {
        assert_eq!(self.status, status, "body: {}", self.body);
        assert_eq!(self.body["success"], false, "body: {}", self.body);
        assert_eq!(self.body["error"]["code"], code, "body: {}", self.body);
        assert_eq!(
            self.body["error"]["statusCode"], status,
            "body: {}",
            self.body
        );
        assert!(
            self.body["meta"]["requestId"]
                .as_str()
                .is_some_and(|r| r.starts_with("req_")),
            "body: {}",
            self.body
        );
        assert!(
            self.body["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty())
        );
    }
}

/// Poll `f` until it returns Some, or panic after `timeout`.
pub fn wait_for<T>(what: &str, timeout: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return v;
        }
        if Instant::now() > deadline {
            panic!("timed out waiting for {what}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// POST `body` to `path`, assert 201, and return the created object.
pub fn create(api: &Api, path: &str, body: Value) -> Value {
    let r = api.post(path, &body);
    assert_eq!(r.status, 201, "{path}: {}", r.body);
    r.body["data"].clone()
}

/// Ping a heartbeat monitor's URL (`signal` "" for success, "/fail", "/start", ...), without
/// a key; the answer comes once the check is committed.
pub fn ping(api: &Api, monitor: &Value, signal: &str) {
    let url = monitor["pingUrl"].as_str().expect("pingUrl");
    let path = &url[url.find("/ping/").expect("ping path")..];
    let r = api
        .without_key()
        .raw("POST", &format!("{path}{signal}"), None, Vec::new());
    assert_eq!(r.status, 200, "{}", r.body);
}

/// The tests' HTTP client. It lets a pooled connection go after 5 s idle: the server
/// closes kept-alive connections idle for 10 s (`HEADER_TIMEOUT`), and a request sent on
/// one just as the server closes it fails ("connection closed before message completed").
pub fn client() -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder()
        .pool_idle_timeout(Duration::from_secs(5))
        .build()
        .expect("client")
}

/// Run `work` on the server's own SQLite database (opened beside the running server, then
/// closed): for tests that set up or read rows the API does not reach.
pub fn on_store<T, F, Fut>(server: &Server, work: F) -> T
where
    F: FnOnce(tocsin::store::Store) -> Fut,
    Fut: std::future::Future<Output = (tocsin::store::Store, T)>,
{
    let url = format!("sqlite://{}", server.data_dir.join("tocsin.db").display());
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let store = tocsin::store::Store::connect(&url).await.expect("store");
        let (store, out) = work(store).await;
        store.close().await;
        out
    })
}

/// Checks of a monitor as (region, ok, counted, confirmation status), oldest first.
pub fn verdicts(api: &Api, id: &str) -> Vec<(String, bool, bool, String)> {
    let r = api.get(&format!("/v1/monitors/{id}/checks?limit=100"));
    assert_eq!(r.status, 200, "{}", r.body);
    let mut list: Vec<(i64, (String, bool, bool, String))> = r.body["data"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|c| {
            (
                chrono::DateTime::parse_from_rfc3339(c["checkedAt"].as_str().unwrap_or_default())
                    .map(|t| t.timestamp_millis())
                    .unwrap_or_default(),
                (
                    c["region"].as_str().unwrap_or("").to_string(),
                    c["ok"].as_bool().unwrap_or(false),
                    c["counted"].as_bool().unwrap_or(false),
                    c["details"]["confirmation"]["status"]
                        .as_str()
                        .unwrap_or("")
                        .to_string(),
                ),
            )
        })
        .collect();
    list.sort_by_key(|c| c.0);
    list.into_iter().map(|c| c.1).collect()
}
