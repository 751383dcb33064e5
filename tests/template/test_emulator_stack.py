"""template.yaml with AuthMode oauth, deployed on the emulator's
CloudFormation (moto: it creates what it emulates and passes over what it
does not, API Gateway's JWT authorizer and Cognito's domain among them):
the stack comes up with the authorization server, and only its role may
sign with the token signing key, as deployed; and infra/seal-upstream-secret.sh
seals a secret for it that opens under the function's context only. (moto's CloudFormation makes
every KMS key symmetric whatever KeySpec says, so the key's kind is checked
on the translated template, test_template.py, and signing with an
ECC_NIST_P256 key the emulator made through its API in tests/authorization.rs.)

The emulator is the test command's (infra/emulator-for-tests.sh starts it
when nothing runs, as for the Rust tests).
"""

import ast
import base64
import io
import json
import os
import subprocess
import uuid
import zipfile

import boto3
import pytest
from botocore.exceptions import ClientError

import test_template as t


@pytest.fixture(scope="module")
def aws():
    printed = subprocess.run(
        ["bash", str(t.ROOT / "infra" / "emulator-for-tests.sh")], check=True, capture_output=True, text=True
    ).stdout
    env = dict(line.split("=", 1) for line in printed.splitlines() if "=" in line)
    return dict(
        endpoint_url=env["AWS_ENDPOINT_URL"],
        region_name=env["AWS_REGION"],
        aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
    )


def resolve_mappings(node, mappings):
    """Fn::FindInMap resolved here: moto looks a Number parameter's value up
    as an integer where the map's keys are strings."""
    if isinstance(node, dict):
        if set(node) == {"Fn::FindInMap"}:
            name, key, attribute = node["Fn::FindInMap"]
            assert key == {"Ref": "WorkerTimeout"}, node
            return mappings[name]["300"][attribute]
        return {k: resolve_mappings(v, mappings) for k, v in node.items()}
    if isinstance(node, list):
        return [resolve_mappings(v, mappings) for v in node]
    return node


@pytest.fixture(scope="module")
def stack(aws):
    sam = t.canonical(t.load_template(t.ROOT / "template.yaml"))
    bucket = f"packaged-{uuid.uuid4().hex[:12]}"
    for resource in sam["Resources"].values():
        if resource["Type"] == "AWS::Serverless::Function":
            resource["Properties"]["CodeUri"] = f"s3://{bucket}/code.zip"
    # The default: AuthMode oauth (the parameter is left unset).
    params = {"Transport": "buffered"}
    cfn = t.transform(sam, params, t.NoManagedPolicies())
    cfn["Resources"] = resolve_mappings(cfn["Resources"], cfn["Mappings"])
    for resource in cfn["Resources"].values():
        if resource["Type"] == "AWS::KMS::Key":
            # moto keeps a key policy given as an object where it expects a
            # string, then fails every DescribeKey: it gets one as a string.
            # The policy is not what these tests look at (test_template.py
            # reads it).
            resource["Properties"]["KeyPolicy"] = json.dumps(
                {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "kms:*", "Resource": "*"}]}
            )
    s3 = boto3.client("s3", **aws)
    if aws["region_name"] == "us-east-1":
        s3.create_bucket(Bucket=bucket)
    else:
        s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": aws["region_name"]})
    code = io.BytesIO()
    with zipfile.ZipFile(code, "w") as archive:
        archive.writestr("bootstrap", "not run here")
    s3.put_object(Bucket=bucket, Key="code.zip", Body=code.getvalue())
    name = f"oauth-{uuid.uuid4().hex[:8]}"
    cloudformation = boto3.client("cloudformation", **aws)
    cloudformation.create_stack(
        StackName=name,
        TemplateBody=json.dumps(cfn),
        Parameters=[{"ParameterKey": k, "ParameterValue": v} for k, v in params.items()],
        Capabilities=["CAPABILITY_IAM"],
    )
    status = cloudformation.describe_stacks(StackName=name)["Stacks"][0]["StackStatus"]
    summaries = cloudformation.list_stack_resources(StackName=name)["StackResourceSummaries"]
    physical = {r["LogicalResourceId"]: r.get("PhysicalResourceId") for r in summaries if r.get("LogicalResourceId")}
    return status, physical, name


