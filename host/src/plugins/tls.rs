//! The `tls` host interface: a real TLS handshake with SNI, then the facts of the leaf
//! certificate and whether it can be trusted for the name.
//!
//! The handshake completes even when the certificate is not trusted, so a plugin learns
//! *why* (unknown issuer, expired, wrong name) instead of getting a bare handshake error.
//! Trust is decided by the same roots as every other outgoing TLS connection.

use super::egress::EgressPolicy;
use super::net::{self, Budget};
use super::state::{CallContext, CallState};
use super::wit::tls::{Certificate, Error, Host, InspectRequest, InspectResult};
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, SignatureScheme};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio_rustls::TlsConnector;
use x509_parser::extensions::GeneralName;
use x509_parser::prelude::{FromDer, X509Certificate};

impl Host for CallState {
    async fn inspect(&mut self, req: InspectRequest) -> Result<InspectResult, Error> {
        if !self.call.grants.allows(super::Capability::Tls) {
            return Err(Error::Denied(super::state::not_granted(
                &self.call.plugin,
                super::Capability::Tls,
            )));
        }
        inspect(&self.call, req).await
    }
}

/// Connect, handshake, and report. Public for tests and benchmarks.
pub async fn inspect(call: &CallContext, req: InspectRequest) -> Result<InspectResult, Error> {
    if req.port == 0 {
        return Err(Error::InvalidRequest(
            "port must be between 1 and 65535".into(),
        ));
    }
    let host = req.host.trim().to_string();
    net::parse_host(&host).map_err(from_net)?;
    let name_text = req
        .server_name
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .unwrap_or(&host)
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let server_name = ServerName::try_from(name_text.clone())
        .map_err(|_| Error::InvalidRequest(format!("`{name_text}` is not a valid server name")))?;
    let budget = Budget::new(call, req.timeout_ms).map_err(from_net)?;
    let verifier = call.services.tls_verifier.clone();
    budget
        .run(handshake(
            &host,
            req.port,
            server_name,
            verifier,
            &call.services.egress,
        ))
        .await
        .map_err(from_net)?
}

async fn handshake(
    host: &str,
    port: u16,
    server_name: ServerName<'static>,
    verifier: Arc<WebPkiServerVerifier>,
    egress: &EgressPolicy,
) -> Result<InspectResult, Error> {
    let started = Instant::now();
    let stream = net::connect(host, port, egress).await.map_err(from_net)?;
    let recorder = Arc::new(Recorder {
        inner: verifier,
        verdict: Mutex::new(None),
    });
    let config = rustls::ClientConfig::builder()
        .dangerous()
        .with_custom_certificate_verifier(recorder.clone())
        .with_no_client_auth();
    let tls = TlsConnector::from(Arc::new(config))
        .connect(server_name.clone(), stream)
        .await
        .map_err(|e| Error::Handshake(format!("TLS handshake with {host}:{port} failed: {e}")))?;
    let elapsed_ms = u32::try_from(started.elapsed().as_millis()).unwrap_or(u32::MAX);
    let (_, conn) = tls.get_ref();
    let chain = conn.peer_certificates().unwrap_or_default();
    let leaf_der = chain
        .first()
        .ok_or_else(|| Error::Handshake("the server sent no certificate".into()))?;
    let leaf = describe(leaf_der)?;
    let protocol = match conn.protocol_version() {
        Some(rustls::ProtocolVersion::TLSv1_3) => "TLSv1.3".to_string(),
        Some(rustls::ProtocolVersion::TLSv1_2) => "TLSv1.2".to_string(),
        Some(other) => format!("{other:?}"),
        None => "unknown".to_string(),
    };
    let verdict = recorder
        .verdict
        .lock()
        .map(|v| v.clone())
        .unwrap_or(None)
        .unwrap_or(Err(rustls::Error::General(
            "the certificate was not checked".into(),
        )));
    let hostname_matches = rustls::server::ParsedCertificate::try_from(leaf_der)
        .and_then(|p| rustls::client::verify_server_name(&p, &server_name))
        .is_ok();
    let chain_valid = match &verdict {
        Ok(()) => true,
        // webpki checks the name only after the chain validated.
        Err(rustls::Error::InvalidCertificate(
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
        )) => true,
        Err(_) => false,
    };
    let validation_error = match verdict {
        Err(e) if !chain_valid => Some(explain(&e)),
        _ if !hostname_matches => Some(format!(
            "the certificate is not valid for `{}`; it covers {}",
            name_of(&server_name),
            if leaf.sans.is_empty() {
                "no names".to_string()
            } else {
                leaf.sans.join(", ")
            }
        )),
        _ => None,
    };
    Ok(InspectResult {
        leaf,
        chain_length: u32::try_from(chain.len()).unwrap_or(u32::MAX),
        chain_valid,
        hostname_matches,
        validation_error,
        protocol,
        elapsed_ms,
    })
}

