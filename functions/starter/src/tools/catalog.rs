//! Example: resources. A resource is read by an async function that is
//! given the server (what a tool's `&self` has) and a `ResourceRequest`
//! (the URI, the variables its template matched, the caller). Both read
//! the server's own registry here:
//!
//! - `catalog://tools`, a fixed resource (listed in `resources/list`): the
//!   tools this server offers, written for the caller who reads it;
//! - `catalog://tools/{name}`, a templated resource (listed in
//!   `resources/templates/list`): one tool's definition, the name matched
//!   out of the URI; an unknown name is "resource not found".

use mcp_stateless::prelude::{FixedResource, Principal, ResourceRequest, Resources, TemplatedResource};
use rmcp::{
    ErrorData,
    model::{CacheScope, ReadResourceResult, Resource, ResourceContents, ResourceTemplate},
};

use crate::Server;

/// The tools, as Markdown for a client to show its user. Written for the
/// caller, so cached for the caller alone (the default).
async fn tools_overview(server: &Server, request: ResourceRequest) -> Result<ReadResourceResult, ErrorData> {
    let reader = match &request.ctx.principal {
        Principal::Verified { subject, .. } => subject.as_str(),
        Principal::Anonymous => "an anonymous caller",
    };
    let mut text = format!("# Tools on this server\n\nAs listed for {reader}.\n\n");
    for tool in server.registry.tools().list_all() {
        let description = tool.description.as_deref().unwrap_or("(no description)");
        text.push_str(&format!("- `{}`: {description} (catalog://tools/{})\n", tool.name, tool.name));
    }
    Ok(ReadResourceResult::new(vec![ResourceContents::text(text, request.uri).with_mime_type("text/markdown")]))
}

/// One tool's definition, as `tools/list` shows it.
async fn tool_definition(server: &Server, request: ResourceRequest) -> Result<ReadResourceResult, ErrorData> {
    let Some(tool) = request.variable("name").and_then(|name| server.registry.get_tool(name)) else {
        return Err(request.not_found());
    };
    let json = serde_json::to_string_pretty(&tool).map_err(|error| ErrorData::internal_error(error.to_string(), None))?;
    let contents = ResourceContents::text(json, request.uri).with_mime_type("application/json");
    // The same for every caller: a client may share it.
    Ok(ReadResourceResult::new(vec![contents]).with_ttl_ms(0).with_cache_scope(CacheScope::Public))
}

pub(crate) fn catalog_resources() -> Resources<Server> {
    let overview = Resource::new("catalog://tools", "tools")
        .with_title("Tools on this server")
        .with_description("The tools this server offers, for the caller who reads it")
        .with_mime_type("text/markdown");
    let definition = ResourceTemplate::new("catalog://tools/{name}", "tool")
        .with_title("A tool's definition")
        .with_description("One tool's name, description and input schema, as tools/list shows it")
        .with_mime_type("application/json");
    Resources::new().with(FixedResource::new(overview, tools_overview)).with(TemplatedResource::new(definition, tool_definition))
}

#[cfg(test)]
mod tests {
    use e2e::{post_with, request, set_header};
    use serde_json::{Value, json};

    use crate::testing::serve;

    async fn call(addr: std::net::SocketAddr, method: &str, params: Value) -> Value {
        let body = request(1, method, params, json!({}));
        post_with(addr, &body, |h| set_header(h, "x-mcp-dev-principal", "alice")).await.message()
    }

    async fn read(addr: std::net::SocketAddr, uri: &str) -> Value {
        call(addr, "resources/read", json!({"uri": uri})).await
    }

    /// Whatever tools the server has (none, once the other examples are
    /// deleted).
    async fn tool_names(addr: std::net::SocketAddr) -> Vec<String> {
        let listed = call(addr, "tools/list", json!({})).await;
        listed["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect()
    }

    #[tokio::test]
    async fn both_are_listed() {
        let addr = serve().await;
        let listed = call(addr, "resources/list", json!({})).await;
        assert!(listed["result"]["resources"].as_array().unwrap().iter().any(|r| r["uri"] == "catalog://tools"), "{listed}");
        let templates = call(addr, "resources/templates/list", json!({})).await;
        let templates = templates["result"]["resourceTemplates"].as_array().unwrap();
        assert!(templates.iter().any(|t| t["uriTemplate"] == "catalog://tools/{name}"), "{templates:?}");
    }

    #[tokio::test]
    async fn the_overview_lists_every_tool_for_its_reader() {
        let addr = serve().await;
        let reply = read(addr, "catalog://tools").await;
        let contents = &reply["result"]["contents"][0];
        assert_eq!(contents["mimeType"], "text/markdown", "{reply}");
        let text = contents["text"].as_str().unwrap();
        assert!(text.contains("As listed for alice."), "{text}");
        for name in tool_names(addr).await {
            assert!(text.contains(&format!("- `{name}`: ")), "{name} missing from {text}");
        }
    }

    #[tokio::test]
    async fn a_definition_is_read_by_name_and_an_unknown_name_is_not_found() {
        let addr = serve().await;
        for name in tool_names(addr).await {
            let reply = read(addr, &format!("catalog://tools/{name}")).await;
            let definition: Value = serde_json::from_str(reply["result"]["contents"][0]["text"].as_str().unwrap()).unwrap();
            assert_eq!(definition["name"], json!(name), "{reply}");
            assert_eq!(reply["result"]["cacheScope"], "public", "{reply}");
        }
        let unknown = read(addr, "catalog://tools/no_such_tool").await;
        // -32002 becomes -32602 for a 2026-07-28 client (SEP-2164).
        assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
        assert_eq!(unknown["error"]["data"], json!({"uri": "catalog://tools/no_such_tool"}));
    }
}
