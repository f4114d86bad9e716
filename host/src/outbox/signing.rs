//! Webhook signatures: HMAC-SHA256 over `<timestamp>.<raw body>` with the workspace
//! secret, lowercase hex, prefixed `sha256=`.

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The MAC state after `<timestamp>.<body>`.
fn mac(secret: &str, timestamp: i64, body: &str) -> Hmac<Sha256> {
    let mut mac = match Hmac::<Sha256>::new_from_slice(secret.as_bytes()) {
        Ok(mac) => mac,
        Err(_) => unreachable!("HMAC accepts keys of any length"),
    };
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body.as_bytes());
    mac
}

/// The `X-Service-Signature` value for a body sent at `timestamp` (unix seconds).
pub fn sign(secret: &str, timestamp: i64, body: &str) -> String {
    format!(
        "sha256={}",
        hex::encode(mac(secret, timestamp, body).finalize().into_bytes())
    )
}

/// Check a signature the way a receiver should: constant-time comparison and a
/// tolerance on the timestamp. Used by tests and the CLI helpers.
pub fn verify(
    secret: &str,
    timestamp: i64,
    body: &str,
    signature: &str,
    now: i64,
    tolerance_secs: i64,
) -> Result<(), &'static str> {
    if (now - timestamp).abs() > tolerance_secs {
        return Err("timestamp outside the tolerance");
    }
    let Some(hex_sig) = signature.strip_prefix("sha256=") else {
        return Err("signature lacks the sha256= prefix");
    };
    let Ok(given) = hex::decode(hex_sig) else {
        return Err("signature is not hexadecimal");
    };
    // verify_slice compares in constant time.
    mac(secret, timestamp, body)
        .verify_slice(&given)
        .map_err(|_| "signature does not match")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_an_independent_hmac() {
        // Computed with Python's hmac module.
        assert_eq!(
            sign(
                "whsec_test",
                1_795_253_400,
                r#"{"event":"incident.created"}"#
            ),
            "sha256=0f06dceaff9b02dccfda3465215c11ea13661ba3196a3f8d7c651424adf6ceb6"
        );
    }

    #[test]
    fn verification_rejects_tampering_and_stale_timestamps() {
        let body = r#"{"a":1}"#;
        let sig = sign("k", 1000, body);
        assert_eq!(verify("k", 1000, body, &sig, 1100, 300), Ok(()));
        assert!(verify("k", 1000, r#"{"a":2}"#, &sig, 1100, 300).is_err());
        assert!(verify("other", 1000, body, &sig, 1100, 300).is_err());
        assert_eq!(
            verify("k", 1000, body, &sig, 1301, 300),
            Err("timestamp outside the tolerance")
        );
        assert!(verify("k", 1000, body, "md5=00", 1000, 300).is_err());
    }
}
