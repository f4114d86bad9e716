//! The parts of the MySQL client/server protocol (also MariaDB's) a check needs: the
//! initial handshake, TLS (`SSLRequest`), `mysql_native_password` and
//! `caching_sha2_password` (fast path, and the full path over TLS), an authentication
//! switch, one text query, and `COM_QUIT`.

use sha1::{Digest as _, Sha1};
use sha2::Sha256;
use tocsin_plugin_sdk::net::{TlsOptions, TlsSession};
use tocsin_plugin_sdk::tcp::{self, Conn};

const CLIENT_LONG_PASSWORD: u32 = 1;
const CLIENT_CONNECT_WITH_DB: u32 = 8;
const CLIENT_PROTOCOL_41: u32 = 0x200;
const CLIENT_SSL: u32 = 0x800;
const CLIENT_TRANSACTIONS: u32 = 0x2000;
const CLIENT_SECURE_CONNECTION: u32 = 0x8000;
const CLIENT_PLUGIN_AUTH: u32 = 0x8_0000;
/// utf8mb4_general_ci.
const CHARSET: u8 = 45;
const MAX_PACKET: u32 = 16 << 20;

/// `mysql_native_password`: SHA1(password) XOR SHA1(scramble + SHA1(SHA1(password))).
pub fn native_password(password: &str, scramble: &[u8]) -> Vec<u8> {
    if password.is_empty() {
        return Vec::new();
    }
    let stage1 = Sha1::digest(password.as_bytes());
    let stage2 = Sha1::digest(stage1);
    let mut h = Sha1::new();
    h.update(scramble);
    h.update(stage2);
    let mix = h.finalize();
    stage1.iter().zip(mix.iter()).map(|(a, b)| a ^ b).collect()
}

/// `caching_sha2_password`'s fast path: SHA256(password) XOR
/// SHA256(SHA256(SHA256(password)) + scramble).
pub fn caching_sha2(password: &str, scramble: &[u8]) -> Vec<u8> {
    if password.is_empty() {
        return Vec::new();
    }
    let p1 = Sha256::digest(password.as_bytes());
    let p2 = Sha256::digest(p1);
    let mut h = Sha256::new();
    h.update(p2);
    h.update(scramble);
    let mix = h.finalize();
    p1.iter().zip(mix.iter()).map(|(a, b)| a ^ b).collect()
}

/// An ERR packet's payload as a sentence: `message (error 1045, SQLSTATE 28000)`.
pub fn describe_error(payload: &[u8]) -> String {
    if payload.len() < 3 {
        return "the server answered with an error".into();
    }
    let code = u16::from_le_bytes([payload[1], payload[2]]);
    let rest = &payload[3..];
    let (state, message) = match rest.first() {
        Some(b'#') if rest.len() >= 6 => (Some(String::from_utf8_lossy(&rest[1..6])), &rest[6..]),
        _ => (None, rest),
    };
    let message = String::from_utf8_lossy(message);
    match state {
        Some(s) => format!("{message} (error {code}, SQLSTATE {s})"),
        None => format!("{message} (error {code})"),
    }
}

/// A length-encoded integer at `at`; the value and the bytes it took.
fn lenenc(data: &[u8], at: usize) -> Option<(u64, usize)> {
    let first = *data.get(at)?;
    match first {
        0..=0xfa => Some((u64::from(first), 1)),
        0xfc => Some((
            u64::from(u16::from_le_bytes([*data.get(at + 1)?, *data.get(at + 2)?])),
            3,
        )),
        0xfd => Some((
            u64::from(u32::from_le_bytes([
                *data.get(at + 1)?,
                *data.get(at + 2)?,
                *data.get(at + 3)?,
                0,
            ])),
            4,
        )),
        0xfe => {
            let b = data.get(at + 1..at + 9)?;
            Some((u64::from_le_bytes(b.try_into().ok()?), 9))
        }
        _ => None,
    }
}

/// The server's greeting, as far as a client needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Greeting {
    pub version: String,
    pub capabilities: u32,
    pub scramble: Vec<u8>,
    pub plugin: String,
}

