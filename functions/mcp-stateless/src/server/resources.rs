//! Resources, in one list a server fills as it fills its tools: fixed ones
//! (one URI each, in `resources/list`), templated ones (an RFC 6570
//! template each, in `resources/templates/list`, its variables matched out
//! of the URI asked for), and handle kinds (`basket://<handle>`, read by
//! the handle's owner). A fixed or templated resource is read by an async
//! function of the server and a [`ResourceRequest`], as a tool is a method
//! of the server that takes a `CallContext`: it has the state a tool has,
//! and knows who is asking.

use std::{collections::BTreeMap, future::Future, ops::AddAssign, sync::Arc};

use futures::future::BoxFuture;
use rmcp::model::{ErrorData, ReadResourceResult, Resource, ResourceTemplate};

use super::uri_template::UriTemplate;
use crate::{
    handles::{
        access::Handles,
        resource::{HandleResource, HandleResources},
    },
    protocol::{self, context::CallContext},
};

/// One `resources/read`, as its reader is handed it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ResourceRequest {
    /// The URI asked for, as sent: what the contents name
    /// (`ResourceContents::text(text, request.uri)`).
    pub uri: String,
    /// The template's variables, percent-decoded; none for a fixed
    /// resource. They are the client's input: check them as a tool checks
    /// its arguments (`%2F` arrives as `/`).
    pub variables: BTreeMap<String, String>,
    /// The caller (verified principal), its client's capabilities and
    /// era: what a tool's `ctx: CallContext` holds.
    pub ctx: CallContext,
}

impl ResourceRequest {
    /// A read of `uri` with no variables, for `ctx`'s caller (for a
    /// reader's unit tests; the registry builds the real ones).
    pub fn new(uri: impl Into<String>, ctx: CallContext) -> Self {
        Self { uri: uri.into(), variables: BTreeMap::new(), ctx }
    }

    /// The value of the template variable `name`, if the template has one.
    pub fn variable(&self, name: &str) -> Option<&str> {
        self.variables.get(name).map(String::as_str)
    }

    /// The answer for a URI the template matched but nothing exists at
    /// (an unknown id): the same -32002 the registry gives a URI nothing
    /// matches.
    pub fn not_found(&self) -> ErrorData {
        protocol::resource_not_found(&self.uri)
    }
}

/// What reads a fixed or templated resource: an
/// `async fn(&Server, ResourceRequest) -> Result<ReadResourceResult, ErrorData>`,
/// free or a method of the server (`Server::catalog`). Implemented for
/// every such function; a closure is not one, as the future it returns
/// could not borrow the server.
pub trait ResourceReader<'a, S: 'a>: Send + Sync + 'static {
    /// The future the function returns.
    type Future: Future<Output = Result<ReadResourceResult, ErrorData>> + Send + 'a;
    /// Calls the function.
    fn read(&self, server: &'a S, request: ResourceRequest) -> Self::Future;
}

impl<'a, S: 'a, F, Fut> ResourceReader<'a, S> for F
where
    F: Fn(&'a S, ResourceRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ReadResourceResult, ErrorData>> + Send + 'a,
{
    type Future = Fut;

    fn read(&self, server: &'a S, request: ResourceRequest) -> Fut {
        self(server, request)
    }
}

/// A reader with its future boxed, so that readers of different
/// functions share one list.
trait BoxedReader<S>: Send + Sync {
    fn read<'a>(&'a self, server: &'a S, request: ResourceRequest) -> BoxFuture<'a, Result<ReadResourceResult, ErrorData>>;
}

impl<S: 'static, F: for<'a> ResourceReader<'a, S>> BoxedReader<S> for F {
    fn read<'a>(&'a self, server: &'a S, request: ResourceRequest) -> BoxFuture<'a, Result<ReadResourceResult, ErrorData>> {
        Box::pin(ResourceReader::read(self, server, request))
    }
}

/// A resource at one URI, listed in `resources/list`.
pub struct FixedResource<S> {
    resource: Resource,
    reader: Arc<dyn BoxedReader<S>>,
}

