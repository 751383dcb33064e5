//! The endpoint's one branch for the 2025 era: each [`Route`] served, and a
//! call that may ask its client mid-call held as a conversation on its
//! stream (`back_channel`).

use std::{sync::Arc, time::Instant};

use bytes::Bytes;
use http::{HeaderValue, StatusCode, header};
use rmcp::ServerHandler;
use serde_json::{Map, Value};

use super::{
    Route,
    back_channel::{self, Conversation, Template},
    inbound::{Legacy, Step},
    session_routes,
};
use crate::{
    deployment::LogFormat,
    edge::{
        admission::{Admission, Admitted},
        endpoint::{KEEP_ALIVE, McpEndpoint, Reply, out_of_time, refused},
        error::EdgeError,
        request_log::RequestLog,
        rewrite::{FinalRewrite, Finished, no_store},
        stream::{Delivery, EdgeBody, STREAM_MARGIN},
    },
    metrics::Counts,
    protocol::{
        context::{CallContext, Era},
        scope::RequestScope,
    },
    sessions::{LegacySessions, Session},
    subscriptions::TaskIdsFilter,
};

impl<S: ServerHandler + Clone> McpEndpoint<S> {
    /// Serves a 2025-era `route` (admission finds routes only where the
    /// era is served).
    pub(in crate::edge) async fn serve_legacy(
        &self,
        route: Route,
        admission: &Admission<'_>,
        log: &mut RequestLog,
        delivery: Delivery,
    ) -> Reply {
        let side = &self.legacy;
        let Some(sessions) = &side.sessions else {
            return Reply::Whole(refused(log, EdgeError::MethodNotAllowed, None));
        };
        match route {
            Route::Answer(request, message, principal) => {
                Reply::Whole(session_routes::take_answer(sessions, &request, &message, &principal).await)
            }
            Route::Notifications(request, principal) => {
                if !side.info.notifies {
                    return Reply::Whole(refused(log, EdgeError::MethodNotAllowed, None));
                }
                match session_routes::notification_stream(sessions, request, &principal).await {
                    Err(response) => Reply::Whole(response),
                    Ok((listen, message, era, guard)) => match readmit(admission, listen, message, era, log, delivery) {
                        Ok((request, ctx, id)) => self.dispatch(request, Some(ctx), id, log, delivery, Some(guard)).await,
                        Err(refusal) => Reply::Whole(refusal),
                    },
                }
            }
            Route::EndSession(request, principal) => Reply::Whole(session_routes::end_session(sessions, &request, &principal).await),
            Route::Call(call) => {
                let legacy = Legacy { sessions, info: &side.info, tool_schema: &*side.tool_schemas };
                match legacy.step(call, log).await {
                    Step::Answered(response) => Reply::Whole(response),
                    // The modern request it means passes the checks of a
                    // 2026-07-28 message, then is served, and answered, for
                    // its era.
                    Step::Serve(request, message, era, session) => {
                        // Only a stream can carry the server's own requests,
                        // and only a session its answers. A conversation
                        // sends the message again each round: only it keeps
                        // a copy.
                        let may_ask = delivery == Delivery::Streamed && log.known.is_some_and(|row| row.may_ask);
                        let asks = session.filter(|_| may_ask).map(|session| (session, message.clone()));
                        match readmit(admission, request, message, era, log, delivery) {
                            Ok((request, ctx, id)) => match asks {
                                Some(asks) => {
                                    let conversation = self.conversation(sessions, request, ctx, id, asks, log);
                                    self.converse(conversation, log).await
                                }
                                None => self.dispatch(request, Some(ctx), id, log, delivery, None).await,
                            },
                            Err(refusal) => Reply::Whole(refusal),
                        }
                    }
                }
            }
        }
    }

