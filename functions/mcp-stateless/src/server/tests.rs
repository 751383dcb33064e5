//! The registry derives what it publishes from what was registered.

use rmcp::{
    handler::server::wrapper::Parameters,
    model::{GetPromptResult, PromptMessage, Role},
    prompt, prompt_router, schemars, tool, tool_router,
};
use serde_json::{Value, json};

use super::*;
use crate::{
    handles::{HandleKind, resource::HandleResource},
    subscriptions::{ListKind, ListenPolicy},
};

#[derive(Clone)]
struct Fixture;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Name {
    name: String,
}

#[tool_router(router = greetings)]
impl Fixture {
    #[tool(description = "Greets")]
    async fn greet(&self, Parameters(args): Parameters<Name>) -> String {
        format!("hello {}", args.name)
    }
}

#[prompt_router(router = "prompts")]
impl Fixture {
    #[prompt(description = "Asks for a greeting")]
    async fn greeting(&self) -> GetPromptResult {
        GetPromptResult::new(vec![PromptMessage::new_text(Role::User, "Greet me.")])
    }
}

const NOTES: HandleResource = HandleResource { scheme: "note", kind: &NOTE, description: "A note", render: |record| record.data.clone() };

static NOTE: HandleKind = HandleKind {
    prefix: "note",
    noun: "note",
    created_by: "greet",
    idle_ttl: std::time::Duration::from_secs(60),
    max_lifetime: std::time::Duration::from_secs(600),
    max_data_bytes: 1024,
    max_per_owner: 10,
};

fn deps(listen: bool) -> Dependencies {
    let mut deps = Dependencies::in_process();
    deps.subscriptions = deps.subscriptions.with_policy(ListenPolicy::new(listen));
    deps
}

fn capabilities(registry: &Registry<Fixture>) -> Value {
    serde_json::to_value(&registry.info("fixture", "0.0.0").capabilities).unwrap()
}

#[tokio::test]
async fn capabilities_come_from_what_is_registered() {
    let tools_only = Registry::<Fixture>::builder(&deps(true)).tools(Fixture::greetings()).build();
    let caps = capabilities(&tools_only);
    assert_eq!(caps["tools"], json!({"listChanged": true}), "{caps}");
    assert!(caps.get("prompts").is_none() && caps.get("resources").is_none() && caps.get("completions").is_none(), "{caps}");

    let notes = Resources::new().with(NOTES);
    let full = Registry::<Fixture>::builder(&deps(true))
        .tools(Fixture::greetings())
        .prompts(Fixture::prompts())
        .resources(notes)
        .completions()
        .build();
    let caps = capabilities(&full);
    assert_eq!(caps["prompts"], json!({"listChanged": true}), "{caps}");
    assert_eq!(caps["resources"], json!({"listChanged": true, "subscribe": true}), "{caps}");
    assert_eq!(caps["completions"], json!({}), "{caps}");
    assert_eq!(full.list_resource_templates()[0].uri_template, "note://{handle}");

    // Fixed and templated resources do not change under a client: listed,
    // not watched.
    let read_only = Registry::<Fixture>::builder(&deps(true)).resources(Resources::new().with(motto_resource())).build();
    assert_eq!(capabilities(&read_only)["resources"], json!({"listChanged": true}));

    // Where answers do not stream, nothing changes under a client.
    let buffered = Registry::<Fixture>::builder(&deps(false)).prompts(Fixture::prompts()).build();
    assert_eq!(capabilities(&buffered)["prompts"], json!({}));
}

