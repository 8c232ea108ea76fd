//! Which certificate authorities HTTPS requests trust (NET-01, SEC-05).
//!
//! The reference used, in order: `REQUESTS_CA_BUNDLE` or `CURL_CA_BUNDLE`, then
//! `$CA_OVERRIDE` and `/etc/cfn/ca-override.pem` when those files exist, else a CA bundle
//! frozen in 2015. We keep the overrides and replace the frozen bundle by the system's
//! trust store (`SSL_CERT_FILE` or the distribution's bundle); a host without one (a
//! `FROM scratch` image) falls back to the Mozilla roots compiled into the binary.

use cfn_host::paths;
use rustls::RootCertStore;
use rustls::crypto::ring;
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

const SYSTEM_BUNDLES: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
    "/etc/ssl/ca-bundle.pem",
    "/etc/ssl/cert.pem",
];

/// The CA bundle file to trust, or `None` for the compiled-in roots.
pub fn bundle_path() -> Option<PathBuf> {
    let env_file = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(p) = env_file("REQUESTS_CA_BUNDLE").or_else(|| env_file("CURL_CA_BUNDLE")) {
        return Some(p);
    }
    if let Some(p) = env_file("CA_OVERRIDE").filter(|p| p.is_file()) {
        return Some(p);
    }
    let cfn_override = paths::etc_dir().join("ca-override.pem");
    if cfn_override.is_file() {
        return Some(cfn_override);
    }
    if let Some(p) = env_file("SSL_CERT_FILE").filter(|p| p.is_file()) {
        return Some(p);
    }
    SYSTEM_BUNDLES.iter().map(PathBuf::from).find(|p| p.is_file())
}

/// The TLS settings of HTTPS requests: the trust store of `bundle_path`, read once per
/// process and only when the first HTTPS request is made (one file, no directory scan).
pub fn https_config() -> Result<Arc<rustls::ClientConfig>, String> {
    static CONFIG: OnceLock<Result<Arc<rustls::ClientConfig>, String>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let roots = match bundle_path() {
                Some(path) => load_bundle(&path)?,
                None => RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() },
            };
            config_with(roots).map(Arc::new)
        })
        .clone()
}

/// TLS settings that trust nothing, for clients that only ever send plain-HTTP
/// requests: building them reads no file.
pub fn plain_config() -> rustls::ClientConfig {
    config_with(RootCertStore::empty()).unwrap_or_else(|e| unreachable!("ring supports the default versions: {e}"))
}

fn config_with(roots: RootCertStore) -> Result<rustls::ClientConfig, String> {
    Ok(rustls::ClientConfig::builder_with_provider(Arc::new(ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS settings: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

fn load_bundle(path: &Path) -> Result<RootCertStore, String> {
    let pem = std::fs::read(path).map_err(|e| format!("Could not read CA bundle {}: {e}", path.display()))?;
    let mut roots = RootCertStore::empty();
    // A bundle may hold other PEM items (keys, CRLs) and certificates that webpki
    // cannot use as anchors: those are skipped, as OpenSSL-based tools skip them.
    for cert in CertificateDer::pem_slice_iter(&pem).flatten() {
        let _ = roots.add(cert);
    }
    if roots.is_empty() {
        return Err(format!("CA bundle {} holds no certificates", path.display()));
    }
    Ok(roots)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundles_without_certificates_are_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        let err = load_bundle(&empty).unwrap_err();
        assert_eq!(err, format!("CA bundle {} holds no certificates", empty.display()));
        let missing = dir.path().join("missing.pem");
        assert!(
            load_bundle(&missing).unwrap_err().starts_with(&format!("Could not read CA bundle {}", missing.display()))
        );
    }
}
