//! The AWS SDK's configuration: every call bounded by [`CallLimits`], and,
//! on Lambda, credentials and region read from the variables Lambda sets
//! and TLS to AWS verified against Amazon's roots, compiled in.
//!
//! Why not the SDK's default chains there: Lambda hands the execution
//! role's credentials to the process as `AWS_ACCESS_KEY_ID`,
//! `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN`, and the region as
//! `AWS_REGION`, so the default chain's first provider always answers. But
//! the chain is built whole at start, and its web-identity provider builds
//! an STS client with it, and with that the TLS client and its root
//! certificates, all in Init (8 % of a cold start's CPU samples in a
//! profile of the cold-start bench, `infra/lambda_cold_start_bench.py`).
//!
//! Why Amazon's roots: every endpoint of the aws partition chains to
//! Amazon Trust Services (`amazon_roots.pem`), and reading the system's
//! bundle instead (about 145 roots, PEM-decoded one by one) was half of a
//! cold start's Init instructions (8.3 M of 16.5 M, callgrind), in every
//! cold start. Trusting five roots for AWS calls is also the narrower
//! trust. `SSL_CERT_FILE`, when set, adds its roots (a TLS-inspecting
//! proxy's, an emulator's). The system's store is read as before with
//! `SSL_CERT_DIR` set, in a region that is not of the aws partition
//! (China, GovCloud, the isolated and sovereign clouds, and any partition
//! to come), and where an `AWS_ENDPOINT_URL*` names another endpoint with
//! no `SSL_CERT_FILE` to trust it by. SECURITY.md, "AWS credentials and
//! TLS roots", states the trade.
//!
//! Anywhere else (the local server, the emulator, a laptop with
//! profiles or SSO) the default chains and the system's roots stay: they
//! are what users expect.

use std::collections::HashMap;

use aws_config::{BehaviorVersion, ConfigLoader, Region, SdkConfig, environment::EnvironmentVariableCredentialsProvider};
use aws_smithy_http_client::{
    Builder, ConnectorBuilder,
    proxy::ProxyConfig,
    tls::{Provider, TlsContext, TrustStore, rustls_provider::CryptoMode},
};
use mcp_stateless::{Entry, settings::Variables};
use rustls::pki_types::{CertificateDer, pem::PemObject};

use crate::{AwsSettings, CallLimits};

/// What the SDK's configuration takes from the environment beyond the
/// SDK's own reading of it.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct SdkEnvironment {
    /// On Lambda with the role's credentials in the environment: the
    /// region to use (`AWS_REGION`), read as Lambda sets it. `None`
    /// elsewhere, where the default chains decide.
    lambda_region: Option<String>,
    /// On Lambda in the aws partition: the roots TLS to AWS trusts,
    /// Amazon's and `SSL_CERT_FILE`'s, checked at start. `None`: the
    /// system's store, read by the SDK's client.
    roots: Option<TlsContext>,
}

/// Amazon Trust Services' roots (the file names each with its fingerprint).
const AMAZON_ROOTS: &[u8] = include_bytes!("amazon_roots.pem");

/// The first part of the aws partition's region names (its `regionRegex`
/// in the SDK's partitions.json: `^(us|eu|ap|sa|ca|me|af|il|mx)-\w+-\d+$`).
/// Region names of other partitions have another first part or more parts
/// (`cn-north-1`, `us-gov-west-1`, `eu-isoe-west-1`).
const AWS_PARTITION_AREAS: [&str; 9] = ["us", "eu", "ap", "sa", "ca", "me", "af", "il", "mx"];

/// Whether `region` is of the aws partition, whose endpoints chain to
/// Amazon Trust Services. Unknown shapes are not: they keep the system's
/// store, which fails safe for a partition that does not exist yet.
fn in_aws_partition(region: &str) -> bool {
    let parts: Vec<&str> = region.split('-').collect();
    matches!(parts.as_slice(), [area, place, number]
        if AWS_PARTITION_AREAS.contains(area)
            && !place.is_empty() && place.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !number.is_empty() && number.chars().all(|c| c.is_ascii_digit()))
}

