#!/usr/bin/env bash
# A multi-round call and a task with curl alone, every header included: what
# a client does, step by step. Needs curl and python3 (to read the JSON).
#   bash infra/curl-examples.sh http://127.0.0.1:3000/mcp    # ACCESS_TOKEN=... for a stack
set -euo pipefail
url="${1:?usage: curl-examples.sh MCP_URL}"
auth=()
if [ -n "${ACCESS_TOKEN:-}" ]; then auth=(-H "Authorization: Bearer $ACCESS_TOKEN"); fi

# mcp METHOD NAME CAPABILITIES PARAMS: one request (`_meta` added to PARAMS);
# prints the answer, from a JSON body or the last event of a stream.
mcp() {
  local body
  body="$(python3 -c 'import json, sys
params = json.loads(sys.argv[3])
params["_meta"] = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                   "io.modelcontextprotocol/clientCapabilities": json.loads(sys.argv[2])}
print(json.dumps({"jsonrpc": "2.0", "id": 1, "method": sys.argv[1], "params": params}))' "$1" "$3" "$4")"
  curl -sS "$url" "${auth[@]}" -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' -H 'MCP-Protocol-Version: 2026-07-28' \
    -H "Mcp-Method: $1" -H "Mcp-Name: $2" -d "$body" | sed -n -e 's/^data: //p' -e '/^{/p' | tail -n 1
}
# field KEY...: a value of the JSON on stdin (strings bare).
field() {
  python3 -c 'import json, sys
value = json.load(sys.stdin)
for key in sys.argv[1:]:
    value = value[int(key)] if isinstance(value, list) else value[key]
print(value if isinstance(value, str) else json.dumps(value))' "$@"
}

# A multi-round call: plan_reminder asks what, then when (form elicitation),
# carrying its progress in requestState, which the client sends back as is.
form='{"elicitation": {"form": {}}}'
round1="$(mcp tools/call plan_reminder "$form" '{"name": "plan_reminder", "arguments": {}}')"
echo "round 1: $(echo "$round1" | field result inputRequests what params message)"
state="$(echo "$round1" | field result requestState)"
round2="$(mcp tools/call plan_reminder "$form" '{"name": "plan_reminder", "arguments": {},
  "requestState": "'"$state"'",
  "inputResponses": {"what": {"action": "accept", "content": {"what": "water the plants"}}}}')"
echo "round 2: $(echo "$round2" | field result inputRequests when params message)"
state="$(echo "$round2" | field result requestState)"
round3="$(mcp tools/call plan_reminder "$form" '{"name": "plan_reminder", "arguments": {},
  "requestState": "'"$state"'",
  "inputResponses": {"when": {"action": "accept", "content": {"when": "2026-12-24T18:00:00Z"}}}}')"
echo "round 3: $(echo "$round3" | field result content 0 text)"

# A task: build_report, called by a client that declares the tasks
# extension, answers a task id at once; tasks/get (Mcp-Name: the id) polls it.
tasks='{"extensions": {"io.modelcontextprotocol/tasks": {}}}'
created="$(mcp tools/call build_report "$tasks" '{"name": "build_report", "arguments": {"topic": "curl", "sections": 1}}')"
task="$(echo "$created" | field result taskId)"
echo "task: $task"
for _ in $(seq 1 60); do
  got="$(mcp tasks/get "$task" "$tasks" '{"taskId": "'"$task"'"}')"
  status="$(echo "$got" | field result status)"
  [ "$status" = completed ] && break
  [ "$status" = working ] || { echo "task ended $status: $got" >&2; exit 1; }
  sleep 1
done
[ "$status" = completed ] || { echo "task still $status after a minute" >&2; exit 1; }
echo "task result: $(echo "$got" | field result result content 0 text | sed -n 1p)"
