//! The authorization server's ports on AWS: its signing key in KMS
//! ([`kms_signer`]), its grants in the stack's DynamoDB table
//! ([`dynamo_grants`]) with the last good copies of client documents
//! ([`dynamo_documents`]), and its upstream client secret sealed under the
//! stack's KMS key ([`sealed_secret`]). Sealing and the single-use ledger
//! are mcp-aws's (KMS data keys, the table's `jti#` items).

pub mod dynamo_documents;
pub mod dynamo_grants;
pub mod kms_signer;
pub mod sealed_secret;

pub use dynamo_documents::DynamoDocuments;
pub use dynamo_grants::DynamoGrants;
pub use kms_signer::KmsSigner;
pub use sealed_secret::{SealedSecret, SealedSecretError};
