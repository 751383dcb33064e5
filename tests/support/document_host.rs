//! An https host on loopback for client metadata documents and client key
//! sets, as a client's publisher serves them: a throwaway CA (whose roots
//! the authorization server's fetcher is given), a certificate for
//! `localhost`, and answers set per path while the test runs, so a host
//! can start answering a challenge page, or a 5xx, halfway through. A path
//! with no answer set never answers (a fetch that times out).

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use bytes::Bytes;
use http_body_util::Full;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject};

/// What a path answers.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub body: String,
    /// `Cache-Control`, if any.
    pub cache_control: Option<&'static str>,
}

pub struct DocumentHost {
    /// The CA the host's certificate chains to.
    pub roots: rustls::RootCertStore,
    pub port: u16,
    answers: Arc<Mutex<HashMap<String, Answer>>>,
    fetches: Arc<Mutex<Vec<String>>>,
}

impl DocumentHost {
    pub async fn start() -> Self {
        let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Constrained(0));
        ca.key_usages = vec![rcgen::KeyUsagePurpose::KeyCertSign];
        let ca = rcgen::CertifiedIssuer::self_signed(ca, rcgen::KeyPair::generate().unwrap()).unwrap();
        let leaf_key = rcgen::KeyPair::generate().unwrap();
        let leaf = rcgen::CertificateParams::new(vec!["localhost".to_owned()]).unwrap().signed_by(&leaf_key, &ca).unwrap();
        let mut roots = rustls::RootCertStore::empty();
        roots.add(CertificateDer::from_pem_slice(ca.pem().as_bytes()).unwrap()).unwrap();
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::aws_lc_rs::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![CertificateDer::from_pem_slice(leaf.pem().as_bytes()).unwrap()],
                PrivateKeyDer::from_pem_slice(leaf_key.serialize_pem().as_bytes()).unwrap(),
            )
            .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (answers, fetches) = (Arc::new(Mutex::new(HashMap::<String, Answer>::new())), Arc::new(Mutex::new(Vec::new())));
        let (served, seen) = (answers.clone(), fetches.clone());
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (acceptor, served, seen) = (acceptor.clone(), served.clone(), seen.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(stream).await else { return };
                    let service = hyper::service::service_fn(move |request: http::Request<hyper::body::Incoming>| {
                        let path = request.uri().path().to_owned();
                        seen.lock().unwrap().push(path.clone());
                        let answer = served.lock().unwrap().get(&path).cloned();
                        async move {
                            let Some(answer) = answer else { return std::future::pending().await };
                            let mut response = http::Response::new(Full::new(Bytes::from(answer.body)));
                            *response.status_mut() = http::StatusCode::from_u16(answer.status).unwrap();
                            if let Some(value) = answer.cache_control {
                                response.headers_mut().insert("cache-control", http::HeaderValue::from_static(value));
                            }
                            Ok::<_, std::convert::Infallible>(response)
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new().serve_connection(hyper_util::rt::TokioIo::new(tls), service).await;
                });
            }
        });
        Self { roots, port, answers, fetches }
    }

    /// `https://localhost:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("https://localhost:{}{path}", self.port)
    }

    /// The `host:port` the authorization server must trust to fetch from loopback.
    pub fn trusted(&self) -> String {
        format!("localhost:{}", self.port)
    }

    /// From now on, `path` answers `status` with `body`, kept by no cache.
    pub fn serve(&self, path: &str, status: u16, body: impl Into<String>) {
        let answer = Answer { status, body: body.into(), cache_control: Some("no-store") };
        self.answers.lock().unwrap().insert(path.to_owned(), answer);
    }

    /// `path` answers as `answer` says.
    pub fn answer(&self, path: &str, answer: Answer) {
        self.answers.lock().unwrap().insert(path.to_owned(), answer);
    }

    /// How many times `path` was fetched.
    pub fn fetches(&self, path: &str) -> usize {
        self.fetches.lock().unwrap().iter().filter(|seen| *seen == path).count()
    }
}
