//! CPU per check or delivery of every plugin in the built-in catalogue. Run with
//! `cargo bench -p tocsin --bench catalogue`.
//!
//! Each plugin works against a loopback peer in this process (a banner server, an SMTP
//! server, a DNS responder, an HTTP server answering every provider's and RDAP's request with 200), or the
//! machine's Redis, PostgreSQL, MariaDB and Mosquitto (whichever answer); calls run one after another; CPU is the whole process's (`/proc/self/stat`, user +
//! system), so the loopback peer's share is counted too, and the same way for the
//! baseline: the `http` monitor's GET against the same HTTP server. Figures are printed as
//! microseconds of CPU per call and as a ratio to that baseline, measured in the same run.

use std::sync::Arc;
use std::time::Instant;
use tocsin::plugins::{CheckRequest, HostSettings, Notification, PluginHost};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// Calls per plugin (after a warm-up), `TOCSIN_BENCH_CALLS` or 2000: enough clock ticks
/// (10 ms each) for a per-call figure.
fn calls() -> u32 {
    std::env::var("TOCSIN_BENCH_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(2000)
}
const WARM_UP: u32 = 50;

/// CPU time of this process so far, in seconds (user + system, from clock ticks).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which is in parentheses and may hold spaces).
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are fields 14 and 15 of the file, 12 and 13 after the name; Linux
    // reports them in USER_HZ, 100 per second.
    (ticks(11) + ticks(12)) / 100.0
}

async fn http_peer() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let app = axum::Router::new().fallback(|| async {
        (
            [("content-type", "application/json")],
            r#"{"ok":true,"status":"success","events":[{"eventAction":"expiration","eventDate":"2099-01-01T00:00:00Z"}]}"#,
        )
    });
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    format!("http://{addr}")
}

async fn banner_peer() -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            tokio::spawn(async move {
                let _ = s.write_all(b"SSH-2.0-Bench\r\n").await;
            });
        }
    });
    port
}

async fn smtp_peer() -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(async move {
        while let Ok((s, _)) = listener.accept().await {
            tokio::spawn(async move {
                let (r, mut w) = s.into_split();
                let mut lines = BufReader::new(r).lines();
                let _ = w.write_all(b"220 bench ESMTP\r\n").await;
                while let Ok(Some(line)) = lines.next_line().await {
                    let reply: &[u8] = if line.to_ascii_uppercase().starts_with("EHLO") {
                        b"250-bench\r\n250 8BITMIME\r\n"
                    } else {
                        b"221 bye\r\n"
                    };
                    if w.write_all(reply).await.is_err() || reply.starts_with(b"221") {
                        break;
                    }
                }
            });
        }
    });
    port
}

/// A DNS-over-TCP responder that answers every query with one A record, 192.0.2.1.
async fn dns_peer() -> u16 {
    use tokio::io::AsyncReadExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut len = [0u8; 2];
                if s.read_exact(&mut len).await.is_err() {
                    return;
                }
                let mut q = vec![0u8; usize::from(u16::from_be_bytes(len))];
                if s.read_exact(&mut q).await.is_err() || q.len() < 17 {
                    return;
                }
                let mut r = q[..2].to_vec();
                r.extend_from_slice(&[0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0]);
                r.extend_from_slice(&q[12..]);
                r.extend_from_slice(&[
                    0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0x0e, 0x10, 0, 4, 192, 0, 2, 1,
                ]);
                let mut framed = (r.len() as u16).to_be_bytes().to_vec();
                framed.extend_from_slice(&r);
                let _ = s.write_all(&framed).await;
            });
        }
    });
    port
}

fn redis_answers() -> bool {
    use std::io::{Read, Write};
    let Ok(mut s) = std::net::TcpStream::connect("127.0.0.1:6379") else {
        return false;
    };
    let _ = s.set_read_timeout(Some(std::time::Duration::from_secs(1)));
    let mut buf = [0u8; 16];
    s.write_all(b"PING\r\n").is_ok()
        && s.read(&mut buf)
            .is_ok_and(|n| buf[..n].starts_with(b"+PONG"))
}

