//! Instance-identity signing (CRED-03) as an auth scheme of the AWS SDK: requests carry
//! `Authorization: CFN_V1 <base64(document)>:<signature>` instead of a SigV4 signature.
//!
//! An auth scheme, not an interceptor: the SDK then asks for this scheme's identity (the
//! instance identity document, from IMDS) and its signer does the signing, so no SigV4
//! credentials, fake or real, are ever configured for a client that signs this way, and
//! the SigV4 signer never runs (an interceptor could only overwrite a signature computed
//! with made-up keys, and its headers — `X-Amz-Date`, a security token — would leak
//! through).

use crate::imds::Imds;
use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::auth::{
    AuthScheme, AuthSchemeEndpointConfig, AuthSchemeId, AuthSchemeOption, AuthSchemeOptionsFuture, Sign,
};
use aws_smithy_runtime_api::client::identity::{Identity, IdentityFuture, ResolveIdentity, SharedIdentityResolver};
use aws_smithy_runtime_api::client::orchestrator::HttpRequest;
use aws_smithy_runtime_api::client::runtime_components::{GetIdentityResolver, RuntimeComponents};
use aws_smithy_types::config_bag::ConfigBag;
use std::fmt;
use std::sync::Arc;

/// The scheme's id; it names nothing in the service model, only this client's choice.
pub const SCHEME_ID: AuthSchemeId = AuthSchemeId::new("cfn-bootstrap#instance-identity");

/// The `Authorization` value of the instance (its signature is not secret, but it is
/// long and says nothing in a log).
#[derive(Clone)]
struct Header(String);

impl fmt::Debug for Header {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Header(CFN_V1 …)")
    }
}

/// The scheme: the instance identity from IMDS, attached as the `Authorization` header.
#[derive(Debug)]
pub struct InstanceIdentityScheme {
    resolver: SharedIdentityResolver,
    signer: HeaderSigner,
}

impl InstanceIdentityScheme {
    pub fn new(imds: Arc<Imds>) -> Self {
        InstanceIdentityScheme {
            resolver: SharedIdentityResolver::new(DocumentResolver { imds }),
            signer: HeaderSigner,
        }
    }
}

impl AuthScheme for InstanceIdentityScheme {
    fn scheme_id(&self) -> AuthSchemeId {
        SCHEME_ID
    }

    // The scheme brings its own resolver: there is no configured identity of this kind.
    fn identity_resolver(&self, _: &dyn GetIdentityResolver) -> Option<SharedIdentityResolver> {
        Some(self.resolver.clone())
    }

    fn signer(&self) -> &dyn Sign {
        &self.signer
    }
}

/// The header `Imds` keeps once the document and its signature were read. `Imds` is a
/// blocking client, so the caller fetches them before the SDK's (async) call
/// (`CloudFormation::sdk_call`); here they are only read, with no thread and no I/O.
struct DocumentResolver {
    imds: Arc<Imds>,
}

impl fmt::Debug for DocumentResolver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("DocumentResolver")
    }
}

impl ResolveIdentity for DocumentResolver {
    fn resolve_identity<'a>(&'a self, _: &'a RuntimeComponents, _: &'a ConfigBag) -> IdentityFuture<'a> {
        let header = self.imds.cached_identity_authorization();
        IdentityFuture::ready(match header {
            Some(header) => Ok(Identity::new(Header(header), None)),
            None => Err(BoxError::from("the instance identity was not read before the call")),
        })
    }
}

#[derive(Debug)]
struct HeaderSigner;

impl Sign for HeaderSigner {
    fn sign_http_request(
        &self,
        request: &mut HttpRequest,
        identity: &Identity,
        _: AuthSchemeEndpointConfig<'_>,
        _: &RuntimeComponents,
        _: &ConfigBag,
    ) -> Result<(), BoxError> {
        let Header(value) = identity.data::<Header>().ok_or("the identity is not an instance identity")?;
        request.headers_mut().insert("authorization", value.clone());
        Ok(())
    }
}

/// Chooses the instance-identity scheme for every operation (the SDK's default resolver
/// would choose SigV4, which this client has no keys for).
#[derive(Debug)]
pub struct OnlyInstanceIdentity;

impl aws_sdk_cloudformation::config::auth::ResolveAuthScheme for OnlyInstanceIdentity {
    fn resolve_auth_scheme<'a>(
        &'a self,
        _: &'a aws_sdk_cloudformation::config::auth::Params,
        _: &'a ConfigBag,
        _: &'a RuntimeComponents,
    ) -> AuthSchemeOptionsFuture<'a> {
        AuthSchemeOptionsFuture::ready(Ok(vec![AuthSchemeOption::from(SCHEME_ID)]))
    }
}