#[tokio::test]
async fn listen_digests_follow_the_registered_lists() {
    let digests = |registry: Registry<Fixture>| registry.subscriptions().served_lists().cloned();
    let without = digests(Registry::builder(&deps(true)).tools(Fixture::greetings()).build()).unwrap();
    let with_prompt = digests(Registry::builder(&deps(true)).tools(Fixture::greetings()).prompts(Fixture::prompts()).build()).unwrap();
    assert_eq!(without.get(ListKind::Tools), with_prompt.get(ListKind::Tools));
    assert_ne!(without.get(ListKind::Prompts), with_prompt.get(ListKind::Prompts));
    // A task tool is a tool: it changes the tools list.
    let with_task = digests(
        Registry::builder(&deps(true))
            .tools(Fixture::greetings())
            .task_tools(TaskTools::new().with(crate::tasks::TaskTool::new(
                "later",
                "Runs later",
                crate::tasks::TaskSupport::Optional,
                |_: serde_json::Map<String, Value>, _| async { Ok(crate::tasks::TaskStep::text("done")) },
            )))
            .build(),
    )
    .unwrap();
    assert_ne!(without.get(ListKind::Tools), with_task.get(ListKind::Tools));
    // A resource, fixed or templated, changes the resources list.
    let resources = |resources: Resources<Fixture>| {
        digests(Registry::builder(&deps(true)).tools(Fixture::greetings()).resources(resources).build()).unwrap()
    };
    let fixed = resources(Resources::new().with(motto_resource()));
    let templated = resources(Resources::new().with(motto_resource()).with(greeting_resource()));
    assert_ne!(without.get(ListKind::Resources), fixed.get(ListKind::Resources));
    assert_ne!(fixed.get(ListKind::Resources), templated.get(ListKind::Resources));
    assert_eq!(without.get(ListKind::Tools), templated.get(ListKind::Tools));
    // Not computed where no stream could use them.
    assert!(digests(Registry::builder(&deps(false)).tools(Fixture::greetings()).build()).is_none());
}

#[tokio::test]
async fn a_server_without_prompts_answers_prompts_list_as_rmcp_does() {
    let tools_only = Registry::<Fixture>::builder(&deps(true)).tools(Fixture::greetings()).build();
    assert_eq!(tools_only.list_prompts().unwrap_err().code, rmcp::model::ErrorCode::METHOD_NOT_FOUND);
    let with_prompts = Registry::<Fixture>::builder(&deps(true)).prompts(Fixture::prompts()).build();
    assert_eq!(with_prompts.list_prompts().unwrap().len(), 1);
}

// Resources: read by async functions of the server and the request.

async fn motto(_server: &Fixture, request: ResourceRequest) -> Result<ReadResourceResult, ErrorData> {
    Ok(ReadResourceResult::new(vec![rmcp::model::ResourceContents::text("Keep it small.", request.uri)]))
}

fn motto_resource() -> FixedResource<Fixture> {
    FixedResource::new(Resource::new("fixture://motto", "motto"), motto)
}

/// The caller and the variables, back as text.
async fn greeting(_server: &Fixture, request: ResourceRequest) -> Result<ReadResourceResult, ErrorData> {
    let name = request.variable("name").unwrap_or_default();
    if name == "nobody" {
        return Err(request.not_found());
    }
    let caller = request.ctx.principal.binding_id();
    Ok(ReadResourceResult::new(vec![rmcp::model::ResourceContents::text(format!("{name} for {caller}"), request.uri)]))
}

fn greeting_resource() -> TemplatedResource<Fixture> {
    TemplatedResource::new(ResourceTemplate::new("fixture://greetings/{name}", "greeting"), greeting)
}

/// A server with state, read through `&self` as a tool reads it.
#[derive(Clone)]
struct Library {
    shelves: Vec<&'static str>,
}

impl Library {
    async fn shelf(&self, request: ResourceRequest) -> Result<ReadResourceResult, ErrorData> {
        let index: usize = request.variable("index").and_then(|index| index.parse().ok()).ok_or_else(|| request.not_found())?;
        let shelf = self.shelves.get(index).ok_or_else(|| request.not_found())?;
        Ok(ReadResourceResult::new(vec![rmcp::model::ResourceContents::text(*shelf, request.uri)]))
    }
}

fn text(result: Result<ReadResourceResult, ErrorData>) -> String {
    let result = result.unwrap_or_else(|error| panic!("{error:?}"));
    serde_json::to_value(&result.contents[0]).unwrap()["text"].as_str().unwrap().to_owned()
}

fn alice() -> CallContext {
    let alice = crate::Principal::Verified { issuer: "https://issuer.example".into(), subject: "alice".into() };
    CallContext::with_capabilities(alice, json!({}))
}

