//! The network section: for each endpoint the tools would call — CloudFormation, the S3
//! hosts of `sources` and `files` in cfn-init's stored metadata, SQS when cfn-hup has
//! command hooks — the proxy that applies (the tools' own decision, `cfn_aws::proxy`),
//! name resolution, the connection (through the proxy, with a `CONNECT` tunnel for
//! https), TLS with the tools' trust store, and one unsigned `GET /` whose answer's
//! `Date` the clock section reads.

use super::probe::{self, Answer, Failure, Link, Proxy, Target};
use super::setup::Setup;
use super::{Check, Context};
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

/// CloudFormation's answer to the probe, kept for the clock section.
#[derive(Debug, Clone)]
pub struct Reached {
    pub answer: Answer,
    /// This host's clock halfway between sending the request and reading the answer.
    pub local_time: SystemTime,
    /// How long the answer took: the service wrote its `Date` somewhere in that time.
    pub round_trip: Duration,
    /// The proxy (as shown) that relayed a plain-http request: its answer, and its
    /// `Date`, may be the proxy's own. Through a `CONNECT` tunnel the answer is the
    /// endpoint's (`None`).
    pub relayed_by: Option<String>,
}

/// The CloudFormation probe's outcome (its `Err` says why there is no answer).
static CLOUDFORMATION: Mutex<Option<Result<Reached, String>>> = Mutex::new(None);

pub fn checks(ctx: &Context) -> Vec<Check> {
    let setup = Setup::of(ctx);
    let mut checks = vec![cloudformation_check(ctx, &setup)];
    checks.extend(s3_checks(ctx, &setup));
    if let Some(url) = setup.sqs_url() {
        checks.push(endpoint_check(ctx, &setup, "network.sqs", "SQS (command hooks)", &url).0);
    }
    checks
}

/// CloudFormation's answer: the one the network section got, or a probe now.
pub fn cloudformation_answer(ctx: &Context, setup: &Setup) -> Result<Reached, String> {
    if let Some(kept) = CLOUDFORMATION.lock().unwrap_or_else(|e| e.into_inner()).clone() {
        return kept;
    }
    cloudformation_check(ctx, setup);
    CLOUDFORMATION.lock().unwrap_or_else(|e| e.into_inner()).clone().unwrap_or_else(|| Err("not probed".into()))
}

fn cloudformation_check(ctx: &Context, setup: &Setup) -> Check {
    let (check, reached) =
        endpoint_check(ctx, setup, "network.cloudformation", "CloudFormation", &setup.cloudformation_url());
    *CLOUDFORMATION.lock().unwrap_or_else(|e| e.into_inner()) = Some(reached);
    check
}

/// The proxy that applies to a request to `target`, and where it was configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    Direct,
    /// An environment proxy exists, but `NO_PROXY` (or the host being link-local) keeps
    /// this host away from it; the variable named.
    Excluded(&'static str),
    Proxy {
        url: String,
        origin: &'static str,
    },
}

/// The route the tools' HTTP client takes (`cfn_aws::http`: link-local hosts are never
/// proxied, otherwise `cfn_aws::proxy::choose`), with the option or variable it came from.
pub fn route(target: &Target, options: &cfn_aws::ProxyOptions, env: &dyn Fn(&str) -> Option<String>) -> Route {
    let scheme = if target.https { "https" } else { "http" };
    let (option, option_name, names) = if target.https {
        (&options.https_proxy, "--https-proxy", ["HTTPS_PROXY", "https_proxy"])
    } else {
        (&options.http_proxy, "--http-proxy", ["HTTP_PROXY", "http_proxy"])
    };
    let from_env = names.into_iter().find(|n| env(n).is_some_and(|v| !v.is_empty()));
    let link_local = target.host.parse::<IpAddr>().is_ok_and(cfn_aws::http::is_link_local);
    let chosen = if link_local {
        None
    } else {
        // The port as a URL would carry it: none for the scheme's default.
        let port = Some(target.port).filter(|p| *p != if target.https { 443 } else { 80 });
        cfn_aws::proxy::choose(scheme, &target.host, port, options, env)
    };
    match chosen {
        Some(url) => {
            let from_option = option.as_ref().is_some_and(|p| !p.is_empty());
            let origin = if from_option { option_name } else { from_env.unwrap_or(option_name) };
            Route::Proxy { url, origin }
        }
        None => match from_env {
            Some(name) if option.as_ref().is_none_or(|p| p.is_empty()) => Route::Excluded(name),
            _ => Route::Direct,
        },
    }
}