def test_the_oauth_stack_deploys_with_its_authorization_server(stack):
    status, physical, _ = stack
    assert status == "CREATE_COMPLETE"
    # (moto's CloudFormation has no Cognito: the user pool is not among them.)
    for logical in ("AuthorizationFunction", "AuthorizationFunctionRole", "TokenSigningKey", "McpFunction", "StateTable"):
        assert physical.get(logical), f"{logical} was not created"


def test_only_the_authorization_server_may_sign_as_deployed(stack, aws):
    _, physical, _ = stack
    iam = boto3.client("iam", **aws)
    key_arn = boto3.client("kms", **aws).describe_key(KeyId=physical["TokenSigningKey"])["KeyMetadata"]["Arn"]

    def statements(role_logical):
        role = physical[role_logical]
        for policy in iam.list_role_policies(RoleName=role)["PolicyNames"]:
            document = iam.get_role_policy(RoleName=role, PolicyName=policy)["PolicyDocument"]
            # moto answers the policy as Python's repr of what CloudFormation gave it.
            document = ast.literal_eval(document) if isinstance(document, str) else document
            # moto leaves an AWS::NoValue in a list as null; CloudFormation drops it.
            yield from (statement for statement in document["Statement"] if statement)

    def listed(value):
        return value if isinstance(value, list) else [value]

    signing = [s for s in statements("AuthorizationFunctionRole") if "kms:Sign" in listed(s["Action"])]
    assert [listed(s["Resource"]) for s in signing] == [[key_arn]]
    for role in ("McpFunctionRole", "TaskWorkerRole"):
        assert not [s for s in statements(role) if "kms:Sign" in listed(s["Action"])], role
    variables = boto3.client("lambda", **aws).get_function_configuration(FunctionName=physical["AuthorizationFunction"])[
        "Environment"
    ]["Variables"]
    assert variables["MCP_OAUTH_SIGNING_KEY_ID"] == key_arn


def test_the_seal_script_seals_a_secret_only_the_function_context_opens(stack, aws):
    _, physical, name = stack
    script = str(t.ROOT / "infra" / "seal-upstream-secret.sh")
    # The emulator's account, whatever this process's own AWS settings are.
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(
        AWS_ENDPOINT_URL=aws["endpoint_url"],
        AWS_REGION=aws["region_name"],
        AWS_DEFAULT_REGION=aws["region_name"],
        AWS_ACCESS_KEY_ID=aws["aws_access_key_id"],
        AWS_SECRET_ACCESS_KEY=aws["aws_secret_access_key"],
    )
    secret = "upstream-secret-from-stdin"
    run = subprocess.run(["bash", script, "--stack", name], input=secret + "\n", env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert secret not in run.stdout + run.stderr, "the secret is never printed"
    # stdout is the ciphertext alone, ready to paste.
    (line,) = run.stdout.splitlines()
    kms = boto3.client("kms", **aws)
    key = kms.describe_key(KeyId=physical["StateKey"])["KeyMetadata"]["Arn"]
    context = {t.rust_constant("CONTEXT_PURPOSE_KEY"): t.rust_constant("UPSTREAM_SECRET_PURPOSE"), t.rust_constant("CONTEXT_AUDIENCE_KEY"): name}
    opened = kms.decrypt(CiphertextBlob=base64.b64decode(line, validate=True), KeyId=key, EncryptionContext=context)
    assert opened["Plaintext"] == secret.encode(), "one trailing newline dropped, nothing else"
    # The requestState grant's context (the MCP function's) does not open it.
    request_state = dict(context, **{t.rust_constant("CONTEXT_PURPOSE_KEY"): t.rust_constant("CONTEXT_PURPOSE")})
    with pytest.raises(ClientError):
        kms.decrypt(CiphertextBlob=base64.b64decode(line), KeyId=key, EncryptionContext=request_state)
    # Nothing on standard input, or a stack that does not exist: a clear
    # refusal, no ciphertext.
    for args, given, said in (([name], "", "no secret"), ([f"{name}-absent"], secret, "could not seal")):
        refused = subprocess.run(["bash", script, "--stack", *args], input=given, env=env, capture_output=True, text=True)
        assert (refused.returncode, refused.stdout) == (1, ""), refused
        assert said in refused.stderr and secret not in refused.stderr, refused.stderr
    assert subprocess.run(["bash", script, secret], env=env, capture_output=True, text=True).returncode == 2, "no secret as an argument"
