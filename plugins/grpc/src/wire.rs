//! The gRPC health protocol on the wire: the request message, the length-prefixed frame,
//! and reading the answer (its `grpc-status` and the `HealthCheckResponse`).

use tocsin_plugin_sdk::Header;

/// The standard health check's path.
pub const CHECK_PATH: &str = "/grpc.health.v1.Health/Check";

/// Header names the protocol or HTTP/2 itself uses, which metadata may not set.
pub const RESERVED: [&str; 10] = [
    "content-type",
    "content-length",
    "te",
    "user-agent",
    "host",
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
];

/// A `HealthCheckRequest { service }` in a gRPC frame (uncompressed).
pub fn check_request(service: &str) -> Vec<u8> {
    let mut message = Vec::new();
    if !service.is_empty() {
        message.push(0x0a); // field 1, length-delimited
        varint(service.len() as u64, &mut message);
        message.extend_from_slice(service.as_bytes());
    }
    let mut frame = vec![0u8];
    frame.extend_from_slice(&(message.len() as u32).to_be_bytes());
    frame.extend_from_slice(&message);
    frame
}

fn varint(mut n: u64, out: &mut Vec<u8>) {
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

/// `HealthCheckResponse.status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Serving {
    Unknown,
    Serving,
    NotServing,
    ServiceUnknown,
}

impl Serving {
    pub fn name(self) -> &'static str {
        match self {
            Serving::Unknown => "UNKNOWN",
            Serving::Serving => "SERVING",
            Serving::NotServing => "NOT_SERVING",
            Serving::ServiceUnknown => "SERVICE_UNKNOWN",
        }
    }
}

/// gRPC status code names, by code.
const CODES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

fn header<'a>(list: &'a [Header], name: &str) -> Option<&'a str> {
    list.iter()
        .find(|h| h.name.eq_ignore_ascii_case(name))
        .map(|h| h.value.as_str())
}

/// Read an answer: the HTTP status, the `grpc-status` (in the trailers, or in the headers
/// of a trailers-only answer), then the health status in the message.
pub fn judge(
    status: u16,
    headers: &[Header],
    trailers: &[Header],
    body: &[u8],
) -> Result<Serving, String> {
    let grpc_status = header(trailers, "grpc-status").or_else(|| header(headers, "grpc-status"));
    if status != 200 && grpc_status.is_none() {
        // As gRPC maps an HTTP answer without a gRPC status (a proxy whose backend is down).
        let code = match status {
            400 => "INTERNAL",
            401 => "UNAUTHENTICATED",
            403 => "PERMISSION_DENIED",
            404 => "UNIMPLEMENTED",
            429 | 502..=504 => "UNAVAILABLE",
            _ => "UNKNOWN",
        };
        return Err(format!("the server answered HTTP {status} ({code})"));
    }
    let Some(code) = grpc_status else {
        return Err("the answer has no grpc-status (is this a gRPC server?)".into());
    };
    let code: usize = code
        .trim()
        .parse()
        .map_err(|_| format!("the answer's grpc-status `{code}` is not a number"))?;
    if code != 0 {
        let name = CODES.get(code).copied().unwrap_or("an unknown code");
        let message = header(trailers, "grpc-message")
            .or_else(|| header(headers, "grpc-message"))
            .map(|m| format!(": {}", percent_decoded(m)))
            .unwrap_or_default();
        let hint = if code == 5 {
            " (the server does not know this service)"
        } else if code == 12 {
            " (the server has no health service)"
        } else {
            ""
        };
        return Err(format!("gRPC status {code} {name}{hint}{message}"));
    }
    let Some(prefix) = body.get(..5) else {
        return Err("the answer has no message".into());
    };
    if prefix[0] != 0 {
        return Err("the answer is compressed, which was not asked for".into());
    }
    let len = u32::from_be_bytes([prefix[1], prefix[2], prefix[3], prefix[4]]) as usize;
    let message = body[5..]
        .get(..len)
        .ok_or("the answer's message is cut short")?;
    Ok(match health_status(message)? {
        1 => Serving::Serving,
        2 => Serving::NotServing,
        3 => Serving::ServiceUnknown,
        _ => Serving::Unknown,
    })
}

