//! The AWS SDK's configuration: every call bounded by [`CallLimits`], and,
//! on Lambda, credentials and region read from the variables Lambda sets.
//!
//! Why not the SDK's default chains there: Lambda hands the execution
//! role's credentials to the process as `AWS_ACCESS_KEY_ID`,
//! `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN`, and the region as
//! `AWS_REGION`, so the default chain's first provider always answers. But
//! the chain is built whole at start, and its web-identity provider builds
//! an STS client with it, and with that the TLS client and its root
//! certificates, all in Init (8 % of a cold start's CPU samples in a
//! profile of the cold-start bench, `infra/lambda_cold_start_bench.py`).
//! Anywhere else (the local server, the emulator, a laptop with
//! profiles or SSO) the default chains stay: they are what users expect.

use aws_config::{BehaviorVersion, ConfigLoader, Region, SdkConfig, environment::EnvironmentVariableCredentialsProvider};
use mcp_stateless::{Mode, settings::Variables};

use crate::CallLimits;

/// What the SDK's configuration takes from the environment beyond the
/// SDK's own reading of it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SdkEnvironment {
    /// On Lambda with the role's credentials in the environment: the
    /// region to use (`AWS_REGION`), read as Lambda sets it. `None`
    /// elsewhere, where the default chains decide.
    lambda_region: Option<String>,
}

impl SdkEnvironment {
    /// Read once at start.
    pub fn from_env() -> Self {
        Self::from_lookup(mcp_stateless::detect_mode(), |name| std::env::var(name).ok())
    }

    /// The same in `mode`, from any source of variables (tests).
    pub fn from_lookup(mode: Mode, lookup: impl Fn(&str) -> Option<String>) -> Self {
        let variables = Variables::new(lookup);
        let on_lambda = mode == Mode::Lambda;
        let role_credentials = variables.text("AWS_ACCESS_KEY_ID").is_some() && variables.text("AWS_SECRET_ACCESS_KEY").is_some();
        let lambda_region = if on_lambda && role_credentials { variables.text("AWS_REGION") } else { None };
        Self { lambda_region }
    }

    /// Whether credentials and region are read straight from the
    /// environment, skipping the default chains.
    pub fn reads_lambda_variables(&self) -> bool {
        self.lambda_region.is_some()
    }

    fn apply(&self, loader: ConfigLoader) -> ConfigLoader {
        match &self.lambda_region {
            Some(region) => loader.region(Region::new(region.clone())).credentials_provider(EnvironmentVariableCredentialsProvider::new()),
            None => loader,
        }
    }
}

/// The SDK configuration from the environment (`AWS_REGION`,
/// `AWS_ENDPOINT_URL` for emulators, credentials), with every call bounded
/// by [`CallLimits::from_env`] (whose error names a malformed limit).
pub async fn sdk_config() -> Result<SdkConfig, String> {
    Ok(sdk_config_with(&CallLimits::from_env()?).await)
}

/// The SDK configuration from the environment, with every call bounded
/// by `limits`.
pub async fn sdk_config_with(limits: &CallLimits) -> SdkConfig {
    sdk_loader(limits).load().await
}

/// The loader behind [`sdk_config_with`], for callers that set more before
/// loading (an endpoint, region or credentials set here override the
/// environment's).
pub fn sdk_loader(limits: &CallLimits) -> ConfigLoader {
    loader_for(limits, &SdkEnvironment::from_env())
}

/// The same, for `environment`.
pub fn loader_for(limits: &CallLimits, environment: &SdkEnvironment) -> ConfigLoader {
    environment
        .apply(aws_config::defaults(BehaviorVersion::latest()).timeout_config(limits.timeout_config()).retry_config(limits.retry_config()))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use aws_config::Region;

    use super::*;

    fn environment_in(mode: Mode, pairs: &[(&str, &str)]) -> SdkEnvironment {
        let map: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        SdkEnvironment::from_lookup(mode, move |name| map.get(name).cloned())
    }

    fn environment(pairs: &[(&str, &str)]) -> SdkEnvironment {
        environment_in(Mode::Lambda, pairs)
    }

    const LAMBDA: &[(&str, &str)] =
        &[("AWS_ACCESS_KEY_ID", "ASIAEXAMPLE"), ("AWS_SECRET_ACCESS_KEY", "secret"), ("AWS_REGION", "eu-west-1")];

    #[test]
    fn only_lambda_with_role_credentials_skips_the_default_chains() {
        assert!(environment(LAMBDA).reads_lambda_variables());
        // Locally, or on Lambda without the role's variables (a forker's
        // custom runtime set-up), the default chains decide.
        assert!(!environment_in(Mode::Local, LAMBDA).reads_lambda_variables());
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
}
