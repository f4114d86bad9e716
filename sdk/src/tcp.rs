//! A buffered TCP connection over the host's `net.tcp-stream` (since contract 0.2.0), for
//! plugins that speak a line or length-framed protocol (Redis, SMTP, PostgreSQL, MQTT,
//! DNS over TCP). Every call passes the check's timeout; the host lowers it to the time
//! left in the call, so a plugin never waits past its budget.

use crate::net::{self, StreamRequest, TcpStream, TlsOptions, TlsSession};

/// How much one read asks the host for.
const CHUNK: u32 = 16 * 1024;

/// Bytes received and not yet consumed, with the framing helpers. Separate from the
/// socket so it can be tested natively.
#[derive(Debug, Default)]
pub struct Buffer {
    data: Vec<u8>,
}

impl Buffer {
    /// Append bytes that arrived.
    pub fn extend(&mut self, bytes: &[u8]) {
        self.data.extend_from_slice(bytes);
    }

    /// Take one line ending in `\n` (without `\r\n` or `\n`), if a whole one is here.
    pub fn take_line(&mut self) -> Option<String> {
        let end = self.data.iter().position(|b| *b == b'\n')?;
        let mut line: Vec<u8> = self.data.drain(..=end).collect();
        line.pop();
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        Some(String::from_utf8_lossy(&line).into_owned())
    }

    /// Take exactly `n` bytes, if that many are here.
    pub fn take(&mut self, n: usize) -> Option<Vec<u8>> {
        (self.data.len() >= n).then(|| self.data.drain(..n).collect())
    }

    /// Take everything.
    pub fn take_all(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.data)
    }

    pub fn len(&self) -> usize {
        self.data.len()
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }
}

/// One open connection.
pub struct Conn {
    stream: TcpStream,
    buffer: Buffer,
    timeout_ms: u32,
}

impl Conn {
    /// Connect to `host:port` (with `tls`, implicit TLS) within `timeout_ms`.
    pub fn open(
        host: &str,
        port: u16,
        tls: Option<TlsOptions>,
        timeout_ms: u32,
    ) -> Result<Conn, net::Error> {
        let stream = TcpStream::open(&StreamRequest {
            host: host.to_string(),
            port,
            tls,
            timeout_ms,
        })?;
        Ok(Conn {
            stream,
            buffer: Buffer::default(),
            timeout_ms,
        })
    }

    /// The peer, `ip:port`.
    pub fn peer(&self) -> String {
        self.stream.peer_address()
    }

    /// Milliseconds the connection (and any TLS handshake) took.
    pub fn connect_ms(&self) -> u32 {
        self.stream.connect_ms()
    }

    /// The TLS session, if the connection has one.
    pub fn tls_session(&self) -> Option<TlsSession> {
        self.stream.tls_session()
    }

    /// Send all of `data`.
    pub fn write(&mut self, data: &[u8]) -> Result<(), net::Error> {
        self.stream.write(data, self.timeout_ms)
    }

    /// Read what arrives next into the buffer. `false` when the peer closed.
    fn fill(&mut self) -> Result<bool, net::Error> {
        let bytes = self.stream.read(CHUNK, self.timeout_ms)?;
        self.buffer.extend(&bytes);
        Ok(!bytes.is_empty())
    }

    /// The next line (without its line ending); `None` when the peer closed first. A
    /// line longer than `max` bytes is an error.
    pub fn read_line(&mut self, max: usize) -> Result<Option<String>, net::Error> {
        loop {
            if let Some(line) = self.buffer.take_line() {
                return Ok(Some(line));
            }
            if self.buffer.len() > max {
                return Err(net::Error::Other(format!(
                    "the server sent a line longer than {max} bytes"
                )));
            }
            if !self.fill()? {
                return Ok(None);
            }
        }
    }

    /// Exactly `n` bytes; an error when the peer closes first.
    pub fn read_exact(&mut self, n: usize) -> Result<Vec<u8>, net::Error> {
        loop {
            if let Some(bytes) = self.buffer.take(n) {
                return Ok(bytes);
            }
            if !self.fill()? {
                return Err(net::Error::Closed(format!(
                    "{} closed the connection in the middle of an answer",
                    self.peer()
                )));
            }
        }
    }

    /// Whatever arrives next (at least one byte); empty when the peer closed.
    pub fn read_some(&mut self) -> Result<Vec<u8>, net::Error> {
        if self.buffer.is_empty() {
            self.fill()?;
        }
        Ok(self.buffer.take_all())
    }

    /// Upgrade to TLS (after the protocol's STARTTLS exchange).
    pub fn start_tls(&mut self, options: TlsOptions) -> Result<TlsSession, net::Error> {
        if !self.buffer.is_empty() {
            return Err(net::Error::Other(
                "the server sent data before the TLS handshake (possible injection)".into(),
            ));
        }
        self.stream.start_tls(&options, self.timeout_ms)
    }

    /// Close the connection.
    pub fn close(self) {
        self.stream.close();
    }
}

/// Open a connection for a check of `service` (`"Redis"`, `"the mail server"`), with the
/// words a failed check uses: `Redis at host:port refused the connection`, `Could not
/// connect to the mail server at host:port: ...`.
pub fn connect(
    service: &str,
    host: &str,
    port: u16,
    tls: Option<TlsOptions>,
    timeout_ms: u32,
) -> Result<Conn, String> {
    let target = format!("{host}:{port}");
    Conn::open(host, port, tls, timeout_ms).map_err(|e| match e {
        net::Error::ConnectionRefused(_) => {
            let mut chars = service.chars();
            let capital: String = chars
                .next()
                .map(|c| c.to_uppercase().chain(chars).collect())
                .unwrap_or_default();
            format!("{capital} at {target} refused the connection")
        }
        other => format!(
            "Could not connect to {service} at {target}: {}",
            describe(&other)
        ),
    })
}

/// A sentence for a `net` error, for a check's reason.
pub fn describe(error: &net::Error) -> String {
    match error {
        net::Error::Timeout(ms) => format!("no answer within {ms} ms"),
        net::Error::Dns(d)
        | net::Error::NotPermitted(d)
        | net::Error::ConnectionRefused(d)
        | net::Error::InvalidRequest(d)
        | net::Error::Denied(d)
        | net::Error::Other(d)
        | net::Error::Limit(d)
        | net::Error::Closed(d) => d.clone(),
        net::Error::Tls(d) => d.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::Buffer;

    #[test]
    fn lines_and_frames_come_out_whole() {
        let mut b = Buffer::default();
        b.extend(b"220 mail ready\r\n250-PIPE");
        assert_eq!(b.take_line().as_deref(), Some("220 mail ready"));
        assert_eq!(b.take_line(), None);
        b.extend(b"LINING\n+PONG\r\n");
        assert_eq!(b.take_line().as_deref(), Some("250-PIPELINING"));
        assert_eq!(b.take(3), Some(b"+PO".to_vec()));
        assert_eq!(b.take(9), None);
        assert_eq!(b.take_all(), b"NG\r\n".to_vec());
        assert!(b.is_empty());
    }
}
