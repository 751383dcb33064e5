//! Resource fixtures: two static resources and one template.

use rmcp::{
    ErrorData,
    model::{ReadResourceResult, Resource, ResourceContents, ResourceTemplate},
};
use serde_json::json;

use crate::PNG_1X1;

const STATIC_TEXT: &str = "test://static-text";
const STATIC_BINARY: &str = "test://static-binary";

pub(crate) fn list() -> Vec<Resource> {
    vec![
        Resource::new(STATIC_TEXT, "static-text").with_mime_type("text/plain").with_description("A static text resource"),
        Resource::new(STATIC_BINARY, "static-binary").with_mime_type("image/png").with_description("A static PNG"),
    ]
}

pub(crate) fn templates() -> Vec<ResourceTemplate> {
    vec![ResourceTemplate::new("test://template/{id}/data", "template-data").with_mime_type("text/plain")]
}

pub(crate) fn read(uri: &str) -> Result<ReadResourceResult, ErrorData> {
    let contents = match uri {
        STATIC_TEXT => ResourceContents::text("This is the content of the static text resource.", uri),
        STATIC_BINARY => ResourceContents::blob(PNG_1X1, uri).with_mime_type("image/png"),
        _ => match template_id(uri) {
            Some(id) => ResourceContents::text(format!("Data for resource id {id}"), uri),
            // rmcp turns this into -32602 for 2026-07-28 clients (SEP-2164).
            None => return Err(ErrorData::resource_not_found("Resource not found", Some(json!({"uri": uri})))),
        },
    };
    Ok(ReadResourceResult::new(vec![contents]))
}

/// `{id}` of `test://template/{id}/data`: one non-empty path segment.
fn template_id(uri: &str) -> Option<&str> {
    let id = uri.strip_prefix("test://template/")?.strip_suffix("/data")?;
    (!id.is_empty() && !id.contains('/')).then_some(id)
}