impl SdkEnvironment {
    /// What `variables` say where requests come in at `entry` (the
    /// process's own are read once at start, by
    /// [`AwsSettings::from_env`]). The error names `SSL_CERT_FILE` when
    /// its file cannot be read or holds a certificate that is not a usable
    /// root.
    pub fn from_variables(entry: &Entry, variables: impl IntoIterator<Item = (String, String)>) -> Result<Self, String> {
        let all: HashMap<String, String> = variables.into_iter().filter(|(_, value)| !value.is_empty()).collect();
        let variables = Variables::new(|name| all.get(name).cloned());
        let on_lambda = *entry == Entry::Lambda;
        let role_credentials = variables.text("AWS_ACCESS_KEY_ID").is_some() && variables.text("AWS_SECRET_ACCESS_KEY").is_some();
        let lambda_region = if on_lambda && role_credentials { variables.text("AWS_REGION") } else { None };
        let aws_partition = variables.text("AWS_REGION").is_some_and(|region| in_aws_partition(&region));
        // Taken as given, as the system-store loader would take it.
        let added = all.get("SSL_CERT_FILE").cloned();
        let other_endpoint = all.keys().any(|name| name.starts_with("AWS_ENDPOINT_URL"));
        let roots = if on_lambda && aws_partition && !all.contains_key("SSL_CERT_DIR") && (added.is_some() || !other_endpoint) {
            Some(amazon_roots_and(added)?)
        } else {
            None
        };
        Ok(Self { lambda_region, roots })
    }

    /// Whether credentials and region are read straight from the
    /// environment, skipping the default chains.
    pub fn reads_lambda_variables(&self) -> bool {
        self.lambda_region.is_some()
    }

    /// Whether TLS to AWS trusts Amazon's roots (and `SSL_CERT_FILE`'s)
    /// rather than the system's store.
    pub fn trusts_amazon_roots(&self) -> bool {
        self.roots.is_some()
    }

    fn apply(&self, loader: ConfigLoader) -> ConfigLoader {
        let loader = match &self.lambda_region {
            Some(region) => loader.region(Region::new(region.clone())).credentials_provider(EnvironmentVariableCredentialsProvider::new()),
            None => loader,
        };
        match &self.roots {
            Some(roots) => loader.http_client(https_client(roots.clone())),
            None => loader,
        }
    }
}

/// Amazon's roots, and those of the PEM file at `added` (`SSL_CERT_FILE`).
/// Every certificate is checked here as the SDK's client will take it: it
/// panics on one it cannot, which would abort the process when the first
/// SDK client is built, with no word on which variable was wrong. (The
/// system-store loader skipped such a certificate; here it stops the start.)
fn amazon_roots_and(added: Option<String>) -> Result<TlsContext, String> {
    let mut pem = AMAZON_ROOTS.to_vec();
    if let Some(path) = added {
        let file = std::fs::read(&path).map_err(|error| format!("SSL_CERT_FILE ({path}) cannot be read: {error}"))?;
        check_roots(&file).map_err(|why| format!("SSL_CERT_FILE ({path}): {why}"))?;
        pem.push(b'\n');
        pem.extend(file);
    }
    TlsContext::builder()
        .with_trust_store(TrustStore::empty().with_native_roots(false).with_pem_certificate(pem))
        .build()
        .map_err(|error| format!("the TLS roots for AWS: {error}"))
}

/// How many roots `pem` holds, or why one of them is not usable.
fn check_roots(pem: &[u8]) -> Result<usize, String> {
    let mut store = rustls::RootCertStore::empty();
    for (n, certificate) in CertificateDer::pem_slice_iter(pem).enumerate() {
        let certificate = certificate.map_err(|error| format!("certificate {} is not PEM: {error}", n + 1))?;
        store.add(certificate).map_err(|error| format!("certificate {} is not a usable root: {error}", n + 1))?;
    }
    match store.len() {
        0 => Err("no certificate in it".to_owned()),
        n => Ok(n),
    }
}