    /// A legacy call that may ask its client questions on its stream, in
    /// `session`, `message` its request's.
    fn conversation(
        &self,
        sessions: &LegacySessions,
        request: http::Request<Bytes>,
        ctx: CallContext,
        id: Option<Value>,
        (session, message): (Session, Map<String, Value>),
        log: &RequestLog,
    ) -> Box<Conversation> {
        let side = &self.legacy;
        let (parts, _) = request.into_parts();
        let request_id = id.unwrap_or(Value::Null);
        let facts = RequestScope::of(&parts).map(|scope| scope.entry.clone()).unwrap_or_default();
        let cut = back_channel::cut(&facts);
        let mut template = Template { method: parts.method, uri: parts.uri, headers: parts.headers, ctx: ctx.clone(), facts, message };
        // The stream follows a task to its outcome for the client, which
        // has no tasks/get: to the handler, the client takes part in the
        // tasks extension.
        template.declare_tasks();
        let finish = FinalRewrite {
            ctx: Some(ctx),
            shape: side.shaper(),
            method: log.method.clone(),
            server_info: self.server_info.clone(),
            task_ids: TaskIdsFilter::default(),
            request_id: request_id.clone(),
            notifications_only: false,
            log: None,
            outcome: None,
        };
        Box::new(Conversation {
            handler: side.rounds.clone(),
            sessions: sessions.clone(),
            session,
            template,
            request_id,
            finish,
            counts: Arc::default(),
            keep_alive: KEEP_ALIVE,
            cut,
            waiting: None,
            first: None,
        })
    }

    /// A legacy call's first round: answered whole when it asks nothing
    /// and starts no task (most calls), else held as a conversation.
    async fn converse(&self, mut conversation: Box<Conversation>, log: &mut RequestLog) -> Reply {
        let cut = conversation.template.facts.deadline.map(|at| at.cut(STREAM_MARGIN));
        let first = conversation.first_round();
        let first = match cut {
            Some(cut) => match tokio::time::timeout_at(cut, first).await {
                Ok(first) => first,
                Err(_) => return Reply::Whole(out_of_time(conversation.request_id.clone(), log)),
            },
            None => first.await,
        };
        match first {
            Some((parts, body)) => self.whole(parts, body, conversation.finish, log),
            None => Reply::Converse(conversation),
        }
    }
}

/// A held conversation as the streamed answer: its rounds, then its log
/// line once it ends.
pub(in crate::edge) fn conversation_response(
    mut conversation: Box<Conversation>,
    log: RequestLog,
    format: LogFormat,
    started: Instant,
    counts: Arc<Counts>,
) -> http::Response<EdgeBody> {
    let mut response = http::Response::new(());
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    no_store(response.headers_mut());
    conversation.counts = counts.clone();
    conversation.finish.log = Some(Finished { log, format, status: StatusCode::OK, started, counts });
    let (parts, ()) = response.into_parts();
    http::Response::from_parts(parts, conversation.into_body())
}

/// The modern request a 2025-era one became, through the checks of a
/// 2026-07-28 message (`Admission::admit_translated`), its context (the
/// handler's copy too) marked with the client's era; or the refusal.
// Once per 2025-era request, the result taken apart at once: boxing the
// refusal would allocate to save one move.
#[allow(clippy::result_large_err)]
fn readmit(
    admission: &Admission<'_>,
    request: http::Request<Bytes>,
    message: Map<String, Value>,
    era: Era,
    log: &mut RequestLog,
    delivery: Delivery,
) -> Result<(http::Request<Bytes>, CallContext, Option<Value>), http::Response<Bytes>> {
    match admission.admit_translated(request, message, log, delivery) {
        Ok(Admitted::Request(mut request, mut ctx, id)) => {
            if let Some(attached) = request.extensions_mut().get_mut::<RequestScope>().and_then(|scope| scope.call.as_mut()) {
                attached.era = era.clone();
            }
            ctx.era = era;
            Ok((request, ctx, id))
        }
        // The edge built it as a request: anything else is its own bug.
        Ok(_) => Err(refused(log, EdgeError::NotAnObject, None)),
        Err((error, id)) => Err(refused(log, error, id)),
    }
}
