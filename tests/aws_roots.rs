//! Which servers the AWS SDK's client trusts on Lambda
//! (`mcp_aws::SdkEnvironment`, SECURITY.md "AWS credentials and TLS
//! roots"): Amazon's roots, compiled in, and those `SSL_CERT_FILE` adds.
//!
//! A KMS call goes over real TLS to a local server whose `localhost`
//! certificate a throwaway CA signed, both made when first needed (no key
//! is written down). With the CA added through
//! the environment the function is given (not this process's), the call is
//! answered: the SDK uses the client built from it. Without, the handshake
//! is refused and no request goes out, and that holds in a process whose
//! own `SSL_CERT_FILE` makes the system-store client trust the server.

use std::{
    collections::HashMap,
    path::PathBuf,
    sync::{Arc, OnceLock},
};

use bytes::Bytes;
use http_body_util::Full;
use hyper::{server::conn::http1, service::service_fn};
use hyper_util::rt::TokioIo;
use mcp_aws::{CallLimits, SdkEnvironment};
use mcp_stateless::Entry;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject};
use tokio::net::TcpListener;

/// Set for the copy of this test binary that one test starts: the
/// parent's [`Pki`], as JSON, which the copy serves and trusts too.
const CHILD: &str = "MCP_AWS_ROOTS_TEST_CHILD";

/// A throwaway CA and the `localhost` leaf it signed, made at first use in
/// a process (the CA's key is dropped once the leaf is signed). Only the
/// CA's certificate is written down, for `SSL_CERT_FILE` to name; the leaf's
/// key stays in memory, or in the child's environment.
#[derive(serde::Serialize, serde::Deserialize)]
struct Pki {
    ca_file: PathBuf,
    leaf_pem: String,
    key_pem: String,
}

fn pki() -> &'static Pki {
    static PKI: OnceLock<Pki> = OnceLock::new();
    PKI.get_or_init(|| {
        if let Some(parents) = std::env::var_os(CHILD) {
            return serde_json::from_str(parents.to_str().unwrap()).unwrap();
        }
        let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.distinguished_name.push(rcgen::DnType::CommonName, "mcp-lambda test CA (throwaway)");
        ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Constrained(0));
        ca.key_usages = vec![rcgen::KeyUsagePurpose::KeyCertSign];
        let ca = rcgen::CertifiedIssuer::self_signed(ca, rcgen::KeyPair::generate().unwrap()).unwrap();
        let leaf_key = rcgen::KeyPair::generate().unwrap();
        let mut leaf = rcgen::CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
        leaf.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
        let leaf = leaf.signed_by(&leaf_key, &ca).unwrap();
        let ca_file = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("aws-roots-ca-{}.pem", std::process::id()));
        std::fs::write(&ca_file, ca.pem()).unwrap();
        Pki { ca_file, leaf_pem: leaf.pem(), key_pem: leaf_key.serialize_pem() }
    })
}

/// `https://localhost:<port>`, answering every request with an empty KMS
/// `ListKeys` result; how many requests it answered.
async fn kms_over_tls() -> (String, Arc<std::sync::atomic::AtomicUsize>) {
    let certificates = CertificateDer::pem_slice_iter(pki().leaf_pem.as_bytes()).collect::<Result<Vec<_>, _>>().unwrap();
    let key = PrivateKeyDer::from_pem_slice(pki().key_pem.as_bytes()).unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::aws_lc_rs::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certificates, key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let answered = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = answered.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            let count = count.clone();
            tokio::spawn(async move {
                // A refused handshake ends here, which is what one test wants.
                let Ok(tls) = acceptor.accept(stream).await else { return };
                let service = service_fn(move |_request| {
                    count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let mut response = http::Response::new(Full::new(Bytes::from_static(br#"{"Keys":[],"Truncated":false}"#)));
                    response.headers_mut().insert(http::header::CONTENT_TYPE, "application/x-amz-json-1.1".parse().unwrap());
                    async move { Ok::<_, std::convert::Infallible>(response) }
                });
                let _ = http1::Builder::new().serve_connection(TokioIo::new(tls), service).await;
            });
        }
    });
    (format!("https://localhost:{port}"), answered)
}

