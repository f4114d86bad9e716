//! Prefixed identifiers (`mon_01J...`): a ULID behind a resource prefix, so ids sort by
//! creation time and say what they name.

use std::time::Duration;

/// Resource prefixes, as DECISIONS.md lists them.
pub mod prefix {
    pub const MONITOR: &str = "mon_";
    pub const WORKSPACE: &str = "ws_";
    pub const API_KEY: &str = "key_";
    pub const CHECK: &str = "chk_";
    pub const REQUEST: &str = "req_";
    pub const INCIDENT: &str = "inc_";
    /// An entry of an incident's timeline.
    pub const INCIDENT_EVENT: &str = "evt_";
    /// Also the `webhookId` and `X-Service-Webhook-ID` of what it delivers.
    pub const DELIVERY: &str = "whd_";
    pub const DELIVERY_ATTEMPT: &str = "att_";
    pub const ALERT_POLICY: &str = "pol_";
    pub const CHANNEL: &str = "ch_";
    pub const STATUS_PAGE: &str = "sp_";
    pub const MAINTENANCE_WINDOW: &str = "mw_";
    pub const ALERT_GROUP: &str = "grp_";
    pub const STATUS_UPDATE: &str = "upd_";
    pub const SUBSCRIBER: &str = "sub_";
    pub const MEMBER: &str = "mem_";
    /// A request to confirm a failure from another region.
    pub const CONFIRMATION: &str = "cfm_";
    pub const NODE: &str = "node_";
    /// A person's account (one per e-mail address on the server).
    pub const USER: &str = "usr_";
    /// A signed-in browser or client.
    pub const SESSION: &str = "ses_";
    /// An invitation, a setup link or a password reset.
    pub const AUTH_TOKEN: &str = "tok_";
    /// An entry of the audit log.
    pub const AUDIT: &str = "aud_";
    /// A probe running checks in a private location (`tocsin probe`).
    pub const PROBE: &str = "prb_";
}

/// Fixed textual prefix of every probe token: never accepted as an API key, and an API
/// key is never accepted as a probe token.
pub const PROBE_TOKEN_PREFIX: &str = "tpb_";

/// Fixed textual prefix of every key secret.
pub const SECRET_PREFIX: &str = "tcs_";
/// Random characters after the prefix (base62: 40 characters carry over 238 bits).
pub const SECRET_RANDOM_CHARS: usize = 40;

/// Whether `secret` has the shape of a key secret (`tcs_` + 40 base62 characters).
pub fn is_well_formed_secret(secret: &str) -> bool {
    secret.strip_prefix(SECRET_PREFIX).is_some_and(|rest| {
        rest.len() == SECRET_RANDOM_CHARS && rest.bytes().all(|b| b.is_ascii_alphanumeric())
    })
}

/// One generator for the process, so ids made within the same millisecond still sort in
/// the order they were made (timeline entries of one transaction share a timestamp).
static GENERATOR: std::sync::Mutex<ulid::Generator> = std::sync::Mutex::new(ulid::Generator::new());

/// A new identifier with the given prefix.
pub fn new_id(prefix: &str) -> String {
    let ulid = GENERATOR
        .lock()
        .ok()
        .and_then(|mut g| g.generate().ok())
        // Only on 2^80 ids within one millisecond, or a poisoned lock: fall back to a
        // random one. (Not `unwrap_or_default`: the default ULID is all zeros.)
        .unwrap_or_else(|| ulid::Ulid::from_datetime(std::time::SystemTime::now()));
    format!("{prefix}{ulid}")
}

/// Whether `id` has the prefix and a well-formed ULID after it.
pub fn is_valid(id: &str, prefix: &str) -> bool {
    id.strip_prefix(prefix)
        .is_some_and(|rest| rest.len() == 26 && ulid::Ulid::from_string(rest).is_ok())
}

