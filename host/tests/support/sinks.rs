//! The far ends of notifications, on loopback: a webhook receiver that verifies signatures
//! the way the spec tells receivers to, an SMTP sink that speaks real SMTP, and a fake
//! Telegram Bot API.

#![allow(dead_code)]

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// Run `f`'s server on its own thread and runtime; stops when the guard drops.
fn spawn_server<F, Fut>(f: F) -> tokio::sync::oneshot::Sender<()>
where
    F: FnOnce(tokio::sync::oneshot::Receiver<()>) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + 'static,
{
    let (stop, stopped) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(f(stopped));
        runtime.shutdown_background();
    });
    stop
}

/// One request the webhook receiver got.
#[derive(Debug, Clone)]
pub struct Received {
    pub path: String,
    pub headers: HashMap<String, String>,
    pub body: String,
    pub json: Value,
    /// Whether the signature and timestamp checked out.
    pub verified: bool,
    /// What the receiver answered.
    pub answered: u16,
}

#[derive(Default)]
struct ReceiverState {
    secret: Mutex<String>,
    received: Mutex<Vec<Received>>,
    /// Per path: how many more requests to fail with 500.
    fail_next: Mutex<HashMap<String, u32>>,
    /// When set, every request answers 503.
    down: AtomicBool,
    /// Per path: how many more requests to hold without answering (for a minute), as a
    /// receiver that hangs would.
    hold_next: Mutex<HashMap<String, u32>>,
}

