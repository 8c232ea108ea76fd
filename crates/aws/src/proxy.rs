//! Proxy choice for one request (NET-02, CLI-COMMON-06, IMDS-03).
//!
//! `--http-proxy`/`--https-proxy` win over the environment. Environment proxies
//! (`HTTP_PROXY`/`http_proxy`, `HTTPS_PROXY`/`https_proxy`) are skipped for hosts that
//! `NO_PROXY` covers: entries are host-name suffixes (with or without the port), `*`,
//! or for IP addresses exact addresses and CIDR blocks. The instance metadata service is
//! never proxied; its client does not come here at all.

use std::net::{IpAddr, Ipv4Addr};

/// Proxies given on the command line, `[scheme://][user:password@]host:port`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ProxyOptions {
    pub http_proxy: Option<String>,
    pub https_proxy: Option<String>,
}

/// The proxy URL to use for a request to `scheme://host[:port]`, if any.
pub fn choose(
    scheme: &str,
    host: &str,
    port: Option<u16>,
    cli: &ProxyOptions,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<String> {
    let https = scheme.eq_ignore_ascii_case("https");
    let from_cli = if https { &cli.https_proxy } else { &cli.http_proxy };
    if let Some(proxy) = from_cli.as_ref().filter(|p| !p.is_empty()) {
        return Some(proxy.clone());
    }
    let names: [&str; 2] = if https { ["HTTPS_PROXY", "https_proxy"] } else { ["HTTP_PROXY", "http_proxy"] };
    let from_env = names.iter().find_map(|n| env(n).filter(|v| !v.is_empty()))?;
    let no_proxy = env("NO_PROXY").or_else(|| env("no_proxy")).unwrap_or_default();
    if bypasses(&no_proxy, host, port) { None } else { Some(from_env) }
}

/// Whether a `NO_PROXY` list covers the host. Names match on a dot boundary
/// (`example.com` covers `www.example.com`, not `badexample.com`), as Python 3's urllib
/// and curl do (the reference's plain suffix match was a bug, WEAK-noproxy).
pub fn bypasses(no_proxy: &str, host: &str, port: Option<u16>) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase();
    let host = host.trim_end_matches('.');
    let netloc = match port {
        Some(p) => format!("{host}:{p}"),
        None => host.to_string(),
    };
    let entries = no_proxy.split(',').map(|e| e.trim().to_ascii_lowercase()).filter(|e| !e.is_empty());
    let ip: Option<IpAddr> = host.parse().ok();
    for entry in entries {
        if entry == "*" {
            return true;
        }
        match ip {
            Some(IpAddr::V4(v4)) => {
                if entry == host || entry == netloc || in_cidr(v4, &entry) {
                    return true;
                }
            }
            Some(IpAddr::V6(_)) => {
                if entry.trim_start_matches('[').trim_end_matches(']') == host {
                    return true;
                }
            }
            None => {
                let name = entry.trim_start_matches("*.").trim_start_matches('.').trim_end_matches('.');
                // `host:port` entries cover that port only.
                let target = if name.contains(':') { netloc.as_str() } else { host };
                if !name.is_empty() && (target == name || target.ends_with(&format!(".{name}"))) {
                    return true;
                }
            }
        }
    }
    false
}

fn in_cidr(ip: Ipv4Addr, entry: &str) -> bool {
    let Some((net, bits)) = entry.split_once('/') else {
        return false;
    };
    let (Ok(net), Ok(bits)) = (net.parse::<Ipv4Addr>(), bits.parse::<u32>()) else {
        return false;
    };
    if bits > 32 {
        return false;
    }
    let mask = if bits == 0 { 0 } else { u32::MAX << (32 - bits) };
    u32::from(ip) & mask == u32::from(net) & mask
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string())
    }

    #[test]
    fn cli_wins_over_environment_and_ignores_no_proxy() {
        let env = env_of(&[("HTTPS_PROXY", "http://envproxy:3128"), ("NO_PROXY", "example.com")]);
        let cli = ProxyOptions { http_proxy: None, https_proxy: Some("http://cli:8080".into()) };
        assert_eq!(choose("https", "example.com", None, &cli, &env), Some("http://cli:8080".into()));
        assert_eq!(choose("https", "example.com", None, &ProxyOptions::default(), &env), None);
        assert_eq!(
            choose("https", "other.org", None, &ProxyOptions::default(), &env),
            Some("http://envproxy:3128".into())
        );
        // The http proxy is not used for https requests and vice versa.
        assert_eq!(choose("http", "other.org", None, &ProxyOptions::default(), &env), None);
        assert_eq!(choose("http", "x", None, &cli, &env), None);
    }

    #[test]
    fn lower_case_environment_names_work() {
        let env = env_of(&[("http_proxy", "proxy:3128"), ("no_proxy", "localhost")]);
        assert_eq!(choose("http", "a.b", Some(80), &ProxyOptions::default(), &env), Some("proxy:3128".into()));
        assert_eq!(choose("http", "localhost", Some(80), &ProxyOptions::default(), &env), None);
    }

    #[test]
    fn no_proxy_matching() {
        let cases = [
            ("example.com", "example.com", None, true),
            ("example.com", "www.example.com", None, true),
            (".example.com", "www.example.com", None, true),
            ("*.example.com", "www.example.com", None, true),
            ("example.com", "example.org", None, false),
            ("host:8080", "host", Some(8080), true),
            ("host:8080", "host", Some(9090), false),
            ("169.254.169.254", "169.254.169.254", None, true),
            ("169.254.0.0/16", "169.254.169.254", None, true),
            ("10.0.0.0/8", "169.254.169.254", None, false),
            ("10.0.0.0/8, 127.0.0.1", "127.0.0.1", Some(5000), true),
            ("*", "anything", None, true),
            ("", "anything", None, false),
            ("EXAMPLE.com", "Example.COM", None, true),
            // Names match on a dot boundary only.
            ("example.com", "badexample.com", None, false),
            (".example.com", "badexample.com", None, false),
            ("*.example.com", "badexample.com", None, false),
            (".example.com", "example.com", None, true),
            ("example.com", "example.com.", None, true),
            ("ample.com", "www.example.com", None, false),
            ("127.0.0.1:5000", "127.0.0.1", Some(5000), true),
            ("::1", "[::1]", Some(80), true),
            ("[::1]", "::1", None, true),
        ];
        for (list, host, port, expected) in cases {
            assert_eq!(bypasses(list, host, port), expected, "NO_PROXY={list:?} host={host} port={port:?}");
        }
    }
}
