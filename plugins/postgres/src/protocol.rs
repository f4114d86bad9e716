//! The parts of PostgreSQL's frontend/backend protocol 3.0 a check needs: SSLRequest, the
//! startup message, password authentication (cleartext, MD5, SCRAM-SHA-256 as in RFC 5802
//! and 7677), one simple query, and Terminate.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use hmac::{Hmac, Mac};
use md5::{Digest as _, Md5};
use sha2::Sha256;
use tocsin_plugin_sdk::net::{TlsOptions, TlsSession};
use tocsin_plugin_sdk::tcp::{self, Conn};

/// Largest message accepted from the server.
const MAX_MESSAGE: usize = 1 << 20;

/// One backend message: its type byte and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub kind: u8,
    pub body: Vec<u8>,
}

/// A frontend message: type byte, length, body.
pub fn frame(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut out = vec![kind];
    out.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
    out.extend_from_slice(body);
    out
}

/// The startup message for protocol 3.0.
pub fn startup(user: &str, database: &str) -> Vec<u8> {
    let mut body = 196_608u32.to_be_bytes().to_vec();
    for (k, v) in [
        ("user", user),
        ("database", database),
        ("application_name", "tocsin"),
    ] {
        body.extend_from_slice(k.as_bytes());
        body.push(0);
        body.extend_from_slice(v.as_bytes());
        body.push(0);
    }
    body.push(0);
    let mut out = ((body.len() + 4) as u32).to_be_bytes().to_vec();
    out.extend_from_slice(&body);
    out
}

/// The fields of an ErrorResponse as a sentence: `message (SQLSTATE code)`.
pub fn describe_error(body: &[u8]) -> String {
    let mut message = String::new();
    let mut code = String::new();
    for field in body.split(|b| *b == 0) {
        let Some((&kind, value)) = field.split_first() else {
            continue;
        };
        let value = String::from_utf8_lossy(value).into_owned();
        match kind {
            b'M' => message = value,
            b'C' => code = value,
            _ => {}
        }
    }
    match (message.is_empty(), code.is_empty()) {
        (true, _) => "the server answered with an error".to_string(),
        (false, true) => message,
        (false, false) => format!("{message} (SQLSTATE {code})"),
    }
}

