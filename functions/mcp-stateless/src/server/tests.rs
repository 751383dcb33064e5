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

    let mut notes = HandleResources::default();
    notes += HandleResource { scheme: "note", kind: &NOTE, description: "A note", render: |record| record.data.clone() };
    let full = Registry::<Fixture>::builder(&deps(true))
        .tools(Fixture::greetings())
        .prompts(Fixture::prompts())
        .handle_resources(notes)
        .completions()
        .build();
    let caps = capabilities(&full);
    assert_eq!(caps["prompts"], json!({"listChanged": true}), "{caps}");
    assert_eq!(caps["resources"], json!({"listChanged": true, "subscribe": true}), "{caps}");
    assert_eq!(caps["completions"], json!({}), "{caps}");
    assert_eq!(full.list_resource_templates()[0].uri_template, "note://{handle}");

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
