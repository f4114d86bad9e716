//! `net.tcp-stream` (contract 0.2.0): TCP connections a plugin speaks its own protocol
//! over (Redis, SMTP, PostgreSQL, ...). The host holds the socket; the plugin holds a
//! handle. Connecting goes through the egress policy like every other connection, TLS
//! trusts the same roots, every call is bounded by its own timeout and the time left in the
//! plugin call, and one call may hold [`MAX_OPEN_STREAMS`] streams and move
//! [`MAX_STREAM_BYTES`] through them. Streams live in the call's resource table, so they
//! close when the call ends, however it ends.

use super::Capability;
use super::net::{self, Budget};
use super::socket::{Connection, Session, TcpStream};
use super::state::{CallContext, CallState};
use super::tls;
use super::wit::net::{Error, HostTcpStream, StreamRequest, TlsOptions, TlsSession};
use std::time::Instant;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream as Socket;
use wasmtime::component::Resource;

/// Streams one call may hold open at once.
pub const MAX_OPEN_STREAMS: u32 = 8;
/// Bytes one call may write and read through its streams, together.
pub const MAX_STREAM_BYTES: u64 = 4 << 20;
/// Most bytes one `read` returns.
pub const MAX_READ_BYTES: u32 = 64 * 1024;

impl From<TlsSession> for Session {
    fn from(s: TlsSession) -> Self {
        Session {
            protocol: s.protocol,
            validation_error: s.validation_error,
        }
    }
}

impl From<Session> for TlsSession {
    fn from(s: Session) -> Self {
        TlsSession {
            protocol: s.protocol,
            validation_error: s.validation_error,
        }
    }
}

fn allowed(call: &CallContext) -> Result<(), Error> {
    if call.grants.allows(Capability::Tcp) {
        Ok(())
    } else {
        Err(Error::Denied(super::state::not_granted(
            &call.plugin,
            Capability::Tcp,
        )))
    }
}

fn millis(since: Instant) -> u32 {
    u32::try_from(since.elapsed().as_millis()).unwrap_or(u32::MAX)
}

/// The name TLS sends and checks: the one asked for, or the host.
fn server_name<'a>(options: &'a TlsOptions, host: &'a str) -> &'a str {
    options
        .server_name
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .unwrap_or(host)
}

async fn handshake(
    call: &CallContext,
    socket: Socket,
    options: &TlsOptions,
    host: &str,
) -> Result<(Connection, TlsSession), Error> {
    let (stream, protocol, validation_error) = tls::client_handshake(
        socket,
        server_name(options, host),
        call.services.tls_verifier.clone(),
        options.accept_invalid_certificates,
    )
    .await
    .map_err(Error::Tls)?;
    Ok((
        Connection::Tls(Box::new(stream)),
        TlsSession {
            protocol,
            validation_error,
        },
    ))
}

impl CallState {
    /// Count `n` bytes against the call's limit, refusing what would pass it.
    fn spend_stream_bytes(&mut self, n: u64) -> Result<(), Error> {
        if self.streams.bytes + n > MAX_STREAM_BYTES {
            return Err(Error::Limit(format!(
                "a plugin call may move at most {} MiB through its TCP streams",
                MAX_STREAM_BYTES >> 20
            )));
        }
        self.streams.bytes += n;
        Ok(())
    }

    fn stream(&mut self, handle: &Resource<TcpStream>) -> wasmtime::Result<&mut TcpStream> {
        Ok(self.table_mut().get_mut(handle)?)
    }
}

impl HostTcpStream for CallState {
    async fn open(&mut self, req: StreamRequest) -> Result<Resource<TcpStream>, Error> {
        allowed(&self.call)?;
        if self.streams.open >= MAX_OPEN_STREAMS {
            return Err(Error::Limit(format!(
                "a plugin call may hold at most {MAX_OPEN_STREAMS} TCP streams open"
            )));
        }
        let host = req.host.trim().to_string();
        net::parse_host(&host)?;
        let budget = Budget::new(&self.call, req.timeout_ms)?;
        let started = Instant::now();
        let call = self.call.clone();
        let (connection, peer, session) = budget
            .run(async {
                let socket = net::connect(&host, req.port, &call.services.egress).await?;
                let _ = socket.set_nodelay(true);
                let peer = socket
                    .peer_addr()
                    .map(|a| a.to_string())
                    .unwrap_or_else(|_| format!("{host}:{}", req.port));
                match &req.tls {
                    None => Ok::<_, Error>((Connection::Plain(socket), peer, None)),
                    Some(options) => {
                        let (connection, session) =
                            handshake(&call, socket, options, &host).await?;
                        Ok((connection, peer, Some(Session::from(session))))
                    }
                }
            })
            .await??;
        let stream = TcpStream {
            connection,
            host,
            peer,
            connect_ms: millis(started),
            session,
        };
        let handle = self
            .table_mut()
            .push(stream)
            .map_err(|e| Error::Limit(format!("too many host resources: {e}")))?;
        self.streams.open += 1;
        Ok(handle)
    }

    async fn peer_address(&mut self, handle: Resource<TcpStream>) -> String {
        self.stream(&handle)
            .map(|s| s.peer.clone())
            .unwrap_or_default()
    }