/// The SDK environment of a Lambda in eu-west-1, with `SSL_CERT_FILE` when given.
fn lambda(added_roots: Option<PathBuf>) -> SdkEnvironment {
    let mut variables: HashMap<String, String> = [
        ("AWS_ACCESS_KEY_ID", "ASIAEXAMPLE"),
        ("AWS_SECRET_ACCESS_KEY", "secret"),
        ("AWS_SESSION_TOKEN", "token"),
        ("AWS_REGION", "eu-west-1"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    if let Some(path) = added_roots {
        variables.insert("SSL_CERT_FILE".to_owned(), path.to_str().unwrap().to_owned());
    }
    SdkEnvironment::from_variables(&Entry::Lambda, variables).expect("a usable SDK environment")
}

async fn list_keys(environment: &SdkEnvironment, endpoint: &str) -> Result<usize, String> {
    // One attempt, with room for a loaded machine's handshake.
    let second = std::time::Duration::from_secs(1);
    let limits = {
        let mut value = CallLimits::LAMBDA;
        value.connect = 20 * second;
        value.attempt = 30 * second;
        value.operation = 60 * second;
        value.max_attempts = 1;
        value
    };
    // Lambda's variables are not this process's: given here.
    let credentials = aws_sdk_kms::config::Credentials::new("ASIAEXAMPLE", "secret", None, None, "test");
    let sdk = mcp_aws::loader_for(&limits, environment)
        .endpoint_url(endpoint)
        .credentials_provider(credentials)
        .region(aws_config::Region::new("eu-west-1"))
        .load()
        .await;
    let answer = aws_sdk_kms::Client::new(&sdk).list_keys().send().await.map_err(|error| format!("{:?}", error))?;
    Ok(answer.keys().len())
}

#[tokio::test]
async fn a_root_added_by_ssl_cert_file_is_trusted() {
    let (endpoint, answered) = kms_over_tls().await;
    let environment = lambda(Some(pki().ca_file.clone()));
    assert!(environment.trusts_amazon_roots());
    assert_eq!(list_keys(&environment, &endpoint).await, Ok(0));
    assert_eq!(answered.load(std::sync::atomic::Ordering::SeqCst), 1);
}

/// The system's store is not read on the Amazon-roots path: in a process
/// whose own `SSL_CERT_FILE` names the throwaway CA (this test binary
/// again, so no variable of this one changes), the system-store client
/// trusts the server and the Lambda one still refuses it.
#[test]
fn the_systems_store_is_not_read_beside_amazons_roots() {
    let child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "refused_although_the_systems_store_would_trust_it", "--include-ignored", "--test-threads", "1"])
        .env(CHILD, serde_json::to_string(pki()).unwrap())
        .env("SSL_CERT_FILE", &pki().ca_file)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&child.stdout);
    assert!(child.status.success() && out.contains("1 passed"), "{out}{}", String::from_utf8_lossy(&child.stderr));
}

#[tokio::test]
#[ignore = "run by the_systems_store_is_not_read_beside_amazons_roots, in a process of its own"]
async fn refused_although_the_systems_store_would_trust_it() {
    assert!(std::env::var_os(CHILD).is_some(), "run through the_systems_store_is_not_read_beside_amazons_roots");
    let (endpoint, answered) = kms_over_tls().await;
    // Local mode: the SDK's own client, reading this process's SSL_CERT_FILE.
    let deployment = mcp_stateless::Settings::from_env().expect("the settings").deployment;
    let system = mcp_aws::AwsSettings::from_env(&deployment).expect("the SDK environment").sdk;
    assert!(!system.trusts_amazon_roots());
    assert_eq!(list_keys(&system, &endpoint).await, Ok(0));
    let refused = list_keys(&lambda(None), &endpoint).await.expect_err("the CA is in the system's store only");
    assert!(refused.contains("UnknownIssuer") || refused.contains("invalid peer certificate"), "{refused}");
    assert_eq!(answered.load(std::sync::atomic::Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_server_outside_amazons_roots_is_refused() {
    let (endpoint, answered) = kms_over_tls().await;
    let refused = list_keys(&lambda(None), &endpoint).await.expect_err("a certificate no Amazon root signed");
    assert!(refused.contains("UnknownIssuer") || refused.contains("invalid peer certificate"), "{refused}");
    assert_eq!(answered.load(std::sync::atomic::Ordering::SeqCst), 0, "the request went out over a refused handshake");
}
