//! Example: state that spans calls behind an explicit handle.
//!
//! `create_basket` mints an opaque handle; the other tools take it as an
//! ordinary argument. The basket lives in the project's DynamoDB table (in
//! memory locally), bound to the caller: another principal's call with the
//! same handle gets the same answer as an unknown handle. `checkout` asks
//! the user to confirm before the destructive step, and opens its state at
//! most once, so a replayed confirmation cannot place a second order.
//!
//! Each basket is also a resource, `basket://<handle>` ([`BASKET_RESOURCE`]):
//! its owner can read it, and a `subscriptions/listen` stream that names it
//! in `resourceSubscriptions` is told when it changes, from any instance.

use std::time::Duration;

use mcp_stateless::prelude::{
    CallContext, Change, ElicitationReply, HandleFailure, HandleKind, HandleRecord, HandleResource, StateScope, ask_one, checked_reply,
    form_request, require_form_elicitation,
};
use rmcp::{
    ErrorData, Json,
    handler::server::{
        tool::{InputResponses, RequestState},
        wrapper::Parameters,
    },
    model::{CallToolResponse, CallToolResult, ContentBlock},
    tool, tool_router,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::Server;

/// The lifetime policy, stated in `create_basket`'s description too.
pub const BASKET: HandleKind = HandleKind {
    prefix: "bsk",
    noun: "basket",
    created_by: "create_basket",
    idle_ttl: Duration::from_secs(24 * 3600),
    max_lifetime: Duration::from_secs(7 * 24 * 3600),
    max_data_bytes: 32 * 1024,
    // Per caller per week; at most twice this many open at once.
    max_per_owner: 20,
};
pub const MAX_LINES: usize = 200;

/// Baskets as resources: `basket://<handle>`, read as JSON.
pub const BASKET_RESOURCE: HandleResource = HandleResource {
    scheme: "basket",
    kind: &BASKET,
    description: "A basket's lines and expiry (its owner only); subscribe to hear when it changes",
    render: render_basket,
};

fn render_basket(record: &HandleRecord) -> Value {
    json!({"lines": lines(&record.data), "expires_at": record.expires_at})
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct BasketArgument {
    /// The handle `create_basket` returned (`bsk_...`).
    pub basket: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct AddItem {
    /// The handle `create_basket` returned (`bsk_...`).
    pub basket: String,
    /// What to add, e.g. "oat milk".
    #[schemars(length(min = 1, max = 100))]
    pub item: String,
    /// How many (1-99).
    #[schemars(range(min = 1, max = 99))]
    pub quantity: u32,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct Line {
    pub item: String,
    pub quantity: u32,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct BasketView {
    pub basket: String,
    pub lines: Vec<Line>,
    /// Seconds since the epoch after which the basket is gone unless used.
    pub expires_at: u64,
}

/// What checkout seals between its rounds: the basket version the user
/// was asked about.
#[derive(Debug, Serialize, Deserialize)]
struct Confirming {
    version: u64,
}

/// The confirmation form, asked in one round and checked in the next.
fn confirm_schema() -> Value {
    json!({"type": "object", "properties": {"confirm": {"type": "boolean", "title": "Place the order"}}, "required": ["confirm"]})
}

fn lines(data: &Value) -> Vec<Line> {
    serde_json::from_value(data.get("lines").cloned().unwrap_or_default()).unwrap_or_default()
}

fn text(message: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(message)])
}

fn failed(failure: HandleFailure) -> Result<CallToolResult, ErrorData> {
    failure.into_tool_result(&BASKET)
}

#[tool_router(router = basket_tools, vis = "pub(crate)")]
impl Server {
    #[tool(
        description = "Creates an empty shopping basket and returns its handle. Baskets expire after 24 hours unused, and 7 days after they were created."
    )]
    async fn create_basket(&self, ctx: CallContext) -> Result<CallToolResult, ErrorData> {
        match self.handles.create(&ctx, &BASKET, json!({"lines": []})).await {
            Ok(handle) => Ok(text(format!("Created basket {handle}. Pass it as `basket` to add_item, view_basket and checkout."))),
            Err(failure) => failed(failure),
        }
    }

    #[tool(description = "Adds an item to a basket")]
    async fn add_item(&self, ctx: CallContext, Parameters(args): Parameters<AddItem>) -> Result<CallToolResult, ErrorData> {
        // The schema already bounds the length and the quantity (checked
        // before this runs); it cannot say "not only spaces".
        if args.item.trim().is_empty() {
            return Ok(CallToolResult::error(vec![ContentBlock::text("Give an item that is not only spaces.")]));
        }
        let line = json!({"item": args.item.trim(), "quantity": args.quantity});
        let change = Change::Append { field: "lines".into(), value: line, max_len: MAX_LINES };
        match self.handles.apply(&ctx, &BASKET, &args.basket, &change).await {
            Ok(record) => {
                Ok(text(format!("Added {} x {}. The basket has {} line(s).", args.quantity, args.item.trim(), lines(&record.data).len())))
            }
            Err(failure) => failed(failure),
        }
    }

    #[tool(description = "Shows what is in a basket")]
    async fn view_basket(
        &self,
        ctx: CallContext,
        Parameters(args): Parameters<BasketArgument>,
    ) -> Result<Json<BasketView>, Result<CallToolResult, ErrorData>> {
        // The error side is itself a Result, as in every other tool: a
        // failure the model can act on is a tool error, a store failure is
        // -32603 (HandleFailure::into_tool_result decides which).
        match self.handles.read(&ctx, &BASKET, &args.basket).await {
            Ok(record) => Ok(Json(BasketView { lines: lines(&record.data), basket: args.basket, expires_at: record.expires_at })),
            Err(failure) => Err(failed(failure)),
        }
    }

    /// Revokes the handle: the basket is deleted now rather than when it
    /// expires, and stops counting towards the caller's basket limit.
    #[tool(description = "Discards a basket without ordering: its handle stops working", annotations(destructive_hint = true))]
    async fn discard_basket(&self, ctx: CallContext, Parameters(args): Parameters<BasketArgument>) -> Result<CallToolResult, ErrorData> {
        match self.handles.delete(&ctx, &BASKET, &args.basket).await {
            Ok(record) => Ok(text(format!("Discarded the basket and its {} line(s).", lines(&record.data).len()))),
            Err(failure) => failed(failure),
        }
    }

    /// Round 1 asks for confirmation; round 2 places the order and deletes
    /// the basket. The state is single-use: replaying it is refused.
    #[tool(
        description = "Places the order for a basket after the user confirms, then deletes the basket",
        annotations(destructive_hint = true)
    )]
    async fn checkout(
        &self,
        ctx: CallContext,
        Parameters(args): Parameters<BasketArgument>,
        RequestState(state): RequestState,
        InputResponses(responses): InputResponses,
    ) -> Result<CallToolResponse, ErrorData> {
        let bound = json!({"basket": args.basket});
        let scope = StateScope::tool("checkout", &bound);
        let Some(token) = state else {
            // Before the read (which slides the expiry) and the seal.
            require_form_elicitation(&ctx)?;
            let record = match self.handles.read(&ctx, &BASKET, &args.basket).await {
                Ok(record) => record,
                Err(failure) => return failed(failure).map(Into::into),
            };
            let count = lines(&record.data).len();
            if count == 0 {
                return Ok(text("The basket is empty: add items before checking out.").into());
            }
            let question =
                form_request(&format!("Place the order for {count} line(s)? The basket is deleted afterwards."), confirm_schema())?;
            // What the user is shown is what gets ordered: the delete below
            // only happens at this version of the basket.
            let state = self.request_states.seal(&ctx, scope, &Confirming { version: record.version }).await?;
            return Ok(ask_one("confirm", question, state).into());
        };
        // Checked before the single-use state is spent: an answer that does
        // not fit can be sent again, fixed.
        let reply = checked_reply(&responses, "confirm", &confirm_schema())?;
        let Confirming { version } = self.request_states.open_once(&ctx, scope, &token).await?;
        let confirmed = match reply {
            ElicitationReply::Accepted(content) => content.get("confirm").and_then(Value::as_bool) == Some(true),
            ElicitationReply::Declined | ElicitationReply::Cancelled => false,
            ElicitationReply::Missing => {
                return Ok(CallToolResult::error(vec![ContentBlock::text("No confirmation was given; call checkout again.")]).into());
            }
        };
        if !confirmed {
            return Ok(text("Checkout cancelled; the basket is unchanged.").into());
        }
        match self.handles.delete_at(&ctx, &BASKET, &args.basket, version).await {
            Ok(record) => Ok(text(format!("Order placed for {} line(s). The basket is closed.", lines(&record.data).len())).into()),
            Err(HandleFailure::Busy) => Ok(CallToolResult::error(vec![ContentBlock::text(
                "The basket changed after you were asked to confirm; nothing was ordered. Call checkout again to confirm what it holds now.",
            )])
            .into()),
            Err(failure) => failed(failure).map(Into::into),
        }
    }
}

