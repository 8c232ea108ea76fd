//! `cfn-init` (SPEC §9–11): reads the metadata from a stack resource, a file or stdin,
//! keeps a private copy in `/var/lib/cfn-init/data/metadata.json`, and runs the
//! requested configSets of its `AWS::CloudFormation::Init`.

use crate::run_recorder::Recorder;
use crate::{logging, report};
use cfn_aws::auth::Authentication;
use cfn_aws::download::Downloader;
use cfn_aws::endpoint::Endpoints;
use cfn_aws::http::HttpClient;
use cfn_aws::{Imds, credentials};
use cfn_configsets::run_record::Source;
use cfn_configsets::{BuildError, Environment, Fetch, Fetched};
use cfn_host::paths;
use cfn_metadata::applied;
use cfn_metadata::source::{self, MetadataSource};
use cfn_optparse::Parsed;
use cfn_optparse::options;
pub use cfn_optparse::tables::init as parser;
use cfn_python::json as pyjson;
use serde_json::Value;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

pub(crate) const INIT_KEY: &str = "AWS::CloudFormation::Init";
pub(crate) const AUTH_KEY: &str = "AWS::CloudFormation::Authentication";

pub fn main(prog: &str, args: &[String]) -> ExitCode {
    let parser = parser(prog);
    let parsed = match report::parse(&parser, args) {
        Ok(parsed) => parsed,
        Err(code) => return code,
    };
    let recorder = Recorder::default();
    logging::init_with("cfn-init.log", report::level(parsed.flag("verbose")), recorder.layer());
    // First, before anything can fail, as the reference's work log does (STATE-01).
    let state_dir = create_state_dir();

    let source = match metadata_source(&parsed) {
        Ok(source) => source,
        Err(message) => return report::usage_failure(&parser, message),
    };
    let api = options::api_options(&parsed);
    let requested = cfn_configsets::configsets::requested(parsed.text("configsets").as_deref());
    if state_dir.is_some() {
        recorder.start(recorded_source(&source, &api), requested.clone());
    }
    let code = run(&source, &api, &requested, state_dir, &recorder);
    recorder.finish(if code == ExitCode::SUCCESS { 0 } else { 1 });
    code
}

/// The run, once its metadata source is known.
fn run(
    source: &MetadataSource,
    api: &cfn_aws::ApiOptions,
    requested: &[String],
    state_dir: Option<PathBuf>,
    recorder: &Recorder,
) -> ExitCode {
    let imds = Arc::new(Imds::from_env());
    let metadata = match read_metadata(source, api, &imds) {
        Ok(metadata) => metadata,
        Err(code) => return code,
    };
    if let Some((data, text)) = state_dir.and_then(|state| store_metadata(&state, &metadata)) {
        record_origin(source, &api.region, &data, &text);
    }

    let init = match metadata.get(INIT_KEY) {
        Some(init) if cfn_python::truth::is_truthy(init) => init,
        _ => {
            let place = match source {
                MetadataSource::Stack { logical_id, .. } => format!("metadata for {logical_id}"),
                MetadataSource::File(path) => path.display().to_string(),
                MetadataSource::Stdin => "stdin input".to_string(),
            };
            eprintln!("Could not find '{INIT_KEY}' key in {place}.");
            return ExitCode::SUCCESS;
        }
    };
    let downloads = match DownloadFetch::new(api, imds, &metadata) {
        Ok(downloads) => downloads,
        Err(code) => return code,
    };
    let result = match init.as_object() {
        Some(init) => cfn_configsets::build(init, requested, &Environment { fetch: &downloads }),
        None => {
            Err(BuildError::new(format!("{INIT_KEY} must be an object, not {}", cfn_configsets::model::kind(init))))
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            recorder.build_failed(&e.message);
            // The error may quote a tool's output or a location with a password or a
            // signature in it; the log has it redacted, and so has the terminal (SEC-02).
            eprintln!("Error occurred during build: {}", cfn_aws::http::redact_urls_in(&e.to_string()));
            ExitCode::FAILURE
        }
    }
}

