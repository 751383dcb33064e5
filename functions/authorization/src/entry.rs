//! How the server is built and served: its parts from the settings (AWS
//! where configured, memory and this process otherwise), then Lambda
//! events, or locally an HTTP server beside the MCP server's, which
//! forwards this server's paths to it (one address, as on AWS).

use std::{convert::Infallible, sync::Arc};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::{server::conn::http1, service::service_fn};
use hyper_util::rt::TokioIo;
use mcp_aws::{AwsSettings, DynamoStore};
use mcp_stateless::{
    Entry,
    clock::{Clock, SystemClock},
    sealed::redemption::{InMemoryLedger, RedemptionLedger},
    senders::budgeted_as,
};

use crate::{
    aws::{DynamoDocuments, DynamoGrants, KmsSigner, SealedSecret},
    clients::{
        Clients,
        last_good::{InMemoryCopies, LastGoodCopies},
        metadata_document::MetadataDocuments,
        metadata_fetch::GuardedFetcher,
    },
    grants::{GrantStore, InMemoryGrants},
    sealing::Seals,
    server::{AuthorizationServer, Parts, Sender},
    settings::{OAuthSettings, UPSTREAM_CLIENT_SECRET_SEALED},
    signing::{InProcessSigner, TokenSigner},
    upstream::Upstream,
};

/// The largest request body read (forms and registrations are small).
const MAX_BODY_BYTES: usize = 64 * 1024;

/// The server for `settings`, on AWS where `aws` names resources.
pub fn build(
    settings: OAuthSettings,
    aws: &AwsSettings,
    sdk: Option<&aws_config::SdkConfig>,
    clock: Arc<dyn Clock>,
) -> Result<AuthorizationServer, String> {
    let audience = aws.audience();
    let sealer = mcp_aws::sealer(aws, sdk, clock.clone(), crate::sealing::MAX_SEALED_BYTES);
    type Stores = (Arc<dyn GrantStore>, Arc<dyn RedemptionLedger>, Arc<dyn LastGoodCopies>);
    let (grants, ledger, copies): Stores = match (&aws.table_name, sdk) {
        (Some(table), Some(sdk)) => {
            let client = aws_sdk_dynamodb::Client::new(sdk);
            (
                Arc::new(DynamoGrants::new(client.clone(), table)),
                Arc::new(DynamoStore::new(client.clone(), table)),
                Arc::new(DynamoDocuments::new(client, table)),
            )
        }
        _ => (Arc::new(InMemoryGrants::default()), Arc::new(InMemoryLedger::default()), Arc::new(InMemoryCopies::default())),
    };
    let signer: Arc<dyn TokenSigner> = match (&settings.signing_key_id, sdk) {
        (Some(key_id), Some(sdk)) => Arc::new(KmsSigner::new(aws_sdk_kms::Client::new(sdk), key_id)),
        _ => Arc::new(InProcessSigner::generate()),
    };
    let upstream = match settings.upstream.clone() {
        None => None,
        Some(upstream) => {
            let sealed = upstream.client_secret_sealed.clone();
            let mut upstream = Upstream::new(upstream)?;
            if let Some(ciphertext) = sealed {
                let sdk = sdk.ok_or("the sealed upstream client secret needs AWS (an SDK configuration)")?;
                // Sealed under the stack's symmetric key, the one requestState's
                // data keys come from; its context keeps the two apart.
                let key_id = aws.state_key_id.as_deref().ok_or_else(|| {
                    format!("{UPSTREAM_CLIENT_SECRET_SEALED} needs {}, the key it was sealed under", mcp_aws::settings::STATE_KEY_ID)
                })?;
                let secret = SealedSecret::new(aws_sdk_kms::Client::new(sdk), key_id, audience, ciphertext);
                upstream = upstream.with_secret_source(Arc::new(secret));
            }
            Some(Arc::new(upstream))
        }
    };
    let fetcher = GuardedFetcher::new(settings.cimd_trusted_hosts.clone())?;
    let documents = Arc::new(MetadataDocuments::configured(&settings, fetcher, clock.clone(), copies));
    let seals = Seals::new(sealer, audience);
    let clients = Clients::new(seals.clone(), documents);
    Ok(AuthorizationServer::new(Parts { settings, clients, seals, grants, ledger, signer, upstream, clock }))
}