#[cfg(test)]
mod tests {
    use e2e::{call_tool, text_of};

    use super::*;
    use crate::testing::{serve, serve_with_handle_store_down};

    const ELICIT: fn() -> Value = || json!({"elicitation": {}});

    async fn create(addr: std::net::SocketAddr) -> String {
        let created = call_tool(addr, "alice", "create_basket", json!({}), json!({}), json!({})).await;
        // "Created basket bsk_... . Pass it as ..."
        text_of(&created).split_whitespace().nth(2).unwrap().trim_end_matches('.').to_owned()
    }

    async fn add(addr: std::net::SocketAddr, basket: &str, item: &str, quantity: u32) -> Value {
        call_tool(addr, "alice", "add_item", json!({"basket": basket, "item": item, "quantity": quantity}), json!({}), json!({})).await
    }

    fn confirm(state: &Value, yes: bool) -> Value {
        json!({"requestState": state, "inputResponses": {"confirm": {"action": "accept", "content": {"confirm": yes}}}})
    }

    /// The basket as a resource: its owner reads it and hears when it
    /// changes; anyone else gets what an unknown basket gets.
    #[tokio::test]
    async fn a_basket_is_a_resource_its_owner_reads_and_watches() {
        use e2e::{EventStream, post_with, request, set_header, streams::listen};
        let addr = serve().await;
        let basket = create(addr).await;
        let uri = format!("basket://{basket}");
        let read = |who: &'static str, uri: String| async move {
            let body = request(1, "resources/read", json!({"uri": uri}), json!({}));
            post_with(addr, &body, |h| set_header(h, "x-mcp-dev-principal", who)).await.json()
        };
        let own = read("alice", uri.clone()).await;
        let contents: Value = serde_json::from_str(own["result"]["contents"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(contents["lines"], json!([]), "{own}");
        let foreign = read("mallory", uri.clone()).await;
        let unknown = read("mallory", "basket://bsk_AAAAAAAAAAAAAAAAAAAAAA".into()).await;
        for field in ["code", "message"] {
            assert_eq!(foreign["error"][field], unknown["error"][field], "somebody else's basket reads like an unknown one");
        }
        assert_eq!(foreign["error"]["data"]["uri"], json!(uri), "only the URI asked for is echoed");

        let filter = json!({"resourceSubscriptions": [uri]});
        let mut owner = EventStream::open(addr, &listen(1, filter.clone(), json!({})), Some("alice")).await;
        let mut other = EventStream::open(addr, &listen(2, filter, json!({})), Some("mallory")).await;
        for stream in [&mut owner, &mut other] {
            let ack = stream.until_method("notifications/subscriptions/acknowledged").await;
            assert_eq!(ack["params"]["notifications"]["resourceSubscriptions"], json!([uri]), "acknowledged alike: {ack}");
        }
        // Past the window in which a change counts as made with the
        // acknowledgement (the basket was just created).
        tokio::time::sleep(Duration::from_millis(1100)).await;
        while let Some(early) = owner.next_within(Duration::from_millis(10)).await {
            assert_eq!(early["method"], "notifications/resources/updated", "{early}");
        }
        add(addr, &basket, "tea", 1).await;
        let updated = owner.until_method("notifications/resources/updated").await;
        assert_eq!(updated["params"]["uri"], json!(uri));
        assert_eq!(updated["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 1);
        // Mallory's stream has polled as often as alice's: nothing.
        assert_eq!(other.next_within(Duration::from_millis(600)).await, None);
        // Discarded, the basket is gone: that is an update too.
        call_tool(addr, "alice", "discard_basket", json!({"basket": basket}), json!({}), json!({})).await;
        let gone = owner.until_method("notifications/resources/updated").await;
        assert_eq!(gone["params"]["uri"], json!(uri));
        assert!(read("alice", uri.clone()).await["error"].is_object(), "and reading it now fails");
    }

    #[tokio::test]
    async fn fill_view_and_check_out_once() {
        let addr = serve().await;
        let basket = create(addr).await;
        assert!(BASKET.is_well_formed(&basket), "{basket}");
        assert_eq!(text_of(&add(addr, &basket, " bread ", 2).await), "Added 2 x bread. The basket has 1 line(s).");
        assert_eq!(add(addr, &basket, "jam", 0).await["result"]["isError"], true);
        let view = call_tool(addr, "alice", "view_basket", json!({"basket": basket}), json!({}), json!({})).await;
        assert_eq!(view["result"]["structuredContent"]["lines"], json!([{"item": "bread", "quantity": 2}]));

        let round1 = call_tool(addr, "alice", "checkout", json!({"basket": basket}), ELICIT(), json!({})).await;
        assert_eq!(round1["result"]["resultType"], "input_required", "{round1}");
        let state = &round1["result"]["requestState"];
        let placed = call_tool(addr, "alice", "checkout", json!({"basket": basket}), ELICIT(), confirm(state, true)).await;
        assert_eq!(text_of(&placed), "Order placed for 1 line(s). The basket is closed.");
        let replay = call_tool(addr, "alice", "checkout", json!({"basket": basket}), ELICIT(), confirm(state, true)).await;
        assert_eq!(replay["error"]["code"], -32602, "a confirmation opens once: {replay}");
        let gone = call_tool(addr, "alice", "view_basket", json!({"basket": basket}), json!({}), json!({})).await;
        assert!(text_of(&gone).starts_with("Unknown basket handle"), "{gone}");
    }

    #[tokio::test]
    async fn a_confirmation_orders_only_what_the_user_was_shown() {
        let addr = serve().await;
        let basket = create(addr).await;
        add(addr, &basket, "tea", 1).await;
        let round1 = call_tool(addr, "alice", "checkout", json!({"basket": basket}), ELICIT(), json!({})).await;
        assert!(round1["result"]["inputRequests"]["confirm"]["params"]["message"].as_str().unwrap().contains("1 line(s)"));
        add(addr, &basket, "cake", 3).await;
        let confirmed =
            call_tool(addr, "alice", "checkout", json!({"basket": basket}), ELICIT(), confirm(&round1["result"]["requestState"], true))
                .await;
        assert_eq!(confirmed["result"]["isError"], true, "{confirmed}");
        assert!(text_of(&confirmed).starts_with("The basket changed"), "{confirmed}");
        let view = call_tool(addr, "alice", "view_basket", json!({"basket": basket}), json!({}), json!({})).await;
        assert_eq!(view["result"]["structuredContent"]["lines"].as_array().unwrap().len(), 2, "nothing was ordered");
    }

    #[tokio::test]
    async fn a_client_that_cannot_confirm_is_refused_before_anything_happens() {
        let addr = serve().await;
        // An unknown basket shows the order: the capability is checked
        // before the basket is read (a read slides its expiry, a write).
        let reply = call_tool(addr, "alice", "checkout", json!({"basket": BASKET.mint()}), json!({}), json!({})).await;
        assert_eq!(reply["error"]["code"], -32021, "{reply}");
        assert_eq!(reply["error"]["data"]["requiredCapabilities"], json!({"elicitation": {"form": {}}}));
    }

    #[tokio::test]
    async fn arguments_outside_the_published_schema_change_nothing() {
        let addr = serve().await;
        let basket = create(addr).await;
        let longest = add(addr, &basket, &"x".repeat(100), 99).await;
        assert!(text_of(&longest).starts_with("Added 99 x"), "the longest item the schema allows fits: {longest}");
        // maxLength 100 is published in the schema, so it is enforced.
        let long = add(addr, &basket, &"y".repeat(200), 1).await;
        assert_eq!(long["result"]["isError"], true, "{long}");
        assert!(text_of(&long).starts_with("Invalid argument /item:"), "{long}");
        let many = add(addr, &basket, "tea", 100).await;
        assert!(text_of(&many).starts_with("Invalid argument /quantity:"), "{many}");
        let spaces = add(addr, &basket, "   ", 1).await;
        assert_eq!(spaces["result"]["isError"], true, "{spaces}");
        let view = call_tool(addr, "alice", "view_basket", json!({"basket": basket}), json!({}), json!({})).await;
        assert_eq!(view["result"]["structuredContent"]["lines"].as_array().unwrap().len(), 1);
    }

    #[tokio::test]
    async fn a_store_failure_is_the_same_server_error_in_every_tool() {
        let addr = serve_with_handle_store_down().await;
        let basket = BASKET.mint();
        for (tool, arguments) in [
            ("create_basket", json!({})),
            ("add_item", json!({"basket": basket, "item": "tea", "quantity": 1})),
            ("view_basket", json!({"basket": basket})),
            ("checkout", json!({"basket": basket})),
        ] {
            let reply = call_tool(addr, "alice", tool, arguments, ELICIT(), json!({})).await;
            assert_eq!(reply["error"]["code"], -32603, "{tool}: {reply}");
            assert_eq!(reply["error"]["message"], "storage unavailable", "{tool}: nothing about the store leaks");
        }
    }

    #[tokio::test]
    async fn a_caller_has_a_bounded_number_of_baskets_and_discarding_frees_one() {
        let addr = serve().await;
        let mut baskets = Vec::new();
        for _ in 0..BASKET.max_per_owner {
            baskets.push(create(addr).await);
        }
        let refused = call_tool(addr, "alice", "create_basket", json!({}), json!({}), json!({})).await;
        assert!(text_of(&refused).starts_with("You have too many open baskets"), "{refused}");
        add(addr, &baskets[0], "tea", 1).await;
        let discarded = call_tool(addr, "alice", "discard_basket", json!({"basket": baskets[0]}), json!({}), json!({})).await;
        assert_eq!(text_of(&discarded), "Discarded the basket and its 1 line(s).");
        assert!(text_of(&add(addr, &baskets[0], "tea", 1).await).starts_with("Unknown basket handle"), "revoked");
        assert!(BASKET.is_well_formed(&create(addr).await), "its place is free");
    }

    #[tokio::test]
    async fn another_caller_cannot_see_or_change_it() {
        let addr = serve().await;
        let basket = create(addr).await;
        let theirs = call_tool(addr, "bob", "add_item", json!({"basket": basket, "item": "x", "quantity": 1}), json!({}), json!({})).await;
        assert!(text_of(&theirs).starts_with("Unknown basket handle"), "{theirs}");
        let view = call_tool(addr, "alice", "view_basket", json!({"basket": basket}), json!({}), json!({})).await;
        assert_eq!(view["result"]["structuredContent"]["lines"], json!([]));
    }

    #[tokio::test]
    async fn an_empty_basket_or_a_no_leaves_it_alone() {
        let addr = serve().await;
        let basket = create(addr).await;
        let empty = call_tool(addr, "alice", "checkout", json!({"basket": basket}), ELICIT(), json!({})).await;
        assert_eq!(text_of(&empty), "The basket is empty: add items before checking out.");

        add(addr, &basket, "tea", 1).await;
        let round1 = call_tool(addr, "alice", "checkout", json!({"basket": basket}), ELICIT(), json!({})).await;
        let declined =
            call_tool(addr, "alice", "checkout", json!({"basket": basket}), ELICIT(), confirm(&round1["result"]["requestState"], false))
                .await;
        assert_eq!(text_of(&declined), "Checkout cancelled; the basket is unchanged.");
        let view = call_tool(addr, "alice", "view_basket", json!({"basket": basket}), json!({}), json!({})).await;
        assert_eq!(view["result"]["structuredContent"]["lines"], json!([{"item": "tea", "quantity": 1}]));
    }
}
