//! The upstream client secret from Parameter Store (a SecureString, which
//! SSM decrypts with its KMS key): read once per instance, on the first
//! sign-in that needs it, so it is never in the template, the function's
//! environment or a log line.

use aws_sdk_ssm::Client;
use futures::future::BoxFuture;

use crate::upstream::SecretSource;

/// The parameter `name`.
pub struct ParameterSecret {
    client: Client,
    name: String,
}

impl ParameterSecret {
    /// Reads `name` with `client` when first asked.
    pub fn new(client: Client, name: &str) -> Self {
        Self { client, name: name.to_owned() }
    }
}

impl SecretSource for ParameterSecret {
    fn secret(&self) -> BoxFuture<'_, Result<String, String>> {
        Box::pin(async move {
            let answer = self.client.get_parameter().name(&self.name).with_decryption(true).send().await.map_err(|error| {
                // The error names the parameter and the reason, never a value.
                format!("{}: {}", self.name, aws_sdk_ssm::error::DisplayErrorContext(error))
            })?;
            answer.parameter.and_then(|parameter| parameter.value).ok_or_else(|| format!("{} has no value", self.name))
        })
    }
}
