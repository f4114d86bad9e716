//! The process-wide TLS crypto provider (ring). Everything that makes TLS connections
//! (plugin host imports, the SMTP relay, the API's own clients) installs it first; a leaf
//! module so that no layer has to reach up to `app` for it.

/// Install ring as rustls' process-wide provider. Safe to call many times.
pub fn install_provider() {
    // Fails only when a provider is already installed, which is what we want anyway.
    let _ = rustls::crypto::ring::default_provider().install_default();
}