/// Read the initial handshake (protocol 10).
pub fn parse_greeting(p: &[u8]) -> Result<Greeting, String> {
    match p.first() {
        Some(10) => {}
        Some(0xff) => return Err(describe_error(p)),
        _ => return Err("the server does not speak the MySQL protocol".into()),
    }
    let bad = || "the server's greeting is malformed".to_string();
    let nul = p[1..].iter().position(|b| *b == 0).ok_or_else(bad)? + 1;
    let version = String::from_utf8_lossy(&p[1..nul]).into_owned();
    let mut at = nul + 1 + 4; // connection id
    let part1 = p.get(at..at + 8).ok_or_else(bad)?.to_vec();
    at += 9; // and a filler byte
    let low = u16::from_le_bytes([*p.get(at).ok_or_else(bad)?, *p.get(at + 1).ok_or_else(bad)?]);
    at += 2 + 1 + 2; // charset, status
    let high = match p.get(at..at + 2) {
        Some(b) => u16::from_le_bytes([b[0], b[1]]),
        None => 0,
    };
    let capabilities = u32::from(low) | (u32::from(high) << 16);
    at += 2;
    let data_len = usize::from(*p.get(at).unwrap_or(&0));
    at += 1 + 10;
    let mut scramble = part1;
    let mut plugin = "mysql_native_password".to_string();
    if capabilities & CLIENT_SECURE_CONNECTION != 0 {
        let n = data_len.saturating_sub(8).max(13);
        if let Some(part2) = p.get(at..at + n) {
            // The last byte is a NUL terminator.
            scramble.extend_from_slice(&part2[..part2.len() - 1]);
        }
        at += n;
    }
    if capabilities & CLIENT_PLUGIN_AUTH != 0
        && let Some(rest) = p.get(at..)
    {
        let end = rest.iter().position(|b| *b == 0).unwrap_or(rest.len());
        if end > 0 {
            plugin = String::from_utf8_lossy(&rest[..end]).into_owned();
        }
    }
    Ok(Greeting {
        version,
        capabilities,
        scramble,
        plugin,
    })
}

/// A connection in the protocol.
pub struct Session {
    conn: Conn,
    seq: u8,
    tls: bool,
}

impl Session {
    pub fn new(conn: Conn) -> Session {
        Session {
            conn,
            seq: 0,
            tls: false,
        }
    }

    fn read(&mut self) -> Result<Vec<u8>, String> {
        let head = self.conn.read_exact(4).map_err(|e| tcp::describe(&e))?;
        let len = u32::from_le_bytes([head[0], head[1], head[2], 0]) as usize;
        self.seq = head[3].wrapping_add(1);
        self.conn.read_exact(len).map_err(|e| tcp::describe(&e))
    }

    fn send(&mut self, payload: &[u8]) -> Result<(), String> {
        let len = payload.len() as u32;
        let mut out = len.to_le_bytes()[..3].to_vec();
        out.push(self.seq);
        out.extend_from_slice(payload);
        self.seq = self.seq.wrapping_add(1);
        self.conn.write(&out).map_err(|e| tcp::describe(&e))
    }

    /// Read the greeting, optionally upgrade to TLS, sign in. Returns the server version and
    /// the TLS session, if any.
    pub fn start(
        &mut self,
        user: &str,
        password: &str,
        database: Option<&str>,
        tls: Option<TlsOptions>,
    ) -> Result<(String, Option<TlsSession>), String> {
        let greeting = parse_greeting(&self.read()?)?;
        let mut caps = CLIENT_LONG_PASSWORD
            | CLIENT_PROTOCOL_41
            | CLIENT_TRANSACTIONS
            | CLIENT_SECURE_CONNECTION
            | CLIENT_PLUGIN_AUTH;
        if database.is_some() {
            caps |= CLIENT_CONNECT_WITH_DB;
        }
        let mut session = None;
        if let Some(options) = tls {
            if greeting.capabilities & CLIENT_SSL == 0 {
                return Err("the server does not accept TLS connections".into());
            }
            caps |= CLIENT_SSL;
            let mut request = caps.to_le_bytes().to_vec();
            request.extend_from_slice(&MAX_PACKET.to_le_bytes());
            request.push(CHARSET);
            request.extend_from_slice(&[0; 23]);
            self.send(&request)?;
            session = Some(
                self.conn
                    .start_tls(options)
                    .map_err(|e| format!("the TLS handshake failed: {}", tcp::describe(&e)))?,
            );
            self.tls = true;
        }
        let (plugin, auth) = match greeting.plugin.as_str() {
            "caching_sha2_password" => (
                "caching_sha2_password",
                caching_sha2(password, &greeting.scramble),
            ),
            _ => (
                "mysql_native_password",
                native_password(password, &greeting.scramble),
            ),
        };
        let mut response = caps.to_le_bytes().to_vec();
        response.extend_from_slice(&MAX_PACKET.to_le_bytes());
        response.push(CHARSET);
        response.extend_from_slice(&[0; 23]);
        response.extend_from_slice(user.as_bytes());
        response.push(0);
        response.push(auth.len() as u8);
        response.extend_from_slice(&auth);
        if let Some(db) = database {
            response.extend_from_slice(db.as_bytes());
            response.push(0);
        }
        response.extend_from_slice(plugin.as_bytes());
        response.push(0);
        self.send(&response)?;
        self.finish_auth(password)?;
        Ok((greeting.version, session))
    }

