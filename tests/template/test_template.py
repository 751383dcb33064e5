"""template.yaml, translated to CloudFormation offline, against what the code
depends on: environment variables, the table's key and TTL attribute, the
KMS encryption context, least-privilege IAM, and the API's routes and auth
for both transports (buffered: an HTTP API; streaming: a REST API whose
integrations stream the function's response).

The code's names are read from the Rust sources, so a rename on either side
fails here.
"""

import os
import pathlib
import re
import sys

import pytest
from samtranslator.translator.transform import transform

# The translator fills pseudo-parameters such as AWS::Region; no account is used.
os.environ.setdefault("AWS_DEFAULT_REGION", "eu-west-1")
ROOT = pathlib.Path(__file__).resolve().parents[2]
SOURCES = list((ROOT / "functions").rglob("*.rs"))
sys.path.insert(0, str(ROOT / "infra"))
from bootstrap import load_template  # noqa: E402  (one YAML reader for the template)
# Read only by the local server, the local worker or tests, never in Lambda.
LOCAL_ONLY = {"MCP_LOCAL_ADDR", "MCP_LOCAL_ALLOW_REMOTE", "MCP_LOCAL_AUTHORIZATION_SERVER", "MCP_TASK_DEAD_LETTER_QUEUE_URL"}
# Tuning with defaults in the code; a deployment may add them.
OPTIONAL = {
    "MCP_TASK_TTL_SECONDS",
    "MCP_TASK_START_DEADLINE_SECONDS",
    "MCP_TASK_LEASE_SECONDS",
    "MCP_TASK_MAX_PER_OWNER",
    "MCP_AWS_ATTEMPT_TIMEOUT_MS",
    "MCP_AWS_OPERATION_TIMEOUT_MS",
    "MCP_FEED_POLL_MS",
    "MCP_LISTEN_MAX_PER_OWNER",
    # The function finds the issuer's keys in its OpenID configuration; this
    # only overrides that.
    "MCP_JWT_JWKS_URL",
}
# What the function needs to verify bearer tokens itself (AuthMode jwt with
# Transport streaming, which has no API Gateway authorizer), and the
# parameters each must equal there.
FUNCTION_JWT = {"MCP_JWT_ISSUER": "JwtIssuer", "MCP_JWT_AUDIENCE": "JwtAudience", "MCP_JWT_SCOPES": "ScopesSupported"}
# Read only by the worker function.
WORKER_ONLY = {"MCP_TASK_DEAD_LETTER_QUEUE_ARN"}
# Where the code derives the task timings; the template's worker timeouts
# and visibility factor must be the ones it assumes.
TIMINGS = ROOT / "functions" / "mcp-stateless" / "src" / "tasks" / "timings.rs"
# The partition-key schemes (dynamodb_handles.rs, quota.rs): handles and
# tasks, used token ids, creation counts. The worker's are the task kind's.
REQUEST_KEY_PREFIXES = ["handle#*", "jti#*", "quota#*"]
WORKER_KEY_PREFIXES = ["handle#tsk#*", "quota#tsk#*"]
# The change feed subscriptions/listen streams read and writers bump.
FEED_KEY_PREFIX = "feed#*"
# What each DynamoDB action of the request function may touch.
REQUEST_KEYS_BY_ACTION = {
    "dynamodb:GetItem": {*REQUEST_KEY_PREFIXES, FEED_KEY_PREFIX},
    "dynamodb:PutItem": set(REQUEST_KEY_PREFIXES),
    "dynamodb:UpdateItem": {*REQUEST_KEY_PREFIXES, FEED_KEY_PREFIX},
    "dynamodb:DeleteItem": set(REQUEST_KEY_PREFIXES),
}
# Every AuthMode with every Transport: all deploy (jwt with streaming has
# the function verify the tokens).
COMBINATIONS = [
    ("oauth", "buffered"),
    ("oauth", "streaming"),
    ("cognito", "buffered"),
    ("jwt", "buffered"),
    ("none", "buffered"),
    ("cognito", "streaming"),
    ("jwt", "streaming"),
    ("none", "streaming"),
]
# The REST stage clients see in the path (MCP_BASE_PATH is /STAGE).
REST_STAGE = "api"
HTTP_API = {
    "McpApi",
    "McpIntegration",
    "McpRoute",
    "ResourceMetadataRoute",
    "ResourceMetadataForMcpRoute",
    "McpStage",
    "McpInvokePermission",
}
REST_API = {
    "McpRestApi",
    "McpRestResource",
    "WellKnownRestResource",
    "ResourceMetadataRestResource",
    "ResourceMetadataForMcpRestResource",
    "McpRestMethod",
    "ResourceMetadataRestMethod",
    "ResourceMetadataForMcpRestMethod",
    "McpRestStage",
    "McpRestInvokePermission",
}
REST_COGNITO = {"McpRestAuthorizer", "McpRestUnauthorizedResponse", "McpRestAccessDeniedResponse", "McpRestDeploymentCognito"}
REST_OPEN = {"McpRestDeploymentOpen"}
# AuthMode oauth: the authorization server's paths, on either API.
HTTP_OAUTH = {
    "AuthorizationIntegration",
    "AuthorizationRoute",
    "AuthorizationMetadataRoute",
    "OpenIdConfigurationRoute",
    "AuthorizationInvokePermission",
}
REST_OAUTH = {
    "OAuthRestResource",
    "OAuthProxyRestResource",
    "AuthorizationMetadataRestResource",
    "OpenIdConfigurationRestResource",
    "AuthorizationRestMethod",
    "AuthorizationMetadataRestMethod",
    "OpenIdConfigurationRestMethod",
    "AuthorizationRestInvokePermission",
    "McpRestDeploymentOAuth",
}
AUTHORIZATION_PATHS = ("/oauth/{proxy+}", "/.well-known/oauth-authorization-server", "/.well-known/openid-configuration")
# The issuer the stack's own authorization server is, on each API.
OAUTH_ISSUER = {
    "buffered": {"Fn::Sub": "https://${McpApi}.execute-api.${AWS::Region}.${AWS::URLSuffix}"},
    "streaming": {"Fn::Sub": "https://${McpRestApi}.execute-api.${AWS::Region}.${AWS::URLSuffix}/api"},
}
# Read by the authorization server only where it runs locally, or optional.
AUTHORIZATION_LOCAL_ONLY = {"MCP_OAUTH_LOCAL_ADDR", "MCP_OAUTH_UPSTREAM_CLIENT_SECRET", "MCP_OAUTH_CIMD_TRUSTED_HOSTS"}
METADATA_PATHS = ("/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp")


class NoManagedPolicies:
    """The template attaches no managed policies, so nothing is looked up."""

    def load(self):
        return {}


def rust_constant(name):
    for path in SOURCES:
        match = re.search(rf'const {name}: &str = "([^"]+)";', path.read_text())
        if match:
            return match.group(1)
    raise AssertionError(f"constant {name} not found in the Rust sources")


def env_vars_read_by_code(authorization=False):
    """The variables the MCP function's crates read, or with
    `authorization` the authorization server's own crate."""
    names = set()
    for path in SOURCES:
        if ("authorization" in path.relative_to(ROOT).parts) == authorization:
            names.update(re.findall(r'"(MCP_[A-Z_]+)"', path.read_text()))
    names = {n for n in names if not n.startswith("MCP_TEST_")}
    return names - AUTHORIZATION_LOCAL_ONLY if authorization else names - LOCAL_ONLY - OPTIONAL


NO_VALUE = object()


def resolve(template, params):
    """What CloudFormation deploys for `params`: conditions evaluated,
    Fn::If taken, AWS::NoValue dropped, resources whose condition is false
    removed. Every other intrinsic is left as it is."""
    values = {name: str(p.get("Default", "")) for name, p in template.get("Parameters", {}).items()}
    values.update(params)
    truth = {}

    def holds(expression):
        if "Fn::Equals" in expression:
            left, right = (values[v["Ref"]] if isinstance(v, dict) else str(v) for v in expression["Fn::Equals"])
            return left == right
        if "Fn::And" in expression:
            return all(holds(e) for e in expression["Fn::And"])
        if "Fn::Or" in expression:
            return any(holds(e) for e in expression["Fn::Or"])
        if "Fn::Not" in expression:
            return not holds(expression["Fn::Not"][0])
        if "Condition" in expression:
            return truth_of(expression["Condition"])
        raise AssertionError(f"condition not understood: {expression}")

    def truth_of(name):
        if name not in truth:
            truth[name] = holds(template["Conditions"][name])
        return truth[name]

    def walk(node):
        if isinstance(node, dict):
            if node == {"Ref": "AWS::NoValue"}:
                return NO_VALUE
            if set(node) == {"Fn::If"}:
                name, yes, no = node["Fn::If"]
                return walk(yes if truth_of(name) else no)
            out = {k: walk(v) for k, v in node.items()}
            return {k: v for k, v in out.items() if v is not NO_VALUE}
        if isinstance(node, list):
            return [v for v in (walk(x) for x in node) if v is not NO_VALUE]
        return node

    kept = {k: r for k, r in template["Resources"].items() if "Condition" not in r or truth_of(r["Condition"])}
    outputs = {k: o for k, o in template.get("Outputs", {}).items() if "Condition" not in o or truth_of(o["Condition"])}
    return dict(template, Resources=walk(kept), Outputs=walk(outputs))


