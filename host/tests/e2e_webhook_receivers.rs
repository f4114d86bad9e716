//! End to end: the example webhook receivers (Rust, Python, Node.js) against a running
//! Tocsin. Real deliveries are accepted, a redelivery is recognised as a duplicate, a
//! tampered body and a stale timestamp are refused; the CLI helpers agree.

use crate::support;

use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::{Api, Server, wait_for};

/// A running receiver and the lines it printed.
struct Running {
    name: &'static str,
    url: String,
    lines: Arc<Mutex<Vec<String>>>,
    child: Option<Child>,
    _stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(c) = &mut self.child {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Running {
    fn saw(&self, line: &str) -> bool {
        self.lines.lock().expect("lock").iter().any(|l| l == line)
    }
}

fn examples() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/webhook-receivers")
}

/// Start a receiver program; None (with a visible note) when its runtime is missing.
fn spawn(name: &'static str, program: &str, script: &str, secret: &str) -> Option<Running> {
    if Command::new(program).arg("--version").output().is_err() {
        eprintln!("SKIPPED the {name} receiver: `{program}` is not installed");
        return None;
    }
    let mut child = Command::new(program)
        .arg(examples().join(script))
        .env("TOCSIN_WEBHOOK_SECRET", secret)
        .env("PORT", "0")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start receiver");
    let lines = Arc::new(Mutex::new(Vec::new()));
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    let sink = lines.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(url) = line.strip_prefix("listening on ") {
                let _ = tx.send(url.to_string());
            }
            sink.lock().expect("lock").push(line);
        }
    });
    let url = rx
        .recv_timeout(Duration::from_secs(20))
        .unwrap_or_else(|_| panic!("the {name} receiver did not start"));
    Some(Running {
        name,
        url: format!("{url}/hooks/tocsin"),
        lines,
        child: Some(child),
        _stop: None,
    })
}

/// The Rust example, in this process.
fn rust_receiver(secret: &str) -> Running {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = lines.clone();
    let log = lines.clone();
    let receiver = Arc::new(
        tocsin_example_receiver::Receiver::new(vec![secret.to_string()], move |event| {
            sink.lock().expect("lock").push(format!(
                "accepted {} {}",
                event["webhookId"].as_str().unwrap_or(""),
                event["event"].as_str().unwrap_or("")
            ));
        })
        .with_log(move |line| log.lock().expect("lock").push(line)),
    );
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    let url = format!(
        "http://{}/hooks/tocsin",
        listener.local_addr().expect("addr")
    );
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
            let _ = axum::serve(listener, tocsin_example_receiver::app(receiver))
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await;
        });
    });
    Running {
        name: "rust",
        url,
        lines,
        child: None,
        _stop: Some(stop),
    }
}

/// Post a body with the given signature headers, as an attacker or a broken proxy would.
fn post_raw(url: &str, timestamp: i64, signature: &str, body: &str) -> u16 {
    reqwest::blocking::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("x-service-timestamp", timestamp.to_string())
        .header("x-service-signature", signature)
        .body(body.to_string())
        .send()
        .expect("post")
        .status()
        .as_u16()
}

fn test_delivery(api: &Api, channel: &str) -> Value {
    let r = api.request("POST", &format!("/v1/channels/{channel}/test"), None);
    assert!(r.status == 200 || r.status == 201, "{}", r.body);
    r.body["data"].clone()
}

