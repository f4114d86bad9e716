//! The `http` host interface: one HTTP exchange on a plugin's behalf, with the call's
//! remaining budget as its timeout, redirects followed one by one (or not at all), and
//! the body read up to a cap.

use super::egress::{EgressDenied, EgressPolicy};
use super::limits;
use super::state::{CallContext, CallState};
use super::wit::http::{Error, Host, HttpVersion, Request, Response};
use super::wit::types::Header;
use http_body_util::BodyExt;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, LOCATION, USER_AGENT};
use reqwest::{Method, StatusCode, Url};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Build the shared client: no automatic redirects, no connection reuse (every check
/// measures a real connect, as a visitor would see it), no TCP keep-alive, rustls for TLS trusting `roots`,
/// no proxy, and names resolved once and filtered through the egress policy, so the
/// address connected to is the address checked.
pub fn build_client(
    roots: &[rustls::pki_types::CertificateDer<'static>],
    egress: Arc<EgressPolicy>,
) -> Result<reqwest::Client, reqwest::Error> {
    builder(roots, egress).build()
}

/// The clients of one set of services, by the HTTP a request asks for.
pub struct Clients {
    /// HTTP/2 over TLS when the server offers it, else HTTP/1.1.
    pub any: reqwest::Client,
    pub http1: reqwest::Client,
    /// HTTP/2 only: ALPN `h2` over TLS, prior knowledge (h2c) over plain TCP.
    pub http2: reqwest::Client,
}

impl Clients {
    pub fn build(
        roots: &[rustls::pki_types::CertificateDer<'static>],
        egress: Arc<EgressPolicy>,
    ) -> Result<Clients, reqwest::Error> {
        Ok(Clients {
            any: builder(roots, egress.clone()).build()?,
            http1: builder(roots, egress.clone()).http1_only().build()?,
            http2: builder(roots, egress).http2_prior_knowledge().build()?,
        })
    }

    fn of(&self, version: HttpVersion) -> &reqwest::Client {
        match version {
            HttpVersion::Any => &self.any,
            HttpVersion::Http1 => &self.http1,
            HttpVersion::Http2 => &self.http2,
        }
    }
}

/// The settings every client shares (see [`build_client`]).
fn builder(
    roots: &[rustls::pki_types::CertificateDer<'static>],
    egress: Arc<EgressPolicy>,
) -> reqwest::ClientBuilder {
    crate::crypto::install_provider();
    let certs = roots
        .iter()
        .filter_map(|c| reqwest::Certificate::from_der(c).ok());
    reqwest::Client::builder()
        .tls_certs_only(certs)
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .dns_resolver(Arc::new(CheckedResolver { egress }))
        .pool_max_idle_per_host(0)
        // A check's connection carries one exchange and is closed, and the call's own
        // deadline bounds a silent peer: TCP keep-alive would only cost four socket
        // options per check.
        .tcp_keepalive(None)
        .tcp_keepalive_interval(None)
        .tcp_keepalive_retries(None)
        .user_agent(concat!(
            "Tocsin/",
            env!("CARGO_PKG_VERSION"),
            " (uptime monitor)"
        ))
        .connect_timeout(Duration::from_secs(60))
}

/// The system resolver, then the egress policy: only allowed addresses are handed to the
/// connector.
struct CheckedResolver {
    egress: Arc<EgressPolicy>,
}

impl reqwest::dns::Resolve for CheckedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let egress = self.egress.clone();
        let host = name.as_str().to_string();
        Box::pin(async move {
            let mut found: Vec<IpAddr> = Vec::new();
            for a in tokio::net::lookup_host((host.as_str(), 0)).await? {
                if !found.contains(&a.ip()) {
                    found.push(a.ip());
                }
            }
            let allowed = egress.filter(&found)?;
            let addrs: reqwest::dns::Addrs =
                Box::new(allowed.into_iter().map(|ip| SocketAddr::new(ip, 0)));
            Ok(addrs)
        })
    }
}

impl Host for CallState {
    async fn send(&mut self, req: Request) -> Result<Response, Error> {
        if !self.call.grants.allows(super::Capability::Http) {
            return Err(Error::Denied(super::state::not_granted(
                &self.call.plugin,
                super::Capability::Http,
            )));
        }
        send(&self.call, req).await
    }
}

/// Perform the exchange. Public for the benchmarks' native baseline.
pub async fn send(call: &CallContext, req: Request) -> Result<Response, Error> {
    let prepared = prepare(&req)?;
    allowed_host(call, &prepared.url)?;
    let budget_ms = u32::try_from(call.budget.as_millis()).unwrap_or(u32::MAX);
    // The plugin may ask for less time than it has, never for more.
    let requested = Duration::from_millis(u64::from(req.timeout_ms));
    let allowed = requested.min(call.remaining());
    let reported_ms = req.timeout_ms.min(budget_ms);
    if allowed.is_zero() {
        return Err(Error::Timeout(reported_ms));
    }
    let max_body = req.max_body_bytes.min(limits::HTTP_MAX_BODY_BYTES) as usize;
    match tokio::time::timeout(allowed, exchange(call, prepared, &req, max_body)).await {
        Ok(result) => result,
        Err(_) => Err(Error::Timeout(reported_ms)),
    }
}

struct Prepared {
    method: Method,
    url: Url,
    headers: HeaderMap,
}

fn prepare(req: &Request) -> Result<Prepared, Error> {
    let method = match req.method.to_ascii_uppercase().as_str() {
        "GET" => Method::GET,
        "POST" => Method::POST,
        "PUT" => Method::PUT,
        "HEAD" => Method::HEAD,
        "PATCH" => Method::PATCH,
        "DELETE" => Method::DELETE,
        "OPTIONS" => Method::OPTIONS,
        other => {
            return Err(Error::InvalidRequest(format!(
                "unsupported method `{other}`"
            )));
        }
    };
    let url = Url::parse(&req.url).map_err(|e| Error::InvalidRequest(format!("bad URL: {e}")))?;
    if url.scheme() != "http" && url.scheme() != "https" {
        return Err(Error::InvalidRequest(
            "only http and https URLs are allowed".into(),
        ));
    }
    let mut headers = HeaderMap::new();
    for Header { name, value } in &req.headers {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| Error::InvalidRequest(format!("bad header name `{name}`")))?;
        let value = HeaderValue::from_str(value)
            .map_err(|_| Error::InvalidRequest(format!("bad value for header `{name}`")))?;
        headers.append(name, value);
    }
    Ok(Prepared {
        method,
        url,
        headers,
    })
}

/// Refuse a URL whose host the plugin's allowlist does not name.
fn allowed_host(call: &CallContext, url: &Url) -> Result<(), Error> {
    let host = url.host_str().unwrap_or_default();
    if call.grants.allows_http_host(host) {
        Ok(())
    } else {
        Err(Error::Denied(format!(
            "plugin `{}` may not reach `{host}`: it is not in the plugin's http_hosts",
            call.plugin
        )))
    }
}

async fn exchange(
    call: &CallContext,
    p: Prepared,
    req: &Request,
    max_body: usize,
) -> Result<Response, Error> {
    let started = Instant::now();
    let mut headers = p.headers;
    if let Some(region) = &call.region
        && !headers.contains_key(USER_AGENT)
        && let Ok(agent) = HeaderValue::from_str(&format!(
            "Tocsin/{} (uptime monitor; region {region})",
            env!("CARGO_PKG_VERSION")
        ))
    {
        headers.insert(USER_AGENT, agent);
    }
    let mut method = p.method;
    let mut url = p.url;
    let mut body = req.body.clone();
    let mut redirects = 0u32;
    loop {
        literal_address_allowed(&call.services.egress, &url)?;
        let mut builder = call
            .services
            .http
            .of(req.version)
            .request(method.clone(), url.clone())
            .headers(headers.clone());
        if let Some(b) = &body {
            builder = builder.body(b.clone());
        }
        let response = builder.send().await.map_err(transport_error)?;
        let status = response.status();
        if req.follow_redirects
            && status.is_redirection()
            && let Some(next) = redirect_target(&url, response.headers())
        {
            // As browsers do: 303 always, and 301/302 after a POST, become a GET without body.
            let (next_method, next_body) = if status == StatusCode::SEE_OTHER
                || ((status == StatusCode::MOVED_PERMANENTLY || status == StatusCode::FOUND)
                    && method == Method::POST)
            {
                let m = if method == Method::HEAD {
                    Method::HEAD
                } else {
                    Method::GET
                };
                (m, None)
            } else {
                (method.clone(), body.clone())
            };
            let cross_origin = next.origin() != url.origin();
            // A request body is never replayed to another origin (a 307/308 would resend
            // it): the redirect answer is the result, as with `followRedirects: false`.
            if !(cross_origin && next_body.is_some()) {
                if redirects >= req.max_redirects {
                    return Err(Error::TooManyRedirects(req.max_redirects));
                }
                redirects += 1;
                allowed_host(call, &next)?;
                if cross_origin {
                    drop_credentials(&mut headers);
                }
                method = next_method;
                body = next_body;
                url = next;
                continue;
            }
        }
        let remote_address = response.remote_addr().map(|a| a.to_string());
        let headers = response
            .headers()
            .iter()
            .map(|(n, v)| Header {
                name: n.as_str().to_string(),
                value: String::from_utf8_lossy(v.as_bytes()).into_owned(),
            })
            .collect();
        let version = match response.version() {
            reqwest::Version::HTTP_09 => "HTTP/0.9",
            reqwest::Version::HTTP_10 => "HTTP/1.0",
            reqwest::Version::HTTP_2 => "HTTP/2.0",
            reqwest::Version::HTTP_3 => "HTTP/3.0",
            _ => "HTTP/1.1",
        }
        .to_string();
        // The body frame by frame: data up to the cap, then any trailers.
        let mut frames = reqwest::Body::from(response);
        let mut collected = Vec::new();
        let mut truncated = false;
        let mut trailers = Vec::new();
        while let Some(frame) = frames.frame().await {
            let frame = frame.map_err(transport_error)?;
            let frame = match frame.into_data() {
                Ok(chunk) => {
                    let room = max_body.saturating_sub(collected.len());
                    if chunk.len() > room {
                        collected.extend_from_slice(&chunk[..room]);
                        truncated = true;
                        break;
                    }
                    collected.extend_from_slice(&chunk);
                    continue;
                }
                Err(frame) => frame,
            };
            if let Ok(map) = frame.into_trailers() {
                trailers.extend(map.iter().map(|(n, v)| Header {
                    name: n.as_str().to_string(),
                    value: String::from_utf8_lossy(v.as_bytes()).into_owned(),
                }));
            }
        }
        return Ok(Response {
            status: status.as_u16(),
            headers,
            body: collected,
            body_truncated: truncated,
            elapsed_ms: u32::try_from(started.elapsed().as_millis()).unwrap_or(u32::MAX),
            redirects,
            final_url: url.to_string(),
            remote_address,
            version,
            trailers,
        });
    }
}

/// Before following a redirect to another origin: drop every header the plugin set
/// (`Authorization`, `Cookie`, `Proxy-Authorization` and the monitor's own headers alike),
/// as browsers and curl drop credentials; only the `User-Agent` goes on. Once dropped they
/// stay dropped for the rest of the chain.
fn drop_credentials(headers: &mut HeaderMap) {
    let agent = headers.get(USER_AGENT).cloned();
    headers.clear();
    if let Some(agent) = agent {
        headers.insert(USER_AGENT, agent);
    }
}

/// A URL whose host is an address literal never reaches the resolver: check it here.
fn literal_address_allowed(egress: &EgressPolicy, url: &Url) -> Result<(), Error> {
    match super::net::literal_ip(url.host_str().unwrap_or_default()) {
        Some(ip) => egress.check(ip).map_err(|e| Error::Denied(e.to_string())),
        None => Ok(()),
    }
}

fn redirect_target(base: &Url, headers: &HeaderMap) -> Option<Url> {
    let location = headers.get(LOCATION)?.to_str().ok()?;
    let next = base.join(location).ok()?;
    matches!(next.scheme(), "http" | "https").then_some(next)
}

/// Sort a transport error into the contract's variants, keeping its detail.
fn transport_error(e: reqwest::Error) -> Error {
    if let Some(denied) = find_cause::<EgressDenied>(&e) {
        return Error::Denied(denied.to_string());
    }
    let detail = error_chain(&e);
    let lower = detail.to_ascii_lowercase();
    if e.is_timeout() {
        return Error::Other(format!("timed out: {detail}"));
    }
    if lower.contains("connection refused") {
        return Error::ConnectionRefused(detail);
    }
    if lower.contains("dns error")
        || lower.contains("failed to lookup address")
        || lower.contains("name or service not known")
    {
        return Error::Dns(detail);
    }
    if lower.contains("certificate") || lower.contains("tls") || lower.contains("handshake") {
        return Error::Tls(detail);
    }
    if e.is_builder() {
        return Error::InvalidRequest(detail);
    }
    Error::Other(detail)
}

/// The first error of type `T` in a chain.
fn find_cause<'a, T: std::error::Error + 'static>(
    e: &'a (dyn std::error::Error + 'static),
) -> Option<&'a T> {
    let mut current = Some(e);
    while let Some(err) = current {
        if let Some(found) = err.downcast_ref::<T>() {
            return Some(found);
        }
        current = err.source();
    }
    None
}

