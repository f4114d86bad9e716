//! The host side of one `net.tcp-stream` handle (its connection and what is known about
//! it) and of one `net.udp-socket` handle. The contract's bindings name these types for
//! the resources, so this file imports nothing of the contract; the interfaces themselves
//! are in `stream.rs` and `datagram.rs`.

use tokio::net::TcpStream as Socket;

pub(super) enum Connection {
    Plain(Socket),
    Tls(Box<tokio_rustls::client::TlsStream<Socket>>),
    Closed,
}

/// What the TLS handshake settled.
#[derive(Clone, Debug)]
pub(super) struct Session {
    /// `TLSv1.3` or `TLSv1.2`.
    pub protocol: String,
    /// Why the certificate would not validate, when the plugin let the handshake go on.
    pub validation_error: Option<String>,
}

/// The host side of one `tcp-stream` handle.
pub struct TcpStream {
    pub(super) connection: Connection,
    pub(super) host: String,
    pub(super) peer: String,
    pub(super) connect_ms: u32,
    pub(super) session: Option<Session>,
}

/// The host side of one `udp-socket` handle: a socket connected to its peer, or nothing
/// once closed.
pub struct UdpSocket {
    pub(super) socket: Option<tokio::net::UdpSocket>,
    pub(super) peer: String,
}
