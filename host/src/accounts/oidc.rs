//! Single sign-on with OpenID Connect: the authorization code flow with PKCE, endpoints
//! and keys found by discovery from the configured issuer, the ID token verified
//! (signature, issuer, audience, expiry, nonce) before anything in it is believed. The
//! groups claim then maps to workspace roles ([`roles_for`]).

use crate::config::{OidcProvider, OidcRoleMapping};
use openidconnect::core::{CoreAuthenticationFlow, CoreClient, CoreProviderMetadata};
use openidconnect::{
    AuthorizationCode, ClientId, ClientSecret, CsrfToken, IssuerUrl, Nonce, PkceCodeChallenge,
    PkceCodeVerifier, RedirectUrl, Scope, TokenResponse,
};
use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

/// How long discovered metadata (endpoints and signing keys) is reused.
const METADATA_TTL: Duration = Duration::from_secs(600);
/// The longest a provider may take to answer one request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Why single sign-on failed. Messages are for the person signing in and the log.
#[derive(Debug, thiserror::Error)]
pub enum SsoError {
    #[error("no single sign-on provider is called `{0}`")]
    UnknownProvider(String),
    #[error("the identity provider cannot be used: {0}")]
    Provider(String),
    #[error("the identity provider's answer was refused: {0}")]
    Refused(String),
}

/// Where to send the browser, and what to remember until it comes back.
pub struct Start {
    pub url: String,
    pub state: String,
    pub pkce_verifier: String,
    pub nonce: String,
}

/// Who the provider says signed in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub subject: String,
    pub email: String,
    pub email_verified: bool,
    pub name: Option<String>,
    pub groups: Vec<String>,
}

/// The configured providers and an HTTP client for talking to them.
pub struct Sso {
    providers: Vec<OidcProvider>,
    public_url: String,
    http: Http,
    metadata: tokio::sync::Mutex<HashMap<String, (Instant, CoreProviderMetadata)>>,
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct HttpError(String);

/// The HTTP client the OpenID Connect library calls.
#[derive(Clone)]
struct Http(reqwest::Client);

type HttpFuture<'c> = std::pin::Pin<
    Box<dyn Future<Output = Result<openidconnect::HttpResponse, HttpError>> + Send + 'c>,
>;

impl<'c> openidconnect::AsyncHttpClient<'c> for Http {
    type Error = HttpError;
    type Future = HttpFuture<'c>;