def canonical(node):
    """The template as CloudFormation reads it: the YAML reader writes the
    short form !Condition as Fn::Condition; CloudFormation's is Condition."""
    if isinstance(node, dict):
        return {("Condition" if k == "Fn::Condition" else k): canonical(v) for k, v in node.items()}
    if isinstance(node, list):
        return [canonical(v) for v in node]
    return node


def translate(auth_mode, **overrides):
    sam = canonical(load_template(ROOT / "template.yaml"))
    # What `sam package` does before CloudFormation sees the template.
    for resource in sam["Resources"].values():
        if resource["Type"] == "AWS::Serverless::Function":
            resource["Properties"]["CodeUri"] = "s3://packaged/code.zip"
    params = {"AuthMode": auth_mode, "JwtIssuer": "https://issuer.example.com/", "JwtAudience": "mcp", **overrides}
    return resolve(transform(sam, params, NoManagedPolicies()), params)


@pytest.fixture(scope="module", params=COMBINATIONS, ids="-".join)
def cfn(request):
    mode, transport = request.param
    return translate(mode, Transport=transport), mode, transport


@pytest.fixture(scope="module", params=["oauth", "cognito", "jwt", "none"])
def buffered(request):
    return translate(request.param, Transport="buffered"), request.param


@pytest.fixture(scope="module", params=["oauth", "cognito", "jwt", "none"])
def streaming(request):
    return translate(request.param, Transport="streaming"), request.param


def resources(template, type_name):
    return {k: v for k, v in template["Resources"].items() if v["Type"] == type_name}


def the(template, type_name):
    found = resources(template, type_name)
    assert len(found) == 1, f"expected one {type_name}, found {list(found)}"
    return next(iter(found.values()))["Properties"]


def function(template, logical_id):
    resource = template["Resources"][logical_id]
    assert resource["Type"] == "AWS::Lambda::Function"
    return resource["Properties"]


def test_function_gets_every_variable_the_code_reads(cfn):
    template, _, _ = cfn
    template_, mode, _ = cfn
    expected = {"McpFunction", "TaskWorkerFunction"} | ({"AuthorizationFunction"} if mode == "oauth" else set())
    assert set(resources(template, "AWS::Lambda::Function")) == expected
    function_ = function(template, "McpFunction")
    declared = set(function_["Environment"]["Variables"])
    missing = env_vars_read_by_code() - WORKER_ONLY - declared
    assert not missing, f"template.yaml does not set {sorted(missing)}"
    assert function_["Runtime"] == "provided.al2023"
    assert function_["Architectures"] == ["arm64"]


def test_the_authorization_server_gets_every_variable_it_reads_and_its_own_grants(cfn):
    template, mode, transport = cfn
    if mode != "oauth":
        assert "AuthorizationFunction" not in template["Resources"] and "TokenSigningKey" not in template["Resources"]
        return
    variables = function(template, "AuthorizationFunction")["Environment"]["Variables"]
    missing = env_vars_read_by_code(authorization=True) - set(variables)
    assert not missing, f"template.yaml does not set {sorted(missing)} for the authorization server"
    # What it reads through mcp-aws: the sealing key, the table, the deployment.
    assert variables["MCP_STATE_KEY_ID"] == {"Fn::GetAtt": ["StateKey", "Arn"]}
    assert variables["MCP_TABLE_NAME"] == {"Ref": "StateTable"}
    assert variables["MCP_AUDIENCE"] == {"Ref": "AWS::StackName"}
    assert variables["MCP_OAUTH_SIGNING_KEY_ID"] == {"Fn::GetAtt": ["TokenSigningKey", "Arn"]}
    # The issuer the MCP side trusts is the one it says it is.
    assert variables["MCP_OAUTH_ISSUER"] == OAUTH_ISSUER[transport]
    assert "MCP_OAUTH_UPSTREAM_CLIENT_SECRET" not in variables, "no secret in a function's environment"
    # Clients whose consent page is skipped: none unless the operator names them.
    assert variables["MCP_OAUTH_TRUSTED_CLIENT_IDS"] == {"Ref": "TrustedClientIds"}
    assert template["Parameters"]["TrustedClientIds"]["Default"] == ""
    # Every shipped pin stands by unless the operator drops it.
    assert variables["MCP_OAUTH_UNPINNED_CLIENTS"] == {"Ref": "UnpinnedClientIds"}
    assert template["Parameters"]["UnpinnedClientIds"]["Default"] == ""
    key = template["Resources"]["TokenSigningKey"]["Properties"]
    assert (key["KeySpec"], key["KeyUsage"]) == ("ECC_NIST_P256", "SIGN_VERIFY")
    # Only the authorization server signs; the MCP function and the worker cannot.
    assert actions_of(template, "AuthorizationFunctionRole", "kms") == {"kms:Sign", "kms:GetPublicKey", "kms:GenerateDataKey", "kms:Decrypt"}
    sign = [st for st in role_statements(template, "AuthorizationFunctionRole") if "kms:Sign" in listed(st["Action"])]
    assert [listed(st["Resource"]) for st in sign] == [[{"Fn::GetAtt": ["TokenSigningKey", "Arn"]}]]
    for role in ("McpFunctionRole", "TaskWorkerRole"):
        assert not {"kms:Sign", "kms:GetPublicKey"} & actions_of(template, role, "kms"), role
    assert keys_by_action(template, "AuthorizationFunctionRole") == dict.fromkeys(
        ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"], {"oauth#*", "jti#*"}
    )
    assert not upstream_secret_grants(template), "no secret to open unless one is given"
    assert variables["MCP_OAUTH_UPSTREAM_CLIENT_SECRET_SEALED"] == ""
    named = translate("oauth", Transport=transport, UpstreamIssuer="https://idp.example.com", UpstreamClientId="abc",
                      UpstreamClientSecretSealed="AQICAHh0c2VhbGVkK2Jsb2IvZXhhbXBsZQ==")
    # A confidential client's secret is opened with kms:Decrypt on the
    # stack's own key, only under the context the code seals it with.
    (opening,) = upstream_secret_grants(named)
    assert listed(opening["Resource"]) == [{"Fn::GetAtt": ["StateKey", "Arn"]}]
    assert opening["Condition"] == {
        "StringEquals": {
            f"kms:EncryptionContext:{rust_constant('CONTEXT_PURPOSE_KEY')}": rust_constant("UPSTREAM_SECRET_PURPOSE"),
            f"kms:EncryptionContext:{rust_constant('CONTEXT_AUDIENCE_KEY')}": {"Ref": "AWS::StackName"},
        }
    }
    assert function(named, "AuthorizationFunction")["Environment"]["Variables"]["MCP_OAUTH_UPSTREAM_CLIENT_SECRET_SEALED"] == {
        "Ref": "UpstreamClientSecretSealed"
    }
    assert not [k for k, r in named["Resources"].items() if r["Type"].startswith("AWS::Cognito::")], "another provider, no pool"
    # No Parameter Store, with a secret or without.
    for each in (template, named):
        assert not [a for st in iam_statements(each) for a in listed(st["Action"]) if a.startswith("ssm:")]


def upstream_secret_grants(template):
    """The authorization server's statements that only decrypt: opening
    its sealed upstream client secret."""
    return [st for st in role_statements(template, "AuthorizationFunctionRole") if listed(st["Action"]) == ["kms:Decrypt"]]


