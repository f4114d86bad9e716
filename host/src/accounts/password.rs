//! Passwords: argon2id in PHC form (parameters and salt travel with the hash), and a
//! length policy (at least 10 characters, at most 256; passphrases welcome).

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};
use std::sync::LazyLock;

pub const MIN_LENGTH: usize = 10;
pub const MAX_LENGTH: usize = 256;

/// argon2id with OWASP's minimum parameters (19 MiB, 2 passes, 1 lane).
fn hasher() -> Argon2<'static> {
    Argon2::new(
        Algorithm::Argon2id,
        Version::V0x13,
        Params::new(19 * 1024, 2, 1, None).unwrap_or_default(),
    )
}

/// Why a password is refused, if it is.
pub fn check_policy(password: &str) -> Result<(), String> {
    let n = password.chars().count();
    if n < MIN_LENGTH {
        return Err(format!("must be at least {MIN_LENGTH} characters"));
    }
    if n > MAX_LENGTH {
        return Err(format!("must be at most {MAX_LENGTH} characters"));
    }
    Ok(())
}

/// Hash a password for storage.
pub fn hash(password: &str) -> Result<String, String> {
    let mut salt = [0u8; 16];
    getrandom::fill(&mut salt).map_err(|e| e.to_string())?;
    let salt = SaltString::encode_b64(&salt).map_err(|e| e.to_string())?;
    hasher()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| e.to_string())
}

/// A hash of nothing anyone knows: verifying against it costs what a real check costs,
/// so an unknown e-mail address takes as long to refuse as a wrong password.
static DECOY: LazyLock<String> =
    LazyLock::new(|| hash(&crate::ids::random_base62(32)).unwrap_or_default());

/// Whether `password` matches `stored` (a PHC string). With `None` (no such account, or
/// an account without a password) the same work is done and the answer is no.
pub fn verify(password: &str, stored: Option<&str>) -> bool {
    let target = stored.unwrap_or(DECOY.as_str());
    let ok = PasswordHash::new(target)
        .map(|h| hasher().verify_password(password.as_bytes(), &h).is_ok())
        .unwrap_or(false);
    ok && stored.is_some()
}

/// Warm the decoy hash up (at start-up, so the first failed sign-in is not slower).
pub fn prepare() {
    LazyLock::force(&DECOY);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_verify_and_differ() {
        let h = hash("correct horse battery").expect("hash");
        assert!(h.starts_with("$argon2id$"));
        assert!(verify("correct horse battery", Some(&h)));
        assert!(!verify("wrong horse battery", Some(&h)));
        assert!(!verify("correct horse battery", None));
        assert_ne!(h, hash("correct horse battery").expect("hash"));
    }

    #[test]
    fn policy() {
        assert!(check_policy("short").is_err());
        assert!(check_policy("long enough!").is_ok());
        assert!(check_policy(&"x".repeat(300)).is_err());
    }
}