/// The function's `main`: reads the settings, builds the server once, and
/// serves until the process ends.
pub fn start() -> Result<(), mcp_stateless::StartError> {
    let settings = OAuthSettings::from_env().map_err(mcp_stateless::StartError::Config)?;
    mcp_stateless::block_on(settings.deployment.runtime, run(settings))
}

async fn run(settings: OAuthSettings) -> Result<(), mcp_stateless::StartError> {
    use mcp_stateless::StartError;
    mcp_stateless::logging::init(settings.deployment.log_format, &settings.log_level);
    crate::sign_in_log::use_format(settings.deployment.log_format);
    mcp_stateless::edge::request_log::use_metrics_namespace(&settings.metrics_namespace);
    let aws = AwsSettings::from_env(&settings.deployment).map_err(StartError::Config)?;
    aws.check(&settings.deployment).map_err(StartError::Config)?;
    let sealed_secret = settings.upstream.as_ref().is_some_and(|upstream| upstream.client_secret_sealed.is_some());
    let uses_aws = aws.state_key_id.is_some() || aws.table_name.is_some() || settings.signing_key_id.is_some() || sealed_secret;
    let sdk = if uses_aws { Some(mcp_aws::sdk_config(&aws).await) } else { None };
    let entry = settings.deployment.entry.clone();
    let server = Arc::new(build(settings, &aws, sdk.as_ref(), Arc::new(SystemClock)).map_err(StartError::Config)?);
    match entry {
        Entry::Lambda => serve_lambda(server).await.map_err(StartError::Lambda),
        Entry::Local { addr: local_addr } => {
            let listener =
                tokio::net::TcpListener::bind(&local_addr).await.map_err(|e| StartError::Config(format!("{local_addr}: {e}")))?;
            tracing::info!(address = %local_addr, "authorization server listening");
            serve_local(server, listener).await.map_err(|e| StartError::Config(e.to_string()))
        }
    }
}

/// Lambda events, buffered (nothing here streams).
async fn serve_lambda(server: Arc<AuthorizationServer>) -> Result<(), lambda_http::Error> {
    lambda_http::run(lambda_http::service_fn(move |request: lambda_http::Request| {
        let server = server.clone();
        async move {
            let sender = source_address(&request);
            let (mut parts, body) = request.into_parts();
            parts.extensions.insert(Sender(budgeted_as(&sender)));
            let body = Bytes::from(body.to_vec());
            if body.len() > MAX_BODY_BYTES {
                return Ok::<_, Infallible>(
                    crate::responses::text(http::StatusCode::PAYLOAD_TOO_LARGE, "Payload Too Large")
                        .map(|bytes| lambda_http::Body::Binary(bytes.to_vec())),
                );
            }
            let response = server.handle(http::Request::from_parts(parts, body)).await;
            Ok(response.map(|bytes| lambda_http::Body::Binary(bytes.to_vec())))
        }
    }))
    .await
}

/// The caller's address as API Gateway saw it.
fn source_address(request: &lambda_http::Request) -> String {
    use lambda_http::{RequestExt, request::RequestContext};
    let address = match request.request_context_ref() {
        Some(RequestContext::ApiGatewayV2(context)) => context.http.source_ip.clone(),
        Some(RequestContext::ApiGatewayV1(context)) => context.identity.source_ip.clone(),
        _ => None,
    };
    address.unwrap_or_else(|| "unknown".to_owned())
}

/// Accepts connections until the listener fails.
pub async fn serve_local(server: Arc<AuthorizationServer>, listener: tokio::net::TcpListener) -> std::io::Result<()> {
    loop {
        let (stream, peer) = listener.accept().await?;
        let server = server.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request: http::Request<hyper::body::Incoming>| {
                let server = server.clone();
                async move {
                    let (mut parts, body) = request.into_parts();
                    parts.extensions.insert(Sender(budgeted_as(&peer.ip().to_string())));
                    let response = match Limited::new(body, MAX_BODY_BYTES).collect().await {
                        Ok(body) => server.handle(http::Request::from_parts(parts, body.to_bytes())).await,
                        Err(_) => crate::responses::text(http::StatusCode::PAYLOAD_TOO_LARGE, "Payload Too Large"),
                    };
                    Ok::<_, Infallible>(response.map(Full::new))
                }
            });
            if let Err(error) = http1::Builder::new().serve_connection(TokioIo::new(stream), service).await {
                tracing::debug!(%error, "local connection ended");
            }
        });
    }
}