#[tokio::test]
async fn resources_are_listed_and_read_as_registered() {
    let registry = Registry::<Fixture>::builder(&deps(true))
        .resources(Resources::new().with(motto_resource()).with(greeting_resource()).with(NOTES))
        .build();
    let uris: Vec<String> = registry.list_resources().into_iter().map(|r| r.uri).collect();
    assert_eq!(uris, ["fixture://motto"]);
    let templates: Vec<String> = registry.list_resource_templates().into_iter().map(|t| t.uri_template).collect();
    assert_eq!(templates, ["fixture://greetings/{name}", "note://{handle}"], "templates first, then handle kinds");

    let read = |uri: &'static str| registry.resources.read(&Fixture, &registry.handles, alice(), uri);
    assert_eq!(text(read("fixture://motto").await), "Keep it small.");
    let caller = alice().principal.binding_id();
    assert_eq!(text(read("fixture://greetings/Ada%20Lovelace").await), format!("Ada Lovelace for {caller}"));

    // Nothing there, a template's reader finding nothing, a handle nobody
    // made: one answer, naming only the URI asked for.
    for uri in ["fixture://nothing", "fixture://greetings/a/b", "fixture://greetings/nobody", "note://note_AAAAAAAAAAAAAAAAAAAAAA", ""] {
        let error = read(uri).await.unwrap_err();
        assert_eq!(error.code, rmcp::model::ErrorCode::RESOURCE_NOT_FOUND, "{uri}");
        assert_eq!(error.message, "Resource not found", "{uri}");
        assert_eq!(error.data, Some(json!({"uri": uri})), "{uri}");
    }
}

#[tokio::test]
async fn a_read_goes_to_the_fixed_uri_then_the_first_matching_template() {
    async fn catch_all(_server: &Fixture, request: ResourceRequest) -> Result<ReadResourceResult, ErrorData> {
        Ok(ReadResourceResult::new(vec![rmcp::model::ResourceContents::text("any", request.uri)]))
    }
    let mut resources = Resources::new();
    resources += greeting_resource();
    resources += TemplatedResource::new(ResourceTemplate::new("fixture://{+anything}", "anything"), catch_all);
    resources += FixedResource::new(Resource::new("fixture://greetings/motto", "motto"), motto);
    let registry = Registry::<Fixture>::builder(&deps(false)).resources(resources).build();
    let read = |uri: &'static str| registry.resources.read(&Fixture, &registry.handles, alice(), uri);
    assert_eq!(text(read("fixture://greetings/motto").await), "Keep it small.", "the fixed URI first");
    assert!(text(read("fixture://greetings/ada").await).starts_with("ada for "), "then the templates in order");
    assert_eq!(text(read("fixture://greetings/a/b").await), "any");
}

#[tokio::test]
async fn a_reader_has_the_servers_state() {
    let library = Library { shelves: vec!["poetry", "maps"] };
    let mut resources = Resources::new();
    resources += TemplatedResource::new(ResourceTemplate::new("library://shelves/{index}", "shelf"), Library::shelf);
    let registry = Registry::<Library>::builder(&deps(false)).resources(resources).build();
    let read = |uri: &'static str| registry.resources.read(&library, &registry.handles, alice(), uri);
    assert_eq!(text(read("library://shelves/1").await), "maps");
    assert_eq!(read("library://shelves/7").await.unwrap_err().data, Some(json!({"uri": "library://shelves/7"})));
}

#[tokio::test]
async fn the_same_uri_or_template_added_twice_is_served_once() {
    let mut resources = Resources::<Fixture>::new();
    resources += motto_resource();
    resources += Resources::new().with(motto_resource()).with(greeting_resource());
    resources += greeting_resource();
    assert_eq!((resources.list().len(), resources.templates().len()), (1, 1));
    assert!(Resources::<Fixture>::new().is_empty());
}

#[test]
#[should_panic(expected = "resource template fixture://{a}{b}")]
fn a_template_the_matcher_cannot_read_is_refused_when_declared() {
    let _ = TemplatedResource::new(ResourceTemplate::new("fixture://{a}{b}", "pair"), motto);
}