/// Probes one endpoint: the check, and the answer (or why there is none).
fn endpoint_check(ctx: &Context, setup: &Setup, id: &str, name: &str, url: &str) -> (Check, Result<Reached, String>) {
    let shown = cfn_aws::http::redact_url(url);
    let target = match Target::of_url(url) {
        Ok(target) => target,
        Err(e) => {
            let check = Check::failed(
                id,
                format!("the {name} URL {shown} is not usable: {e}"),
                "correct the URL (--url, url in cfn-hup.conf)",
            );
            return (check, Err(e));
        }
    };
    let route = route(&target, &setup.proxies, &|n| std::env::var(n).ok());
    let mut steps = Vec::new();
    match &route {
        Route::Direct => steps.push("direct".to_string()),
        Route::Excluded(name) => steps.push(format!("direct (NO_PROXY excludes it from {name})")),
        Route::Proxy { url, origin } => {
            steps.push(format!("through the proxy {} (from {origin})", cfn_aws::http::redact_url(url)))
        }
    }
    match reach(ctx, &target, &route, &mut steps) {
        Ok(reached) => {
            let check = match (&route, reached.answer.status) {
                (Route::Proxy { origin, .. }, 407) => Check::failed(
                    id,
                    format!(
                        "{shown}: {}: the proxy asks for a user and password (407 Proxy Authentication Required); \
                         requests never reach {name}",
                        steps.join("; ")
                    ),
                    format!("give the proxy's user and password in {origin} (http://user:password@host:port)"),
                ),
                (Route::Proxy { .. }, 502..=504) => Check::failed(
                    id,
                    format!("{shown}: {}", steps.join("; ")),
                    "the proxy could not reach the endpoint: check the proxy's own access, or exclude the host with NO_PROXY",
                ),
                _ => Check::ok(id, format!("{shown}: {}", steps.join("; "))),
            };
            (check, Ok(reached))
        }
        Err(Stop::Skipped) => {
            let why = format!("{shown}: not probed further: doctor's run bound was reached ({})", steps.join("; "));
            (Check::skipped(id, why), Err("doctor's run bound was reached".into()))
        }
        Err(Stop::Failed { failure, fix }) => {
            steps.push(failure.message.clone());
            (Check::failed(id, format!("{shown}: {}", steps.join("; ")), fix), Err(failure.message))
        }
    }
}

enum Stop {
    Skipped,
    Failed { failure: Failure, fix: String },
}

