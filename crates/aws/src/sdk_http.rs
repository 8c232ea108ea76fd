//! The AWS SDK's HTTP client, over our one HTTP stack (`http::HttpClient`): SDK calls get
//! the same proxy choice (NET-02), the same lazily loaded trust store (NET-01) and the
//! same wire log as every other request, and building an SDK client reads no
//! certificate: the SDK's default client loads the native roots when it is built, even
//! for a plain-http endpoint, which tripled the CPU time of a one-call tool.
//!
//! Redirects are not followed (API calls must not carry a signed request elsewhere);
//! timeouts are the caller's (each attempt is bounded by the client's attempt timeout,
//! `http::ATTEMPT_TIMEOUT`).

use crate::http::{HttpClient, TransportError};
use aws_smithy_runtime_api::client::http::{
    HttpClient as SdkHttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpClient,
    SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::{HttpRequest, HttpResponse};
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_runtime_api::http::StatusCode;
use aws_smithy_types::body::SdkBody;
use std::sync::Arc;

/// An SDK `HttpClient` that sends through `http`.
pub fn client(http: Arc<HttpClient>) -> SharedHttpClient {
    SharedHttpClient::new(Adapter { http })
}

#[derive(Debug, Clone)]
struct Adapter {
    http: Arc<HttpClient>,
}

impl SdkHttpClient for Adapter {
    fn http_connector(&self, _: &HttpConnectorSettings, _: &RuntimeComponents) -> SharedHttpConnector {
        SharedHttpConnector::new(self.clone())
    }
}

impl HttpConnector for Adapter {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        let http = self.http.clone();
        HttpConnectorFuture::new(async move {
            let method = request.method().to_string();
            let url = request.uri().to_string();
            let headers: Vec<(&str, String)> = request.headers().iter().map(|(n, v)| (n, v.to_string())).collect();
            // The SDK's requests for the actions we call are small and in memory.
            let Some(body) = request.body().bytes() else {
                return Err(ConnectorError::user("a streaming request body is not supported".into()));
            };
            let sent =
                tokio::time::timeout(http.attempt_timeout(), http.send_async(&method, &url, &headers, body.to_vec()));
            let response = match sent.await {
                Ok(Ok(response)) => response,
                Ok(Err(e)) => return Err(connector_error(e)),
                Err(_) => return Err(ConnectorError::timeout("Request timed out".into())),
            };
            let status = StatusCode::try_from(response.status).map_err(|e| ConnectorError::other(Box::new(e), None))?;
            let mut answer = HttpResponse::new(status, SdkBody::from(response.body));
            for (name, value) in response.headers {
                answer.headers_mut().append(name, value);
            }
            Ok(answer)
        })
    }
}

fn connector_error(e: TransportError) -> ConnectorError {
    if e.permanent {
        ConnectorError::user(Box::new(e))
    } else if e.message == "Request timed out" {
        ConnectorError::timeout(Box::new(e))
    } else {
        ConnectorError::io(Box::new(e))
    }
}