    /// Follow the server through authentication to its OK or ERR.
    fn finish_auth(&mut self, password: &str) -> Result<(), String> {
        for _ in 0..5 {
            let p = self.read()?;
            match p.first() {
                Some(0x00) => return Ok(()),
                Some(0xff) => return Err(describe_error(&p)),
                // Authentication switch: plugin name, then its scramble.
                Some(0xfe) => {
                    let rest = &p[1..];
                    let end = rest.iter().position(|b| *b == 0).unwrap_or(rest.len());
                    let plugin = String::from_utf8_lossy(&rest[..end]).into_owned();
                    let mut scramble = rest.get(end + 1..).unwrap_or_default().to_vec();
                    if scramble.last() == Some(&0) {
                        scramble.pop();
                    }
                    let answer = match plugin.as_str() {
                        "mysql_native_password" => native_password(password, &scramble),
                        "caching_sha2_password" => caching_sha2(password, &scramble),
                        other => {
                            return Err(format!(
                                "the server wants the {other} authentication, which this monitor does not speak"
                            ));
                        }
                    };
                    self.send(&answer)?;
                }
                // caching_sha2_password: 3 is "fast auth done", 4 wants the password.
                Some(0x01) => match p.get(1) {
                    Some(3) => {}
                    Some(4) if self.tls => {
                        let mut clear = password.as_bytes().to_vec();
                        clear.push(0);
                        self.send(&clear)?;
                    }
                    Some(4) => {
                        return Err("the server wants the full caching_sha2_password exchange, \
                                    which needs TLS here (set tls)"
                            .into());
                    }
                    _ => return Err("an unexpected authentication message".into()),
                },
                _ => return Err("an unexpected answer while signing in".into()),
            }
        }
        Err("authentication did not finish".into())
    }

    /// Run one text query: the first column of the first row (`None` for no rows, NULL or
    /// a statement without a result).
    pub fn query(&mut self, sql: &str) -> Result<Option<String>, String> {
        self.seq = 0;
        let mut payload = vec![0x03];
        payload.extend_from_slice(sql.as_bytes());
        self.send(&payload)?;
        let first = self.read()?;
        match first.first() {
            Some(0xff) => return Err(format!("the query failed: {}", describe_error(&first))),
            Some(0x00) => return Ok(None),
            _ => {}
        }
        let (columns, _) = lenenc(&first, 0).ok_or("a malformed result")?;
        // Column definitions, then (without CLIENT_DEPRECATE_EOF) an EOF packet.
        for _ in 0..columns {
            self.read()?;
        }
        let eof = self.read()?;
        if eof.first() != Some(&0xfe) {
            return Err("a malformed result (no end of the column definitions)".into());
        }
        // Rows until the closing EOF (or an ERR); the first row's first column is kept.
        let mut value: Option<Option<String>> = None;
        loop {
            let p = self.read()?;
            match p.first() {
                Some(0xfe) if p.len() < 9 => break,
                Some(0xff) => return Err(format!("the query failed: {}", describe_error(&p))),
                Some(0xfb) if value.is_none() => value = Some(None),
                _ if value.is_none() => {
                    let (len, used) = lenenc(&p, 0).ok_or("a malformed row")?;
                    let text = p.get(used..used + len as usize).ok_or("a malformed row")?;
                    value = Some(Some(String::from_utf8_lossy(text).into_owned()));
                }
                _ => {}
            }
        }
        Ok(value.flatten())
    }

    /// Say goodbye and close.
    pub fn end(mut self) {
        self.seq = 0;
        let _ = self.send(&[0x01]);
        self.conn.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn native_password_matches_the_documented_algorithm() {
        // With an empty password the response is empty.
        assert!(native_password("", b"12345678901234567890").is_empty());
        let r = native_password("secret", b"12345678901234567890");
        assert_eq!(r.len(), 20);
        // XOR-ing back with SHA1(scramble + SHA1(SHA1(pw))) gives SHA1(pw).
        let stage1 = Sha1::digest(b"secret");
        let mut h = Sha1::new();
        h.update(b"12345678901234567890");
        h.update(Sha1::digest(stage1));
        let back: Vec<u8> = r
            .iter()
            .zip(h.finalize().iter())
            .map(|(a, b)| a ^ b)
            .collect();
        assert_eq!(back, stage1.to_vec());
    }

    #[test]
    fn errors_and_greetings_are_read() {
        let err = b"\xff\x15\x04#28000Access denied for user 'x'@'localhost' (using password: YES)";
        assert_eq!(
            describe_error(err),
            "Access denied for user 'x'@'localhost' (using password: YES) (error 1045, SQLSTATE 28000)"
        );
        assert!(parse_greeting(b"HTTP/1.1 400").is_err());
        assert_eq!(lenenc(&[0xfc, 0x10, 0x27], 0), Some((10_000, 3)));
    }
}
