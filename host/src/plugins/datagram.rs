//! `net.udp-socket` (contract 0.3.0): UDP sockets a plugin asks over (DNS, NTP, SNMP, ...).
//! The host holds the socket, connected to one peer the egress policy allows (never a
//! multicast, broadcast or unspecified address, whatever the policy), so the plugin sends
//! only there and hears only from there; the plugin holds a handle. Every
//! call is bounded by its own timeout and the time left in the plugin call, and one call
//! may hold [`MAX_OPEN_SOCKETS`] sockets and move [`MAX_DATAGRAM_BYTES`] through them.
//! Sockets live in the call's resource table, so they close when the call ends.

use super::Capability;
use super::net::{self, Budget};
use super::socket::UdpSocket;
use super::state::CallState;
use super::wit::net::{DatagramRequest, Error, HostUdpSocket};
use std::net::{IpAddr, SocketAddr};
use wasmtime::component::Resource;

/// Sockets one call may hold open at once.
pub const MAX_OPEN_SOCKETS: u32 = 8;
/// Bytes one call may send and receive through its sockets, together.
pub const MAX_DATAGRAM_BYTES: u64 = 4 << 20;
/// The largest datagram UDP carries over IPv4.
pub const MAX_SEND_BYTES: usize = 65_507;
/// Most bytes one `receive` returns.
pub const MAX_RECEIVE_BYTES: u32 = 64 * 1024;

fn limit() -> Error {
    Error::Limit(format!(
        "a plugin call may move at most {} MiB through its UDP sockets",
        MAX_DATAGRAM_BYTES >> 20
    ))
}

impl CallState {
    fn spend_datagram_bytes(&mut self, n: u64) -> Result<(), Error> {
        if self.streams.datagram_bytes + n > MAX_DATAGRAM_BYTES {
            return Err(limit());
        }
        self.streams.datagram_bytes += n;
        Ok(())
    }

    /// The open socket behind a handle.
    fn udp(&mut self, handle: &Resource<UdpSocket>) -> Result<&mut UdpSocket, Error> {
        self.table_mut()
            .get_mut(handle)
            .map_err(|e| Error::InvalidRequest(e.to_string()))
    }
}

/// Whether a datagram to `ip` would reach more than one machine, or none in particular:
/// multicast, the IPv4 broadcast address, the unspecified address.
fn one_to_many(ip: IpAddr) -> bool {
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    };
    ip.is_multicast() || ip.is_unspecified() || matches!(ip, IpAddr::V4(v4) if v4.is_broadcast())
}

/// Bind an ephemeral port of the peer's family and connect it to the peer.
async fn connect(peer: SocketAddr) -> std::io::Result<tokio::net::UdpSocket> {
    let local: SocketAddr = if peer.is_ipv4() {
        "0.0.0.0:0".parse().expect("an IPv4 wildcard address")
    } else {
        "[::]:0".parse().expect("an IPv6 wildcard address")
    };
    let socket = tokio::net::UdpSocket::bind(local).await?;
    socket.connect(peer).await?;
    Ok(socket)
}

impl HostUdpSocket for CallState {
    async fn open(&mut self, req: DatagramRequest) -> Result<Resource<UdpSocket>, Error> {
        if !self.call.grants.allows(Capability::Udp) {
            return Err(Error::Denied(super::state::not_granted(
                &self.call.plugin,
                Capability::Udp,
            )));
        }
        if self.streams.sockets >= MAX_OPEN_SOCKETS {
            return Err(Error::Limit(format!(
                "a plugin call may hold at most {MAX_OPEN_SOCKETS} UDP sockets open"
            )));
        }
        if req.port == 0 {
            return Err(Error::InvalidRequest(
                "port must be between 1 and 65535".into(),
            ));
        }
        let host = req.host.trim().to_string();
        net::parse_host(&host)?;
        let budget = Budget::new(&self.call, req.timeout_ms)?;
        let egress = self.call.services.egress.clone();
        let (socket, peer) = budget
            .run(async {
                let found = net::resolve(&host).await?;
                // A datagram to a group or to everyone reaches machines nobody named.
                let unicast: Vec<IpAddr> = found
                    .iter()
                    .copied()
                    .filter(|ip| !one_to_many(*ip))
                    .collect();
                if unicast.is_empty() {
                    return Err(Error::Denied(format!(
                        "`{host}` is a multicast, broadcast or unspecified address; \
                         a UDP socket reaches one peer"
                    )));
                }
                let allowed = egress
                    .filter(&unicast)
                    .map_err(|e| Error::Denied(e.to_string()))?;
                // Connecting sends nothing; it fails at once for an address with no route
                // (IPv6 on a host without it), so the next one is tried.
                let mut last = None;
                for ip in allowed {
                    let peer = SocketAddr::new(ip, req.port);
                    match connect(peer).await {
                        Ok(socket) => return Ok((socket, peer)),
                        Err(e) => last = Some((peer, e)),
                    }
                }
                Err(match last {
                    Some((peer, e)) => {
                        Error::Other(format!("cannot open a UDP socket to {peer}: {e}"))
                    }
                    None => Error::Dns(format!("`{host}` has no address")),
                })
            })
            .await??;
        let handle = self
            .table_mut()
            .push(UdpSocket {
                socket: Some(socket),
                peer: peer.to_string(),
            })
            .map_err(|e| Error::Limit(format!("too many host resources: {e}")))?;
        self.streams.sockets += 1;
        Ok(handle)
    }

