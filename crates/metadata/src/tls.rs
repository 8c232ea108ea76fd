//! Which certificate authorities HTTPS requests trust (NET-01, SEC-05).
//!
//! The reference used, in order: `REQUESTS_CA_BUNDLE` or `CURL_CA_BUNDLE`, then
//! `$CA_OVERRIDE` and `/etc/cfn/ca-override.pem` when those files exist, else a CA bundle
//! frozen in 2015. We keep the overrides and replace the frozen bundle by the system's
//! trust store (`SSL_CERT_FILE` or the distribution's bundle); a host without one (a
//! `FROM scratch` image) falls back to the Mozilla roots compiled into the binary.

use crate::paths;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use ureq::tls::{Certificate, PemItem, RootCerts};

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

/// The roots for HTTPS, loaded once per process.
pub fn root_certs() -> Result<RootCerts, String> {
    static ROOTS: OnceLock<Result<RootCerts, String>> = OnceLock::new();
    ROOTS
        .get_or_init(|| match bundle_path() {
            Some(path) => load_bundle(&path),
            None => Ok(RootCerts::WebPki),
        })
        .clone()
}

fn load_bundle(path: &Path) -> Result<RootCerts, String> {
    let pem = std::fs::read(path).map_err(|e| format!("Could not read CA bundle {}: {e}", path.display()))?;
    let certs: Vec<Certificate<'static>> = ureq::tls::parse_pem(&pem)
        .filter_map(|item| match item {
            Ok(PemItem::Certificate(cert)) => Some(cert),
            _ => None,
        })
        .collect();
    if certs.is_empty() {
        return Err(format!("CA bundle {} holds no certificates", path.display()));
    }
    Ok(RootCerts::Specific(Arc::new(certs)))
}
