//! Which set-up the credential, network and clock checks look at: cfn-init's, from the
//! command line, when doctor is given `--stack` or a credential option; else cfn-hup's,
//! from `cfn-hup.conf` when it exists; else the tools' defaults (what cfn-init would do
//! with no options). Options given on the command line (`--region`, `--url`, proxies)
//! win over the configuration either way, as they would for cfn-init.

use super::Context;
use cfn_aws::ProxyOptions;
use cfn_aws::credentials::CredentialOptions;
use cfn_hooks::config::{self, MainConfig};

pub struct Setup {
    /// `cfn-hup.conf`'s `[main]`, when that set-up is the one checked.
    pub hup: Option<MainConfig>,
    pub credentials: CredentialOptions,
    pub proxies: ProxyOptions,
    pub region: String,
    pub url: Option<String>,
    /// Whether cfn-hup has command hooks (it then polls SQS).
    pub command_hooks: bool,
}

/// The credential options cfn-hup resolves with its `[main]`, calling `region`. Its
/// `role` wins over its `credential-file` (unlike cfn-init's options). Doctor runs no
/// program to get credentials (`refuse_processes`).
pub fn hup_credentials(main: &MainConfig, region: &str) -> CredentialOptions {
    CredentialOptions {
        role: main.role.clone(),
        credential_file: main.role.is_none().then(|| main.credential_file.clone()).flatten(),
        region: Some(region.to_string()),
        refuse_processes: true,
        ..CredentialOptions::default()
    }
}

impl Setup {
    pub fn of(ctx: &Context) -> Setup {
        let given = &ctx.api.credentials;
        let cfn_init = ctx.stack.is_some()
            || given.credential_file.is_some()
            || given.role.is_some()
            || given.access_key.is_some()
            || given.secret_key.is_some();
        let hup = (!cfn_init && ctx.conf_dir.join("cfn-hup.conf").is_file())
            .then(|| config::load_main(&ctx.conf_dir).ok())
            .flatten();
        let region = match &hup {
            Some(main) if !ctx.region_given => main.region.clone(),
            _ => ctx.api.region.clone(),
        };
        let credentials = match &hup {
            Some(main) => hup_credentials(main, &region),
            None => CredentialOptions { refuse_processes: true, ..given.clone() },
        };
        let command_hooks =
            hup.is_some() && config::load_hooks(&ctx.conf_dir).is_ok_and(|hooks| !hooks.command.is_empty());
        Setup {
            url: ctx.api.url.clone().or_else(|| hup.as_ref().and_then(|m| m.url.clone())),
            credentials,
            proxies: ctx.api.proxies.clone(),
            region,
            command_hooks,
            hup,
        }
    }

    /// Where an option comes from, for the words of a check.
    pub fn origin(&self, option: &str) -> String {
        match (&self.hup, option) {
            (Some(_), "role") => "role in cfn-hup.conf".into(),
            (Some(_), "credential-file") => "credential-file in cfn-hup.conf".into(),
            (_, option) => format!("--{option}"),
        }
    }

    /// The CloudFormation endpoint the tools would call.
    pub fn cloudformation_url(&self) -> String {
        cfn_aws::endpoint::cloudformation_url(&self.region, self.url.as_deref())
    }

    /// cfn-hup's SQS endpoint, when it has command hooks.
    pub fn sqs_url(&self) -> Option<String> {
        let main = self.hup.as_ref().filter(|_| self.command_hooks)?;
        let configured = main.sqs_url.clone().or_else(|| std::env::var(cfn_aws::sqs::ENDPOINT_VARIABLE).ok());
        Some(cfn_aws::sqs::endpoint_url(&self.region, configured.as_deref()))
    }
}