/// A webhook receiver. Paths: `/moved/...` answers 301; anything else 200, unless told
/// to fail.
pub struct Receiver {
    pub base: String,
    state: Arc<ReceiverState>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl Receiver {
    pub fn start() -> Receiver {
        let state = Arc::new(ReceiverState::default());
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind receiver");
        listener.set_nonblocking(true).expect("nonblocking");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let app = Router::new()
            .route("/{*path}", post(receive))
            .with_state(state.clone());
        let stop = spawn_server(move |stopped| async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await;
        });
        Receiver {
            base,
            state,
            _stop: stop,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// The secret signatures are checked with.
    pub fn set_secret(&self, secret: &str) {
        *self.state.secret.lock().expect("lock") = secret.to_string();
    }

    /// Fail the next `n` requests to `path` with 500.
    pub fn fail_next(&self, path: &str, n: u32) {
        self.state
            .fail_next
            .lock()
            .expect("lock")
            .insert(path.to_string(), n);
    }

    /// Hold the next `n` requests to `path` unanswered for a minute (they are recorded,
    /// with `answered` 0).
    pub fn hold_next(&self, path: &str, n: u32) {
        self.state
            .hold_next
            .lock()
            .expect("lock")
            .insert(path.to_string(), n);
    }

    pub fn set_down(&self, down: bool) {
        self.state.down.store(down, Ordering::SeqCst);
    }

    pub fn received(&self) -> Vec<Received> {
        self.state.received.lock().expect("lock").clone()
    }

    /// Requests to `path` (all answers).
    pub fn at(&self, path: &str) -> Vec<Received> {
        self.received()
            .into_iter()
            .filter(|r| r.path == path)
            .collect()
    }
}

async fn receive(
    State(s): State<Arc<ReceiverState>>,
    Path(path): Path<String>,
    headers: HeaderMap,
    body: String,
) -> Response {
    let path = format!("/{path}");
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    let secret = s.secret.lock().expect("lock").clone();
    let timestamp: i64 = header("x-service-timestamp").parse().unwrap_or(0);
    let now = chrono::Utc::now().timestamp();
    let verified = tocsin::outbox::signing::verify(
        &secret,
        timestamp,
        &body,
        &header("x-service-signature"),
        now,
        300,
    )
    .is_ok();
    let hold = {
        let mut holds = s.hold_next.lock().expect("lock");
        match holds.get_mut(&path) {
            Some(n) if *n > 0 => {
                *n -= 1;
                true
            }
            _ => false,
        }
    };
    let answered = if hold {
        0
    } else if s.down.load(Ordering::SeqCst) {
        503
    } else if path.starts_with("/moved") {
        301
    } else {
        let mut fails = s.fail_next.lock().expect("lock");
        match fails.get_mut(&path) {
            Some(n) if *n > 0 => {
                *n -= 1;
                500
            }
            _ => 200,
        }
    };
    let headers_map = headers
        .iter()
        .map(|(k, v)| (k.as_str().to_string(), v.to_str().unwrap_or("").to_string()))
        .collect();
    s.received.lock().expect("lock").push(Received {
        path,
        headers: headers_map,
        json: serde_json::from_str(&body).unwrap_or(Value::Null),
        body,
        verified,
        answered,
    });
    if hold {
        tokio::time::sleep(std::time::Duration::from_secs(60)).await;
        return StatusCode::OK.into_response();
    }
    match answered {
        301 => (
            StatusCode::MOVED_PERMANENTLY,
            [(header::LOCATION, "/elsewhere")],
        )
            .into_response(),
        code => StatusCode::from_u16(code)
            .unwrap_or(StatusCode::OK)
            .into_response(),
    }
}

/// One message the SMTP sink accepted.
#[derive(Debug, Clone)]
pub struct Mail {
    pub from: String,
    pub to: Vec<String>,
    pub data: String,
}

/// An SMTP server that accepts every message.
pub struct SmtpSink {
    pub port: u16,
    mails: Arc<Mutex<Vec<Mail>>>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl SmtpSink {
    pub fn start() -> SmtpSink {
        SmtpSink::start_on(0)
    }

    /// On a given port (0: any), e.g. one the server was told about while it was down.
    pub fn start_on(port: u16) -> SmtpSink {
        let mails = Arc::new(Mutex::new(Vec::new()));
        let listener = std::net::TcpListener::bind(("127.0.0.1", port)).expect("bind smtp");
        listener.set_nonblocking(true).expect("nonblocking");
        let port = listener.local_addr().expect("addr").port();
        let store = mails.clone();
        let stop = spawn_server(move |mut stopped| async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
            loop {
                tokio::select! {
                    _ = &mut stopped => break,
                    accepted = listener.accept() => {
                        let Ok((socket, _)) = accepted else { continue };
                        tokio::spawn(session(socket, store.clone()));
                    }
                }
            }
        });
        SmtpSink {
            port,
            mails,
            _stop: stop,
        }
    }

    pub fn mails(&self) -> Vec<Mail> {
        self.mails.lock().expect("lock").clone()
    }

    /// The mails with a recipient containing `address`.
    pub fn mails_to(&self, address: &str) -> Vec<Mail> {
        self.mails()
            .into_iter()
            .filter(|m| m.to.iter().any(|t| t.contains(address)))
            .collect()
    }
}

/// One SMTP conversation.
async fn session(socket: tokio::net::TcpStream, mails: Arc<Mutex<Vec<Mail>>>) {
    let (read, mut write) = socket.into_split();
    let mut lines = BufReader::new(read).lines();
    let _ = write.write_all(b"220 sink.test ESMTP ready\r\n").await;
    let (mut from, mut to) = (String::new(), Vec::new());
    while let Ok(Some(line)) = lines.next_line().await {
        let upper = line.to_ascii_uppercase();
        let reply: &[u8] = if upper.starts_with("EHLO") {
            b"250-sink.test\r\n250 8BITMIME\r\n"
        } else if upper.starts_with("HELO") {
            b"250 sink.test\r\n"
        } else if upper.starts_with("MAIL FROM:") {
            from = line[10..].trim().trim_matches(['<', '>']).to_string();
            b"250 OK\r\n"
        } else if upper.starts_with("RCPT TO:") {
            to.push(line[8..].trim().trim_matches(['<', '>']).to_string());
            b"250 OK\r\n"
        } else if upper == "DATA" {
            let _ = write
                .write_all(b"354 End data with <CR><LF>.<CR><LF>\r\n")
                .await;
            let mut data = String::new();
            while let Ok(Some(l)) = lines.next_line().await {
                if l == "." {
                    break;
                }
                data.push_str(l.strip_prefix('.').unwrap_or(&l));
                data.push('\n');
            }
            mails.lock().expect("lock").push(Mail {
                from: from.clone(),
                to: std::mem::take(&mut to),
                data,
            });
            b"250 OK queued\r\n"
        } else if upper == "QUIT" {
            let _ = write.write_all(b"221 Bye\r\n").await;
            break;
        } else if upper == "RSET" || upper == "NOOP" {
            b"250 OK\r\n"
        } else {
            b"502 Command not implemented\r\n"
        };
        if write.write_all(reply).await.is_err() {
            break;
        }
    }
}

/// One message the fake Bot API got.
#[derive(Debug, Clone)]
pub struct TelegramMessage {
    pub token: String,
    pub body: Value,
}

/// A fake Telegram Bot API: `POST /bot<token>/sendMessage`, `answerCallbackQuery`, `getMe`.
pub struct FakeTelegram {
    pub base: String,
    messages: Arc<Mutex<Vec<TelegramMessage>>>,
    /// `answerCallbackQuery` calls: the answers to button presses.
    answers: Arc<Mutex<Vec<TelegramMessage>>>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl FakeTelegram {
    pub fn start() -> FakeTelegram {
        FakeTelegram::start_on(0)
    }

    /// On a given port (0: any), e.g. one the server was told about while it was down.
    pub fn start_on(port: u16) -> FakeTelegram {
        let messages = Arc::new(Mutex::new(Vec::new()));
        let listener = std::net::TcpListener::bind(("127.0.0.1", port)).expect("bind telegram");
        listener.set_nonblocking(true).expect("nonblocking");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let answers = Arc::new(Mutex::new(Vec::new()));
        let app = Router::new()
            .route("/{bot}/sendMessage", post(send_message))
            .route("/{bot}/getMe", get(get_me))
            .with_state(messages.clone())
            .merge(
                Router::new()
                    .route("/{bot}/answerCallbackQuery", post(send_message))
                    .with_state(answers.clone()),
            )
            .merge(
                Router::new()
                    .route("/{bot}/setWebhook", post(set_webhook))
                    .route("/{bot}/getWebhookInfo", get(webhook_info))
                    .with_state(Arc::new(Mutex::new(String::new()))),
            );
        let stop = spawn_server(move |stopped| async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await;
        });
        FakeTelegram {
            base,
            messages,
            answers,
            _stop: stop,
        }
    }

    pub fn messages(&self) -> Vec<TelegramMessage> {
        self.messages.lock().expect("lock").clone()
    }

    /// The answers the server gave to button presses (`answerCallbackQuery`).
    pub fn answers(&self) -> Vec<TelegramMessage> {
        self.answers.lock().expect("lock").clone()
    }
}

/// `setWebhook` with a `url` form field (the last one set is the bot's webhook).
async fn set_webhook(State(url): State<Arc<Mutex<String>>>, body: String) -> Response {
    let set = url::form_urlencoded::parse(body.as_bytes())
        .find(|(k, _)| k == "url")
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default();
    *url.lock().expect("lock") = set;
    (
        [(header::CONTENT_TYPE, "application/json")],
        r#"{"ok":true,"result":true,"description":"Webhook was set"}"#,
    )
        .into_response()
}

/// `getWebhookInfo`: the webhook `setWebhook` set, or none.
async fn webhook_info(State(url): State<Arc<Mutex<String>>>) -> Response {
    let body = serde_json::json!({"ok": true, "result": {"url": *url.lock().expect("lock"), "pending_update_count": 0}});
    (
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// `getMe`: the token `bad` is refused as the Bot API refuses a revoked token.
async fn get_me(Path(bot): Path<String>) -> Response {
    if bot == "botbad" {
        return (
            StatusCode::UNAUTHORIZED,
            [(header::CONTENT_TYPE, "application/json")],
            r#"{"ok":false,"error_code":401,"description":"Unauthorized"}"#,
        )
            .into_response();
    }
    (
        [(header::CONTENT_TYPE, "application/json")],
        r#"{"ok":true,"result":{"id":7,"is_bot":true,"first_name":"Tocsin","username":"tocsin_test_bot"}}"#,
    )
        .into_response()
}

async fn send_message(
    State(m): State<Arc<Mutex<Vec<TelegramMessage>>>>,
    Path(bot): Path<String>,
    body: String,
) -> Response {
    let Some(token) = bot.strip_prefix("bot") else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let Ok(json) = serde_json::from_str::<Value>(&body) else {
        return (
            StatusCode::BAD_REQUEST,
            r#"{"ok":false,"description":"Bad Request: invalid JSON"}"#,
        )
            .into_response();
    };
    m.lock().expect("lock").push(TelegramMessage {
        token: token.to_string(),
        body: json,
    });
    (
        [(header::CONTENT_TYPE, "application/json")],
        r#"{"ok":true,"result":{"message_id":1}}"#,
    )
        .into_response()
}

/// A TCP server that accepts connections and never answers: a target that hangs. It
/// counts the connections open now and the most ever open at once.
pub struct Silent {
    pub port: u16,
    open: Arc<std::sync::atomic::AtomicI64>,
    peak: Arc<std::sync::atomic::AtomicI64>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl Silent {
    pub fn start() -> Silent {
        use std::sync::atomic::AtomicI64;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind silent");
        listener.set_nonblocking(true).expect("nonblocking");
        let port = listener.local_addr().expect("addr").port();
        let open = Arc::new(AtomicI64::new(0));
        let peak = Arc::new(AtomicI64::new(0));
        let (o, p) = (open.clone(), peak.clone());
        let stop = spawn_server(move |mut stopped| async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
            loop {
                tokio::select! {
                    _ = &mut stopped => break,
                    accepted = listener.accept() => {
                        let Ok((mut socket, _)) = accepted else { continue };
                        let now = o.fetch_add(1, Ordering::SeqCst) + 1;
                        p.fetch_max(now, Ordering::SeqCst);
                        let o = o.clone();
                        tokio::spawn(async move {
                            use tokio::io::AsyncReadExt;
                            // Read and ignore until the client gives up and closes.
                            let mut buf = [0u8; 1024];
                            while let Ok(n) = socket.read(&mut buf).await {
                                if n == 0 {
                                    break;
                                }
                            }
                            o.fetch_sub(1, Ordering::SeqCst);
                        });
                    }
                }
            }
        });
        Silent {
            port,
            open,
            peak,
            _stop: stop,
        }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }

    /// Connections open now.
    pub fn open(&self) -> i64 {
        self.open.load(Ordering::SeqCst)
    }

    /// The most connections ever open at once.
    pub fn peak(&self) -> i64 {
        self.peak.load(Ordering::SeqCst)
    }
}