/// A TLS client handshake on an open connection, for `net.tcp-stream`: the server name
/// is checked like every other connection's; with `accept_invalid`, a certificate that does
/// not validate is let through and the reason returned beside the stream.
pub async fn client_handshake(
    stream: tokio::net::TcpStream,
    server_name: &str,
    verifier: Arc<WebPkiServerVerifier>,
    accept_invalid: bool,
) -> Result<
    (
        tokio_rustls::client::TlsStream<tokio::net::TcpStream>,
        String,
        Option<String>,
    ),
    String,
> {
    let name_text = server_name
        .trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let server_name = ServerName::try_from(name_text.clone())
        .map_err(|_| format!("`{name_text}` is not a valid server name"))?;
    let recorder = Arc::new(Recorder {
        inner: verifier,
        verdict: Mutex::new(None),
    });
    let config = rustls::ClientConfig::builder()
        .dangerous()
        .with_custom_certificate_verifier(recorder.clone())
        .with_no_client_auth();
    let tls = TlsConnector::from(Arc::new(config))
        .connect(server_name, stream)
        .await
        .map_err(|e| format!("TLS handshake with `{name_text}` failed: {e}"))?;
    let verdict = recorder
        .verdict
        .lock()
        .map(|v| v.clone())
        .unwrap_or(None)
        .unwrap_or(Err(rustls::Error::General(
            "the certificate was not checked".into(),
        )));
    let problem = verdict.err().map(|e| explain(&e));
    if let Some(problem) = &problem
        && !accept_invalid
    {
        return Err(format!(
            "the certificate of `{name_text}` was refused: {problem}"
        ));
    }
    let protocol = match tls.get_ref().1.protocol_version() {
        Some(rustls::ProtocolVersion::TLSv1_3) => "TLSv1.3".to_string(),
        Some(rustls::ProtocolVersion::TLSv1_2) => "TLSv1.2".to_string(),
        Some(other) => format!("{other:?}"),
        None => "unknown".to_string(),
    };
    Ok((tls, protocol, problem))
}

fn name_of(name: &ServerName<'_>) -> String {
    match name {
        ServerName::DnsName(d) => d.as_ref().to_string(),
        ServerName::IpAddress(ip) => IpAddr::from(*ip).to_string(),
        other => format!("{other:?}"),
    }
}

/// A sentence for a failed validation.
fn explain(e: &rustls::Error) -> String {
    match e {
        rustls::Error::InvalidCertificate(c) => match c {
            CertificateError::UnknownIssuer => "the certificate chain does not lead to a trusted \
                root (self-signed or a private CA; add the CA with tls_extra_roots)"
                .to_string(),
            CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
                "the certificate has expired".to_string()
            }
            CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
                "the certificate is not valid yet".to_string()
            }
            CertificateError::Revoked => "the certificate has been revoked".to_string(),
            CertificateError::BadSignature => "the certificate's signature is invalid".to_string(),
            CertificateError::NotValidForName => {
                "the certificate is not valid for the name asked for".to_string()
            }
            CertificateError::NotValidForNameContext { presented, .. } => {
                // rustls names them as `DnsName("example.com")` or `IpAddress(..)`.
                let names: Vec<&str> = presented
                    .iter()
                    .map(|p| {
                        p.split_once('(')
                            .map(|(_, rest)| rest.trim_end_matches(')').trim_matches('"'))
                            .unwrap_or(p)
                    })
                    .collect();
                format!(
                    "the certificate is not valid for the name asked for; it covers {}",
                    names.join(", ")
                )
            }
            CertificateError::InvalidPurpose | CertificateError::InvalidPurposeContext { .. } => {
                "the certificate is not meant for TLS servers".to_string()
            }
            other => format!("the certificate is not valid: {other:?}"),
        },
        other => format!("the certificate could not be validated: {other}"),
    }
}