const PAYLOAD: &str = r#"{"event":"incident.created","timestamp":"2026-11-21T09:30:00.000Z","webhookId":"whd_bench","incident":{"id":"inc_bench","url":"https://tocsin.test/incidents/inc_bench","status":"open","createdAt":"2026-11-21T09:30:00.000Z"},"monitor":{"id":"mon_bench","name":"Checkout API","type":"http","url":"https://api.example.com/health"},"failure":{"reason":"Expected status 200, got 503","statusCode":503,"responseTime":182,"region":"eu-west"},"workspace":{"id":"ws_bench","name":"Acme"}}"#;

async fn per_check(host: &PluginHost, kind: &str, config: &str) -> Option<f64> {
    let plugin = host.monitor(kind)?;
    let config = host
        .validate_monitor_config(&plugin, config.to_string())
        .await
        .ok()?
        .ok()?;
    let run = |n: u32| {
        let plugin = plugin.clone();
        let config = config.clone();
        async move {
            for _ in 0..n {
                let o = host
                    .check(
                        &plugin,
                        CheckRequest {
                            config: config.clone(),
                            timeout_ms: 5000,
                            monitor_id: "mon_bench".into(),
                            region: "local".into(),
                            settings: "{}".into(),
                            attempt: 1,
                        },
                    )
                    .await
                    .expect("check");
                assert!(o.ok, "{kind}: {:?}", o.reason);
            }
        }
    };
    run(WARM_UP).await;
    let cpu = cpu_seconds();
    run(calls()).await;
    Some((cpu_seconds() - cpu) * 1e6 / f64::from(calls()))
}

async fn per_delivery(host: &PluginHost, kind: &str, config: &str, settings: &str) -> Option<f64> {
    let plugin = host.channel(kind)?;
    let config = host
        .validate_channel_config(&plugin, config.to_string())
        .await
        .ok()?
        .ok()?;
    let run = |n: u32| {
        let plugin = plugin.clone();
        let config = config.clone();
        async move {
            for _ in 0..n {
                let r = host
                    .deliver(
                        &plugin,
                        Notification {
                            event: "incident.created".into(),
                            config: config.clone(),
                            payload: PAYLOAD.into(),
                            headers: vec![],
                            timeout_ms: 5000,
                            settings: settings.to_string(),
                        },
                    )
                    .await
                    .expect("deliver");
                assert!(r.is_ok(), "{kind}: {r:?}");
            }
        }
    };
    run(WARM_UP).await;
    let cpu = cpu_seconds();
    run(calls()).await;
    Some((cpu_seconds() - cpu) * 1e6 / f64::from(calls()))
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(run());
}