impl<S: 'static> FixedResource<S> {
    /// `resource` (its URI, name, and whatever else `resources/list`
    /// shows: description, MIME type, size), read by `read`.
    pub fn new<F: for<'a> ResourceReader<'a, S>>(resource: Resource, read: F) -> Self {
        Self { resource, reader: Arc::new(read) }
    }
}

impl<S> Clone for FixedResource<S> {
    fn clone(&self) -> Self {
        Self { resource: self.resource.clone(), reader: self.reader.clone() }
    }
}

/// Resources at every URI an RFC 6570 template matches, listed in
/// `resources/templates/list`: `{name}` matches one path segment (one or
/// more characters, `/` excepted) and `{+name}` one or more of any, so a
/// variable spans segments only where the template says so. A URI
/// matched here never reaches the templates added after it.
pub struct TemplatedResource<S> {
    template: ResourceTemplate,
    matcher: UriTemplate,
    reader: Arc<dyn BoxedReader<S>>,
}

impl<S: 'static> TemplatedResource<S> {
    /// `template` (its `uriTemplate`, name, and whatever else
    /// `resources/templates/list` shows), read by `read`.
    ///
    /// # Panics
    ///
    /// When the template uses a form other than `{name}` and `{+name}`
    /// (an operator, a list, a modifier), repeats a name, leaves a brace
    /// open, or puts two expressions side by side: a bug in the server,
    /// which its first test that builds the server shows.
    #[track_caller]
    pub fn new<F: for<'a> ResourceReader<'a, S>>(template: ResourceTemplate, read: F) -> Self {
        let matcher = UriTemplate::parse(&template.uri_template)
            .unwrap_or_else(|error| panic!("resource template {}: {error}", template.uri_template));
        Self { template, matcher, reader: Arc::new(read) }
    }
}

impl<S> Clone for TemplatedResource<S> {
    fn clone(&self) -> Self {
        Self { template: self.template.clone(), matcher: self.matcher.clone(), reader: self.reader.clone() }
    }
}

/// Every resource a server serves: fixed, templated and handle-backed.
/// `+=` adds one resource, or another list (one per file, added up in one
/// place). A `resources/read` goes to the fixed resource of that URI, else
/// the first template that matches it, in the order added, else the handle
/// kind of its scheme; anything else is "resource not found".
///
/// ```
/// use mcp_stateless::prelude::{CallContext, FixedResource, Principal, ResourceRequest, Resources, TemplatedResource};
/// use rmcp::{ErrorData, model::{ReadResourceResult, Resource, ResourceContents, ResourceTemplate}};
///
/// struct Server {
///     motto: String,
/// }
///
/// // The server's state, as a tool's `&self` has it.
/// async fn motto(server: &Server, request: ResourceRequest) -> Result<ReadResourceResult, ErrorData> {
///     Ok(ReadResourceResult::new(vec![ResourceContents::text(server.motto.clone(), request.uri)]))
/// }
///
/// // The variables the template matched, and the caller.
/// async fn greeting(_server: &Server, request: ResourceRequest) -> Result<ReadResourceResult, ErrorData> {
///     let name = request.variable("name").unwrap_or_default();
///     let from = match &request.ctx.principal {
///         Principal::Verified { subject, .. } => subject.as_str(),
///         Principal::Anonymous => "a stranger",
///     };
///     Ok(ReadResourceResult::new(vec![ResourceContents::text(format!("Hello, {name}, from {from}."), request.uri)]))
/// }
///
/// let mut resources = Resources::<Server>::new();
/// resources += FixedResource::new(Resource::new("example://motto", "motto"), motto);
/// resources += TemplatedResource::new(ResourceTemplate::new("example://greetings/{name}", "greeting"), greeting);
/// assert_eq!(resources.list()[0].uri, "example://motto");
/// assert_eq!(resources.templates()[0].uri_template, "example://greetings/{name}");
/// ```
pub struct Resources<S> {
    fixed: Vec<FixedResource<S>>,
    templated: Vec<TemplatedResource<S>>,
    handles: HandleResources,
}