/// The facts of a DER certificate.
pub fn describe(der: &CertificateDer<'_>) -> Result<Certificate, Error> {
    let (_, cert) = X509Certificate::from_der(der.as_ref())
        .map_err(|e| Error::Handshake(format!("the server's certificate cannot be read: {e}")))?;
    let mut sans = Vec::new();
    if let Ok(Some(ext)) = cert.subject_alternative_name() {
        for name in &ext.value.general_names {
            match name {
                GeneralName::DNSName(d) => sans.push((*d).to_string()),
                GeneralName::IPAddress(bytes) => {
                    if let Some(ip) = ip_from_bytes(bytes) {
                        sans.push(ip.to_string());
                    }
                }
                _ => {}
            }
        }
    }
    let validity = cert.validity();
    Ok(Certificate {
        subject: cert.subject().to_string(),
        issuer: cert.issuer().to_string(),
        sans,
        not_before: validity.not_before.timestamp(),
        not_after: validity.not_after.timestamp(),
        serial: serial_hex(cert.raw_serial()),
    })
}

fn ip_from_bytes(bytes: &[u8]) -> Option<IpAddr> {
    match bytes.len() {
        4 => <[u8; 4]>::try_from(bytes).ok().map(IpAddr::from),
        16 => <[u8; 16]>::try_from(bytes).ok().map(IpAddr::from),
        _ => None,
    }
}

/// Lowercase hexadecimal, without the sign padding DER adds to large positive serials.
fn serial_hex(raw: &[u8]) -> String {
    let start = raw
        .iter()
        .position(|b| *b != 0)
        .unwrap_or(raw.len().saturating_sub(1));
    hex::encode(&raw[start..])
}

fn from_net(e: net::NetError) -> Error {
    use net::NetError as N;
    match e {
        N::Timeout(ms) => Error::Timeout(ms),
        N::Dns(d) => Error::Dns(d),
        N::ConnectionRefused(d) => Error::ConnectionRefused(d),
        N::InvalidRequest(d) => Error::InvalidRequest(d),
        N::Denied(d) => Error::Denied(d),
        N::Tls(d) => Error::Handshake(d),
        N::NotPermitted(d) | N::Other(d) | N::Limit(d) | N::Closed(d) => Error::Other(d),
    }
}

/// Accepts every certificate so the handshake completes, and remembers what the real
/// verifier thought of it. Handshake signatures are still checked for real.
#[derive(Debug)]
struct Recorder {
    inner: Arc<WebPkiServerVerifier>,
    verdict: Mutex<Option<Result<(), rustls::Error>>>,
}

impl ServerCertVerifier for Recorder {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let verdict = self
            .inner
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
            .map(|_| ());
        if let Ok(mut slot) = self.verdict.lock() {
            *slot = Some(verdict);
        }
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serials_drop_sign_padding_only() {
        assert_eq!(serial_hex(&[0x00, 0x8f, 0x01]), "8f01");
        assert_eq!(serial_hex(&[0x01, 0x00]), "0100");
        assert_eq!(serial_hex(&[0x00]), "00");
    }

    #[test]
    fn certificate_facts_are_read() {
        let mut params =
            rcgen::CertificateParams::new(vec!["svc.test".to_string(), "127.0.0.1".to_string()])
                .expect("params");
        params.serial_number = Some(rcgen::SerialNumber::from_slice(&[0x0a, 0xbc]));
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "svc.test");
        let key = rcgen::KeyPair::generate().expect("key");
        let cert = params.self_signed(&key).expect("cert");
        let facts = describe(cert.der()).expect("facts");
        assert_eq!(facts.sans, vec!["svc.test", "127.0.0.1"]);
        assert_eq!(facts.serial, "0abc");
        assert!(facts.subject.contains("CN=svc.test"), "{}", facts.subject);
        assert!(facts.not_after > facts.not_before);
    }
}