#[test]
fn example_receivers_verify_and_deduplicate_real_deliveries() {
    let server = Server::start(&[("TOCSIN_ALLOW_INSECURE_WEBHOOKS", "true")]);
    let api = server.client();
    let secret = api.get("/v1/workspace/webhook-secret").body["data"]["secret"]
        .as_str()
        .expect("secret")
        .to_string();

    let mut receivers = vec![rust_receiver(&secret)];
    receivers.extend(spawn("python", "python3", "python/receiver.py", &secret));
    receivers.extend(spawn("node", "node", "node/receiver.js", &secret));

    for r in &receivers {
        let channel = api.post(
            "/v1/channels",
            &json!({"name": format!("{} receiver", r.name), "type": "webhook", "url": r.url}),
        );
        assert_eq!(channel.status, 201, "{}", channel.body);
        let channel = channel.body["data"]["id"].as_str().expect("id").to_string();

        // A real, signed delivery from the server: accepted.
        let d = test_delivery(&api, &channel);
        assert_eq!(d["status"], "succeeded", "{}: {d}", r.name);
        let id = d["id"].as_str().expect("delivery id").to_string();
        wait_for(
            &format!("{} accepting {id}", r.name),
            Duration::from_secs(10),
            || {
                r.saw(&format!("accepted {id} incident.created"))
                    .then_some(())
            },
        );

        // Sent again with the same webhookId: recognised, answered 2xx, not acted on.
        let again = api.request(
            "POST",
            &format!("/v1/webhook-deliveries/{id}/redeliver"),
            None,
        );
        assert!(again.status < 300, "{}", again.body);
        wait_for(
            &format!("{} spotting the duplicate", r.name),
            Duration::from_secs(15),
            || {
                let attempts =
                    api.get(&format!("/v1/webhook-deliveries/{id}")).body["data"]["attempts"]
                        .as_u64()
                        .unwrap_or(0);
                (attempts >= 2 && r.saw(&format!("duplicate {id}"))).then_some(())
            },
        );
        let accepted = r
            .lines
            .lock()
            .expect("lock")
            .iter()
            .filter(|l| l.starts_with(&format!("accepted {id}")))
            .count();
        assert_eq!(accepted, 1, "{} acted twice", r.name);

        // Forged and replayed deliveries are refused.
        let now = chrono::Utc::now().timestamp();
        let genuine = r#"{"event":"incident.created","webhookId":"whd_forged"}"#;
        let tampered = r#"{"event":"incident.resolved","webhookId":"whd_forged"}"#;
        let sig = tocsin::outbox::signing::sign(&secret, now, genuine);
        assert_eq!(post_raw(&r.url, now, &sig, tampered), 401, "{}", r.name);
        let old = now - 301;
        let stale_sig = tocsin::outbox::signing::sign(&secret, old, genuine);
        assert_eq!(
            post_raw(&r.url, old, &stale_sig, genuine),
            400,
            "{}",
            r.name
        );
        assert!(
            !r.lines
                .lock()
                .expect("lock")
                .iter()
                .any(|l| l.contains("whd_forged") && l.starts_with("accepted")),
            "{} acted on a forged delivery",
            r.name
        );
    }

    // A real event of a monitor reaches every receiver through a policy.
    let channels: Vec<Value> = receivers
        .iter()
        .map(|r| json!({"type": "webhook", "url": r.url}))
        .collect();
    let policy = api.post(
        "/v1/alert-policies",
        &json!({"name": "receivers", "channels": channels}),
    );
    assert_eq!(policy.status, 201, "{}", policy.body);
    let monitor = api.post(
        "/v1/monitors",
        &json!({"name": "m", "type": "http", "url": "http://127.0.0.1:9/", "method": "GET", "interval": 3600, "alertPolicyId": policy.body["data"]["id"]}),
    );
    let monitor = monitor.body["data"]["id"].as_str().expect("id").to_string();
    assert_eq!(
        api.request("POST", &format!("/v1/monitors/{monitor}/pause"), None)
            .status,
        200
    );
    for r in &receivers {
        wait_for(
            &format!("{} getting monitor.paused", r.name),
            Duration::from_secs(20),
            || {
                r.lines
                    .lock()
                    .expect("lock")
                    .iter()
                    .any(|l| l.starts_with("accepted ") && l.ends_with(" monitor.paused"))
                    .then_some(())
            },
        );
    }

    // The CLI's test sender is accepted by a receiver that knows the secret, and refused by
    // one that does not.
    let target = &receivers[receivers.len() - 1];
    let out = Command::new(env!("CARGO_BIN_EXE_tocsin"))
        .args([
            "webhook",
            "send-test",
            "--url",
            &target.url,
            "--secret",
            &secret,
        ])
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.starts_with("delivered: 200"),
        "{text}"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_tocsin"))
        .args([
            "webhook",
            "send-test",
            "--url",
            &target.url,
            "--secret",
            "whsec_wrong",
        ])
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        !out.status.success() && text.starts_with("refused: 401"),
        "{text}"
    );
}

#[test]
fn the_verify_helper_explains_failures() {
    let dir = tempfile::tempdir().expect("dir");
    let body = r#"{"event":"monitor.paused","webhookId":"whd_1"}"#;
    let file = dir.path().join("body.json");
    let now = chrono::Utc::now().timestamp();
    let verify = |ts: i64, sig: &str, content: &str| {
        std::fs::write(&file, content).expect("write");
        let out = Command::new(env!("CARGO_BIN_EXE_tocsin"))
            .args(["webhook", "verify", "--secret", "whsec_test", "--timestamp"])
            .arg(ts.to_string())
            .args(["--signature", sig, "--body"])
            .arg(&file)
            .output()
            .expect("run");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).to_string(),
        )
    };
    let sig = tocsin::outbox::signing::sign("whsec_test", now, body);
    let (ok, text) = verify(now, &sig, body);
    assert!(ok && text.starts_with("valid"), "{text}");
    let (ok, text) = verify(now, &sig, &format!("{body}\n"));
    assert!(!ok && text.contains("trailing newline"), "{text}");
    let old_sig = tocsin::outbox::signing::sign("whsec_test", now - 600, body);
    let (ok, text) = verify(now - 600, &old_sig, body);
    assert!(!ok && text.contains("s old"), "{text}");
    let other = tocsin::outbox::signing::sign("whsec_other", now, body);
    let (ok, text) = verify(now, &other, body);
    assert!(!ok && text.contains("secret is wrong"), "{text}");
}