    fn call(&'c self, request: openidconnect::HttpRequest) -> Self::Future {
        Box::pin(exchange(self.0.clone(), request))
    }
}

async fn exchange(
    client: reqwest::Client,
    request: openidconnect::HttpRequest,
) -> Result<openidconnect::HttpResponse, HttpError> {
    let (parts, body) = request.into_parts();
    let mut builder = client
        .request(parts.method, parts.uri.to_string())
        .body(body);
    for (name, value) in &parts.headers {
        builder = builder.header(name, value);
    }
    let response = builder.send().await.map_err(|e| HttpError(e.to_string()))?;
    let mut out = http::Response::builder().status(response.status());
    for (name, value) in response.headers() {
        out = out.header(name, value);
    }
    let bytes = response
        .bytes()
        .await
        .map_err(|e| HttpError(e.to_string()))?;
    out.body(bytes.to_vec())
        .map_err(|e| HttpError(e.to_string()))
}

impl Sso {
    /// `certs` are the trusted roots (the same as for checks and deliveries).
    pub fn new(
        providers: Vec<OidcProvider>,
        public_url: &str,
        certs: &[rustls::pki_types::CertificateDer<'static>],
    ) -> Result<Sso, String> {
        crate::crypto::install_provider();
        let http = reqwest::Client::builder()
            .tls_certs_only(
                certs
                    .iter()
                    .filter_map(|c| reqwest::Certificate::from_der(c).ok()),
            )
            // Following redirects would let a token endpoint send the code elsewhere.
            .redirect(reqwest::redirect::Policy::none())
            .timeout(REQUEST_TIMEOUT)
            .user_agent(concat!("Tocsin/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Sso {
            providers,
            public_url: public_url.trim_end_matches('/').to_string(),
            http: Http(http),
            metadata: tokio::sync::Mutex::new(HashMap::new()),
        })
    }

    pub fn providers(&self) -> &[OidcProvider] {
        &self.providers
    }

    pub fn provider(&self, name: &str) -> Result<&OidcProvider, SsoError> {
        self.providers
            .iter()
            .find(|p| p.name == name)
            .ok_or_else(|| SsoError::UnknownProvider(name.to_string()))
    }

    /// The callback address registered with the provider.
    pub fn redirect_url(&self, name: &str) -> String {
        format!("{}/v1/auth/oidc/{name}/callback", self.public_url)
    }

    async fn client(&self, p: &OidcProvider) -> Result<ProviderClient, SsoError> {
        let metadata = {
            let cache = self.metadata.lock().await;
            cache
                .get(&p.name)
                .filter(|(at, _)| at.elapsed() < METADATA_TTL)
                .map(|(_, m)| m.clone())
        };
        let metadata = match metadata {
            Some(m) => m,
            None => {
                let issuer = IssuerUrl::new(p.issuer.clone())
                    .map_err(|e| SsoError::Provider(format!("issuer `{}`: {e}", p.issuer)))?;
                let m = CoreProviderMetadata::discover_async(issuer, &self.http)
                    .await
                    .map_err(|e| {
                        SsoError::Provider(format!("discovery at {}: {}", p.issuer, describe(&e)))
                    })?;
                self.metadata
                    .lock()
                    .await
                    .insert(p.name.clone(), (Instant::now(), m.clone()));
                m
            }
        };
        let redirect = RedirectUrl::new(self.redirect_url(&p.name))
            .map_err(|e| SsoError::Provider(format!("public_url: {e}")))?;
        Ok(CoreClient::from_provider_metadata(
            metadata,
            ClientId::new(p.client_id.clone()),
            p.client_secret.clone().map(ClientSecret::new),
        )
        .set_redirect_uri(redirect))
    }

    /// Begin a sign-in with provider `name`.
    pub async fn start(&self, name: &str) -> Result<Start, SsoError> {
        let p = self.provider(name)?;
        let client = self.client(p).await?;
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let mut request = client.authorize_url(
            CoreAuthenticationFlow::AuthorizationCode,
            CsrfToken::new_random,
            Nonce::new_random,
        );
        for scope in &p.scopes {
            request = request.add_scope(Scope::new(scope.clone()));
        }
        let (url, state, nonce) = request.set_pkce_challenge(challenge).url();
        Ok(Start {
            url: url.to_string(),
            state: state.secret().clone(),
            pkce_verifier: verifier.secret().clone(),
            nonce: nonce.secret().clone(),
        })
    }

    /// Finish a sign-in: trade the code for tokens and verify the ID token.
    pub async fn finish(
        &self,
        name: &str,
        code: &str,
        pkce_verifier: &str,
        nonce: &str,
    ) -> Result<Identity, SsoError> {
        let p = self.provider(name)?;
        let client = self.client(p).await?;
        let tokens = client
            .exchange_code(AuthorizationCode::new(code.to_string()))
            .map_err(|e| SsoError::Provider(e.to_string()))?
            .set_pkce_verifier(PkceCodeVerifier::new(pkce_verifier.to_string()))
            .request_async(&self.http)
            .await
            .map_err(|e| SsoError::Refused(format!("token request: {}", describe(&e))))?;
        let id_token = tokens
            .id_token()
            .ok_or_else(|| SsoError::Refused("the token response has no ID token".into()))?;
        let verifier = client.id_token_verifier();
        let claims = id_token
            .claims(&verifier, &Nonce::new(nonce.to_string()))
            .map_err(|e| SsoError::Refused(format!("ID token: {e}")))?;
        let email = claims
            .email()
            .map(|e| e.as_str().to_string())
            .ok_or_else(|| {
                SsoError::Refused(
                    "the ID token has no `email` claim (ask for the `email` scope)".into(),
                )
            })?;
        let name_claim = claims
            .name()
            .and_then(|n| n.get(None))
            .map(|n| n.as_str().to_string());
        // The token is verified; read the configured groups claim from its payload.
        let raw = serde_json::to_value(id_token)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        Ok(Identity {
            subject: claims.subject().as_str().to_string(),
            email,
            email_verified: claims.email_verified().unwrap_or(false),
            name: name_claim,
            groups: groups_claim(&raw, &p.groups_claim),
        })
    }
}

type ProviderClient = CoreClient<
    openidconnect::EndpointSet,
    openidconnect::EndpointNotSet,
    openidconnect::EndpointNotSet,
    openidconnect::EndpointNotSet,
    openidconnect::EndpointMaybeSet,
    openidconnect::EndpointMaybeSet,
>;

/// An error and its causes, on one line.
fn describe(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// The strings of claim `name` in a JWT's payload (a list, or one string).
fn groups_claim(jwt: &str, name: &str) -> Vec<String> {
    use base64::Engine as _;
    let Some(payload) = jwt.split('.').nth(1) else {
        return Vec::new();
    };
    let Ok(bytes) =
        base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload.trim_end_matches('='))
    else {
        return Vec::new();
    };
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(&bytes) else {
        return Vec::new();
    };
    match value.get(name) {
        Some(serde_json::Value::Array(items)) => items
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect(),
        Some(serde_json::Value::String(s)) => vec![s.clone()],
        _ => Vec::new(),
    }
}

/// Whether the identity's e-mail address may be believed: the provider says it verified
/// it, or the operator vouches for every address the provider gives (`trust_email`).
/// Only then may it reach an existing account, a pending invitation or a domain rule:
/// some providers let anyone claim any address.
pub fn email_trusted(identity: &Identity, provider: &OidcProvider) -> bool {
    identity.email_verified || provider.trust_email
}

/// Whether `email`'s domain is one of `domains` (case-insensitive).
pub fn domain_allowed(email: &str, domains: &[String]) -> bool {
    let Some((_, domain)) = email.rsplit_once('@') else {
        return false;
    };
    domains.iter().any(|d| d.eq_ignore_ascii_case(domain))
}

/// The role `groups` give in each workspace the mappings name (`first` stands in for a
/// mapping without a workspace): the strongest matching role, or `None` where no group
/// matches (a membership given by an invitation or an admin is then left as it is).
pub fn roles_for(
    mappings: &[OidcRoleMapping],
    groups: &[String],
    first: &str,
) -> BTreeMap<String, Option<String>> {
    let mut roles: BTreeMap<String, Option<String>> = BTreeMap::new();
    for m in mappings {
        let ws = m.workspace.clone().unwrap_or_else(|| first.to_string());
        let entry = roles.entry(ws).or_insert(None);
        if groups.contains(&m.group) {
            let stronger = entry
                .as_deref()
                .is_none_or(|r| super::role_rank(&m.role) > super::role_rank(r));
            if stronger {
                *entry = Some(m.role.clone());
            }
        }
    }
    roles
}

/// The role `default_role` gives in the first workspace (the caller adds it only for
/// someone not yet a member there): none when a group the person is in maps a role there.
pub fn default_role_for<'a>(
    roles: &BTreeMap<String, Option<String>>,
    first: &str,
    default_role: Option<&'a str>,
) -> Option<&'a str> {
    // A mapping that names no workspace puts the first one in `roles` even when the
    // person is in none of its groups; only a role actually given there wins.
    if first.is_empty() || roles.get(first).is_some_and(Option::is_some) {
        return None;
    }
    default_role
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mapping(group: &str, ws: Option<&str>, role: &str) -> OidcRoleMapping {
        OidcRoleMapping {
            group: group.into(),
            workspace: ws.map(str::to_string),
            role: role.into(),
        }
    }