/// The SDK's default HTTPS client, trusting `roots`: built as
/// aws-smithy-runtime builds its default (rustls on aws-lc, the SDK's
/// timeouts and sleep, the environment's proxy settings, as for
/// `BehaviorVersion::latest()`), which `build_https` would not (it leaves
/// proxies off). `build_with_connector_fn` is hidden from the crate's docs:
/// the exact pin of aws-smithy-http-client (Cargo.toml) moves with
/// aws-smithy-runtime's, and this is checked against its default then.
/// Every SDK client built from the configuration shares this one client,
/// its connection pool and its TLS configuration. (The return type is the
/// SDK's shared one, which every service crate re-exports.)
fn https_client(roots: TlsContext) -> aws_sdk_kms::config::SharedHttpClient {
    Builder::new().build_with_connector_fn(move |settings, components| {
        let mut connector = ConnectorBuilder::default().tls_provider(Provider::Rustls(CryptoMode::AwsLc)).tls_context(roots.clone());
        connector.set_connector_settings(settings.cloned());
        if let Some(components) = components {
            connector.set_sleep_impl(components.sleep_impl());
        }
        connector.set_proxy_config(Some(ProxyConfig::from_env()));
        connector.build()
    })
}

/// The SDK configuration `settings` make: the SDK's own reading of the
/// environment (`AWS_REGION`, `AWS_ENDPOINT_URL` for emulators,
/// credentials) as [`AwsSettings::sdk`] directs it, every call bounded by
/// [`AwsSettings::limits`].
pub async fn sdk_config(settings: &AwsSettings) -> SdkConfig {
    loader_for(&settings.limits, &settings.sdk).load().await
}

/// The loader behind [`sdk_config`], for callers that set more before
/// loading (an endpoint, region or credentials set here override the
/// environment's).
pub fn loader_for(limits: &CallLimits, environment: &SdkEnvironment) -> ConfigLoader {
    environment
        .apply(aws_config::defaults(BehaviorVersion::latest()).timeout_config(limits.timeout_config()).retry_config(limits.retry_config()))
}

#[cfg(test)]
mod tests {
    use aws_config::Region;

    use super::*;

