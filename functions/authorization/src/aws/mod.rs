//! The authorization server's ports on AWS: its signing key in KMS
//! ([`kms_signer`]) and its grants in the stack's DynamoDB table
//! ([`dynamo_grants`]), and its upstream client secret in Parameter Store
//! ([`parameter_secret`]). Sealing and the single-use ledger are mcp-aws's
//! (KMS data keys, the table's `jti#` items).

pub mod dynamo_grants;
pub mod kms_signer;
pub mod parameter_secret;

pub use dynamo_grants::DynamoGrants;
pub use kms_signer::KmsSigner;
pub use parameter_secret::ParameterSecret;
