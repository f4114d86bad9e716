//! DNS messages (RFC 1035): a query for one name and type, and the answers of a response
//! with name compression followed, rendered as text the way `dig +short` shows them.

/// The record types the monitor asks for, by name.
pub fn type_code(name: &str) -> Option<u16> {
    Some(match name {
        "A" => 1,
        "NS" => 2,
        "CNAME" => 5,
        "SOA" => 6,
        "MX" => 15,
        "TXT" => 16,
        "AAAA" => 28,
        _ => return None,
    })
}

/// A name as DNS labels; `None` when it is not a valid name.
pub fn encode_name(name: &str) -> Option<Vec<u8>> {
    let name = name.trim_end_matches('.');
    if name.is_empty() || name.len() > 253 {
        return None;
    }
    let mut out = Vec::new();
    for label in name.split('.') {
        if label.is_empty()
            || label.len() > 63
            || !label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return None;
        }
        out.push(label.len() as u8);
        out.extend_from_slice(label.as_bytes());
    }
    out.push(0);
    Some(out)
}

/// A recursive query (RD set) for `name` and `qtype`, class IN.
pub fn query(id: u16, name: &str, qtype: u16) -> Option<Vec<u8>> {
    let mut out = id.to_be_bytes().to_vec();
    out.extend_from_slice(&[0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]);
    out.extend_from_slice(&encode_name(name)?);
    out.extend_from_slice(&qtype.to_be_bytes());
    out.extend_from_slice(&1u16.to_be_bytes());
    Some(out)
}

/// One answer record, its data as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub rtype: u16,
    pub value: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub rcode: u8,
    pub answers: Vec<Record>,
}

/// What a response code means, when it is not success.
pub fn rcode_problem(rcode: u8) -> Option<String> {
    match rcode {
        0 => None,
        1 => Some("the resolver could not read the query (FORMERR)".into()),
        2 => Some("the resolver failed (SERVFAIL)".into()),
        3 => Some("the name does not exist (NXDOMAIN)".into()),
        4 => Some("the resolver does not do this (NOTIMP)".into()),
        5 => Some("the resolver refused (REFUSED)".into()),
        other => Some(format!("the resolver answered with code {other}")),
    }
}

fn u16_at(m: &[u8], at: usize) -> Result<u16, String> {
    m.get(at..at + 2)
        .map(|b| u16::from_be_bytes([b[0], b[1]]))
        .ok_or_else(|| "the message is cut short".to_string())
}

/// Read a (possibly compressed) name at `at`; the name and where the data after it starts.
pub fn read_name(m: &[u8], mut at: usize) -> Result<(String, usize), String> {
    let mut labels = Vec::new();
    let mut end = None;
    for _ in 0..128 {
        let len = *m.get(at).ok_or("the message is cut short")?;
        match len {
            0 => {
                let name = labels.join(".");
                return Ok((
                    if name.is_empty() { ".".into() } else { name },
                    end.unwrap_or(at + 1),
                ));
            }
            l if l & 0xc0 == 0xc0 => {
                let target = usize::from(u16_at(m, at)? & 0x3fff);
                end.get_or_insert(at + 2);
                at = target;
            }
            l => {
                let l = usize::from(l);
                let label = m
                    .get(at + 1..at + 1 + l)
                    .ok_or("the message is cut short")?;
                labels.push(String::from_utf8_lossy(label).into_owned());
                at += 1 + l;
            }
        }
    }
    Err("a name with too many labels or a compression loop".into())
}

/// Record data as text.
fn render(m: &[u8], rtype: u16, start: usize, len: usize) -> Result<String, String> {
    let data = m
        .get(start..start + len)
        .ok_or("the message is cut short")?;
    Ok(match rtype {
        1 if len == 4 => std::net::Ipv4Addr::new(data[0], data[1], data[2], data[3]).to_string(),
        28 if len == 16 => {
            let b: [u8; 16] = data.try_into().map_err(|_| "bad AAAA")?;
            std::net::Ipv6Addr::from(b).to_string()
        }
        2 | 5 => read_name(m, start)?.0,
        15 => format!("{} {}", u16_at(m, start)?, read_name(m, start + 2)?.0),
        16 => {
            let mut out = String::new();
            let mut at = 0;
            while at < data.len() {
                let l = usize::from(data[at]);
                let s = data
                    .get(at + 1..at + 1 + l)
                    .ok_or("a TXT string is cut short")?;
                out.push_str(&String::from_utf8_lossy(s));
                at += 1 + l;
            }
            out
        }
        6 => {
            let (mname, at) = read_name(m, start)?;
            let (rname, at) = read_name(m, at)?;
            let n = |i: usize| -> Result<u32, String> {
                m.get(at + i * 4..at + i * 4 + 4)
                    .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
                    .ok_or_else(|| "the SOA record is cut short".to_string())
            };
            format!(
                "{mname} {rname} {} {} {} {} {}",
                n(0)?,
                n(1)?,
                n(2)?,
                n(3)?,
                n(4)?
            )
        }
        _ => data.iter().map(|b| format!("{b:02x}")).collect(),
    })
}

/// Parse a response to the query `id`.
pub fn parse_response(m: &[u8], id: u16) -> Result<Response, String> {
    if m.len() < 12 {
        return Err("the message is shorter than a DNS header".into());
    }
    if u16_at(m, 0)? != id {
        return Err("the answer is for another query".into());
    }
    if m[2] & 0x80 == 0 {
        return Err("the message is not a response".into());
    }
    if m[2] & 0x02 != 0 {
        return Err("the answer was truncated".into());
    }
    let rcode = m[3] & 0x0f;
    let questions = u16_at(m, 4)?;
    let answers = u16_at(m, 6)?;
    let mut at = 12;
    for _ in 0..questions {
        at = read_name(m, at)?.1 + 4;
    }
    let mut out = Vec::new();
    for _ in 0..answers {
        let (_, after) = read_name(m, at)?;
        let rtype = u16_at(m, after)?;
        let len = usize::from(u16_at(m, after + 8)?);
        let start = after + 10;
        out.push(Record {
            rtype,
            value: render(m, rtype, start, len)?,
        });
        at = start + len;
    }
    Ok(Response {
        rcode,
        answers: out,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_is_well_formed() {
        let q = query(0x1234, "example.com", 1).expect("query");
        assert_eq!(
            q,
            b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07example\x03com\x00\x00\x01\x00\x01"
        );
        assert!(encode_name("bad name.com").is_none());
        assert!(encode_name(&"a".repeat(64)).is_none());
    }

    #[test]
    fn answers_with_compression_are_read() {
        // A response for example.com MX: one answer, the name a pointer to the question.
        let mut m = b"\x12\x34\x81\x80\x00\x01\x00\x01\x00\x00\x00\x00\x07example\x03com\x00\x00\x0f\x00\x01".to_vec();
        m.extend_from_slice(
            b"\xc0\x0c\x00\x0f\x00\x01\x00\x00\x0e\x10\x00\x09\x00\x0a\x04mail\xc0\x0c",
        );
        let r = parse_response(&m, 0x1234).expect("parses");
        assert_eq!(r.rcode, 0);
        assert_eq!(
            r.answers,
            [Record {
                rtype: 15,
                value: "10 mail.example.com".into()
            }]
        );
        assert!(parse_response(&m, 0x9999).is_err());
        assert_eq!(
            rcode_problem(3).as_deref(),
            Some("the name does not exist (NXDOMAIN)")
        );
    }
}