    async fn peer_address(&mut self, handle: Resource<UdpSocket>) -> String {
        self.udp(&handle)
            .map(|s| s.peer.clone())
            .unwrap_or_default()
    }

    async fn send(&mut self, handle: Resource<UdpSocket>, data: Vec<u8>) -> Result<(), Error> {
        if data.is_empty() || data.len() > MAX_SEND_BYTES {
            return Err(Error::InvalidRequest(format!(
                "a datagram holds 1 to {MAX_SEND_BYTES} bytes"
            )));
        }
        // Sending never waits long (the kernel queues it), but the call's budget still
        // holds.
        let budget = Budget::new(&self.call, u32::MAX)?;
        self.spend_datagram_bytes(data.len() as u64)?;
        let udp = self.udp(&handle)?;
        let peer = udp.peer.clone();
        let Some(socket) = &udp.socket else {
            return Err(Error::Closed("the socket is closed".into()));
        };
        match budget.run(socket.send(&data)).await? {
            Ok(_) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => Err(
                Error::ConnectionRefused(format!("nothing listens on {peer}")),
            ),
            Err(e) => Err(Error::Other(format!("cannot send to {peer}: {e}"))),
        }
    }

    async fn receive(
        &mut self,
        handle: Resource<UdpSocket>,
        max_bytes: u32,
        timeout_ms: u32,
    ) -> Result<Vec<u8>, Error> {
        if !(1..=MAX_RECEIVE_BYTES).contains(&max_bytes) {
            return Err(Error::InvalidRequest(format!(
                "max-bytes must be between 1 and {MAX_RECEIVE_BYTES}"
            )));
        }
        let budget = Budget::new(&self.call, timeout_ms)?;
        let left = MAX_DATAGRAM_BYTES - self.streams.datagram_bytes;
        if left == 0 {
            return Err(limit());
        }
        let want = u64::from(max_bytes).min(left) as usize;
        let udp = self.udp(&handle)?;
        let peer = udp.peer.clone();
        let Some(socket) = &udp.socket else {
            return Err(Error::Closed("the socket is closed".into()));
        };
        let mut buf = vec![0u8; want];
        let n = match budget.run(socket.recv(&mut buf)).await? {
            Ok(n) => n,
            // An ICMP "port unreachable" for an earlier datagram.
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                return Err(Error::ConnectionRefused(format!(
                    "nothing listens on {peer}"
                )));
            }
            Err(e) => return Err(Error::Other(format!("cannot receive from {peer}: {e}"))),
        };
        buf.truncate(n);
        self.spend_datagram_bytes(n as u64)?;
        Ok(buf)
    }

    async fn close(&mut self, handle: Resource<UdpSocket>) {
        if let Ok(udp) = self.udp(&handle) {
            udp.socket = None;
        }
    }

    async fn drop(&mut self, handle: Resource<UdpSocket>) -> wasmtime::Result<()> {
        self.table_mut().delete(handle)?;
        self.streams.sockets = self.streams.sockets.saturating_sub(1);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_broadcast_and_nobody_are_not_peers() {
        for refused in [
            "224.0.0.251",
            "239.255.255.250",
            "255.255.255.255",
            "0.0.0.0",
            "ff02::fb",
            "::",
            "::ffff:224.0.0.251",
        ] {
            let ip: IpAddr = refused.parse().expect("an address");
            assert!(one_to_many(ip), "{refused}");
        }
        for allowed in ["127.0.0.1", "192.0.2.53", "::1", "2001:db8::53"] {
            let ip: IpAddr = allowed.parse().expect("an address");
            assert!(!one_to_many(ip), "{allowed}");
        }
    }
}
