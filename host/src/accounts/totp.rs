//! Two-factor authentication with time-based one-time passwords (RFC 6238: SHA-1, six
//! digits, 30-second steps, one step of clock drift either way), the enrolment QR code
//! drawn as SVG by the server, and single-use recovery codes.

use totp_rs::{Algorithm, Secret, TOTP};

/// A new random secret, base32 as authenticator apps show it (160 bits, RFC 4226's size).
pub fn new_secret() -> String {
    let mut bytes = [0u8; 20];
    // getrandom only fails where the OS has no randomness; the secret is then all zeroes,
    // which `totp` refuses below rather than enrolling anyone with it.
    let _ = getrandom::fill(&mut bytes);
    Secret::Raw(bytes.to_vec()).to_encoded().to_string()
}

fn totp(secret_base32: &str, account: &str) -> Option<TOTP> {
    let bytes = Secret::Encoded(secret_base32.to_string()).to_bytes().ok()?;
    if bytes.iter().all(|b| *b == 0) {
        return None;
    }
    TOTP::new(
        Algorithm::SHA1,
        6,
        1,
        30,
        bytes,
        Some("Tocsin".to_string()),
        account.to_string(),
    )
    .ok()
}

/// The `otpauth://` URL an authenticator app reads from the QR code.
pub fn provisioning_url(secret_base32: &str, account: &str) -> Option<String> {
    totp(secret_base32, account).map(|t| t.get_url())
}

/// The QR code of `text` as an SVG document.
pub fn qr_svg(text: &str) -> Option<String> {
    let code = qrcode::QrCode::new(text.as_bytes()).ok()?;
    Some(
        code.render::<qrcode::render::svg::Color<'_>>()
            .min_dimensions(200, 200)
            .quiet_zone(true)
            .build(),
    )
}

/// Whether `code` (spaces allowed) is valid for `secret_base32` at `unix_secs`.
pub fn check(secret_base32: &str, code: &str, unix_secs: u64) -> bool {
    let code: String = code.chars().filter(|c| !c.is_whitespace()).collect();
    if code.len() != 6 || !code.chars().all(|c| c.is_ascii_digit()) {
        return false;
    }
    totp(secret_base32, "").is_some_and(|t| t.check(&code, unix_secs))
}

/// The code for `unix_secs` (tests and the CLI's self-check use it).
pub fn code_at(secret_base32: &str, unix_secs: u64) -> Option<String> {
    totp(secret_base32, "").map(|t| t.generate(unix_secs))
}

/// Ten new recovery codes (`xxxxx-xxxxx`, lowercase letters and digits).
pub fn new_recovery_codes() -> Vec<String> {
    (0..10)
        .map(|_| {
            let raw = crate::ids::random_base62(10).to_lowercase();
            format!("{}-{}", &raw[..5], &raw[5..])
        })
        .collect()
}

/// The form a recovery code is compared in: lowercase, no spaces or dashes.
pub fn normalize_recovery_code(code: &str) -> String {
    code.chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect::<String>()
        .to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_check_within_one_step() {
        let secret = new_secret();
        let now = 1_800_000_000;
        let code = code_at(&secret, now).expect("code");
        assert!(check(&secret, &code, now));
        assert!(check(&secret, &code, now + 30));
        assert!(!check(&secret, &code, now + 90));
        assert!(!check(&secret, "12345", now));
        assert!(!check(&secret, "abcdef", now));
    }

    #[test]
    fn rfc_6238_vector() {
        // RFC 6238, appendix B: SHA-1 secret "12345678901234567890", T = 59 s → 94287082
        // (eight digits); the six-digit code is its last six.
        let secret = Secret::Raw(b"12345678901234567890".to_vec())
            .to_encoded()
            .to_string();
        assert_eq!(code_at(&secret, 59).as_deref(), Some("287082"));
    }

    #[test]
    fn url_and_qr() {
        let secret = new_secret();
        let url = provisioning_url(&secret, "ana@example.com").expect("url");
        assert!(
            url.starts_with("otpauth://totp/Tocsin:ana%40example.com?"),
            "{url}"
        );
        assert!(url.contains(&format!("secret={secret}")));
        let svg = qr_svg(&url).expect("svg");
        assert!(svg.contains("<svg"));
    }

    #[test]
    fn recovery_codes() {
        let codes = new_recovery_codes();
        assert_eq!(codes.len(), 10);
        assert_eq!(codes[0].len(), 11);
        assert_eq!(normalize_recovery_code(" ABCDE-12345 "), "abcde12345");
    }
}