    async fn connect_ms(&mut self, handle: Resource<TcpStream>) -> u32 {
        self.stream(&handle).map(|s| s.connect_ms).unwrap_or(0)
    }

    async fn write(
        &mut self,
        handle: Resource<TcpStream>,
        data: Vec<u8>,
        timeout_ms: u32,
    ) -> Result<(), Error> {
        let budget = Budget::new(&self.call, timeout_ms)?;
        self.spend_stream_bytes(data.len() as u64)?;
        let stream = self
            .stream(&handle)
            .map_err(|e| Error::InvalidRequest(e.to_string()))?;
        let peer = stream.peer.clone();
        let written = match &mut stream.connection {
            Connection::Plain(s) => budget.run(write_all(s, &data)).await?,
            Connection::Tls(s) => budget.run(write_all(s.as_mut(), &data)).await?,
            Connection::Closed => return Err(Error::Closed("the stream is closed".into())),
        };
        written.map_err(|e| match e.kind() {
            std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::ConnectionReset => {
                Error::Closed(format!("{peer} closed the connection"))
            }
            _ => Error::Other(format!("cannot write to {peer}: {e}")),
        })
    }

    async fn read(
        &mut self,
        handle: Resource<TcpStream>,
        max_bytes: u32,
        timeout_ms: u32,
    ) -> Result<Vec<u8>, Error> {
        if !(1..=MAX_READ_BYTES).contains(&max_bytes) {
            return Err(Error::InvalidRequest(format!(
                "max-bytes must be between 1 and {MAX_READ_BYTES}"
            )));
        }
        let budget = Budget::new(&self.call, timeout_ms)?;
        let left = MAX_STREAM_BYTES - self.streams.bytes;
        if left == 0 {
            return Err(Error::Limit(format!(
                "a plugin call may move at most {} MiB through its TCP streams",
                MAX_STREAM_BYTES >> 20
            )));
        }
        let want = u64::from(max_bytes).min(left) as usize;
        let stream = self
            .stream(&handle)
            .map_err(|e| Error::InvalidRequest(e.to_string()))?;
        let peer = stream.peer.clone();
        let mut buf = vec![0u8; want];
        let read = match &mut stream.connection {
            Connection::Plain(s) => budget.run(s.read(&mut buf)).await?,
            Connection::Tls(s) => budget.run(s.read(&mut buf)).await?,
            Connection::Closed => return Err(Error::Closed("the stream is closed".into())),
        };
        let n = match read {
            Ok(n) => n,
            // A peer that resets the connection has closed it, as far as a reader cares.
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => 0,
            // TLS peers that close without close_notify: the data ends there too.
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => 0,
            Err(e) => return Err(Error::Other(format!("cannot read from {peer}: {e}"))),
        };
        buf.truncate(n);
        self.spend_stream_bytes(n as u64)?;
        Ok(buf)
    }

    async fn start_tls(
        &mut self,
        handle: Resource<TcpStream>,
        options: TlsOptions,
        timeout_ms: u32,
    ) -> Result<TlsSession, Error> {
        let budget = Budget::new(&self.call, timeout_ms)?;
        let call = self.call.clone();
        let stream = self
            .stream(&handle)
            .map_err(|e| Error::InvalidRequest(e.to_string()))?;
        let socket = match std::mem::replace(&mut stream.connection, Connection::Closed) {
            Connection::Plain(s) => s,
            already @ Connection::Tls(_) => {
                stream.connection = already;
                return Err(Error::InvalidRequest("the stream already uses TLS".into()));
            }
            Connection::Closed => return Err(Error::Closed("the stream is closed".into())),
        };
        let host = stream.host.clone();
        // On failure the stream stays closed: half a handshake leaves nothing usable.
        let (connection, session) = budget
            .run(handshake(&call, socket, &options, &host))
            .await??;
        stream.connection = connection;
        stream.session = Some(Session::from(session.clone()));
        Ok(session)
    }

    async fn tls_session(&mut self, handle: Resource<TcpStream>) -> Option<TlsSession> {
        self.stream(&handle)
            .ok()
            .and_then(|s| s.session.clone())
            .map(TlsSession::from)
    }

    async fn close(&mut self, handle: Resource<TcpStream>) {
        if let Ok(stream) = self.stream(&handle) {
            let connection = std::mem::replace(&mut stream.connection, Connection::Closed);
            shut(connection).await;
        }
    }

    async fn drop(&mut self, handle: Resource<TcpStream>) -> wasmtime::Result<()> {
        let stream = self.table_mut().delete(handle)?;
        self.streams.open = self.streams.open.saturating_sub(1);
        shut(stream.connection).await;
        Ok(())
    }
}

async fn write_all<W: tokio::io::AsyncWrite + Unpin>(
    w: &mut W,
    data: &[u8],
) -> std::io::Result<()> {
    w.write_all(data).await?;
    w.flush().await
}

/// Close politely (TLS close_notify, FIN) without waiting on a peer that does not answer.
async fn shut(connection: Connection) {
    let wait = std::time::Duration::from_millis(100);
    match connection {
        Connection::Plain(mut s) => {
            let _ = tokio::time::timeout(wait, s.shutdown()).await;
        }
        Connection::Tls(mut s) => {
            let _ = tokio::time::timeout(wait, s.shutdown()).await;
        }
        Connection::Closed => {}
    }
}
