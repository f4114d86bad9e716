//! The `net` host interface: name resolution, ICMP echo (IPv4 and IPv6) and TCP connect,
//! each bounded by the plugin's request and by the time left in its call.
//!
//! ICMP uses an unprivileged datagram socket where the kernel allows one
//! (`net.ipv4.ping_group_range`) and a raw socket otherwise (root or `CAP_NET_RAW`).

use super::egress::EgressPolicy;
use super::state::{CallContext, CallState};
/// The interface's error, under a name other modules can tell apart.
pub use super::wit::net::Error as NetError;
use super::wit::net::{Error, Host, PingRequest, PingResult, TcpConnectResult};
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};
use surge_ping::{Client, Config, ICMP, PingIdentifier, PingSequence};
use tokio::net::TcpStream;

/// Most echo requests one call may send.
pub const MAX_PING_COUNT: u8 = 10;
/// Echo requests are this far apart (less when the budget is short).
const PING_SPACING: Duration = Duration::from_millis(100);
/// How long one echo request waits for its reply at most.
const PING_REPLY_WAIT: Duration = Duration::from_secs(3);
/// Bytes of payload in each echo request.
const PING_PAYLOAD: [u8; 32] = *b"tocsin uptime monitor echo probe";

impl Host for CallState {
    async fn resolve(&mut self, hostname: String, timeout_ms: u32) -> Result<Vec<String>, Error> {
        allowed(&self.call)?;
        let budget = Budget::new(&self.call, timeout_ms)?;
        let addrs = budget.run(resolve(&hostname)).await??;
        Ok(addrs.iter().map(IpAddr::to_string).collect())
    }

    async fn ping(&mut self, req: PingRequest) -> Result<PingResult, Error> {
        allowed(&self.call)?;
        if !(1..=MAX_PING_COUNT).contains(&req.count) {
            return Err(Error::InvalidRequest(format!(
                "count must be between 1 and {MAX_PING_COUNT}"
            )));
        }
        let budget = Budget::new(&self.call, req.timeout_ms)?;
        let found = budget.run(resolve(&req.host)).await??;
        let address = *self
            .call
            .services
            .egress
            .filter(&found)
            .map_err(|e| Error::Denied(e.to_string()))?
            .first()
            .ok_or_else(|| Error::Dns(format!("`{}` has no address", req.host)))?;
        ping(address, req.count, budget.deadline).await
    }

    async fn tcp_connect(
        &mut self,
        host: String,
        port: u16,
        timeout_ms: u32,
    ) -> Result<TcpConnectResult, Error> {
        allowed(&self.call)?;
        let budget = Budget::new(&self.call, timeout_ms)?;
        let started = Instant::now();
        let stream = budget
            .run(connect(&host, port, &self.call.services.egress))
            .await??;
        let address = stream
            .peer_addr()
            .map(|a| a.to_string())
            .unwrap_or_else(|_| format!("{host}:{port}"));
        Ok(TcpConnectResult {
            address,
            elapsed_ms: millis(started.elapsed()),
        })
    }
}

fn allowed(call: &CallContext) -> Result<(), Error> {
    if call.grants.allows(super::Capability::Net) {
        Ok(())
    } else {
        Err(Error::Denied(super::state::not_granted(
            &call.plugin,
            super::Capability::Net,
        )))
    }
}

/// The time one host call may take: what the plugin asked for, never more than its call has left.
pub struct Budget {
    pub deadline: Instant,
    /// What a timeout reports, in milliseconds.
    pub reported_ms: u32,
}

impl Budget {
    pub fn new(call: &CallContext, requested_ms: u32) -> Result<Budget, Error> {
        let allowed = Duration::from_millis(u64::from(requested_ms)).min(call.remaining());
        let reported_ms =
            requested_ms.min(u32::try_from(call.budget.as_millis()).unwrap_or(u32::MAX));
        if allowed.is_zero() {
            return Err(Error::Timeout(reported_ms));
        }
        Ok(Budget {
            deadline: Instant::now() + allowed,
            reported_ms,
        })
    }

    /// Run a future until the deadline.
    pub async fn run<T>(&self, f: impl Future<Output = T>) -> Result<T, Error> {
        tokio::time::timeout_at(self.deadline.into(), f)
            .await
            .map_err(|_| Error::Timeout(self.reported_ms))
    }
}