async fn run() {
    tocsin::crypto::install_provider();
    let mut host = PluginHost::new(None, &HostSettings::default()).expect("host");
    let refused = host.load_all(PluginHost::builtin_sources()).await;
    assert!(refused.is_empty(), "{refused:?}");
    let host = Arc::new(host);
    let base = http_peer().await;
    let banner = banner_peer().await;
    let smtp = smtp_peer().await;
    let dns = dns_peer().await;
    let started = Instant::now();

    let baseline = per_check(
        &host,
        "http",
        &format!(r#"{{"url":"{base}/health","method":"GET"}}"#),
    )
    .await
    .expect("http baseline");
    println!(
        "baseline: http monitor, GET on loopback: {baseline:.0} us CPU per check ({} checks)",
        calls()
    );
    let line = |what: String, us: f64| {
        println!(
            "{what}: {us:.0} us CPU per call, {:.2}x the http baseline",
            us / baseline
        );
    };

    let mut monitors = vec![
        (
            "tcp",
            format!(r#"{{"host":"127.0.0.1","port":{banner}}}"#),
            "connect",
        ),
        (
            "tcp",
            format!(r#"{{"host":"127.0.0.1","port":{banner},"expect":"SSH-2.0"}}"#),
            "banner",
        ),
        (
            "smtp",
            format!(r#"{{"host":"127.0.0.1","port":{smtp}}}"#),
            "greeting and EHLO",
        ),
    ];
    monitors.push((
        "dns",
        format!(r#"{{"hostname":"example.test","resolver":"127.0.0.1","port":{dns},"expected":["192.0.2.1"]}}"#),
        "A record from a loopback resolver",
    ));
    monitors.push((
        "domain-expiry",
        format!(r#"{{"domain":"example.test","rdapServer":"{base}"}}"#),
        "RDAP on loopback",
    ));
    let answers = |addr: &str| std::net::TcpStream::connect(addr).is_ok();
    if answers("127.0.0.1:5432") {
        monitors.push((
            "postgres",
            r#"{"host":"127.0.0.1","database":"postgres","query":"SELECT 1","expectedValue":"1"}"#
                .to_string(),
            "sign-in and SELECT 1 on the machine's PostgreSQL",
        ));
    }
    if answers("127.0.0.1:3306") {
        monitors.push((
            "mysql",
            r#"{"host":"127.0.0.1","query":"SELECT 1","expectedValue":"1"}"#.to_string(),
            "sign-in and SELECT 1 on the machine's MariaDB",
        ));
    }
    if answers("127.0.0.1:1883") {
        monitors.push((
            "mqtt",
            r#"{"host":"127.0.0.1"}"#.to_string(),
            "CONNECT on the machine's Mosquitto",
        ));
    }
    if redis_answers() {
        monitors.push((
            "redis",
            r#"{"host":"127.0.0.1"}"#.to_string(),
            "PING on the machine's Redis",
        ));
    } else {
        println!("monitor redis: skipped, no Redis answers on 127.0.0.1:6379");
    }
    for (kind, config, what) in monitors {
        if let Some(us) = per_check(&host, kind, &config).await {
            line(format!("monitor {kind} ({what})"), us);
        }
    }

    let url = |p: &str| format!("{base}{p}");
    let settings = format!(r#"{{"apiBase":"{base}","eventsUrl":"{base}/v2/enqueue"}}"#);
    let channels = [
        ("webhook", format!(r#"{{"url":"{}"}}"#, url("/hook"))),
        ("slack", format!(r#"{{"webhookUrl":"{}"}}"#, url("/slack"))),
        ("discord", format!(r#"{{"webhookUrl":"{}"}}"#, url("/discord"))),
        ("teams", format!(r#"{{"webhookUrl":"{}"}}"#, url("/teams"))),
        ("mattermost", format!(r#"{{"webhookUrl":"{}"}}"#, url("/mm"))),
        ("rocketchat", format!(r#"{{"webhookUrl":"{}"}}"#, url("/rc"))),
        ("googlechat", format!(r#"{{"webhookUrl":"{}"}}"#, url("/gc?key=k&token=t"))),
        (
            "matrix",
            format!(r#"{{"homeserverUrl":"{base}","roomId":"!r:x","accessToken":"t"}}"#),
        ),
        ("ntfy", format!(r#"{{"serverUrl":"{base}","topic":"bench"}}"#)),
        ("gotify", format!(r#"{{"serverUrl":"{base}","appToken":"t"}}"#)),
        (
            "pushover",
            r#"{"appToken":"azGDORePK8gMaC0QOYAMyEEuzJnyUi","userKey":"uQiRzpo4DXghDmr9QzzfQu27cmVRsG"}"#.to_string(),
        ),
        ("pagerduty", r#"{"routingKey":"R0ut1ngKeyR0ut1ngKeyR0ut1ngKey32"}"#.to_string()),
        ("opsgenie", r#"{"apiKey":"k"}"#.to_string()),
    ];
    for (kind, config) in channels {
        let settings = if kind == "webhook" {
            r#"{"allowInsecure":true}"#.to_string()
        } else {
            settings.clone()
        };
        match per_delivery(&host, kind, &config, &settings).await {
            Some(us) => line(format!("channel {kind}"), us),
            None => println!("channel {kind}: not loaded or its configuration was refused"),
        }
    }
    println!("({:.0} s in all)", started.elapsed().as_secs_f64());
}
