//! TLS on loopback: a private CA and certificates made with rcgen for each test, a TLS
//! server that answers every request with `200 ok`, and a test host in a network
//! namespace of its own for ICMP that goes unanswered.

#![allow(dead_code)]

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use std::process::Command;
use std::sync::Arc;
use time::{Duration as TimeDuration, OffsetDateTime};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A private certificate authority.
pub struct TestCa {
    pub pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl TestCa {
    pub fn new(name: &str) -> TestCa {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        let key = KeyPair::generate().expect("key");
        let cert = params.self_signed(&key).expect("CA certificate");
        TestCa {
            pem: cert.pem(),
            issuer: Issuer::new(params, key),
        }
    }

    /// A server certificate for `names`, valid from `from_days` to `to_days` around now.
    pub fn leaf(&self, names: &[&str], from_days: i64, to_days: i64) -> Leaf {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let mut params = CertificateParams::new(names.clone()).expect("params");
        params
            .distinguished_name
            .push(DnType::CommonName, names[0].clone());
        let now = OffsetDateTime::now_utc();
        params.not_before = now + TimeDuration::days(from_days);
        params.not_after = now + TimeDuration::days(to_days);
        let key = KeyPair::generate().expect("key");
        let cert = params.signed_by(&key, &self.issuer).expect("leaf");
        Leaf {
            der: cert.der().clone(),
            key: key.serialize_der(),
        }
    }
}

/// A server certificate and its key.
pub struct Leaf {
    pub der: CertificateDer<'static>,
    key: Vec<u8>,
}

impl Leaf {
    /// A TLS acceptor presenting this certificate.
    pub fn acceptor(&self) -> tokio_rustls::TlsAcceptor {
        tocsin::crypto::install_provider();
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.key.clone()));
        let config = rustls::ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(vec![self.der.clone()], key)
            .expect("server config");
        tokio_rustls::TlsAcceptor::from(Arc::new(config))
    }
}

/// A TLS server on 127.0.0.1 presenting one certificate; every request gets `200 ok`.
pub struct TlsServer {
    pub port: u16,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }
}

impl TlsServer {
    pub fn start(leaf: &Leaf) -> TlsServer {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let stop = accept_tls(listener, leaf.acceptor(), |mut tls| async move {
            // Read what the client sends (nothing, for a bare handshake).
            let mut buf = vec![0u8; 4096];
            let read =
                tokio::time::timeout(std::time::Duration::from_secs(5), tls.read(&mut buf)).await;
            if let Ok(Ok(n)) = read
                && n > 0
            {
                let _ = tls
                    .write_all(
                        b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok",
                    )
                    .await;
            }
            let _ = tls.shutdown().await;
        });
        TlsServer {
            port,
            stop: Some(stop),
        }
    }
}

/// Accept connections on `listener` in a thread of its own (with its own runtime), each
/// handled by `handle` in a task, until the returned sender is used or dropped.
fn accept_tcp<F, Fut>(
    listener: std::net::TcpListener,
    handle: F,
) -> tokio::sync::oneshot::Sender<()>
where
    F: Fn(tokio::net::TcpStream) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    listener.set_nonblocking(true).expect("nonblocking");
    let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
            loop {
                tokio::select! {
                    _ = &mut stopped => break,
                    accepted = listener.accept() => {
                        let Ok((tcp, _)) = accepted else { continue };
                        tokio::spawn(handle(tcp));
                    }
                }
            }
        });
    });
    stop
}

/// Accept TLS connections on `listener` in a thread of their own, each handled by
/// `handle`, until the returned sender is used or dropped.
fn accept_tls<F, Fut>(
    listener: std::net::TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    handle: F,
) -> tokio::sync::oneshot::Sender<()>
where
    F: Fn(tokio_rustls::server::TlsStream<tokio::net::TcpStream>) -> Fut + Send + Clone + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    accept_tcp(listener, move |tcp| {
        let (acceptor, handle) = (acceptor.clone(), handle.clone());
        async move {
            if let Ok(tls) = acceptor.accept(tcp).await {
                handle(tls).await;
            }
        }
    })
}

/// A TLS front for a plain-HTTP server: accepts TLS on `listen` (any port), presenting
/// `leaf`, and passes each connection's bytes to `upstream` and back.
pub struct TlsProxy {
    pub address: std::net::SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for TlsProxy {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }
}

impl TlsProxy {
    pub fn start(leaf: &Leaf, listen: &str, upstream: std::net::SocketAddr) -> TlsProxy {
        let listener = std::net::TcpListener::bind(listen).expect("bind");
        let address = listener.local_addr().expect("addr");
        let stop = accept_tls(listener, leaf.acceptor(), move |mut tls| async move {
            let Ok(mut up) = tokio::net::TcpStream::connect(upstream).await else {
                return;
            };
            let _ = tokio::io::copy_bidirectional(&mut tls, &mut up).await;
        });
        TlsProxy {
            address,
            stop: Some(stop),
        }
    }
}

/// A host in a network namespace of its own, joined to this one by a veth pair. Removed
/// on drop. Needs root (or CAP_NET_ADMIN) and the `ip` tool; `create` says why not.
pub struct NetnsHost {
    /// The namespace's name, for `ip netns exec`.
    pub name: String,
    veth: String,
    /// The test host's address.
    pub address: String,
    /// This side's address on the link, which the test host reaches.
    pub host_address: String,
}