/// A host as plugins write it: a name, an IP address, or an IPv6 address in brackets.
pub fn parse_host(host: &str) -> Result<HostRef<'_>, Error> {
    let trimmed = host.trim();
    let unbracketed = trimmed
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(trimmed);
    if let Ok(ip) = unbracketed.parse::<IpAddr>() {
        return Ok(HostRef::Ip(ip));
    }
    let valid = !unbracketed.is_empty()
        && unbracketed.len() <= 253
        && unbracketed
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.' || b == b'_');
    if valid {
        Ok(HostRef::Name(unbracketed))
    } else {
        Err(Error::InvalidRequest(format!(
            "`{host}` is not a host name or IP address"
        )))
    }
}

/// The address a host is written as, if it is an address (`10.0.0.1`, `[::1]`).
pub fn literal_ip(host: &str) -> Option<IpAddr> {
    match parse_host(host) {
        Ok(HostRef::Ip(ip)) => Some(ip),
        _ => None,
    }
}

/// A parsed host.
#[derive(Debug, PartialEq, Eq)]
pub enum HostRef<'a> {
    Ip(IpAddr),
    Name(&'a str),
}

/// The addresses of a host, in the resolver's order, without repeats.
pub async fn resolve(host: &str) -> Result<Vec<IpAddr>, Error> {
    let name = match parse_host(host)? {
        HostRef::Ip(ip) => return Ok(vec![ip]),
        HostRef::Name(n) => n,
    };
    let found = tokio::net::lookup_host((name, 0))
        .await
        .map_err(|e| Error::Dns(format!("cannot resolve `{name}`: {e}")))?;
    let mut out: Vec<IpAddr> = Vec::new();
    for a in found {
        if !out.contains(&a.ip()) {
            out.push(a.ip());
        }
    }
    if out.is_empty() {
        return Err(Error::Dns(format!("`{name}` has no address")));
    }
    Ok(out)
}