/// Field 1 (a varint) of a `HealthCheckResponse`; 0 when absent. Unknown fields are
/// skipped.
fn health_status(mut m: &[u8]) -> Result<u64, String> {
    let mut status = 0;
    while !m.is_empty() {
        let (tag, rest) = read_varint(m)?;
        m = rest;
        match (tag >> 3, tag & 7) {
            (field, 0) => {
                let (value, rest) = read_varint(m)?;
                m = rest;
                if field == 1 {
                    status = value;
                }
            }
            (_, 2) => {
                let (len, rest) = read_varint(m)?;
                let len = usize::try_from(len).map_err(|_| "a field is too long")?;
                m = rest.get(len..).ok_or("a field runs past the message")?;
            }
            (_, 1) => m = m.get(8..).ok_or("a field runs past the message")?,
            (_, 5) => m = m.get(4..).ok_or("a field runs past the message")?,
            (_, wire) => return Err(format!("the message has a field of wire type {wire}")),
        }
    }
    Ok(status)
}

fn read_varint(m: &[u8]) -> Result<(u64, &[u8]), String> {
    let mut value = 0u64;
    for (i, byte) in m.iter().enumerate().take(10) {
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Ok((value, &m[i + 1..]));
        }
    }
    Err("the message has a broken number".into())
}

/// `grpc-message` is percent-encoded.
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = text.get(i + 1..i + 3)
            && hex.bytes().all(|b| b.is_ascii_hexdigit())
            && let Ok(b) = u8::from_str_radix(hex, 16)
        {
            out.push(b);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out)
        .chars()
        .filter(|c| !c.is_control())
        .take(200)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(name: &str, value: &str) -> Header {
        Header {
            name: name.into(),
            value: value.into(),
        }
    }

    #[test]
    fn the_request_is_a_framed_health_check_request() {
        assert_eq!(check_request(""), [0, 0, 0, 0, 0]);
        assert_eq!(
            check_request("shop"),
            [0, 0, 0, 0, 6, 0x0a, 4, b's', b'h', b'o', b'p']
        );
    }

    #[test]
    fn answers_are_read_from_trailers_or_a_trailers_only_answer() {
        let serving = [0, 0, 0, 0, 2, 0x08, 1];
        let ok = [h("grpc-status", "0")];
        assert_eq!(judge(200, &[], &ok, &serving), Ok(Serving::Serving));
        assert_eq!(
            judge(200, &[], &ok, &[0, 0, 0, 0, 2, 0x08, 2]),
            Ok(Serving::NotServing)
        );
        // An empty message is the default: UNKNOWN.
        assert_eq!(judge(200, &[], &ok, &[0, 0, 0, 0, 0]), Ok(Serving::Unknown));
        let unknown = [
            h("grpc-status", "5"),
            h("grpc-message", "unknown%20service"),
        ];
        let e = judge(200, &unknown, &[], &[]).expect_err("not found");
        assert!(
            e.contains("NOT_FOUND") && e.contains("unknown service"),
            "{e}"
        );
        let e = judge(503, &[], &[], &[]).expect_err("a proxy without its backend");
        assert_eq!(e, "the server answered HTTP 503 (UNAVAILABLE)");
        assert_eq!(percent_decoded("a%20b%0Ac%+f"), "a bc%+f");
        assert!(judge(200, &[], &[h("grpc-status", "0")], &[0, 255, 255, 255, 255]).is_err());
        assert!(
            judge(200, &[], &[], &serving)
                .expect_err("no status")
                .contains("grpc-status")
        );
        assert!(
            judge(200, &[], &ok, &[0, 0, 0, 0, 9, 0x08]).is_err(),
            "cut short"
        );
    }
}