def test_the_upstream_secret_is_sealed_as_the_function_opens_it():
    parameter = load_template(ROOT / "template.yaml")["Parameters"]["UpstreamClientSecretSealed"]
    assert (parameter["Type"], parameter["NoEcho"], parameter["Default"]) == ("String", True, "")
    pattern = re.compile(parameter["AllowedPattern"])
    for good in ("", "AQICAHh0c2VhbGVk", "AQICAHh0c2VhbGVkKw==", "a+b/c="):
        assert pattern.fullmatch(good), good
    for bad in ("not base64!", "AQ ID", "abc===", "-_", "abc\n"):
        assert not pattern.fullmatch(bad), bad
    # The script seals under the key the stack outputs, with the context
    # the function opens it with (the keys and the purpose the code sends).
    script = (ROOT / "infra" / "seal-upstream-secret.sh").read_text()
    assert f'"{rust_constant("CONTEXT_PURPOSE_KEY")}": PURPOSE' in script
    assert f'PURPOSE = "{rust_constant("UPSTREAM_SECRET_PURPOSE")}"' in script
    assert f'"{rust_constant("CONTEXT_AUDIENCE_KEY")}": found["StackName"]' in script
    outputs = load_template(ROOT / "template.yaml")["Outputs"]
    assert outputs["StateKeyArn"]["Value"] == {"Fn::GetAtt": ["StateKey", "Arn"]} and '"StateKeyArn"' in script
    assert "sys.stdin.read()" in script and "getpass" in script, "the secret comes from standard input, never argv"


def test_worker_is_fed_by_the_task_queue_and_its_dead_letter_queue(cfn):
    template, _, _ = cfn
    worker = function(template, "TaskWorkerFunction")
    variables = worker["Environment"]["Variables"]
    assert variables["MCP_TABLE_NAME"] == {"Ref": "StateTable"}
    assert variables["MCP_TASK_QUEUE_URL"] == {"Ref": "TaskQueue"}
    assert variables["MCP_TASK_DEAD_LETTER_QUEUE_ARN"] == {"Fn::GetAtt": ["TaskDeadLetterQueue", "Arn"]}
    assert function(template, "McpFunction")["Environment"]["Variables"]["MCP_TASK_QUEUE_URL"] == {"Ref": "TaskQueue"}
    assert worker["Timeout"] == {"Ref": "WorkerTimeout"}
    assert worker["Architectures"] == ["arm64"]
    mappings = [m["Properties"] for m in resources(template, "AWS::Lambda::EventSourceMapping").values()]
    assert sorted(m["EventSourceArn"]["Fn::GetAtt"][0] for m in mappings) == ["TaskDeadLetterQueue", "TaskQueue"]
    for mapping in mappings:
        assert mapping["FunctionName"] == {"Ref": "TaskWorkerFunction"}
        assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"], "partial batch responses"
        assert mapping["BatchSize"] == 1


def test_queue_visibility_is_six_times_the_worker_timeout(cfn):
    template, _, _ = cfn
    queue = template["Resources"]["TaskQueue"]["Properties"]
    assert queue["VisibilityTimeout"] == {"Fn::FindInMap": ["WorkerTimeouts", {"Ref": "WorkerTimeout"}, "VisibilityTimeout"]}
    allowed = template["Parameters"]["WorkerTimeout"]["AllowedValues"]
    assert max(allowed) <= 900, "Lambda's maximum timeout"
    table = template["Mappings"]["WorkerTimeouts"]
    assert sorted(int(k) for k in table) == sorted(allowed)
    for timeout, row in table.items():
        assert row["VisibilityTimeout"] == 6 * int(timeout)
    assert queue["RedrivePolicy"] == {
        "deadLetterTargetArn": {"Fn::GetAtt": ["TaskDeadLetterQueue", "Arn"]},
        "maxReceiveCount": {"Ref": "TaskMaxAttempts"},
    }


def test_both_functions_get_the_timings_the_tasks_are_derived_from(cfn):
    template, _, _ = cfn
    for name in ("McpFunction", "TaskWorkerFunction"):
        variables = function(template, name)["Environment"]["Variables"]
        assert variables["MCP_WORKER_TIMEOUT_SECONDS"] == {"Ref": "WorkerTimeout"}, name
        assert variables["MCP_TASK_MAX_ATTEMPTS"] == {"Ref": "TaskMaxAttempts"}, name
    worker = function(template, "TaskWorkerFunction")["Environment"]["Variables"]
    assert WORKER_ONLY <= set(worker)
    assert not WORKER_ONLY & set(function(template, "McpFunction")["Environment"]["Variables"])


def test_visibility_timeouts_use_the_factor_and_timeouts_of_the_rust_timings():
    text = TIMINGS.read_text()
    factor = re.search(r"pub const VISIBILITY_FACTOR: u64 = ([0-9_]+);", text)
    timeouts = re.search(r"pub const WORKER_TIMEOUTS: \[u64; ([0-9]+)\] = \[([0-9_,\s]*)\];", text)
    assert factor and timeouts, f"VISIBILITY_FACTOR or WORKER_TIMEOUTS not found in {TIMINGS.relative_to(ROOT)}"
    factor = int(factor.group(1).replace("_", ""))
    worker_timeouts = [int(v.replace("_", "")) for v in timeouts.group(2).split(",") if v.strip()]
    assert len(worker_timeouts) == int(timeouts.group(1))
    sam = load_template(ROOT / "template.yaml")
    assert sam["Parameters"]["WorkerTimeout"]["AllowedValues"] == worker_timeouts
    table = sam["Mappings"]["WorkerTimeouts"]
    assert sorted(int(k) for k in table) == sorted(worker_timeouts)
    for timeout in worker_timeouts:
        visibility = table[str(timeout)]["VisibilityTimeout"]
        assert visibility == factor * timeout, timeout
        assert visibility <= 43200, "SQS's maximum visibility timeout"


def role_statements(template, role):
    for policy in template["Resources"][role]["Properties"]["Policies"]:
        yield from policy["PolicyDocument"]["Statement"]


def actions_of(template, role, service):
    return {a for s in role_statements(template, role) for a in listed(s["Action"]) if a.startswith(service + ":")}


def test_each_function_may_do_only_its_part_with_tasks(cfn):
    template, _, _ = cfn
    # The request function enqueues, to its queue only; it never consumes.
    send = [s for s in role_statements(template, "McpFunctionRole") if "sqs:SendMessage" in listed(s["Action"])]
    assert actions_of(template, "McpFunctionRole", "sqs") == {"sqs:SendMessage"}
    assert listed(send[0]["Resource"]) == [{"Fn::GetAtt": ["TaskQueue", "Arn"]}]
    # The worker consumes both queues, never sends, and has no KMS access.
    assert "sqs:SendMessage" not in actions_of(template, "TaskWorkerRole", "sqs")
    assert not actions_of(template, "TaskWorkerRole", "kms")
    consume = [s for s in role_statements(template, "TaskWorkerRole") if "sqs:ReceiveMessage" in listed(s["Action"])]
    assert sorted(r["Fn::GetAtt"][0] for r in listed(consume[0]["Resource"])) == ["TaskDeadLetterQueue", "TaskQueue"]
    # UpdateItem: an ending task gives its owner's quota count back.
    assert actions_of(template, "TaskWorkerRole", "dynamodb") == {
        "dynamodb:GetItem",
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
        "dynamodb:DeleteItem",
    }


def keys_by_action(template, role):
    """The partition-key patterns each DynamoDB action of `role` may touch,
    over all its statements."""
    allowed = {}
    for statement in role_statements(template, role):
        actions = [a for a in listed(statement["Action"]) if a.startswith("dynamodb:")]
        if not actions:
            continue
        # ForAllValues: every key the request names must match (ForAnyValue
        # would let one matching key carry others along). Nothing else.
        assert statement["Effect"] == "Allow" and set(statement["Condition"]) == {"ForAllValues:StringLike"}, statement
        condition = statement["Condition"]["ForAllValues:StringLike"]
        assert set(condition) == {"dynamodb:LeadingKeys"}, statement
        for action in actions:
            allowed.setdefault(action, set()).update(condition["dynamodb:LeadingKeys"])
    return allowed