/// Connect to the first address of `host` the egress policy allows that accepts, trying
/// each in turn: resolved once, checked, and connected to by address.
pub async fn connect(host: &str, port: u16, egress: &EgressPolicy) -> Result<TcpStream, Error> {
    if port == 0 {
        return Err(Error::InvalidRequest(
            "port must be between 1 and 65535".into(),
        ));
    }
    let found = resolve(host).await?;
    let addrs = egress
        .filter(&found)
        .map_err(|e| Error::Denied(e.to_string()))?;
    let mut last = None;
    for ip in addrs {
        match TcpStream::connect(SocketAddr::new(ip, port)).await {
            Ok(s) => return Ok(s),
            Err(e) => last = Some((SocketAddr::new(ip, port), e)),
        }
    }
    Err(match last {
        Some((addr, e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
            Error::ConnectionRefused(format!("{addr} refused the connection"))
        }
        Some((addr, e)) => Error::Other(format!("cannot connect to {addr}: {e}")),
        None => Error::Dns(format!("`{host}` has no address")),
    })
}

/// Open an ICMP socket for the address family: unprivileged first, raw where that is refused.
fn icmp_client(ip: IpAddr) -> Result<Client, Error> {
    let kind = if ip.is_ipv4() { ICMP::V4 } else { ICMP::V6 };
    let config = Config::builder()
        .kind(kind)
        .sock_type_hint(socket2::Type::DGRAM)
        .build();
    Client::new(&config).map_err(|e| match e.kind() {
        std::io::ErrorKind::PermissionDenied => Error::NotPermitted(format!(
            "the operating system allows this server neither an unprivileged ICMP socket \
             (sysctl net.ipv4.ping_group_range must include its group) nor a raw one \
             (it needs CAP_NET_RAW): {e}"
        )),
        _ => Error::Other(format!("cannot open an ICMP socket: {e}")),
    })
}

/// Whether an ICMP socket can be opened (inside a runtime).
pub fn icmp_permitted() -> Result<(), String> {
    icmp_client(IpAddr::V4(std::net::Ipv4Addr::LOCALHOST))
        .map(|_| ())
        .map_err(|e| match e {
            Error::NotPermitted(m) | Error::Other(m) => m,
            other => format!("{other:?}"),
        })
}

/// Send `count` echo requests to `ip`, spaced out, and collect the replies that arrive
/// before the deadline.
pub async fn ping(ip: IpAddr, count: u8, deadline: Instant) -> Result<PingResult, Error> {
    // The socket must be opened inside the runtime: the client spawns its receive task.
    let client = icmp_client(ip)?;
    let left = deadline.saturating_duration_since(Instant::now());
    let spacing = PING_SPACING.min(left / (2 * u32::from(count)));
    let ident = PingIdentifier(random_u16());
    let probes = (0..count).map(|seq| {
        let client = &client;
        async move {
            tokio::time::sleep(spacing * u32::from(seq)).await;
            let wait = deadline
                .saturating_duration_since(Instant::now())
                .min(PING_REPLY_WAIT);
            if wait.is_zero() {
                return None;
            }
            let mut pinger = client.pinger(ip, ident).await;
            pinger.timeout(wait);
            match pinger
                .ping(PingSequence(u16::from(seq)), &PING_PAYLOAD)
                .await
            {
                Ok((_, rtt)) => Some(Ok(rtt)),
                Err(surge_ping::SurgeError::Timeout { .. }) => None,
                Err(e) => Some(Err(e)),
            }
        }
    });
    let results = futures::future::join_all(probes).await;
    let mut rtts_us = Vec::new();
    let mut send_error = None;
    for r in results {
        match r {
            Some(Ok(rtt)) => rtts_us.push(u32::try_from(rtt.as_micros()).unwrap_or(u32::MAX)),
            Some(Err(e)) => send_error = Some(e),
            None => {}
        }
    }
    // Nothing got out at all: that is an error of the path, not silence from the host.
    if rtts_us.is_empty()
        && let Some(e) = send_error
    {
        return Err(match e {
            surge_ping::SurgeError::IOError(io)
                if io.kind() == std::io::ErrorKind::PermissionDenied =>
            {
                Error::NotPermitted(format!("sending ICMP to {ip} was refused: {io}"))
            }
            other => Error::Other(format!("cannot ping {ip}: {other}")),
        });
    }
    Ok(PingResult {
        address: ip.to_string(),
        sent: u32::from(count),
        received: u32::try_from(rtts_us.len()).unwrap_or(u32::MAX),
        rtts_us,
    })
}

fn random_u16() -> u16 {
    let mut b = [0u8; 2];
    // A fixed identifier still works; replies are matched by address and sequence too.
    let _ = getrandom::fill(&mut b);
    u16::from_le_bytes(b)
}

fn millis(d: Duration) -> u32 {
    u32::try_from(d.as_millis()).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_names_or_addresses() {
        assert_eq!(
            parse_host("127.0.0.1").ok(),
            Some(HostRef::Ip("127.0.0.1".parse().expect("ip")))
        );
        assert_eq!(
            parse_host("[::1]").ok(),
            Some(HostRef::Ip("::1".parse().expect("ip")))
        );
        assert_eq!(
            parse_host("db-1.internal").ok(),
            Some(HostRef::Name("db-1.internal"))
        );
        for bad in ["", "a b", "x/y", "http://x", &"a".repeat(254)] {
            assert!(
                matches!(parse_host(bad), Err(Error::InvalidRequest(_))),
                "{bad}"
            );
        }
    }

    #[tokio::test]
    async fn localhost_resolves_and_refused_ports_say_so() {
        let addrs = resolve("localhost").await.expect("localhost");
        assert!(addrs.iter().all(|a| a.is_loopback()), "{addrs:?}");
        // Bind then drop a listener: its port is now closed.
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
            l.local_addr().expect("addr").port()
        };
        let open = EgressPolicy::default();
        assert!(matches!(
            connect("127.0.0.1", port, &open).await,
            Err(Error::ConnectionRefused(_))
        ));
        let l = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = l.local_addr().expect("addr").port();
        assert!(connect("127.0.0.1", port, &open).await.is_ok());
        let strict = EgressPolicy::new(super::super::egress::EgressPreset::PublicOnly, &[], &[])
            .expect("policy");
        match connect("localhost", port, &strict).await {
            Err(Error::Denied(reason)) => assert!(reason.contains("loopback"), "{reason}"),
            other => panic!("loopback under public-only: {other:?}"),
        }
    }
}
