//! People's credentials, apart from HTTP and storage: password hashing, one-time tokens,
//! TOTP two-factor codes, the sign-in throttle and single sign-on with OpenID Connect.

pub mod oidc;
pub mod password;
pub mod sign_in;
pub mod sign_up;
pub mod throttle;
pub mod totp;

use crate::ids;

/// How long links stay valid.
pub const SETUP_LINK_HOURS: i64 = 24;
pub const INVITATION_DAYS: i64 = 7;
pub const RESET_LINK_HOURS: i64 = 1;

/// What sign-in needs at run time: the SSO providers and the brute-force throttles.
pub struct Services {
    pub sso: oidc::Sso,
    pub login: throttle::Throttle,
    pub reset: throttle::Throttle,
}
use sha2::{Digest, Sha256};

/// A new random token for a cookie or a link: 43 base62 characters (over 256 bits).
pub fn new_token() -> String {
    ids::random_base62(43)
}

/// The stored form of a token: lowercase hex SHA-256, as for API key secrets.
pub fn hash_token(token: &str) -> String {
    crate::store::keys::hash_secret(token)
}

/// The CSRF token of a session: derived from its cookie token, so it is bound to the
/// session and needs no storage, and cannot be turned back into the cookie.
pub fn csrf_token(session_token: &str) -> String {
    hex::encode(Sha256::digest(
        format!("tocsin-csrf:{session_token}").as_bytes(),
    ))
}

/// Member roles, strongest first.
pub const MEMBER_ROLES: [&str; 4] = ["owner", "admin", "member", "viewer"];

/// How strong a member role is (higher is stronger); unknown roles are weakest.
pub fn role_rank(role: &str) -> usize {
    MEMBER_ROLES.len()
        - MEMBER_ROLES
            .iter()
            .position(|r| *r == role)
            .unwrap_or(MEMBER_ROLES.len())
}

/// Whether `text` is an e-mail address (what the SMTP relay accepts; at most 254
/// characters). Members, invitations and accounts share this rule.
pub fn is_email(text: &str) -> bool {
    text.len() <= 254 && text.parse::<lettre::Address>().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_and_csrf() {
        let t = new_token();
        assert_eq!(t.len(), 43);
        assert_ne!(t, new_token());
        assert_eq!(hash_token(&t).len(), 64);
        assert_ne!(csrf_token(&t), hash_token(&t));
        assert_eq!(csrf_token(&t), csrf_token(&t));
    }

    #[test]
    fn roles_rank_and_emails() {
        assert!(role_rank("owner") > role_rank("admin"));
        assert!(role_rank("member") > role_rank("viewer"));
        assert!(role_rank("viewer") > role_rank("nobody"));
        assert!(is_email("a.b@example.com"));
        assert!(!is_email("no-at-sign.example.com"));
        assert!(!is_email("a b@example.com"));
        assert!(!is_email("@example.com"));
    }
}