def test_each_role_reaches_only_its_own_partition_keys(cfn):
    template, _, _ = cfn
    assert keys_by_action(template, "McpFunctionRole") == REQUEST_KEYS_BY_ACTION
    worker = [s for s in role_statements(template, "TaskWorkerRole") if any(a.startswith("dynamodb:") for a in listed(s["Action"]))]
    assert len(worker) == 1
    assert worker[0]["Condition"] == {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": WORKER_KEY_PREFIXES}}
    # The worker runs task tools: no other kind's handles, no token ids.
    for prefix in WORKER_KEY_PREFIXES:
        scheme, kind, rest = prefix.split("#", 2)
        assert scheme in {"handle", "quota"} and kind == "tsk" and rest == "*", prefix


def queue_policy(template, queue):
    policies = [
        p["Properties"]
        for p in resources(template, "AWS::SQS::QueuePolicy").values()
        if p["Properties"]["Queues"] == [{"Ref": queue}]
    ]
    assert len(policies) == 1, f"expected one policy on {queue}"
    return [{k: v for k, v in s.items() if k != "Sid"} for s in policies[0]["PolicyDocument"]["Statement"]]


def test_only_the_request_function_sends_tasks_and_only_the_redrive_dead_letters(cfn):
    template, _, _ = cfn
    assert len(resources(template, "AWS::SQS::QueuePolicy")) == 2
    assert function(template, "McpFunction")["Role"] == {"Fn::GetAtt": ["McpFunctionRole", "Arn"]}
    # Explicit denies, so no grant elsewhere in the account can send.
    deny_send = {"Effect": "Deny", "Principal": "*", "Action": "sqs:SendMessage"}
    assert queue_policy(template, "TaskQueue") == [
        dict(
            deny_send,
            Resource={"Fn::GetAtt": ["TaskQueue", "Arn"]},
            Condition={"ArnNotEquals": {"aws:PrincipalArn": {"Fn::GetAtt": ["McpFunctionRole", "Arn"]}}},
        )
    ]
    assert queue_policy(template, "TaskDeadLetterQueue") == [
        dict(
            deny_send,
            Resource={"Fn::GetAtt": ["TaskDeadLetterQueue", "Arn"]},
            Condition={"ArnNotEquals": {"aws:SourceArn": {"Fn::GetAtt": ["TaskQueue", "Arn"]}}},
        )
    ]


def test_table_matches_what_the_code_writes(cfn):
    template, _, _ = cfn
    table = the(template, "AWS::DynamoDB::Table")
    assert table["TimeToLiveSpecification"] == {"AttributeName": rust_constant("TTL_ATTRIBUTE"), "Enabled": True}
    assert table["KeySchema"] == [{"AttributeName": rust_constant("PARTITION_KEY"), "KeyType": "HASH"}]
    assert table["BillingMode"] == "PAY_PER_REQUEST"
    assert table["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True
    assert table["SSESpecification"]["SSEEnabled"] is True


def iam_statements(template):
    for role in resources(template, "AWS::IAM::Role").values():
        for policy in role["Properties"].get("Policies", []):
            yield from policy["PolicyDocument"]["Statement"]
    for policy in resources(template, "AWS::IAM::Policy").values():
        yield from policy["Properties"]["PolicyDocument"]["Statement"]


def listed(value):
    return value if isinstance(value, list) else [value]


def test_iam_has_no_wildcard_action_or_resource(cfn):
    template, _, _ = cfn
    statements = list(iam_statements(template))
    assert statements
    for role in resources(template, "AWS::IAM::Role").values():
        assert not role["Properties"].get("ManagedPolicyArns"), "no managed policies: they carry wildcards"
    for statement in statements:
        for action in listed(statement["Action"]):
            assert "*" not in action, statement
        for resource in listed(statement.get("Resource", [])):
            assert resource != "*", statement
    # The one exception: X-Ray grants its two write actions on every
    # resource or none, and only when Tracing is on.
    traced = translate("none", Tracing="Active")
    wildcard = [s for s in iam_statements(traced) if "*" in listed(s.get("Resource", []))]
    assert wildcard and all(set(listed(s["Action"])) == {"xray:PutTraceSegments", "xray:PutTelemetryRecords"} for s in wildcard)


def test_kms_use_is_conditioned_on_the_context_the_code_sends(cfn):
    template, mode, _ = cfn
    sealing = [
        s for s in iam_statements(template) if {"kms:Decrypt", "kms:GenerateDataKey"} & set(listed(s["Action"]))
    ]
    # The MCP function, and with oauth the authorization server, seal.
    assert len(sealing) == (2 if mode == "oauth" else 1)
    for statement in sealing:
        assert sorted(listed(statement["Action"])) == ["kms:Decrypt", "kms:GenerateDataKey"]
        assert listed(statement["Resource"]) == [{"Fn::GetAtt": ["StateKey", "Arn"]}]
        condition = statement["Condition"]["StringEquals"]
        purpose_key = rust_constant("CONTEXT_PURPOSE_KEY")
        audience_key = rust_constant("CONTEXT_AUDIENCE_KEY")
        assert condition[f"kms:EncryptionContext:{purpose_key}"] == rust_constant("CONTEXT_PURPOSE")
        assert condition[f"kms:EncryptionContext:{audience_key}"] == {"Ref": "AWS::StackName"}
    assert function(template, "McpFunction")["Environment"]["Variables"]["MCP_AUDIENCE"] == {"Ref": "AWS::StackName"}
    key = template["Resources"]["StateKey"]["Properties"]
    assert key["EnableKeyRotation"] is True


def test_dynamodb_actions_are_item_actions_on_the_table(cfn):
    template, _, _ = cfn
    dynamo = [s for s in iam_statements(template) if any(a.startswith("dynamodb:") for a in listed(s["Action"]))]
    assert dynamo
    item_actions = {"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"}
    for statement in dynamo:
        assert set(listed(statement["Action"])) <= item_actions, "no batch, Query, Scan or table actions"
        assert listed(statement["Resource"]) == [{"Fn::GetAtt": ["StateTable", "Arn"]}]


def test_routes_and_auth(buffered):
    template, mode = buffered
    routes = {r["Properties"]["RouteKey"]: r["Properties"] for r in resources(template, "AWS::ApiGatewayV2::Route").values()}
    oauth = {f"ANY {path}" for path in AUTHORIZATION_PATHS} if mode == "oauth" else set()
    assert set(routes) == {
        "POST /mcp",
        "GET /.well-known/oauth-protected-resource",
        "GET /.well-known/oauth-protected-resource/mcp",
    } | oauth
    for key in oauth:
        # How a client gets a token: open, and served by the authorization server.
        assert routes[key]["AuthorizationType"] == "NONE" and routes[key]["Target"] == {"Fn::Sub": "integrations/${AuthorizationIntegration}"}
    if mode == "oauth":
        jwt = resources(template, "AWS::ApiGatewayV2::Authorizer")["JwtAuthorizer"]["Properties"]["JwtConfiguration"]
        # The authorizer trusts the stack's own issuer, for this endpoint (RFC 8707).
        assert jwt["Issuer"] == OAUTH_ISSUER["buffered"]
        assert jwt["Audience"] == [{"Fn::Sub": OAUTH_ISSUER["buffered"]["Fn::Sub"] + "/mcp"}]
    for key in ("GET /.well-known/oauth-protected-resource", "GET /.well-known/oauth-protected-resource/mcp"):
        assert routes[key]["AuthorizationType"] == "NONE"
    variables = function(template, "McpFunction")["Environment"]["Variables"]
    authorizers = resources(template, "AWS::ApiGatewayV2::Authorizer")
    if mode == "none":
        assert routes["POST /mcp"]["AuthorizationType"] == "NONE" and "AuthorizerId" not in routes["POST /mcp"]
        assert not authorizers
        assert variables["MCP_AUTHORIZATION_SERVERS"] == "", "no metadata without an authorization server"
    else:
        assert routes["POST /mcp"]["AuthorizationType"] == "JWT"
        assert routes["POST /mcp"]["AuthorizerId"] == {"Ref": "JwtAuthorizer"}
        jwt = authorizers["JwtAuthorizer"]["Properties"]
        assert jwt["AuthorizerType"] == "JWT" and jwt["IdentitySource"] == ["$request.header.Authorization"]
        # The metadata names the issuer the authorizer trusts, and the route
        # requires a scope the metadata publishes.
        assert variables["MCP_AUTHORIZATION_SERVERS"] == jwt["JwtConfiguration"]["Issuer"]
        required = routes["POST /mcp"]["AuthorizationScopes"]
        published = variables["MCP_SCOPES_SUPPORTED"]
        if mode == "cognito":
            assert required == [published] == ["mcp/invoke"]
        else:
            assert required == {"Fn::Split": [",", published]}
    stage = the(template, "AWS::ApiGatewayV2::Stage")
    assert stage["StageName"] == "$default", "well-known URIs must sit at the root"


def test_jwt_mode_cannot_be_deployed_without_issuer_audience_or_scopes():
    rule = load_template(ROOT / "template.yaml")["Rules"]["JwtNeedsIssuerAudienceAndScopes"]
    assert rule["RuleCondition"] == {"Fn::Equals": [{"Ref": "AuthMode"}, "jwt"]}
    checked = [str(a["Assert"]) for a in rule["Assertions"]]
    for parameter in ("JwtIssuer", "JwtAudience", "ScopesSupported"):
        assert any(parameter in c for c in checked), parameter


def test_cognito_mode_signs_in_with_pkce_and_the_authorizer_trusts_it(cfn):
    template, mode, transport = cfn
    cognito = {k for k, r in template["Resources"].items() if r["Type"].startswith("AWS::Cognito::")}
    if mode == "oauth":
        # The pool users sign in at, with one client: the authorization
        # server's, public with PKCE, whose one callback is its own.
        assert cognito == {"UserPool", "UserPoolDomain", "AuthorizationServerClient"}
        client = template["Resources"]["AuthorizationServerClient"]["Properties"]
        assert client["GenerateSecret"] is False and client["AllowedOAuthFlows"] == ["code"]
        (callback,) = client["CallbackURLs"]
        assert callback["Fn::Sub"] == OAUTH_ISSUER[transport]["Fn::Sub"] + "/oauth/callback"
        assert template["Outputs"]["AuthorizationCallbackUrl"]["Value"] == callback
        assert template["Outputs"]["AuthorizationServerIssuer"]["Value"] == OAUTH_ISSUER[transport]
        variables = function(template, "AuthorizationFunction")["Environment"]["Variables"]
        assert variables["MCP_OAUTH_UPSTREAM_CLIENT_ID"] == {"Ref": "AuthorizationServerClient"}
        assert variables["MCP_OAUTH_UPSTREAM_ISSUER"] == {"Fn::Sub": "https://cognito-idp.${AWS::Region}.${AWS::URLSuffix}/${UserPool}"}
        # The MCP side names and trusts the stack's own issuer, not the pool.
        assert function(template, "McpFunction")["Environment"]["Variables"]["MCP_AUTHORIZATION_SERVERS"] == OAUTH_ISSUER[transport]
        return
    if mode != "cognito":
        assert not cognito, "only AuthMode oauth and cognito create a user pool"
        assert not any(k.startswith("Cognito") for k in template["Outputs"])
        return
    assert cognito == {"UserPool", "UserPoolResourceServer", "UserPoolDomain", "UserPoolClient"}
    pool = template["Resources"]["UserPool"]["Properties"]
    assert pool["AdminCreateUserConfig"]["AllowAdminCreateUserOnly"] is True, "no self sign-up"
    client = template["Resources"]["UserPoolClient"]["Properties"]
    assert client["GenerateSecret"] is False, "MCP clients are public clients (PKCE)"
    assert client["AllowedOAuthFlows"] == ["code"] and client["AllowedOAuthFlowsUserPoolClient"] is True
    assert client["CallbackURLs"] == {"Ref": "CognitoCallbackUrls"}
    scopes = template["Resources"]["UserPoolResourceServer"]["Properties"]
    scope = f'{scopes["Identifier"]}/{scopes["Scopes"][0]["ScopeName"]}'
    assert scope in client["AllowedOAuthScopes"]
    variables = function(template, "McpFunction")["Environment"]["Variables"]
    assert variables["MCP_SCOPES_SUPPORTED"] == scope, "the metadata publishes the scope tokens carry"
    issuer = {"Fn::Sub": "https://cognito-idp.${AWS::Region}.${AWS::URLSuffix}/${UserPool}"}
    assert variables["MCP_AUTHORIZATION_SERVERS"] == issuer
    if transport == "buffered":
        jwt = template["Resources"]["JwtAuthorizer"]["Properties"]["JwtConfiguration"]
        assert jwt["Issuer"] == issuer
        assert jwt["Audience"] == [{"Ref": "UserPoolClient"}], "Cognito access tokens carry the client id"
    else:
        # The REST API's Cognito authorizer trusts the pool the metadata names.
        authorizer = template["Resources"]["McpRestAuthorizer"]["Properties"]
        assert authorizer["Type"] == "COGNITO_USER_POOLS"
        assert authorizer["ProviderARNs"] == [{"Fn::GetAtt": ["UserPool", "Arn"]}]
    assert {"CognitoUserPoolId", "CognitoClientId", "CognitoIssuer", "CognitoSignInDomain"} <= set(template["Outputs"])


def test_xray_tracing_is_off_unless_asked_and_then_can_send(cfn):
    template, mode, transport = cfn
    for name in ("McpFunction", "TaskWorkerFunction"):
        assert "Mode" not in function(template, name).get("TracingConfig", {}), "Lambda's default: no sampling"
    assert not [s for s in iam_statements(template) if any(a.startswith("xray:") for a in listed(s["Action"]))]
    traced = translate(mode, Transport=transport, Tracing="Active")
    for name in ("McpFunction", "TaskWorkerFunction"):
        assert function(traced, name)["TracingConfig"] == {"Mode": "Active"}
    for role in ("McpFunctionRole", "TaskWorkerRole"):
        assert actions_of(traced, role, "xray") == {"xray:PutTraceSegments", "xray:PutTelemetryRecords"}


def test_metrics_land_in_the_stacks_own_namespace(cfn):
    template, _, _ = cfn
    assert function(template, "McpFunction")["Environment"]["Variables"]["MCP_METRICS_NAMESPACE"] == {"Ref": "AWS::StackName"}
    assert function(template, "McpFunction")["LoggingConfig"]["LogFormat"] == "Text", "EMF lines are read as they are written"


def test_concurrency_and_throttling_are_parameters():
    default = translate("none")
    assert "ReservedConcurrentExecutions" not in function(default, "McpFunction"), "-1 reserves nothing"
    reserved = translate("none", ReservedConcurrency="20")
    assert function(reserved, "McpFunction")["ReservedConcurrentExecutions"] == {"Ref": "ReservedConcurrency"}
    routes = the(default, "AWS::ApiGatewayV2::Stage")["DefaultRouteSettings"]
    assert routes == {"ThrottlingBurstLimit": {"Ref": "ThrottleBurstLimit"}, "ThrottlingRateLimit": {"Ref": "ThrottleRateLimit"}}
    # The REST stage: the same limits on every method.
    rest = the(translate("none", Transport="streaming"), "AWS::ApiGateway::Stage")["MethodSettings"]
    assert rest == [
        {
            "ResourcePath": "/*",
            "HttpMethod": "*",
            "ThrottlingBurstLimit": {"Ref": "ThrottleBurstLimit"},
            "ThrottlingRateLimit": {"Ref": "ThrottleRateLimit"},
        }
    ]
    mappings = resources(default, "AWS::Lambda::EventSourceMapping")
    task_queue = [m["Properties"] for m in mappings.values() if m["Properties"]["EventSourceArn"] == {"Fn::GetAtt": ["TaskQueue", "Arn"]}]
    assert task_queue and task_queue[0]["ScalingConfig"] == {"MaximumConcurrency": {"Ref": "WorkerMaxConcurrency"}}


# ------------------------------------------------------------ transports


def api_resources(template):
    """The resources that serve the function: API Gateway's (either kind)
    and the permissions that let it invoke the function."""
    return {
        k
        for k, r in template["Resources"].items()
        if r["Type"].startswith(("AWS::ApiGateway::", "AWS::ApiGatewayV2::")) or r["Type"] == "AWS::Lambda::Permission"
    }


def test_each_transport_deploys_exactly_its_own_api(cfn):
    template, mode, transport = cfn
    if transport == "buffered":
        expected = HTTP_API | ({"JwtAuthorizer"} if mode != "none" else set()) | (HTTP_OAUTH if mode == "oauth" else set())
    else:
        auth = {"cognito": REST_COGNITO, "oauth": REST_OAUTH}.get(mode, REST_OPEN)
        expected = REST_API | auth
    assert api_resources(template) == expected
    other = "AWS::ApiGatewayV2::" if transport == "streaming" else "AWS::ApiGateway::"
    assert not [k for k, r in template["Resources"].items() if r["Type"].startswith(other)], f"{transport} deploys one API"
    # API Gateway may invoke each function only from the API this stack serves.
    permissions = [template["Resources"][k]["Properties"] for k in expected if k.endswith("InvokePermission")]
    functions = {"McpFunction", "AuthorizationFunction"} if mode == "oauth" else {"McpFunction"}
    assert {p["FunctionName"]["Ref"] for p in permissions} == functions and len(permissions) == len(functions)
    api = "McpRestApi" if transport == "streaming" else "McpApi"
    for permission in permissions:
        assert permission["Action"] == "lambda:InvokeFunction"
        assert permission["Principal"] == "apigateway.amazonaws.com"
        assert permission["SourceArn"] == {"Fn::Sub": "arn:${AWS::Partition}:execute-api:${AWS::Region}:${AWS::AccountId}:${" + api + "}/*"}


PSEUDO_PARAMETERS = {"AWS::AccountId", "AWS::NoValue", "AWS::Partition", "AWS::Region", "AWS::StackId", "AWS::StackName", "AWS::URLSuffix"}


def names_referenced(node):
    """Every logical name a Ref, Fn::GetAtt or Fn::Sub in `node` names."""
    if isinstance(node, list):
        for value in node:
            yield from names_referenced(value)
    elif isinstance(node, dict):
        for key, value in node.items():
            if key == "Ref":
                yield value
            elif key == "Fn::GetAtt":
                yield value[0] if isinstance(value, list) else value.split(".")[0]
            elif key == "Fn::Sub":
                text, local = (value, {}) if isinstance(value, str) else value
                for name in re.findall(r"\$\{([^!}][^}]*)\}", text):
                    if name not in local:
                        yield name if name.startswith("AWS::") else name.split(".")[0]
                yield from names_referenced(local)
            else:
                yield from names_referenced(value)


def test_every_reference_names_something_deployed(cfn):
    """CloudFormation refuses a template whose kept parts name a resource
    whose condition is false; the conditions of the two transports must
    line up."""
    template, _, _ = cfn
    known = set(template["Resources"]) | set(template["Parameters"]) | PSEUDO_PARAMETERS
    for name, resource in template["Resources"].items():
        dangling = set(names_referenced(resource.get("Properties", {}))) - known
        assert not dangling, f"{name} names {sorted(dangling)}"
        assert set(listed(resource.get("DependsOn", []))) <= set(template["Resources"]), name
    for name, output in template["Outputs"].items():
        dangling = set(names_referenced(output["Value"])) - known
        assert not dangling, f"output {name} names {sorted(dangling)}"


def test_function_timeout_and_transport_follow_the_parameter(cfn):
    template, _, transport = cfn
    parameter = template["Parameters"]["Transport"]
    assert parameter["AllowedValues"] == ["buffered", "streaming"] and parameter["Default"] == "buffered"
    function_ = function(template, "McpFunction")
    variables = function_["Environment"]["Variables"]
    assert variables["MCP_TRANSPORT"] == {"Ref": "Transport"}
    # lambda_http would otherwise put the REST stage in the path.
    assert variables["AWS_LAMBDA_HTTP_IGNORE_STAGE_IN_PATH"] == "true"
    listen = int(variables["MCP_LISTEN_SECONDS"])
    if transport == "buffered":
        integration = template["Resources"]["McpIntegration"]["Properties"]
        assert function_["Timeout"] < 29, "must end before the HTTP API's 29 s integration timeout"
        assert function_["Timeout"] * 1000 < integration["TimeoutInMillis"] <= 29000
        assert variables["MCP_BASE_PATH"] == ""
    else:
        assert function_["Timeout"] == 330
        # A listen stream closes itself before the function is stopped, and
        # the integration waits as long as the function may run.
        assert listen < function_["Timeout"] <= 900
        for method in resources(template, "AWS::ApiGateway::Method").values():
            if "McpFunction" in method["Properties"]["Integration"]["Uri"]["Fn::Sub"]:
                assert method["Properties"]["Integration"]["TimeoutInMillis"] == function_["Timeout"] * 1000
        assert variables["MCP_BASE_PATH"] == f"/{REST_STAGE}"
    assert template["Outputs"]["Transport"]["Value"] == {"Ref": "Transport"}


def test_outputs_name_the_endpoint_of_the_deployed_api(cfn):
    template, _, transport = cfn
    endpoint = template["Outputs"]["McpEndpointUrl"]["Value"]["Fn::Sub"]
    metadata = template["Outputs"]["ProtectedResourceMetadataUrl"]["Value"]["Fn::Sub"]
    if transport == "buffered":
        host = "https://${McpApi}.execute-api.${AWS::Region}.${AWS::URLSuffix}"
        assert endpoint == f"{host}/mcp"
        assert metadata == f"{host}/.well-known/oauth-protected-resource/mcp"
    else:
        host = "https://${McpRestApi}.execute-api.${AWS::Region}.${AWS::URLSuffix}"
        assert endpoint == f"{host}/{REST_STAGE}/mcp"
        assert metadata == f"{host}/{REST_STAGE}/.well-known/oauth-protected-resource/mcp"


def rest_methods(template):
    """The REST API's methods by (HTTP method, path from the API's root)."""
    (api,) = resources(template, "AWS::ApiGateway::RestApi")
    tree = resources(template, "AWS::ApiGateway::Resource")

    def path(parent):
        if parent == {"Fn::GetAtt": [api, "RootResourceId"]}:
            return ""
        props = tree[parent["Ref"]]["Properties"]
        assert props["RestApiId"] == {"Ref": api}
        return path(props["ParentId"]) + "/" + props["PathPart"]

    methods = {}
    for method in resources(template, "AWS::ApiGateway::Method").values():
        props = method["Properties"]
        assert props["RestApiId"] == {"Ref": api}
        methods[(props["HttpMethod"], path(props["ResourceId"]))] = props
    return methods


def test_streaming_methods_stream_the_function_through_a_regional_api(streaming):
    template, _ = streaming
    api = the(template, "AWS::ApiGateway::RestApi")
    # Edge-optimised endpoints drop a stream idle for 30 s; regional, 5 min.
    assert api["EndpointConfiguration"] == {"Types": ["REGIONAL"]}
    methods = rest_methods(template)
    oauth = {("ANY", path) for path in AUTHORIZATION_PATHS} if _ == "oauth" else set()
    # ANY on /mcp: the function itself answers wrong methods (405, 406...).
    assert set(methods) == {("ANY", "/mcp"), *(("GET", p) for p in METADATA_PATHS)} | oauth
    for key in oauth:
        # The authorization server answers whole (nothing of it streams).
        integration = methods.pop(key)["Integration"]
        assert integration["Type"] == "AWS_PROXY" and "ResponseTransferMode" not in integration, key
        assert integration["Uri"]["Fn::Sub"].endswith("/functions/${AuthorizationFunction.Arn}/invocations"), key
    for key, method in methods.items():
        integration = method["Integration"]
        assert integration["Type"] == "AWS_PROXY", key
        assert integration["IntegrationHttpMethod"] == "POST", key
        assert integration["ResponseTransferMode"] == "STREAM", key
        uri = integration["Uri"]["Fn::Sub"]
        assert uri.startswith("arn:${AWS::Partition}:apigateway:${AWS::Region}:lambda:path/2021-11-15/functions/"), key
        assert uri.endswith("/functions/${McpFunction.Arn}/response-streaming-invocations"), key
        assert 29000 < integration["TimeoutInMillis"] <= 900000, key
    stage = the(template, "AWS::ApiGateway::Stage")
    assert stage["StageName"] == REST_STAGE and stage["RestApiId"] == {"Ref": "McpRestApi"}


def test_streaming_auth_requires_the_cognito_scope_on_mcp_only(streaming):
    template, mode = streaming
    methods = rest_methods(template)
    variables = function(template, "McpFunction")["Environment"]["Variables"]
    for path in METADATA_PATHS:
        assert methods[("GET", path)]["AuthorizationType"] == "NONE", path
        assert "AuthorizerId" not in methods[("GET", path)] and "AuthorizationScopes" not in methods[("GET", path)], path
    mcp = methods[("ANY", "/mcp")]
    authorizers = resources(template, "AWS::ApiGateway::Authorizer")
    if mode != "cognito":
        # none: open; jwt and oauth: the function verifies the token (MCP_JWT_*).
        assert mcp["AuthorizationType"] == "NONE"
        assert "AuthorizerId" not in mcp and "AuthorizationScopes" not in mcp
        assert not authorizers
        issuer = {"jwt": {"Ref": "JwtIssuer"}, "oauth": OAUTH_ISSUER["streaming"]}.get(mode, "")
        assert variables["MCP_AUTHORIZATION_SERVERS"] == issuer
        if mode == "oauth":
            # It trusts the stack's own issuer, for this endpoint, with the scopes published.
            assert variables["MCP_JWT_ISSUER"] == issuer
            assert variables["MCP_JWT_AUDIENCE"] == {"Fn::Sub": OAUTH_ISSUER["streaming"]["Fn::Sub"] + "/mcp"}
            custom = translate("oauth", Transport="streaming", PublicBaseUrl="https://mcp.example.com")
            assert function(custom, "McpFunction")["Environment"]["Variables"]["MCP_JWT_AUDIENCE"] == {"Fn::Sub": "${PublicBaseUrl}/mcp"}
            assert variables["MCP_JWT_SCOPES"] == variables["MCP_SCOPES_SUPPORTED"] == {"Ref": "ScopesSupported"}
        return
    assert mcp["AuthorizationType"] == "COGNITO_USER_POOLS"
    assert mcp["AuthorizerId"] == {"Ref": "McpRestAuthorizer"}
    # The scope the metadata publishes and the user pool's tokens carry.
    assert mcp["AuthorizationScopes"] == ["mcp/invoke"] == [variables["MCP_SCOPES_SUPPORTED"]]
    assert set(authorizers) == {"McpRestAuthorizer"}
    authorizer = authorizers["McpRestAuthorizer"]["Properties"]
    assert authorizer["Type"] == "COGNITO_USER_POOLS"
    assert authorizer["IdentitySource"] == "method.request.header.Authorization"
    assert authorizer["ProviderARNs"] == [{"Fn::GetAtt": ["UserPool", "Arn"]}]
    assert authorizer["RestApiId"] == {"Ref": "McpRestApi"}


def www_authenticate(response):
    """The WWW-Authenticate a gateway response sends, unquoted: API Gateway
    takes a header value in single quotes as a literal."""
    value = response["ResponseParameters"]["gatewayresponse.header.WWW-Authenticate"]["Fn::Sub"]
    assert value.startswith("'") and value.endswith("'") and "'" not in value[1:-1], value
    return value[1:-1]


def test_streaming_refusals_point_at_the_metadata_under_the_stage(streaming):
    template, mode = streaming
    responses = {r["Properties"]["ResponseType"]: r["Properties"] for r in resources(template, "AWS::ApiGateway::GatewayResponse").values()}
    if mode != "cognito":
        # none: nothing is refused; jwt: the function writes its own 401/403.
        assert not responses, "no authorizer, no refusals to explain"
        return
    assert set(responses) == {"UNAUTHORIZED", "ACCESS_DENIED"}
    metadata = template["Outputs"]["ProtectedResourceMetadataUrl"]["Value"]["Fn::Sub"]
    assert f"/{REST_STAGE}/.well-known/oauth-protected-resource/mcp" in metadata
    unauthorized = responses["UNAUTHORIZED"]
    assert unauthorized["StatusCode"] == "401" and unauthorized["RestApiId"] == {"Ref": "McpRestApi"}
    # The scopes to ask for (2025-11-25 basic/authorization: a 401 SHOULD name them).
    assert www_authenticate(unauthorized) == f'Bearer scope="mcp/invoke", resource_metadata="{metadata}"'
    denied = responses["ACCESS_DENIED"]
    assert denied["StatusCode"] == "403" and denied["RestApiId"] == {"Ref": "McpRestApi"}
    header = www_authenticate(denied)
    assert header.startswith('Bearer error="insufficient_scope"'), header
    assert 'scope="mcp/invoke"' in header and f'resource_metadata="{metadata}"' in header


def test_the_stage_serves_a_snapshot_of_every_method_and_refusal(streaming):
    template, _ = streaming
    deployments = resources(template, "AWS::ApiGateway::Deployment")
    assert len(deployments) == 1
    ((name, deployment),) = deployments.items()
    stage = the(template, "AWS::ApiGateway::Stage")
    assert stage["DeploymentId"] == {"Ref": name}
    # A deployment snapshots what exists when it is made: it must come after
    # every method and gateway response.
    after = set(listed(deployment.get("DependsOn", [])))
    assert after == set(resources(template, "AWS::ApiGateway::Method")) | set(resources(template, "AWS::ApiGateway::GatewayResponse"))


def test_changing_auth_mode_makes_a_new_snapshot():
    """The stage keeps serving its deployment's methods whatever
    CloudFormation updates later: AuthMode none to cognito must not leave
    the old, open methods deployed."""
    cognito = set(resources(translate("cognito", Transport="streaming"), "AWS::ApiGateway::Deployment"))
    open_ = set(resources(translate("none", Transport="streaming"), "AWS::ApiGateway::Deployment"))
    jwt = set(resources(translate("jwt", Transport="streaming"), "AWS::ApiGateway::Deployment"))
    assert cognito and open_ and cognito.isdisjoint(open_)
    # jwt and none deploy the same methods (no authorizer): one snapshot.
    assert jwt == open_
    # oauth adds the authorization server's paths: a snapshot of its own.
    oauth = set(resources(translate("oauth", Transport="streaming"), "AWS::ApiGateway::Deployment"))
    assert oauth and oauth.isdisjoint(open_) and oauth.isdisjoint(cognito)


def parameter_value(node, params):
    """What `node` (a Ref to a parameter, an Fn::Join of one, or a literal)
    amounts to when the stack is deployed with `params`."""
    declared = load_template(ROOT / "template.yaml")["Parameters"]
    if isinstance(node, str):
        return node
    if set(node) == {"Ref"}:
        name = node["Ref"]
        value = str(params.get(name, declared[name].get("Default", "")))
        return value.split(",") if declared[name]["Type"] == "CommaDelimitedList" else value
    if set(node) == {"Fn::Join"}:
        separator, values = node["Fn::Join"]
        joined = parameter_value(values, params) if isinstance(values, dict) else [parameter_value(v, params) for v in values]
        assert isinstance(joined, list), node
        return separator.join(joined)
    raise AssertionError(f"not a parameter value: {node}")


@pytest.mark.parametrize("mode", ["cognito", "jwt", "none"])
@pytest.mark.parametrize("transport", ["buffered", "streaming"])
def test_only_jwt_with_streaming_has_the_function_verify_tokens(mode, transport):
    # Two audiences and two scopes, so a list passed whole or a scope lost
    # would show.
    params = {
        "Transport": transport,
        "JwtIssuer": "https://issuer.example.com/",
        "JwtAudience": "mcp-client,https://mcp.example.com/api/mcp",
        "ScopesSupported": "mcp:read,mcp:write",
    }
    template = translate(mode, **params)
    params["AuthMode"] = mode
    variables = function(template, "McpFunction")["Environment"]["Variables"]
    assert FUNCTION_JWT.keys() <= set(variables)
    # Lambda takes only strings: a CommaDelimitedList must be joined.
    deployed = {name: parameter_value(variables[name], params) for name in FUNCTION_JWT}
    assert all(isinstance(v, str) for v in deployed.values()), deployed
    if (mode, transport) != ("jwt", "streaming"):
        # An API Gateway authorizer verifies the tokens (or none are needed).
        assert deployed == dict.fromkeys(FUNCTION_JWT, "")
        return
    assert deployed == {
        "MCP_JWT_ISSUER": "https://issuer.example.com/",
        "MCP_JWT_AUDIENCE": "mcp-client,https://mcp.example.com/api/mcp",
        "MCP_JWT_SCOPES": "mcp:read,mcp:write",
    }
    # The function requires what the metadata publishes.
    assert variables["MCP_JWT_ISSUER"] == variables["MCP_AUTHORIZATION_SERVERS"] == {"Ref": "JwtIssuer"}
    assert variables["MCP_JWT_SCOPES"] == variables["MCP_SCOPES_SUPPORTED"]
    # Nothing in front of the function checks the token, or refuses for it.
    mcp = rest_methods(template)[("ANY", "/mcp")]
    assert mcp["AuthorizationType"] == "NONE"
    assert "AuthorizerId" not in mcp and "AuthorizationScopes" not in mcp
    assert not resources(template, "AWS::ApiGateway::Authorizer")
    assert not resources(template, "AWS::ApiGateway::GatewayResponse")
    assert not resources(template, "AWS::ApiGatewayV2::Authorizer")
    assert not [k for k, r in template["Resources"].items() if r["Type"].startswith("AWS::Cognito::")]
    (deployment,) = resources(template, "AWS::ApiGateway::Deployment")
    assert the(template, "AWS::ApiGateway::Stage")["DeploymentId"] == {"Ref": deployment}


# What the deployment-specific names stand for when a test reads a value:
# pseudo-parameters as the translator fills them, each resource by its name.
PSEUDO = {"AWS::Region": "eu-west-1", "AWS::URLSuffix": "amazonaws.com", "AWS::StackName": "stack"}
# Every deployment shape AuthMode oauth is served in: the API's own domain
# on either transport, and a custom domain with and without a base path.
PUBLIC_BASE_URLS = ["", "https://mcp.example.com", "https://mcp.example.com/tools"]


def deployed(node, params):
    """The string CloudFormation makes of `node` (resolved for `params`):
    Fn::Sub, Fn::Select, Fn::Split and Fn::Join evaluated, parameters and
    pseudo-parameters by value, a resource's Ref by its logical name."""
    declared = load_template(ROOT / "template.yaml")["Parameters"]
    values = {name: str(p.get("Default", "")) for name, p in declared.items()} | PSEUDO | params

    def ref(name):
        return values.get(name, name)

    if isinstance(node, (str, list)):
        return [deployed(n, params) for n in node] if isinstance(node, list) else node
    ((function_, argument),) = node.items()
    if function_ == "Ref":
        return ref(argument)
    if function_ == "Fn::Sub":
        text, extra = (argument, {}) if isinstance(argument, str) else argument
        extra = {k: deployed(v, params) for k, v in extra.items()}
        return re.sub(r"\$\{([^}]+)\}", lambda m: extra[m.group(1)] if m.group(1) in extra else ref(m.group(1)), text)
    if function_ == "Fn::Select":
        index, items = argument
        return deployed(items, params)[int(index)]
    if function_ == "Fn::Split":
        separator, text = argument
        return deployed(text, params).split(separator)
    if function_ == "Fn::Join":
        separator, items = argument
        return separator.join(deployed(items, params))
    raise AssertionError(f"not understood: {node}")


@pytest.mark.parametrize("transport", ["buffered", "streaming"])
@pytest.mark.parametrize("public", PUBLIC_BASE_URLS)
def test_one_issuer_in_every_deployment_shape(transport, public):
    # Claude Desktop compares the metadata's issuer with the
    # authorization_servers entry byte for byte; Claude Code compares iss
    # (RFC 9207). Every expression naming the issuer must be one string.
    params = {"AuthMode": "oauth", "Transport": transport, "PublicBaseUrl": public}
    template = translate("oauth", Transport=transport, PublicBaseUrl=public)
    own = {"buffered": "https://McpApi.execute-api.eu-west-1.amazonaws.com", "streaming": "https://McpRestApi.execute-api.eu-west-1.amazonaws.com/api"}
    issuer = public or own[transport]
    mcp = function(template, "McpFunction")["Environment"]["Variables"]
    authorization = function(template, "AuthorizationFunction")["Environment"]["Variables"]
    named = {
        "MCP_AUTHORIZATION_SERVERS[0]": deployed(mcp["MCP_AUTHORIZATION_SERVERS"], params).split(",")[0],
        "MCP_OAUTH_ISSUER": deployed(authorization["MCP_OAUTH_ISSUER"], params),
        "AuthorizationServerIssuer": deployed(template["Outputs"]["AuthorizationServerIssuer"]["Value"], params),
    }
    # Who verifies the tokens: the HTTP API's JWT authorizer, or the function.
    if transport == "buffered":
        jwt = template["Resources"]["JwtAuthorizer"]["Properties"]["JwtConfiguration"]
        named["JwtAuthorizer issuer"] = deployed(jwt["Issuer"], params)
        audiences = deployed(jwt["Audience"], params)
        assert deployed(mcp["MCP_JWT_ISSUER"], params) == ""
    else:
        named["MCP_JWT_ISSUER"] = deployed(mcp["MCP_JWT_ISSUER"], params)
        audiences = deployed(mcp["MCP_JWT_AUDIENCE"], params).split(",")
    assert named == dict.fromkeys(named, issuer)
    # The tokens are for the endpoint clients were given (RFC 8707), where
    # the metadata says; the sign-in comes back to the issuer's own callback.
    endpoint = deployed(template["Outputs"]["McpEndpointUrl"]["Value"], params)
    assert endpoint == f"{issuer}/mcp" and audiences == [endpoint]
    if public:
        assert deployed(mcp["MCP_RESOURCE"], params) == deployed(authorization["MCP_RESOURCE"], params) == endpoint
    metadata = deployed(template["Outputs"]["ProtectedResourceMetadataUrl"]["Value"], params)
    assert metadata == f"{issuer}/.well-known/oauth-protected-resource/mcp"
    (callback,) = template["Resources"]["AuthorizationServerClient"]["Properties"]["CallbackURLs"]
    assert deployed(callback, params) == deployed(template["Outputs"]["AuthorizationCallbackUrl"]["Value"], params) == f"{issuer}/oauth/callback"
    # Requests arrive under the issuer's path (a stage, a mapping's key):
    # both functions take it off (the code drops a trailing slash).
    base_path = re.sub(r"^https://[^/]+", "", issuer)
    for variables in (mcp, authorization):
        assert deployed(variables["MCP_BASE_PATH"], params).rstrip("/") == base_path


def test_the_public_base_url_is_one_clients_can_compare():
    pattern = load_template(ROOT / "template.yaml")["Parameters"]["PublicBaseUrl"]["AllowedPattern"]
    for accepted in ["", "https://mcp.example.com", "https://mcp.example.com/tools", "https://a.b.example.co.uk/v1.2_x-y"]:
        assert re.fullmatch(pattern, accepted), accepted
    for refused in [
        "https://mcp.example.com/",
        "https://mcp.example.com/tools/",
        "http://mcp.example.com",
        "https://mcp.example.com:8443",
        "https://mcp.example.com?x=1",
        "https://mcp.example.com#x",
        "https://MCP.example.com",
        "https://mcp.example.com/a/b",
        "https://localhost",
        "mcp.example.com",
    ]:
        assert not re.fullmatch(pattern, refused), refused


def failed_assertions(params):
    """The (rule, AssertDescription) pairs CloudFormation would refuse the
    template's Rules with for `params`."""
    sam = canonical(load_template(ROOT / "template.yaml"))
    declared = sam["Parameters"]
    values = {name: str(p.get("Default", "")) for name, p in declared.items()}
    values.update(params)

    def evaluate(node):
        if isinstance(node, list):
            return [evaluate(v) for v in node]
        if not isinstance(node, dict):
            return node
        ((function_, argument),) = node.items()
        if function_ == "Ref":
            value = values[argument]
            return value.split(",") if declared[argument]["Type"] == "CommaDelimitedList" else value
        if function_ == "Fn::Equals":
            left, right = evaluate(argument)
            return left == right
        if function_ == "Fn::Not":
            return not evaluate(argument[0])
        if function_ == "Fn::And":
            return all(evaluate(argument))
        if function_ == "Fn::Or":
            return any(evaluate(argument))
        if function_ == "Fn::Contains":
            return evaluate(argument[1]) in evaluate(argument[0])
        if function_ == "Fn::Join":
            return argument[0].join(evaluate(argument[1]))
        raise AssertionError(f"rule function not understood: {node}")

    failed = []
    for name, rule in sam["Rules"].items():
        if "RuleCondition" in rule and not evaluate(rule["RuleCondition"]):
            continue
        failed += [(name, a["AssertDescription"]) for a in rule["Assertions"] if not evaluate(a["Assert"])]
    return failed


@pytest.mark.parametrize("mode", ["oauth", "cognito", "jwt", "none"])
@pytest.mark.parametrize("transport", ["buffered", "streaming"])
def test_every_combination_deploys(mode, transport):
    assert (mode, transport) in COMBINATIONS
    params = {"AuthMode": mode, "Transport": transport, "JwtIssuer": "https://issuer.example.com/", "JwtAudience": "mcp"}
    assert failed_assertions(params) == []


def test_the_rules_are_evaluated_not_just_read():
    # jwt without an issuer: the jwt rule refuses, whatever the transport.
    for transport in ("buffered", "streaming"):
        failed = failed_assertions({"AuthMode": "jwt", "Transport": transport, "JwtAudience": "mcp"})
        assert failed == [("JwtNeedsIssuerAudienceAndScopes", "JwtIssuer is required when AuthMode is jwt.")], transport
        # Without issuer and audience, both are named.
        failed = failed_assertions({"AuthMode": "jwt", "Transport": transport})
        assert [d for _, d in failed] == [
            "JwtIssuer is required when AuthMode is jwt.",
            "JwtAudience is required when AuthMode is jwt.",
        ], transport
    # oauth with another provider needs its client id there.
    failed = failed_assertions({"AuthMode": "oauth", "UpstreamIssuer": "https://idp.example.com"})
    assert failed == [("UpstreamNeedsClientId", "UpstreamClientId is required when UpstreamIssuer is set.")]
    assert failed_assertions({"AuthMode": "oauth", "UpstreamIssuer": "https://idp.example.com", "UpstreamClientId": "abc"}) == []
    # Nothing else is refused: jwt with streaming has no rule of its own.
    assert set(load_template(ROOT / "template.yaml")["Rules"]) == {"JwtNeedsIssuerAudienceAndScopes", "UpstreamNeedsClientId"}