/// The source as the run record names it (the endpoint URL redacted: it may carry
/// credentials).
fn recorded_source(source: &MetadataSource, api: &cfn_aws::ApiOptions) -> Source {
    match source {
        MetadataSource::File(path) => {
            Source::File { path: std::path::absolute(path).unwrap_or_else(|_| path.clone()).display().to_string() }
        }
        MetadataSource::Stdin => Source::Stdin,
        MetadataSource::Stack { stack, logical_id } => Source::Stack {
            stack: stack.clone(),
            resource: logical_id.clone(),
            region: api.region.clone(),
            url: api.url.as_deref().map(cfn_aws::http::redact_urls_in),
        },
    }
}

fn metadata_source(parsed: &Parsed) -> Result<MetadataSource, &'static str> {
    source::choose(&parsed.positionals, parsed.text("stack_name"), parsed.text("logical_resource_id"))
}

/// Why metadata could not be read.
pub(crate) enum ReadError {
    Credentials(credentials::CredentialError),
    Source(source::SourceError),
}

/// Reads the metadata as cfn-init does: the credential options are checked (and a
/// client made for a stack).
pub(crate) fn fetch_metadata(
    source: &MetadataSource,
    api: &cfn_aws::ApiOptions,
    imds: &Arc<Imds>,
) -> Result<source::Fetched, ReadError> {
    let client = match source {
        MetadataSource::Stack { .. } => {
            Some(cfn_aws::cloudformation_client(api, imds.clone()).map_err(ReadError::Credentials)?)
        }
        // The reference checks the credential options even when it reads a file.
        _ => {
            check_credential_options(&api.credentials, imds).map_err(ReadError::Credentials)?;
            None
        }
    };
    source::fetch_with_text(source, client.as_ref()).map_err(ReadError::Source)
}

/// Metadata for `validate`, read as cfn-init reads it: JSON it cannot parse is a finding
/// there, any other error is printed as cfn-init prints it.
pub(crate) fn read_for_validate(source: &MetadataSource, api: &cfn_aws::ApiOptions) -> cfn_linter::Read {
    match fetch_metadata(source, api, &Arc::new(Imds::from_env())) {
        Ok(fetched) => cfn_linter::Read::Metadata(fetched),
        Err(ReadError::Source(source::SourceError::Json { reason, line, column, .. })) => {
            cfn_linter::Read::NotJson { reason, line, column }
        }
        Err(other) => cfn_linter::Read::Failed(report_read_error(other)),
    }
}

/// A read error on stderr, worded as cfn-init words it, and its exit code.
pub(crate) fn report_read_error(error: ReadError) -> ExitCode {
    match error {
        ReadError::Credentials(e) => report::credential_failure(&e),
        ReadError::Source(e @ source::SourceError::NoMetadata(_)) => report::failure(format!("Error: {e}")),
        ReadError::Source(other) => report::failure(other),
    }
}

/// The metadata from its source; a failure is reported on stderr and is the exit code.
pub(crate) fn read_metadata(
    source: &MetadataSource,
    api: &cfn_aws::ApiOptions,
    imds: &Arc<Imds>,
) -> Result<Value, ExitCode> {
    fetch_metadata(source, api, imds).map(|fetched| fetched.value).map_err(report_read_error)
}

fn check_credential_options(
    options: &cfn_aws::CredentialOptions,
    imds: &Imds,
) -> Result<(), credentials::CredentialError> {
    if let Some(path) = &options.credential_file {
        credentials::read_credential_file(path)?;
    } else if let Some(role) = &options.role {
        imds.role_credentials(role)
            .map_err(|source| credentials::CredentialError::Role { role: role.clone(), source })?;
    }
    Ok(())
}

/// `/var/lib/cfn-init` (STATE-01), readable by root only: it holds the metadata, which
/// can hold secrets. Returns it, unless it could not be made (then the run goes on
/// without a private copy, as the reference's does).
fn create_state_dir() -> Option<PathBuf> {
    let state = paths::lib_dir().join("cfn-init");
    let created = std::fs::create_dir_all(paths::lib_dir()).and_then(|_| {
        match std::fs::DirBuilder::new().mode(0o700).create(&state) {
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => Err(e),
            Err(_) if mode_of(&state) == Some(0o700) => Ok(()),
            _ => std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)),
        }
    });
    if created.is_err() {
        let message = format!("Could not create {} to store the work log", state.display());
        tracing::error!("{message}");
        eprintln!("{message}");
        return None;
    }
    Some(state)
}