impl NetnsHost {
    /// Addresses come from 10.213.<n>.<4k>/30, <n> from the process id and <k> counting
    /// the hosts this process made, so parallel tests and test processes do not collide.
    pub fn create() -> Result<NetnsHost, String> {
        static MADE: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let k = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % 60;
        let id = std::process::id() % 250;
        let name = format!("tocsin-test-{}-{k}", std::process::id());
        let veth = format!("tcs{id}a{k}");
        let peer = format!("tcs{id}b{k}");
        let local = format!("10.213.{id}.{}/30", 4 * k + 1);
        let address = format!("10.213.{id}.{}", 4 * k + 2);
        let host = NetnsHost {
            name: name.clone(),
            veth: veth.clone(),
            address: address.clone(),
            host_address: format!("10.213.{id}.{}", 4 * k + 1),
        };
        let steps: Vec<Vec<String>> = vec![
            vec!["netns", "add", &name],
            vec!["link", "add", &veth, "type", "veth", "peer", "name", &peer],
            vec!["link", "set", &peer, "netns", &name],
            vec!["addr", "add", &local, "dev", &veth],
            vec!["link", "set", &veth, "up"],
            vec![
                "-n",
                &name,
                "addr",
                "add",
                &format!("{address}/30"),
                "dev",
                &peer,
            ],
            vec!["-n", &name, "link", "set", &peer, "up"],
            vec!["-n", &name, "link", "set", "lo", "up"],
        ]
        .into_iter()
        .map(|s| s.into_iter().map(str::to_string).collect())
        .collect();
        for args in steps {
            run("ip", &args)?;
        }
        Ok(host)
    }

    /// Make the test host ignore (true) or answer (false) ICMP echo requests.
    pub fn ignore_echo(&self, ignore: bool) {
        let setting = format!(
            "net.ipv4.icmp_echo_ignore_all={}",
            if ignore { 1 } else { 0 }
        );
        let args: Vec<String> = ["netns", "exec", &self.name, "sysctl", "-q", "-w", &setting]
            .into_iter()
            .map(str::to_string)
            .collect();
        run("ip", &args).expect("sysctl in the namespace");
    }
}

impl Drop for NetnsHost {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["link", "del", &self.veth])
            .status();
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .status();
    }
}

fn run(program: &str, args: &[String]) -> Result<(), String> {
    let out = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`{program} {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// A mail server on 127.0.0.1 that offers STARTTLS and completes it with `leaf`: greeting,
/// EHLO (listing STARTTLS), STARTTLS, the handshake, EHLO again, QUIT. Counts finished
/// upgrades.
pub struct StartTlsSmtp {
    pub port: u16,
    pub upgrades: Arc<std::sync::atomic::AtomicU32>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for StartTlsSmtp {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }
}

impl StartTlsSmtp {
    pub fn start(leaf: &Leaf) -> StartTlsSmtp {
        use tokio::io::AsyncBufReadExt;
        let acceptor = leaf.acceptor();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let upgrades = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let counted = upgrades.clone();
        let stop = accept_tcp(listener, move |tcp| {
            let (acceptor, counted) = (acceptor.clone(), counted.clone());
            async move {
                let mut plain = tokio::io::BufReader::new(tcp);
                let _ = plain.write_all(b"220 mx.test ESMTP\r\n").await;
                let mut line = String::new();
                loop {
                    line.clear();
                    if plain.read_line(&mut line).await.unwrap_or(0) == 0 {
                        return;
                    }
                    let upper = line.trim().to_ascii_uppercase();
                    if upper.starts_with("EHLO") {
                        let _ = plain
                            .write_all(b"250-mx.test\r\n250-PIPELINING\r\n250 STARTTLS\r\n")
                            .await;
                    } else if upper == "STARTTLS" {
                        let _ = plain.write_all(b"220 2.0.0 Ready to start TLS\r\n").await;
                        break;
                    } else {
                        let _ = plain
                            .write_all(b"530 5.7.0 Must issue a STARTTLS command first\r\n")
                            .await;
                    }
                }
                let Ok(tls) = acceptor.accept(plain.into_inner()).await else {
                    return;
                };
                let mut tls = tokio::io::BufReader::new(tls);
                loop {
                    line.clear();
                    if tls.read_line(&mut line).await.unwrap_or(0) == 0 {
                        return;
                    }
                    let upper = line.trim().to_ascii_uppercase();
                    if upper.starts_with("EHLO") {
                        counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        let _ = tls.write_all(b"250-mx.test\r\n250 AUTH PLAIN\r\n").await;
                    } else if upper == "QUIT" {
                        let _ = tls.write_all(b"221 2.0.0 Bye\r\n").await;
                        let _ = tls.shutdown().await;
                        return;
                    } else {
                        let _ = tls.write_all(b"502 5.5.1 Unrecognized command\r\n").await;
                    }
                }
            }
        });
        StartTlsSmtp {
            port,
            upgrades,
            stop: Some(stop),
        }
    }
}
