//! The two kinds of client id, told apart by their shape alone (a leaf:
//! the log and the consent rules ask it without looking a client up).

/// Whether `client_id` names a metadata document (an https URL) rather
/// than a registration this server sealed.
pub fn is_metadata_document_id(client_id: &str) -> bool {
    client_id.starts_with("https://")
}
