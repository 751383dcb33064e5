//! Pinned copies of well-known clients' metadata documents, shipped with
//! the server: the last resort when a document can be neither fetched nor
//! found as a last good copy (a new instance, a host that challenges cloud
//! addresses). Each file in `pins/` is the document as its publisher
//! serves it, as far as public sources quote it; a pin never overrides a
//! document that was fetched. ChatGPT's pin keeps only what is quoted of
//! its document: the URL of its key set is not, so the pin offers `none`
//! alone, which its document offers too (beside `private_key_jwt`).
//!
//! A fork adds a pin by adding its file here and to [`SHIPPED`]; an
//! operator drops pins with `MCP_OAUTH_UNPINNED_CLIENTS` (client ids, or
//! `*` for all).

use std::collections::HashMap;

/// The shipped pins: (client id, document).
pub const SHIPPED: &[(&str, &str)] = &[
    ("https://claude.ai/oauth/mcp-oauth-client-metadata", include_str!("pins/claude.json")),
    ("https://claude.ai/oauth/claude-code-client-metadata", include_str!("pins/claude-code.json")),
    ("https://chatgpt.com/oauth/client.json", include_str!("pins/chatgpt.json")),
    ("https://vscode.dev/oauth/client-metadata.json", include_str!("pins/vscode.json")),
    ("https://github.com/copilot/cli/client-metadata.json", include_str!("pins/copilot-cli.json")),
];

/// The pins in use.
#[derive(Debug, Clone, Default)]
pub struct Pins {
    documents: HashMap<String, &'static str>,
}

impl Pins {
    /// The shipped pins but those `unpinned` names (`*`: all of them).
    pub fn shipped_except(unpinned: &[String]) -> Self {
        if unpinned.iter().any(|id| id == "*") {
            return Self::default();
        }
        let documents = SHIPPED
            .iter()
            .filter(|(id, _)| !unpinned.iter().any(|dropped| dropped == id))
            .map(|(id, document)| ((*id).to_owned(), *document))
            .collect();
        Self { documents }
    }

    /// `client_id`'s pinned document, if it has one.
    pub fn document(&self, client_id: &str) -> Option<&'static str> {
        self.documents.get(client_id).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_pin_names_its_own_id_and_can_be_dropped() {
        for (id, document) in SHIPPED {
            let parsed: serde_json::Value = serde_json::from_str(document).unwrap();
            assert_eq!(parsed["client_id"], *id, "{id}");
            assert!(parsed["redirect_uris"].as_array().is_some_and(|uris| !uris.is_empty()), "{id}");
        }
        let all = Pins::shipped_except(&[]);
        assert!(SHIPPED.iter().all(|(id, _)| all.document(id).is_some()));
        let fewer = Pins::shipped_except(&[SHIPPED[0].0.to_owned()]);
        assert!(fewer.document(SHIPPED[0].0).is_none() && fewer.document(SHIPPED[1].0).is_some());
        assert!(Pins::shipped_except(&["*".to_owned()]).document(SHIPPED[1].0).is_none());
    }
}