impl<S> Default for Resources<S> {
    fn default() -> Self {
        Self { fixed: Vec::new(), templated: Vec::new(), handles: HandleResources::default() }
    }
}

impl<S> Clone for Resources<S> {
    fn clone(&self) -> Self {
        Self { fixed: self.fixed.clone(), templated: self.templated.clone(), handles: self.handles.clone() }
    }
}

impl<S> Resources<S> {
    /// No resources yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// This list with `resource` added (`+=` as a builder).
    pub fn with<R>(mut self, resource: R) -> Self
    where
        Self: AddAssign<R>,
    {
        self += resource;
        self
    }

    /// Whether nothing is registered: then the server advertises no
    /// resources capability.
    pub fn is_empty(&self) -> bool {
        self.fixed.is_empty() && self.templated.is_empty() && self.handles.is_empty()
    }

    /// `resources/list`: the fixed resources, in the order added (a handle
    /// is its owner's alone, so none is listed for everyone).
    pub fn list(&self) -> Vec<Resource> {
        self.fixed.iter().map(|fixed| fixed.resource.clone()).collect()
    }

    /// `resources/templates/list`: the templates in the order added, then
    /// one per handle kind.
    pub fn templates(&self) -> Vec<ResourceTemplate> {
        let mut templates: Vec<ResourceTemplate> = self.templated.iter().map(|templated| templated.template.clone()).collect();
        templates.extend(self.handles.templates());
        templates
    }

    /// The handle kinds among them (the ones a listen stream can watch).
    pub fn handles(&self) -> &HandleResources {
        &self.handles
    }

    /// `resources/read` of `uri` by `ctx`'s caller, on `server`.
    pub(crate) async fn read(&self, server: &S, handles: &Handles, ctx: CallContext, uri: &str) -> Result<ReadResourceResult, ErrorData> {
        if let Some(fixed) = self.fixed.iter().find(|fixed| fixed.resource.uri == uri) {
            return fixed.reader.read(server, ResourceRequest::new(uri, ctx)).await;
        }
        let matched = self.templated.iter().find_map(|templated| templated.matcher.matches(uri).map(|variables| (templated, variables)));
        if let Some((templated, variables)) = matched {
            let request = ResourceRequest { uri: uri.to_owned(), variables: variables.into_iter().collect(), ctx };
            return templated.reader.read(server, request).await;
        }
        if self.handles.claims(uri) {
            return self.handles.read(handles, &ctx, uri).await;
        }
        Err(protocol::resource_not_found(uri))
    }
}

/// A fixed resource, in place of any at the same URI.
impl<S> AddAssign<FixedResource<S>> for Resources<S> {
    fn add_assign(&mut self, resource: FixedResource<S>) {
        match self.fixed.iter_mut().find(|fixed| fixed.resource.uri == resource.resource.uri) {
            Some(same) => *same = resource,
            None => self.fixed.push(resource),
        }
    }
}

/// A templated resource, in place of any with the same template.
impl<S> AddAssign<TemplatedResource<S>> for Resources<S> {
    fn add_assign(&mut self, resource: TemplatedResource<S>) {
        match self.templated.iter_mut().find(|templated| templated.template.uri_template == resource.template.uri_template) {
            Some(same) => *same = resource,
            None => self.templated.push(resource),
        }
    }
}

/// A handle kind (`basket::BASKET_RESOURCE`).
impl<S> AddAssign<HandleResource> for Resources<S> {
    fn add_assign(&mut self, resource: HandleResource) {
        self.handles += resource;
    }
}

/// Handle kinds listed on their own.
impl<S> AddAssign<HandleResources> for Resources<S> {
    fn add_assign(&mut self, resources: HandleResources) {
        self.handles += resources;
    }
}

/// Another list: `resources += catalog::catalog_resources();`.
impl<S> AddAssign for Resources<S> {
    fn add_assign(&mut self, other: Resources<S>) {
        for fixed in other.fixed {
            *self += fixed;
        }
        for templated in other.templated {
            *self += templated;
        }
        self.handles += other.handles;
    }
}