/// The steps, each with its own probe timeout; `steps` gets what each found.
fn reach(ctx: &Context, target: &Target, route: &Route, steps: &mut Vec<String>) -> Result<Reached, Stop> {
    let limit = || ctx.probe_timeout().ok_or(Stop::Skipped);
    let fail = |fix: &str| {
        let fix = fix.to_string();
        move |failure: Failure| Stop::Failed { failure, fix }
    };
    let (mut link, proxy) = match route {
        Route::Proxy { url, origin } => {
            let proxy = Proxy::parse(url).map_err(|e| Stop::Failed {
                failure: Failure { message: e, timed_out: false },
                fix: format!("correct {origin}: [http://][user:password@]host:port"),
            })?;
            let fix = format!("check that the proxy {} is running and reachable, or correct {origin}", proxy.shown);
            let t = limit()?;
            let addresses = probe::resolve(&proxy.target.host, proxy.target.port, t)
                .map_err(|f| named_proxy(f, &proxy, origin))
                .map_err(fail(&fix))?;
            let t = limit()?;
            let socket = probe::connect(&addresses, Instant::now() + t, t)
                .map_err(|f| named_proxy(f, &proxy, origin))
                .map_err(fail(&fix))?;
            let mut link = Link::plain(socket).map_err(fail(&fix))?;
            if proxy.target.https {
                let t = limit()?;
                link = link.tls(&proxy.target.host, tls_config()?, Instant::now() + t, t).map_err(fail(&fix))?;
            }
            steps.push(format!("connected to the proxy {}", proxy.target.authority()));
            if target.https {
                let t = limit()?;
                proxy.tunnel(&mut link, target, Instant::now() + t, t).map_err(fail(&format!(
                    "allow CONNECT to {} on the proxy, or exclude the host with NO_PROXY",
                    target.authority()
                )))?;
                steps.push("tunnel opened".into());
            }
            (link, Some(proxy))
        }
        Route::Direct | Route::Excluded(_) => {
            let t = limit()?;
            let addresses = probe::resolve(&target.host, target.port, t).map_err(fail(
                "check the resolver (/etc/resolv.conf, the VPC's DNS support), or the host name in the URL",
            ))?;
            steps.push(match addresses.len() {
                1 => format!("resolves to {}", addresses[0].ip()),
                n => format!("resolves to {} ({n} addresses)", addresses[0].ip()),
            });
            let t = limit()?;
            let variable = if target.https { "HTTPS_PROXY" } else { "HTTP_PROXY" };
            let socket = probe::connect(&addresses, Instant::now() + t, t).map_err(fail(&format!(
                "check routes, security groups and network ACLs (a NAT gateway or a VPC endpoint), or set {variable}"
            )))?;
            steps.push("connected".into());
            (Link::plain(socket).map_err(fail("retry"))?, None)
        }
    };
    if target.https {
        let config = tls_config()?;
        let t = limit()?;
        link = link.tls(&target.host, config, Instant::now() + t, t).map_err(fail(
            "make the trust store hold the CA of the endpoint's certificate (or of a TLS-inspecting proxy): \
             REQUESTS_CA_BUNDLE, CA_OVERRIDE, /etc/cfn/ca-override.pem or SSL_CERT_FILE",
        ))?;
        steps.push(format!("TLS verified with {}", trust_store()));
    }
    // Plain http through a proxy: the request in absolute form, as the tools send it.
    let (path, proxy_line) = match (&proxy, target.https) {
        (Some(proxy), false) => (format!("http://{}/", target.authority()), proxy.authorization_line()),
        _ => ("/".to_string(), String::new()),
    };
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {}\r\nUser-Agent: cfn-bootstrap-doctor/{}\r\nAccept: */*\r\n{proxy_line}Connection: close\r\n\r\n",
        target.authority(),
        cfn_aws::VERSION
    );
    let t = limit()?;
    let (sent_at, sent) = (SystemTime::now(), Instant::now());
    let fix = match (&proxy, route) {
        (Some(proxy), Route::Proxy { origin, .. }) => format!(
            "the proxy {} (from {origin}) accepts connections but does not answer: check it, or correct {origin}",
            proxy.shown
        ),
        _ => "the endpoint accepts connections but does not answer: check any proxy or firewall in between, or the URL"
            .to_string(),
    };
    let answer = probe::exchange(&mut link, request.as_bytes(), Instant::now() + t, t, "waiting for an answer")
        .map_err(fail(&fix))?;
    let took = sent.elapsed();
    steps.push(format!("answered HTTP {} in {} ms", answer.status, took.as_millis()));
    let relayed_by = proxy.filter(|_| !target.https).map(|proxy| proxy.shown);
    Ok(Reached { answer, local_time: sent_at + took / 2, round_trip: took, relayed_by })
}

fn named_proxy(failure: Failure, proxy: &Proxy, origin: &str) -> Failure {
    Failure { message: format!("the proxy {} (from {origin}): {}", proxy.shown, failure.message), ..failure }
}

fn tls_config() -> Result<std::sync::Arc<rustls::ClientConfig>, Stop> {
    cfn_aws::tls::https_config().map_err(|message| Stop::Failed {
        failure: Failure { message, timed_out: false },
        fix: "correct or remove the CA bundle named (REQUESTS_CA_BUNDLE, CA_OVERRIDE, SSL_CERT_FILE)".into(),
    })
}

/// The trust store the tools load, as shown.
fn trust_store() -> String {
    match cfn_aws::tls::bundle_path() {
        Some(path) => path.display().to_string(),
        None => "the built-in Mozilla roots".into(),
    }
}

/// One check per S3 host (and port) that cfn-init's stored metadata downloads from.
fn s3_checks(ctx: &Context, setup: &Setup) -> Vec<Check> {
    let file = cfn_host::paths::lib_dir().join("cfn-init/data").join(cfn_metadata::applied::METADATA_FILE);
    let text = match std::fs::read_to_string(&file) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => {
            let why = format!("S3 hosts not checked: {} cannot be read: {}", file.display(), probe::io_reason(&e));
            return vec![Check::skipped("network.s3", why)];
        }
    };
    let Ok(metadata) = serde_json::from_str::<serde_json::Value>(&text) else {
        return vec![Check::skipped("network.s3", format!("S3 hosts not checked: {} is not JSON", file.display()))];
    };
    let endpoints = cfn_aws::endpoint::Endpoints::load().unwrap_or_else(|_| cfn_aws::endpoint::Endpoints::builtin());
    let mut bases: Vec<String> = Vec::new();
    for url in download_urls(&metadata) {
        if cfn_aws::s3url::parse(&url, &endpoints).is_none() {
            continue;
        }
        let Ok(parts) = cfn_aws::http::split_url(&url) else { continue };
        let base = format!("{}://{}/", parts.scheme, parts.netloc);
        if !bases.contains(&base) {
            bases.push(base);
        }
    }
    bases
        .iter()
        .map(|base| {
            let host = base.split("://").nth(1).unwrap_or(base).trim_end_matches('/');
            endpoint_check(ctx, setup, &format!("network.s3:{host}"), "S3", base).0
        })
        .collect()
}

/// The URLs of `sources` and of `files`' `source` in every config of the metadata.
fn download_urls(metadata: &serde_json::Value) -> Vec<String> {
    let init = metadata.get("AWS::CloudFormation::Init").unwrap_or(metadata);
    let Some(configs) = init.as_object() else { return Vec::new() };
    let mut urls = Vec::new();
    for config in configs.values() {
        if let Some(sources) = config.get("sources").and_then(|s| s.as_object()) {
            urls.extend(sources.values().filter_map(|v| v.as_str()).map(str::to_string));
        }
        if let Some(files) = config.get("files").and_then(|f| f.as_object()) {
            urls.extend(files.values().filter_map(|f| f.get("source")?.as_str()).map(str::to_string));
        }
    }
    urls
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn target(https: bool, host: &str, port: u16) -> Target {
        Target { https, host: host.into(), port }
    }

    #[test]
    fn routes_name_where_the_proxy_came_from() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |n: &str| pairs.iter().find(|(k, _)| *k == n).map(|(_, v)| v.to_string())
        };
        let none = cfn_aws::ProxyOptions::default();
        let cfn = target(true, "cloudformation.us-east-1.amazonaws.com", 443);
        assert_eq!(route(&cfn, &none, &env(&[])), Route::Direct);
        assert_eq!(
            route(&cfn, &none, &env(&[("https_proxy", "http://p:3128")])),
            Route::Proxy { url: "http://p:3128".into(), origin: "https_proxy" }
        );
        assert_eq!(
            route(&cfn, &none, &env(&[("HTTPS_PROXY", "http://p:3128"), ("NO_PROXY", ".amazonaws.com")])),
            Route::Excluded("HTTPS_PROXY")
        );
        let option = cfn_aws::ProxyOptions { https_proxy: Some("http://q:8080".into()), http_proxy: None };
        assert_eq!(
            route(&cfn, &option, &env(&[("HTTPS_PROXY", "http://p:3128"), ("NO_PROXY", "*")])),
            Route::Proxy { url: "http://q:8080".into(), origin: "--https-proxy" }
        );
        // IMDS-like link-local hosts are never proxied.
        assert_eq!(
            route(&target(false, "169.254.170.2", 80), &none, &env(&[("HTTP_PROXY", "p:1")])),
            Route::Excluded("HTTP_PROXY")
        );
        // A port that is not the scheme's default is part of what NO_PROXY matches.
        assert_eq!(
            route(
                &target(false, "127.0.0.1", 5000),
                &none,
                &env(&[("HTTP_PROXY", "p:1"), ("NO_PROXY", "127.0.0.1:5000")])
            ),
            Route::Excluded("HTTP_PROXY")
        );
    }

    #[test]
    fn probes_past_the_run_bound_are_skipped_with_why() {
        let ctx = Context {
            conf_dir: std::path::PathBuf::from("/nonexistent"),
            stack: Some("s".into()),
            resource: None,
            api: cfn_aws::ApiOptions { url: Some("http://127.0.0.1:1".into()), ..Default::default() },
            region_given: false,
            deadline: Instant::now(),
            described: Default::default(),
            imds: std::sync::Arc::new(cfn_aws::Imds::from_env()),
            attempts: Default::default(),
        };
        let checks = checks(&ctx);
        assert_eq!(checks[0].id, "network.cloudformation");
        assert_eq!(checks[0].verdict, super::super::Verdict::Skipped);
        assert_eq!(checks[0].found, "http://127.0.0.1:1/: not probed further: doctor's run bound was reached (direct)");
        let credentials = super::super::credentials::checks(&ctx);
        assert!(credentials.iter().all(|c| c.verdict == super::super::Verdict::Skipped), "{credentials:?}");
    }

    #[test]
    fn download_urls_come_from_sources_and_files() {
        let metadata = serde_json::json!({"AWS::CloudFormation::Init": {
            "configSets": {"default": ["a"]},
            "a": {"sources": {"/opt/app": "https://b.s3.amazonaws.com/app.tgz"},
                  "files": {"/etc/x": {"source": "https://s3.eu-west-1.amazonaws.com/b/x"}, "/etc/y": {"content": "y"}}},
        }});
        assert_eq!(
            download_urls(&metadata),
            ["https://b.s3.amazonaws.com/app.tgz", "https://s3.eu-west-1.amazonaws.com/b/x"]
        );
    }

    proptest! {
        /// The route agrees with the tools' decision: a proxy exactly when `choose` gives
        /// one (never for link-local hosts), its origin holds that proxy, and "excluded"
        /// only when an environment proxy exists that was not used.
        #[test]
        fn the_route_is_the_tools_decision(
            https in any::<bool>(),
            host in prop_oneof![Just("example.com"), Just("a.example.com"), Just("10.1.2.3"), Just("169.254.169.254"), Just("::1")],
            port in prop_oneof![Just(80u16), Just(443u16), 1u16..],
            option in proptest::option::of(prop_oneof![Just(""), Just("http://cli:1")]),
            upper in proptest::option::of(prop_oneof![Just(""), Just("http://upper:2")]),
            lower in proptest::option::of(Just("http://lower:3")),
            no_proxy in proptest::option::of(prop_oneof![Just("example.com"), Just("10.0.0.0/8"), Just("*"), Just("::1"), Just("")]),
        ) {
            let options = cfn_aws::ProxyOptions {
                http_proxy: option.filter(|_| !https).map(str::to_string),
                https_proxy: option.filter(|_| https).map(str::to_string),
            };
            let (upper_name, lower_name) = if https { ("HTTPS_PROXY", "https_proxy") } else { ("HTTP_PROXY", "http_proxy") };
            let env = move |n: &str| -> Option<String> {
                match n {
                    _ if n == upper_name => upper.map(str::to_string),
                    _ if n == lower_name => lower.map(str::to_string),
                    "NO_PROXY" => no_proxy.map(str::to_string),
                    _ => None,
                }
            };
            let t = target(https, host, port);
            let default_port = if https { 443 } else { 80 };
            let expected = if host == "169.254.169.254" {
                None
            } else {
                cfn_aws::proxy::choose(if https { "https" } else { "http" }, host, Some(port).filter(|p| *p != default_port), &options, &env)
            };
            match route(&t, &options, &env) {
                Route::Proxy { url, origin } => {
                    prop_assert_eq!(Some(url.clone()), expected);
                    let from = if origin.starts_with("--") { options.https_proxy.clone().or(options.http_proxy.clone()) } else { env(origin) };
                    prop_assert_eq!(from, Some(url));
                }
                Route::Excluded(name) => {
                    prop_assert_eq!(expected, None);
                    prop_assert!(env(name).is_some_and(|v| !v.is_empty()));
                }
                Route::Direct => {
                    prop_assert_eq!(expected, None);
                    prop_assert!(env(upper_name).is_none_or(|v| v.is_empty()) && env(lower_name).is_none_or(|v| v.is_empty())
                        || option.is_some_and(|o| !o.is_empty()));
                }
            }
        }
    }
}
