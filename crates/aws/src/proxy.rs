//! Proxy choice for one request (NET-02, CLI-COMMON-06, IMDS-03).
//!
//! `--http-proxy`/`--https-proxy` win over the environment. Environment proxies
//! (`HTTP_PROXY`/`http_proxy`, `HTTPS_PROXY`/`https_proxy`) are skipped for hosts that
//! `NO_PROXY` covers: entries are host-name suffixes (with or without the port), `*`,
//! or for IP addresses exact addresses (with or without the port) and CIDR blocks, IPv4
//! and IPv6 alike (`10.0.0.0/8`, `fd00::/8`, `::1/128`). The instance metadata service
//! and the container credential endpoint are never proxied; their clients do not come
//! here at all.

use ipnet::IpNet;
use std::net::{IpAddr, SocketAddr};

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
    let ip: Option<IpAddr> = host.parse().ok();
    let mut entries = no_proxy.split(',').map(|e| e.trim().to_ascii_lowercase()).filter(|e| !e.is_empty());
    entries.any(|entry| {
        if entry == "*" {
            return true;
        }
        match ip {
            Some(ip) => covers_address(&entry, ip, port),
            None => {
                let name = entry.trim_start_matches("*.").trim_start_matches('.').trim_end_matches('.');
                // `host:port` entries cover that port only.
                let target = if name.contains(':') { netloc.as_str() } else { host };
                !name.is_empty() && (target == name || target.ends_with(&format!(".{name}")))
            }
        }
    })
}

/// Whether one `NO_PROXY` entry covers an IP address: a CIDR block that contains it, the
/// same address, or the same address and port (`10.0.0.1:8080`, `[::1]:8080`).
fn covers_address(entry: &str, ip: IpAddr, port: Option<u16>) -> bool {
    if let Ok(block) = entry.parse::<IpNet>() {
        return block.contains(&ip);
    }
    if let Ok(address) = entry.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>() {
        return address == ip;
    }
    entry.parse::<SocketAddr>().is_ok_and(|a| a.ip() == ip && Some(a.port()) == port)
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
            // IPv6 blocks and addresses, written in any form.
            ("fd00::/8", "[fd00:ec2::23]", Some(80), true),
            ("fd00::/8", "fe80::1", None, false),
            ("::1/128", "[::1]", Some(8080), true),
            ("::1/128", "::2", None, false),
            ("fd00:ec2:0::0023", "fd00:ec2::23", None, true),
            ("[::1]:8080", "[::1]", Some(8080), true),
            ("[::1]:8080", "[::1]", Some(9090), false),
            ("2001:db8::/32, 10.0.0.0/8", "2001:db8:1::5", None, true),
            // An IPv4 block never covers an IPv6 address, nor the other way round.
            ("0.0.0.0/0", "::1", None, false),
            ("::/0", "127.0.0.1", None, false),
            ("::/0", "::ffff:7f00:1", None, true),
            ("10.1.2.3/8", "10.200.0.1", None, true),
            ("10.0.0.0/33", "10.0.0.1", None, false),
            ("127.0.0.1:5000", "127.0.0.1", Some(5001), false),
        ];
        for (list, host, port, expected) in cases {
            assert_eq!(bypasses(list, host, port), expected, "NO_PROXY={list:?} host={host} port={port:?}");
        }
    }

    /// The decision for an IP host and one CIDR entry is the plain definition of a
    /// block: same family, and the first `bits` bits of the address equal the block's.
    fn reference_contains(net: IpAddr, bits: u8, ip: IpAddr) -> bool {
        match (net, ip) {
            (IpAddr::V4(n), IpAddr::V4(a)) => bits == 0 || (u32::from(n) ^ u32::from(a)) >> (32 - bits) == 0,
            (IpAddr::V6(n), IpAddr::V6(a)) => bits == 0 || (u128::from(n) ^ u128::from(a)) >> (128 - bits) == 0,
            _ => false,
        }
    }

    fn address() -> impl proptest::strategy::Strategy<Value = IpAddr> {
        use proptest::prelude::*;
        prop_oneof![
            any::<u32>().prop_map(|n| IpAddr::from(n.to_be_bytes())),
            any::<u128>().prop_map(|n| IpAddr::from(n.to_be_bytes())),
            // Neighbours of a few fixed addresses, so that many pairs share long prefixes.
            (0u32..256).prop_map(|n| IpAddr::from((0x0a00_0000u32 | n).to_be_bytes())),
            (0u128..256).prop_map(|n| IpAddr::from(((0xfd00_0ec2u128 << 96) | n).to_be_bytes())),
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        #[test]
        fn cidr_entries_decide_as_the_definition_says(net in address(), ip in address(), bits in 0u8..=128, port in proptest::option::of(1u16..)) {
            let max = if net.is_ipv4() { 32 } else { 128 };
            let bits = bits % (max + 1);
            let entry = format!("{net}/{bits}");
            let host = if ip.is_ipv6() { format!("[{ip}]") } else { ip.to_string() };
            proptest::prop_assert_eq!(bypasses(&entry, &host, port), reference_contains(net, bits, ip), "{} {}", entry, host);
            // An exact address covers itself only.
            proptest::prop_assert_eq!(bypasses(&net.to_string(), &host, port), net == ip);
        }
    }
}