    #[test]
    fn strongest_matching_role_per_workspace() {
        let m = [
            mapping("sre", None, "admin"),
            mapping("staff", None, "viewer"),
            mapping("staff", Some("ws_b"), "member"),
            mapping("ops", Some("ws_c"), "owner"),
        ];
        let got = roles_for(&m, &["staff".into(), "sre".into()], "ws_a");
        assert_eq!(got.get("ws_a"), Some(&Some("admin".to_string())));
        assert_eq!(got.get("ws_b"), Some(&Some("member".to_string())));
        assert_eq!(got.get("ws_c"), Some(&None));
    }

    #[test]
    fn the_default_role_applies_where_no_group_of_the_person_maps_a_role() {
        // Mappings that name no workspace stand for the first one.
        let m = [
            mapping("sre", None, "admin"),
            mapping("ops", Some("ws_b"), "member"),
        ];
        let default = Some("viewer");
        // In no mapped group: the default role, not no workspace at all.
        let none = roles_for(&m, &["sales".into()], "ws_a");
        assert_eq!(default_role_for(&none, "ws_a", default), Some("viewer"));
        // A group maps a role in another workspace only: the default in the first.
        let elsewhere = roles_for(&m, &["ops".into()], "ws_a");
        assert_eq!(
            default_role_for(&elsewhere, "ws_a", default),
            Some("viewer")
        );
        // A group maps a role in the first workspace: that role, not the default.
        let mapped = roles_for(&m, &["sre".into()], "ws_a");
        assert_eq!(default_role_for(&mapped, "ws_a", default), None);
        // No default configured, or no workspace yet: nothing.
        assert_eq!(default_role_for(&none, "ws_a", None), None);
        assert_eq!(default_role_for(&none, "", default), None);
    }

    #[test]
    fn an_unverified_address_is_believed_only_from_a_trusted_provider() {
        let mut provider = OidcProvider {
            name: "corp".into(),
            display_name: None,
            issuer: "https://id.example.com".into(),
            client_id: "tocsin".into(),
            client_secret: None,
            scopes: Vec::new(),
            allowed_domains: Vec::new(),
            trust_email: false,
            groups_claim: "groups".into(),
            roles: Vec::new(),
            default_role: None,
        };
        let mut identity = Identity {
            subject: "1".into(),
            email: "owner@example.com".into(),
            email_verified: false,
            name: None,
            groups: Vec::new(),
        };
        assert!(!email_trusted(&identity, &provider));
        identity.email_verified = true;
        assert!(email_trusted(&identity, &provider));
        identity.email_verified = false;
        provider.trust_email = true;
        assert!(email_trusted(&identity, &provider));
    }

    #[test]
    fn groups_from_a_payload() {
        use base64::Engine as _;
        let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(br#"{"sub":"1","groups":["a","b"],"team":"x"}"#);
        let jwt = format!("h.{payload}.s");
        assert_eq!(groups_claim(&jwt, "groups"), vec!["a", "b"]);
        assert_eq!(groups_claim(&jwt, "team"), vec!["x"]);
        assert!(groups_claim(&jwt, "none").is_empty());
        assert!(domain_allowed("a@Example.com", &["example.com".into()]));
        assert!(!domain_allowed("a@evil.com", &["example.com".into()]));
    }
}