/// The innermost useful messages of an error chain, joined.
fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = current {
        let text = err.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        current = err.source();
    }
    // The outermost reqwest message repeats the URL; the causes say what happened.
    if parts.len() > 1 {
        parts.remove(0);
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(method: &str, url: &str) -> Request {
        Request {
            method: method.into(),
            url: url.into(),
            headers: vec![Header {
                name: "X-A".into(),
                value: "1".into(),
            }],
            body: None,
            timeout_ms: 1000,
            follow_redirects: true,
            max_redirects: 3,
            max_body_bytes: 10,
            version: HttpVersion::Any,
        }
    }

    #[test]
    fn prepare_refuses_what_it_cannot_send() {
        assert!(prepare(&request("GET", "http://127.0.0.1/")).is_ok());
        assert!(matches!(
            prepare(&request("BREW", "http://127.0.0.1/")),
            Err(Error::InvalidRequest(_))
        ));
        assert!(matches!(
            prepare(&request("GET", "file:///etc/passwd")),
            Err(Error::InvalidRequest(_))
        ));
        assert!(matches!(
            prepare(&request("GET", "not a url")),
            Err(Error::InvalidRequest(_))
        ));
        let mut r = request("GET", "http://127.0.0.1/");
        r.headers.push(Header {
            name: "bad name".into(),
            value: "x".into(),
        });
        assert!(matches!(prepare(&r), Err(Error::InvalidRequest(_))));
    }

    #[test]
    fn redirect_targets_resolve_relative_locations() {
        let base = Url::parse("http://127.0.0.1:8000/a/b").expect("url");
        let mut h = HeaderMap::new();
        h.insert(LOCATION, HeaderValue::from_static("../c?x=1"));
        assert_eq!(
            redirect_target(&base, &h).map(|u| u.to_string()),
            Some("http://127.0.0.1:8000/c?x=1".into())
        );
        h.insert(LOCATION, HeaderValue::from_static("ftp://x/"));
        assert_eq!(redirect_target(&base, &h), None);
    }
}
