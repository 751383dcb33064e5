// A scripted model on loopback, standing in for the model APIs the coding
// agents call (none is reachable from a test): Anthropic's Messages API for
// Claude Code (ANTHROPIC_BASE_URL) and the Gemini API for Gemini CLI
// (GOOGLE_GEMINI_BASE_URL). It plays one script: when the agent offers the
// MCP server's tool TOOL and no tool result is in the conversation yet, it
// calls that tool; once a result is there, it answers with text quoting it.
// Any other request (titles, quota probes, JSON side questions) gets a
// short text. Every tool result it saw is kept, so the caller can tell that
// the call went through the MCP server and back.
import { appendFileSync } from "node:fs";
import { createServer } from "node:http";

/** Starts the model on a free loopback port, each request it gets appended
 * to `log`; `{ url, toolResults, requests, close }`. */
export async function startScriptedModel(tool, log) {
  const toolResults = [];
  const requests = [];
  const server = createServer(async (request, response) => {
    let body = "";
    for await (const chunk of request) body += chunk;
    const json = body ? JSON.parse(body) : {};
    const path = new URL(request.url, "http://127.0.0.1").pathname;
    requests.push(`${request.method} ${path}`);
    appendFileSync(log, `${request.method} ${path} ${body}\n`);
    if (path.endsWith("/count_tokens")) return send(response, { input_tokens: 10 });
    if (path.endsWith("/v1/messages")) return anthropic(json, response);
    if (path.includes(":countTokens")) return send(response, { totalTokens: 10 });
    if (path.includes(":streamGenerateContent") || path.includes(":generateContent")) {
      return gemini(json, path.includes(":stream"), response);
    }
    response.writeHead(404).end();
  });

  // Anthropic's Messages API, streamed (server-sent events) or not.
  function anthropic(json, response) {
    const results = (json.messages ?? []).flatMap((m) => (Array.isArray(m.content) ? m.content : []))
      .filter((block) => block.type === "tool_result");
    const offered = (json.tools ?? []).find((t) => t.name?.endsWith(tool));
    let content;
    if (results.length > 0) {
      const said = results.map((r) => (Array.isArray(r.content) ? r.content.map((c) => c.text ?? "").join(" ") : String(r.content)))
        .join(" ");
      toolResults.push(said);
      content = [{ type: "text", text: `The tool answered: ${said}` }];
    } else if (offered) {
      content = [{ type: "tool_use", id: `toolu_${Date.now()}`, name: offered.name, input: {} }];
    } else {
      content = [{ type: "text", text: "ok" }];
    }
    const stop = content[0].type === "tool_use" ? "tool_use" : "end_turn";
    const message = { id: `msg_${Date.now()}`, type: "message", role: "assistant", model: json.model, content,
      stop_reason: stop, stop_sequence: null, usage: { input_tokens: 10, output_tokens: 10 } };
    if (!json.stream) return send(response, message);
    response.writeHead(200, { "content-type": "text/event-stream" });
    const event = (type, data) => response.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
    event("message_start", { message: { ...message, content: [], stop_reason: null } });
    content.forEach((block, index) => {
      if (block.type === "text") {
        event("content_block_start", { index, content_block: { type: "text", text: "" } });
        event("content_block_delta", { index, delta: { type: "text_delta", text: block.text } });
      } else {
        event("content_block_start", { index, content_block: { ...block, input: {} } });
        event("content_block_delta", { index, delta: { type: "input_json_delta", partial_json: "{}" } });
      }
      event("content_block_stop", { index });
    });
    event("message_delta", { delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 10 } });
    event("message_stop", {});
    response.end();
  }

  // The Gemini API's generateContent, streamed (alt=sse) or not.
  function gemini(json, stream, response) {
    const parts = (json.contents ?? []).flatMap((c) => c.parts ?? []);
    const results = parts.filter((p) => p.functionResponse);
    const offered = (json.tools ?? []).flatMap((t) => t.functionDeclarations ?? []).find((f) => f.name?.endsWith(tool));
    let part;
    if (json.generationConfig?.responseMimeType === "application/json") {
      part = { text: JSON.stringify({ reasoning: "the answer is complete", next_speaker: "user" }) };
    } else if (results.length > 0) {
      const said = results.map((r) => JSON.stringify(r.functionResponse.response)).join(" ");
      toolResults.push(said);
      part = { text: `The tool answered: ${said}` };
    } else if (offered) {
      part = { functionCall: { name: offered.name, args: {} } };
    } else {
      part = { text: "ok" };
    }
    const answer = { candidates: [{ content: { role: "model", parts: [part] }, finishReason: "STOP", index: 0 }],
      usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 10, totalTokenCount: 20 }, modelVersion: "scripted" };
    if (!stream) return send(response, answer);
    response.writeHead(200, { "content-type": "text/event-stream" });
    response.end(`data: ${JSON.stringify(answer)}\r\n\r\n`);
  }

  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${server.address().port}`, toolResults, requests, close: () => server.close() };
}

function send(response, json) {
  response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(json));
}