/// MD5 password hashing: `"md5" + md5(md5(password + user) + salt)`.
pub fn md5_password(user: &str, password: &str, salt: &[u8]) -> String {
    let inner = hex(&Md5::digest(format!("{password}{user}").as_bytes()));
    let mut outer = Md5::new();
    outer.update(inner.as_bytes());
    outer.update(salt);
    format!("md5{}", hex(&outer.finalize()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

type HmacSha256 = Hmac<Sha256>;

fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    let mut mac = HmacSha256::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

/// One SCRAM-SHA-256 exchange, client side.
pub struct Scram {
    password: String,
    client_first_bare: String,
    nonce: String,
    server_signature: Vec<u8>,
}

impl Scram {
    /// Start with a client nonce (printable, no comma).
    pub fn new(password: &str, client_nonce: &str) -> Scram {
        Scram {
            password: password.to_string(),
            // PostgreSQL takes the user from the startup message; the SCRAM name is empty.
            client_first_bare: format!("n=,r={client_nonce}"),
            nonce: client_nonce.to_string(),
            server_signature: Vec::new(),
        }
    }

    /// `client-first-message`, with the GS2 header (no channel binding).
    pub fn client_first(&self) -> String {
        format!("n,,{}", self.client_first_bare)
    }

    /// Answer the server's first message with the client's final message.
    pub fn client_final(&mut self, server_first: &str) -> Result<String, String> {
        let mut nonce = None;
        let mut salt = None;
        let mut iterations = None;
        for part in server_first.split(',') {
            match part.split_once('=') {
                Some(("r", v)) => nonce = Some(v.to_string()),
                Some(("s", v)) => salt = B64.decode(v).ok(),
                Some(("i", v)) => iterations = v.parse::<u32>().ok(),
                _ => {}
            }
        }
        let (Some(nonce), Some(salt), Some(iterations)) = (nonce, salt, iterations) else {
            return Err("the server's SCRAM challenge is malformed".into());
        };
        if !nonce.starts_with(&self.nonce) || iterations == 0 || iterations > 1_000_000 {
            return Err("the server's SCRAM challenge is not acceptable".into());
        }
        let mut salted = [0u8; 32];
        pbkdf2::pbkdf2_hmac::<Sha256>(self.password.as_bytes(), &salt, iterations, &mut salted);
        let client_key = hmac(&salted, b"Client Key");
        let stored_key = Sha256::digest(&client_key);
        let without_proof = format!("c=biws,r={nonce}");
        let auth_message = format!("{},{server_first},{without_proof}", self.client_first_bare);
        let signature = hmac(&stored_key, auth_message.as_bytes());
        let proof: Vec<u8> = client_key
            .iter()
            .zip(&signature)
            .map(|(a, b)| a ^ b)
            .collect();
        let server_key = hmac(&salted, b"Server Key");
        self.server_signature = hmac(&server_key, auth_message.as_bytes());
        Ok(format!("{without_proof},p={}", B64.encode(proof)))
    }

    /// Check the server's final message (`v=...`): the server knew the password too.
    pub fn verify(&self, server_final: &str) -> Result<(), String> {
        let given = server_final
            .split(',')
            .find_map(|p| p.strip_prefix("v="))
            .and_then(|v| B64.decode(v).ok())
            .ok_or("the server's SCRAM answer is malformed")?;
        if given == self.server_signature {
            Ok(())
        } else {
            Err("the server could not prove it knows the password (SCRAM)".into())
        }
    }
}

/// A connection in the protocol.
pub struct Session {
    conn: Conn,
}

impl Session {
    pub fn new(conn: Conn) -> Session {
        Session { conn }
    }

    fn send(&mut self, bytes: &[u8]) -> Result<(), String> {
        self.conn.write(bytes).map_err(|e| tcp::describe(&e))
    }

    fn read(&mut self) -> Result<Message, String> {
        let head = self.conn.read_exact(5).map_err(|e| tcp::describe(&e))?;
        let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
        if !(4..=MAX_MESSAGE).contains(&len) {
            return Err(format!(
                "the server does not speak the PostgreSQL protocol (it sent \"{}\")",
                String::from_utf8_lossy(&head).escape_default()
            ));
        }
        let body = self
            .conn
            .read_exact(len - 4)
            .map_err(|e| tcp::describe(&e))?;
        Ok(Message {
            kind: head[0],
            body,
        })
    }

    /// Ask for TLS (`SSLRequest`) and upgrade when the server agrees.
    pub fn start_tls(&mut self, options: TlsOptions) -> Result<TlsSession, String> {
        let mut request = 8u32.to_be_bytes().to_vec();
        request.extend_from_slice(&80_877_103u32.to_be_bytes());
        self.send(&request)?;
        let answer = self.conn.read_exact(1).map_err(|e| tcp::describe(&e))?;
        match answer[0] {
            b'S' => self
                .conn
                .start_tls(options)
                .map_err(|e| format!("the TLS handshake failed: {}", tcp::describe(&e))),
            b'N' => Err("the server does not accept TLS connections".into()),
            other => Err(format!(
                "the server answered the TLS request with {:?}",
                other as char
            )),
        }
    }

    /// Start a session and authenticate; `Ok` with the server's version when it said.
    pub fn start(
        &mut self,
        user: &str,
        database: &str,
        password: Option<&str>,
    ) -> Result<Option<String>, String> {
        self.send(&startup(user, database))?;
        let mut scram: Option<Scram> = None;
        let mut version = None;
        let need_password =
            || password.ok_or_else(|| "the server asks for a password (set password)".to_string());
        loop {
            let m = self.read()?;
            match m.kind {
                b'R' => {
                    let code = m
                        .body
                        .get(..4)
                        .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
                    let rest = m.body.get(4..).unwrap_or_default();
                    match code {
                        Some(0) => {}
                        Some(3) => {
                            let mut body = need_password()?.as_bytes().to_vec();
                            body.push(0);
                            self.send(&frame(b'p', &body))?;
                        }
                        Some(5) => {
                            let mut body = md5_password(user, need_password()?, rest).into_bytes();
                            body.push(0);
                            self.send(&frame(b'p', &body))?;
                        }
                        Some(10) => {
                            let offered = String::from_utf8_lossy(rest);
                            if !offered.split('\0').any(|m| m == "SCRAM-SHA-256") {
                                return Err(format!(
                                    "the server offers no authentication this monitor speaks ({})",
                                    offered.trim_end_matches('\0').replace('\0', ", ")
                                ));
                            }
                            let s = Scram::new(need_password()?, &client_nonce());
                            let first = s.client_first();
                            let mut body = b"SCRAM-SHA-256\0".to_vec();
                            body.extend_from_slice(&(first.len() as u32).to_be_bytes());
                            body.extend_from_slice(first.as_bytes());
                            self.send(&frame(b'p', &body))?;
                            scram = Some(s);
                        }
                        Some(11) => {
                            let s = scram.as_mut().ok_or("unexpected SCRAM challenge")?;
                            let answer = s.client_final(&String::from_utf8_lossy(rest))?;
                            self.send(&frame(b'p', answer.as_bytes()))?;
                        }
                        Some(12) => {
                            let s = scram.as_ref().ok_or("unexpected SCRAM answer")?;
                            s.verify(&String::from_utf8_lossy(rest))?;
                        }
                        Some(other) => {
                            return Err(format!(
                                "the server asks for an authentication this monitor does not speak (code {other})"
                            ));
                        }
                        None => return Err("a malformed authentication request".into()),
                    }
                }
                b'E' => return Err(describe_error(&m.body)),
                b'S' => {
                    let mut parts = m.body.split(|b| *b == 0);
                    if parts.next() == Some(b"server_version".as_slice()) {
                        version = parts
                            .next()
                            .map(|v| String::from_utf8_lossy(v).into_owned());
                    }
                }
                b'Z' => return Ok(version),
                // BackendKeyData, NoticeResponse and the like.
                _ => {}
            }
        }
    }

    /// Run one simple query; the first column of the first row, as text (`None` for no
    /// rows or NULL).
    pub fn query(&mut self, sql: &str) -> Result<Option<String>, String> {
        let mut body = sql.as_bytes().to_vec();
        body.push(0);
        self.send(&frame(b'Q', &body))?;
        let mut first: Option<Option<String>> = None;
        let mut error = None;
        loop {
            let m = self.read()?;
            match m.kind {
                b'D' if first.is_none() => {
                    let b = &m.body;
                    let value = if b.len() >= 6 {
                        let len = i32::from_be_bytes([b[2], b[3], b[4], b[5]]);
                        (len >= 0).then(|| {
                            let end = (6 + len as usize).min(b.len());
                            String::from_utf8_lossy(&b[6..end]).into_owned()
                        })
                    } else {
                        None
                    };
                    first = Some(value);
                }
                b'E' => error = Some(describe_error(&m.body)),
                b'Z' => break,
                _ => {}
            }
        }
        match error {
            Some(e) => Err(format!("the query failed: {e}")),
            None => Ok(first.flatten()),
        }
    }

    /// Say goodbye and close.
    pub fn end(self) {
        let mut conn = self.conn;
        let _ = conn.write(&frame(b'X', &[]));
        conn.close();
    }
}

/// A client nonce: 24 random bytes, base64 (random from the host's WASI source).
fn client_nonce() -> String {
    let mut bytes = [0u8; 24];
    for chunk in bytes.chunks_mut(8) {
        chunk.copy_from_slice(&tocsin_plugin_sdk::random_u64().to_le_bytes());
    }
    B64.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn md5_passwords_match_postgres() {
        // PostgreSQL stores md5('postgres' || 'postgres') for user postgres, password postgres.
        assert_eq!(
            hex(&Md5::digest(b"postgrespostgres")),
            "3175bce1d3201d16594cebf9d7eb3f9d"
        );
        let got = md5_password("postgres", "postgres", &[1, 2, 3, 4]);
        let mut h = Md5::new();
        h.update(b"3175bce1d3201d16594cebf9d7eb3f9d");
        h.update([1, 2, 3, 4]);
        assert_eq!(got, format!("md5{}", hex(&h.finalize())));
    }

    #[test]
    fn scram_follows_rfc_7677() {
        // The example exchange of RFC 7677 section 3 (user "user", password "pencil"),
        // without the user name PostgreSQL leaves out, so only the shape is compared:
        // a proof that verifies against the same keys.
        let mut s = Scram::new("pencil", "rOprNGfwEbeRWgbNEkqO");
        assert_eq!(s.client_first(), "n,,n=,r=rOprNGfwEbeRWgbNEkqO");
        let server_first = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
        let fin = s.client_final(server_first).expect("final");
        assert!(fin.starts_with("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p="));
        assert!(s.verify("v=AAAA").is_err());
        assert!(s.client_final("r=someone-else,s=AA==,i=1").is_err());
    }

    #[test]
    fn errors_read_as_sentences() {
        let body = b"SFATAL\0C28P01\0Mpassword authentication failed for user \"x\"\0\0";
        assert_eq!(
            describe_error(body),
            "password authentication failed for user \"x\" (SQLSTATE 28P01)"
        );
        assert_eq!(
            frame(b'Q', b"SELECT 1\0"),
            b"Q\0\0\0\x0dSELECT 1\0".to_vec()
        );
    }
}
