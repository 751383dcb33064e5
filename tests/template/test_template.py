"""template.yaml, translated to CloudFormation offline, against what the code
depends on: environment variables, the table's key and TTL attribute, the
KMS encryption context, least-privilege IAM, and the API's routes and auth.

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
# Read only by the local server or by tests, never in Lambda.
LOCAL_ONLY = {"MCP_LOCAL_ADDR"}


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


def env_vars_read_by_code():
    names = set()
    for path in SOURCES:
        names.update(re.findall(r'"(MCP_[A-Z_]+)"', path.read_text()))
    return {n for n in names if not n.startswith("MCP_TEST_")} - LOCAL_ONLY


def translate(auth_mode):
    sam = load_template(ROOT / "template.yaml")
    # What `sam package` does before CloudFormation sees the template.
    for resource in sam["Resources"].values():
        if resource["Type"] == "AWS::Serverless::Function":
            resource["Properties"]["CodeUri"] = "s3://packaged/code.zip"
    params = {"AuthMode": auth_mode, "JwtIssuer": "https://issuer.example.com/", "JwtAudience": "mcp"}
    return transform(sam, params, NoManagedPolicies())


@pytest.fixture(scope="module", params=["jwt", "none"])
def cfn(request):
    return translate(request.param), request.param


def resources(template, type_name):
    return {k: v for k, v in template["Resources"].items() if v["Type"] == type_name}


def the(template, type_name):
    found = resources(template, type_name)
    assert len(found) == 1, f"expected one {type_name}, found {list(found)}"
    return next(iter(found.values()))["Properties"]


def test_function_gets_every_variable_the_code_reads(cfn):
    template, _ = cfn
    function = the(template, "AWS::Lambda::Function")
    declared = set(function["Environment"]["Variables"])
    missing = env_vars_read_by_code() - declared
    assert not missing, f"template.yaml does not set {sorted(missing)}"
    assert function["Runtime"] == "provided.al2023"
    assert function["Architectures"] == ["arm64"]
    assert function["Timeout"] < 29, "must end before API Gateway's 29 s integration timeout"


def test_table_matches_what_the_code_writes(cfn):
    template, _ = cfn
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
    template, _ = cfn
    statements = list(iam_statements(template))
    assert statements
    for role in resources(template, "AWS::IAM::Role").values():
        assert not role["Properties"].get("ManagedPolicyArns"), "no managed policies: they carry wildcards"
    for statement in statements:
        for action in listed(statement["Action"]):
            assert "*" not in action, statement
        for resource in listed(statement.get("Resource", [])):
            assert resource != "*", statement


def test_kms_use_is_conditioned_on_the_context_the_code_sends(cfn):
    template, _ = cfn
    kms = [s for s in iam_statements(template) if any(a.startswith("kms:") for a in listed(s["Action"]))]
    assert len(kms) == 1
    assert sorted(listed(kms[0]["Action"])) == ["kms:Decrypt", "kms:GenerateDataKey"]
    condition = kms[0]["Condition"]["StringEquals"]
    purpose_key = rust_constant("CONTEXT_PURPOSE_KEY")
    audience_key = rust_constant("CONTEXT_AUDIENCE_KEY")
    assert condition[f"kms:EncryptionContext:{purpose_key}"] == rust_constant("CONTEXT_PURPOSE")
    assert condition[f"kms:EncryptionContext:{audience_key}"] == {"Ref": "AWS::StackName"}
    function = the(template, "AWS::Lambda::Function")
    assert function["Environment"]["Variables"]["MCP_AUDIENCE"] == {"Ref": "AWS::StackName"}
    key = the(template, "AWS::KMS::Key")
    assert key["EnableKeyRotation"] is True


def test_dynamodb_actions_are_item_actions_on_the_table(cfn):
    template, _ = cfn
    dynamo = [s for s in iam_statements(template) if any(a.startswith("dynamodb:") for a in listed(s["Action"]))]
    assert len(dynamo) == 1
    assert set(listed(dynamo[0]["Action"])) <= {"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"}
    assert listed(dynamo[0]["Resource"]) == [{"Fn::GetAtt": ["StateTable", "Arn"]}]


def test_routes_and_auth(cfn):
    template, mode = cfn
    routes = {r["Properties"]["RouteKey"]: r["Properties"] for r in resources(template, "AWS::ApiGatewayV2::Route").values()}
    assert set(routes) == {
        "POST /mcp",
        "GET /.well-known/oauth-protected-resource",
        "GET /.well-known/oauth-protected-resource/mcp",
    }
    for key in ("GET /.well-known/oauth-protected-resource", "GET /.well-known/oauth-protected-resource/mcp"):
        assert routes[key]["AuthorizationType"] == "NONE"
    auth = routes["POST /mcp"]["AuthorizationType"]
    assert auth == {"Fn::If": ["UseJwt", "JWT", "NONE"]}
    assert template["Conditions"]["UseJwt"] == {"Fn::Equals": [{"Ref": "AuthMode"}, "jwt"]}
    stage = the(template, "AWS::ApiGatewayV2::Stage")
    assert stage["StageName"] == "$default", "well-known URIs must sit at the root"
