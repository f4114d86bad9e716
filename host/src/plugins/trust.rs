//! The certificate authorities the server trusts for every outgoing TLS connection
//! (https checks, `ssl` inspections, webhook and Telegram deliveries): Mozilla's roots,
//! bundled so a minimal container works; the operating system's store, so CAs installed
//! system-wide count; and the PEM file of `tls_extra_roots`, for services behind a
//! private CA.

use rustls::RootCertStore;
use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use std::path::Path;
use std::sync::Arc;

/// The trusted roots, in the two shapes the server needs them.
pub struct TrustRoots {
    /// DER certificates, for the HTTP client.
    pub certs: Vec<CertificateDer<'static>>,
    /// Chain and name validation, for TLS inspection.
    pub verifier: Arc<WebPkiServerVerifier>,
    /// How many certificates came from `tls_extra_roots`.
    pub extra: usize,
}

/// Why the roots could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    #[error("tls_extra_roots: cannot read {path}: {detail}")]
    Unreadable { path: String, detail: String },
    #[error("tls_extra_roots: {path} holds no PEM certificate")]
    Empty { path: String },
    #[error("tls_extra_roots: {path}: certificate {index} is not a usable CA: {detail}")]
    Unusable {
        path: String,
        index: usize,
        detail: String,
    },
    #[error("cannot build the certificate verifier: {0}")]
    Verifier(String),
}

/// Load the roots. Problems with the extra roots file are errors (the operator asked for
/// them); unreadable entries of the system store are skipped, as every TLS client does.
pub fn load(extra_roots: Option<&Path>) -> Result<TrustRoots, TrustError> {
    crate::crypto::install_provider();
    let mut certs: Vec<CertificateDer<'static>> = webpki_root_certs::TLS_SERVER_ROOT_CERTS.to_vec();
    let native = rustls_native_certs::load_native_certs();
    for e in &native.errors {
        tracing::debug!(error = %e, "skipping part of the system certificate store");
    }
    certs.extend(native.certs);

    let mut store = RootCertStore::empty();
    let (_, ignored) = store.add_parsable_certificates(certs.iter().cloned());
    if ignored > 0 {
        tracing::debug!(ignored, "system root certificates that could not be parsed");
    }

    let mut extra = 0;
    if let Some(path) = extra_roots {
        let shown = path.display().to_string();
        let iter = CertificateDer::pem_file_iter(path).map_err(|e| TrustError::Unreadable {
            path: shown.clone(),
            detail: e.to_string(),
        })?;
        for (index, cert) in iter.enumerate() {
            let cert = cert.map_err(|e| TrustError::Unreadable {
                path: shown.clone(),
                detail: e.to_string(),
            })?;
            store.add(cert.clone()).map_err(|e| TrustError::Unusable {
                path: shown.clone(),
                index: index + 1,
                detail: e.to_string(),
            })?;
            certs.push(cert);
            extra += 1;
        }
        if extra == 0 {
            return Err(TrustError::Empty { path: shown });
        }
    }

    let verifier = WebPkiServerVerifier::builder(Arc::new(store))
        .build()
        .map_err(|e| TrustError::Verifier(e.to_string()))?;
    Ok(TrustRoots {
        certs,
        verifier,
        extra,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_roots_are_always_there() {
        let roots = load(None).expect("roots");
        assert!(roots.certs.len() >= webpki_root_certs::TLS_SERVER_ROOT_CERTS.len());
        assert_eq!(roots.extra, 0);
    }

    #[test]
    fn a_bad_extra_roots_file_is_a_clear_error() {
        let dir = tempfile::tempdir().expect("dir");
        let missing = dir.path().join("missing.pem");
        let e = load(Some(&missing)).err().expect("error");
        assert!(e.to_string().contains("cannot read"), "{e}");

        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "no certificates here\n").expect("write");
        let e = load(Some(&empty)).err().expect("error");
        assert!(e.to_string().contains("holds no PEM certificate"), "{e}");
    }
}