/// `/var/lib/cfn-init/data/metadata.json` (INIT-CLI-06, STATE-01, STATE-03): the whole
/// metadata, pretty-printed, readable by root only because it can hold secrets.
/// Returns the directory and the text stored, unless the directory could not be made.
fn store_metadata(state: &Path, metadata: &Value) -> Option<(PathBuf, String)> {
    let data = state.join("data");
    if std::fs::create_dir_all(&data).is_err() {
        let message = format!("Could not create {} to store metadata", data.display());
        tracing::error!("{message}");
        eprintln!("{message}");
        return None;
    }
    let target = data.join(applied::METADATA_FILE);
    let text = pyjson::to_pretty(metadata);
    // Runs with unchanged metadata (a repeated cfn-init, cfn-hup's actions) leave an
    // identical private copy alone: a rewrite is a create and a rename on every run.
    if mode_of(&target) == Some(0o600) && std::fs::read(&target).is_ok_and(|old| old == text.as_bytes()) {
        return Some((data, text));
    }
    // Synced, file and directory (issue 13, item 14): cfn-hup takes a hook's first
    // baseline from this copy, so a power loss must not leave half of it or lose it.
    let written = cfn_host::durable::replace(&target, text.as_bytes(), 0o600);
    if let Err(e) = written {
        tracing::error!("Could not write {}: {e}", target.display());
    }
    Some((data, text))
}

/// Beside `metadata.json`, which stack resource it came from (none for a file or stdin):
/// cfn-hup takes a hook's first baseline from it (see `cfn_metadata::applied`).
fn record_origin(source: &MetadataSource, region: &str, data: &Path, text: &str) {
    let origin = match source {
        MetadataSource::Stack { stack, logical_id } => {
            Some(applied::Origin { stack: stack.clone(), region: region.to_string(), logical_id: logical_id.clone() })
        }
        MetadataSource::File(_) | MetadataSource::Stdin => None,
    };
    if let Err(e) = applied::record(data, origin.as_ref(), text) {
        tracing::warn!("Could not record the origin of {}: {e}", data.join(applied::METADATA_FILE).display());
    }
}

/// The permission bits of `path` itself when it is a directory or a regular file owned
/// by this process's user (a symbolic link or someone else's file is never trusted).
fn mode_of(path: &Path) -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(path).ok()?;
    let owned = meta.uid() == rustix::process::geteuid().as_raw();
    (owned && (meta.is_dir() || meta.is_file())).then_some(meta.mode() & 0o7777)
}

/// Downloads for `files` through the metadata crate, with the metadata's
/// AWS::CloudFormation::Authentication applied. The blocks are read when the build
/// starts ([`Fetch::start`]), so that their warnings come where the reference logs them.
pub(crate) struct DownloadFetch {
    http: Arc<HttpClient>,
    imds: Arc<Imds>,
    endpoints: Endpoints,
    authentication: Value,
    downloader: std::sync::OnceLock<Downloader>,
}

impl DownloadFetch {
    pub(crate) fn new(api: &cfn_aws::ApiOptions, imds: Arc<Imds>, metadata: &Value) -> Result<DownloadFetch, ExitCode> {
        let http = Arc::new(HttpClient::new(api.proxies.clone(), concat!("cfn-bootstrap/", env!("CARGO_PKG_VERSION"))));
        let endpoints = Endpoints::load().map_err(report::failure)?;
        let authentication = metadata.get(AUTH_KEY).cloned().unwrap_or(Value::Null);
        Ok(DownloadFetch { http, imds, endpoints, authentication, downloader: std::sync::OnceLock::new() })
    }

    fn downloader(&self) -> &Downloader {
        self.downloader.get_or_init(|| {
            let authentication = Authentication::parse(&self.authentication);
            Downloader::new(self.http.clone(), self.imds.clone(), authentication, self.endpoints.clone())
        })
    }
}

impl Fetch for DownloadFetch {
    fn start(&self) {
        self.downloader();
    }

    fn fetch(&self, url: &str, authentication: Option<&str>, dest: &mut std::fs::File) -> Result<Fetched, String> {
        let info = self.downloader().download_to(url, authentication, dest).map_err(|e| e.to_string())?;
        Ok(Fetched { with_credentials: info.authenticated })
    }
}