/// `n` random characters from the base62 alphabet, from the operating system's CSPRNG.
pub fn random_base62(n: usize) -> String {
    const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let mut out = String::with_capacity(n);
    let mut buf = [0u8; 64];
    while out.len() < n {
        if getrandom::fill(&mut buf).is_err() {
            // The OS random source is part of the platform contract; without it no secret is safe.
            panic!("the operating system's random number generator is unavailable");
        }
        // 248 = 4 * 62: rejecting larger bytes keeps every character equally likely.
        for b in buf.iter().filter(|b| **b < 248) {
            if out.len() == n {
                break;
            }
            out.push(ALPHABET[usize::from(*b % 62)] as char);
        }
    }
    out
}

/// A monitor's fixed offset within its interval. The same on every node and every build
/// (a SHA-256 of the id), so nodes agree on when a monitor's rounds are.
pub fn phase(id: &str, interval: Duration) -> Duration {
    phase_of(id_hash(id), interval)
}

/// The first eight bytes of a SHA-256 of a monitor's id, little-endian: the same on every
/// node and every build.
pub fn id_hash(id: &str) -> u64 {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(id.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_le_bytes(first)
}

/// A monitor's interval and where its rounds start within it (its phase): the one rule
/// the scheduler runs checks by and the store files health rows by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interval {
    pub every: Duration,
    pub phase: Duration,
}

impl Interval {
    /// A stored interval in seconds (at least one), phased by the id's hash.
    pub fn of_hash(id_hash: u64, interval_secs: i32) -> Interval {
        let every = Duration::from_secs(u64::try_from(interval_secs).unwrap_or(60).max(1));
        Interval {
            every,
            phase: phase_of(id_hash, every),
        }
    }

    pub fn of(id: &str, interval_secs: i32) -> Interval {
        Interval::of_hash(id_hash(id), interval_secs)
    }

    pub fn every_ms(self) -> i64 {
        i64::try_from(self.every.as_millis()).unwrap_or(i64::MAX)
    }

    pub fn phase_ms(self) -> i64 {
        i64::try_from(self.phase.as_millis()).unwrap_or(0)
    }
}

/// [`phase`] from the id's hash.
pub fn phase_of(id_hash: u64, interval: Duration) -> Duration {
    let ms = u64::try_from(interval.as_millis())
        .unwrap_or(u64::MAX)
        .max(1);
    Duration::from_millis(id_hash % ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interval_is_at_least_a_second_and_its_phase_lies_within_it() {
        let id = "mon_01JD6Z3Y5N8Q2W7R4T6V9X0B1C";
        let every = Interval::of(id, 300);
        assert_eq!(every.every, Duration::from_secs(300));
        assert_eq!(every.phase, phase(id, Duration::from_secs(300)));
        assert!(every.phase_ms() < every.every_ms());
        assert_eq!(Interval::of(id, 0).every, Duration::from_secs(1));
        assert_eq!(Interval::of_hash(id_hash(id), 300), every);
    }

    #[test]
    fn ids_made_in_a_row_sort_in_that_order() {
        let ids: Vec<String> = (0..1000).map(|_| new_id("evt_")).collect();
        let mut sorted = ids.clone();
        sorted.sort();
        assert_eq!(ids, sorted);
    }

    #[test]
    fn ids_carry_prefix_and_validate() {
        let id = new_id(prefix::MONITOR);
        assert!(id.starts_with("mon_"));
        assert_eq!(id.len(), 30);
        assert!(is_valid(&id, prefix::MONITOR));
        assert!(!is_valid(&id, prefix::WORKSPACE));
        assert!(!is_valid("mon_nope", prefix::MONITOR));
    }

    #[test]
    fn ids_sort_by_creation() {
        let a = new_id(prefix::CHECK);
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = new_id(prefix::CHECK);
        assert!(a < b);
    }

    #[test]
    fn base62_has_requested_length_and_alphabet() {
        let s = random_base62(40);
        assert_eq!(s.len(), 40);
        assert!(s.chars().all(|c| c.is_ascii_alphanumeric()));
        assert_ne!(s, random_base62(40));
    }
}