    fn pairs(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn environment_in(entry: Entry, variables: &[(&str, &str)]) -> SdkEnvironment {
        SdkEnvironment::from_variables(&entry, pairs(variables)).expect("a usable SDK environment")
    }

    fn environment(pairs: &[(&str, &str)]) -> SdkEnvironment {
        environment_in(Entry::Lambda, pairs)
    }

    const LAMBDA: &[(&str, &str)] =
        &[("AWS_ACCESS_KEY_ID", "ASIAEXAMPLE"), ("AWS_SECRET_ACCESS_KEY", "secret"), ("AWS_REGION", "eu-west-1")];

    #[test]
    fn only_lambda_with_role_credentials_skips_the_default_chains() {
        assert!(environment(LAMBDA).reads_lambda_variables());
        // Locally, or on Lambda without the role's variables (a forker's
        // custom runtime set-up), the default chains decide.
        assert!(!environment_in(Entry::Local { addr: String::new() }, LAMBDA).reads_lambda_variables());
        assert!(!environment(&LAMBDA[1..]).reads_lambda_variables());
        assert!(!environment(&LAMBDA[..1]).reads_lambda_variables());
        assert!(!environment(&[]).reads_lambda_variables());
    }

    #[tokio::test]
    async fn on_lambda_the_region_and_credentials_are_lambdas_variables() {
        let config = loader_for(&CallLimits::LAMBDA, &environment(LAMBDA)).load().await;
        assert_eq!(config.region(), Some(&Region::new("eu-west-1")));
        let provider = format!("{:?}", config.credentials_provider().expect("a credentials provider"));
        assert!(provider.contains("EnvironmentVariableCredentialsProvider") && !provider.contains("DefaultCredentialsChain"), "{provider}");
        let elsewhere = format!("{:?}", loader_for(&CallLimits::LAMBDA, &environment(&[])).load().await.credentials_provider());
        assert!(elsewhere.contains("DefaultCredentialsChain"), "{elsewhere}");
    }

    #[test]
    fn the_compiled_roots_are_amazons_five() {
        assert_eq!(check_roots(AMAZON_ROOTS), Ok(5));
        let text = String::from_utf8_lossy(AMAZON_ROOTS);
        for name in [
            "Amazon Root CA 1",
            "Amazon Root CA 2",
            "Amazon Root CA 3",
            "Amazon Root CA 4",
            "Starfield Services Root Certificate Authority - G2",
        ] {
            assert!(text.contains(name), "{name} is not listed");
        }
    }

    #[test]
    fn on_lambda_in_the_aws_partition_tls_trusts_amazons_roots() {
        // That the system's store is not read beside them: tests/aws_roots.rs.
        assert!(environment(LAMBDA).trusts_amazon_roots());
        // Locally; with a CA directory named; in a region of another
        // partition, or of none known; with another endpoint named and no
        // root to trust it by: the system's store, as before.
        assert!(!environment_in(Entry::Local { addr: String::new() }, LAMBDA).trusts_amazon_roots());
        let with = |extra: &[(&'static str, &'static str)]| environment(&[LAMBDA, extra].concat()).trusts_amazon_roots();
        assert!(!with(&[("SSL_CERT_DIR", "/etc/ssl/certs")]));
        for region in
            ["cn-north-1", "us-gov-west-1", "us-iso-east-1", "us-isob-east-1", "eu-isoe-west-1", "eusc-de-east-1", "xx-new-1", "eu-west"]
        {
            assert!(!with(&[("AWS_REGION", region)]), "{region}");
        }
        for region in ["us-east-1", "ap-southeast-5", "il-central-1", "mx-central-1"] {
            assert!(with(&[("AWS_REGION", region)]), "{region}");
        }
        assert!(!with(&[("AWS_ENDPOINT_URL", "https://localhost.localstack.cloud:4566")]));
        assert!(!with(&[("AWS_ENDPOINT_URL_DYNAMODB", "https://dynamodb.example.com")]));
    }

    #[test]
    fn ssl_cert_file_is_checked_at_start() {
        let dir = std::env::temp_dir().join(format!("mcp-aws-roots-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let first_root = &AMAZON_ROOTS[AMAZON_ROOTS.windows(5).position(|w| w == b"-----").unwrap()..];
        let end = first_root.windows(25).position(|w| w == b"-----END CERTIFICATE-----").unwrap() + 25;
        let files = [
            ("one.pem", first_root[..end].to_vec()),
            ("bad.pem", b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n".to_vec()),
            ("garbled.pem", b"-----BEGIN CERTIFICATE-----\n%%%\n-----END CERTIFICATE-----\n".to_vec()),
            ("empty.pem", b"no certificate here\n".to_vec()),
        ];
        for (name, bytes) in &files {
            std::fs::write(dir.join(name), bytes).unwrap();
        }
        assert_eq!(check_roots(&files[0].1), Ok(1));
        let with = |name: &str| {
            let file = dir.join(name).to_str().unwrap().to_owned();
            SdkEnvironment::from_variables(&Entry::Lambda, pairs(LAMBDA).into_iter().chain([("SSL_CERT_FILE".to_owned(), file)]))
        };
        assert!(with("one.pem").expect("one more root").trusts_amazon_roots());
        // With SSL_CERT_FILE naming its roots, another endpoint may be used.
        let file = dir.join("one.pem").to_str().unwrap().to_owned();
        let proxied = pairs(LAMBDA)
            .into_iter()
            .chain([("SSL_CERT_FILE".to_owned(), file), ("AWS_ENDPOINT_URL".to_owned(), "https://proxy".to_owned())]);
        assert!(SdkEnvironment::from_variables(&Entry::Lambda, proxied).unwrap().trusts_amazon_roots());
        for (name, why) in [
            ("bad.pem", "certificate 1 is not a usable root"),
            ("garbled.pem", "certificate 1 is not PEM"),
            ("empty.pem", "no certificate in it"),
            ("absent.pem", "cannot be read"),
        ] {
            let refused = with(name).expect_err(name);
            assert!(refused.starts_with("SSL_CERT_FILE (") && refused.contains(why), "{name}: {refused}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
