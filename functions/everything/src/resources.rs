//! Resource fixtures: two static resources and one template.

use mcp_stateless::prelude::{FixedResource, ResourceRequest, Resources, TemplatedResource};
use rmcp::{
    ErrorData,
    model::{ReadResourceResult, Resource, ResourceContents, ResourceTemplate},
};

use crate::{EverythingServer, PNG_1X1};

pub(crate) fn resources() -> Resources<EverythingServer> {
    let mut resources = Resources::new();
    resources += FixedResource::new(
        Resource::new("test://static-text", "static-text").with_mime_type("text/plain").with_description("A static text resource"),
        static_text,
    );
    resources += FixedResource::new(
        Resource::new("test://static-binary", "static-binary").with_mime_type("image/png").with_description("A static PNG"),
        static_binary,
    );
    // `{id}` is one non-empty path segment. A URI that matches nothing gets
    // -32002, which rmcp turns into -32602 for 2026-07-28 clients (SEP-2164).
    resources += TemplatedResource::new(
        ResourceTemplate::new("test://template/{id}/data", "template-data").with_mime_type("text/plain"),
        template_data,
    );
    resources
}

async fn static_text(_server: &EverythingServer, request: ResourceRequest) -> Result<ReadResourceResult, ErrorData> {
    Ok(ReadResourceResult::new(vec![ResourceContents::text("This is the content of the static text resource.", request.uri)]))
}

async fn static_binary(_server: &EverythingServer, request: ResourceRequest) -> Result<ReadResourceResult, ErrorData> {
    Ok(ReadResourceResult::new(vec![ResourceContents::blob(PNG_1X1, request.uri).with_mime_type("image/png")]))
}

async fn template_data(_server: &EverythingServer, request: ResourceRequest) -> Result<ReadResourceResult, ErrorData> {
    let id = request.variable("id").unwrap_or_default();
    Ok(ReadResourceResult::new(vec![ResourceContents::text(format!("Data for resource id {id}"), &request.uri)]))
}
