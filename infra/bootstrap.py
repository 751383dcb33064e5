"""Create the table, the KMS key and the task queues of template.yaml in the
emulator.

template.yaml is the one source of truth: the table's key schema, attribute
definitions and TTL attribute, the key's spec, usage, rotation and alias, and
the task queue's redrive policy are read from it, not repeated here. Only the
queue's visibility timeout differs locally (see LOCAL_VISIBILITY_TIMEOUT).
"""

import argparse
import json
import os

import boto3
import yaml


class CfnLoader(yaml.SafeLoader):
    """YAML with CloudFormation's short tags (!Ref, !Sub, ...) as plain dicts."""


def _tag(loader, suffix, node):
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)
    if suffix == "GetAtt" and isinstance(value, str):
        value = value.split(".", 1)
    return {"Ref" if suffix == "Ref" else "Fn::" + suffix: value}


CfnLoader.add_multi_constructor("!", _tag)


def load_template(path):
    with open(path, encoding="utf-8") as f:
        return yaml.load(f, Loader=CfnLoader)


def resource_of_type(template, type_name):
    for name, resource in template["Resources"].items():
        if resource["Type"] == type_name:
            return name, resource.get("Properties", {})
    raise SystemExit(f"template.yaml declares no {type_name}")


def table_definition(template):
    _, props = resource_of_type(template, "AWS::DynamoDB::Table")
    return {
        "AttributeDefinitions": props["AttributeDefinitions"],
        "KeySchema": props["KeySchema"],
        "BillingMode": props["BillingMode"],
        "TimeToLiveAttribute": props["TimeToLiveSpecification"]["AttributeName"],
    }


def substitute_stack(value, stack):
    if isinstance(value, dict) and "Fn::Sub" in value:
        return value["Fn::Sub"].replace("${AWS::StackName}", stack)
    return value


def ensure_table(dynamodb, name, definition):
    existing = dynamodb.list_tables()["TableNames"]
    if name in existing:
        print(f"[bootstrap] table {name} exists")
    else:
        dynamodb.create_table(
            TableName=name,
            AttributeDefinitions=definition["AttributeDefinitions"],
            KeySchema=definition["KeySchema"],
            BillingMode=definition["BillingMode"],
        )
        print(f"[bootstrap] created table {name}")
    dynamodb.update_time_to_live(
        TableName=name,
        TimeToLiveSpecification={"AttributeName": definition["TimeToLiveAttribute"], "Enabled": True},
    )


def ensure_key(kms, key_props, alias):
    """A key as `key_props` (a template's AWS::KMS::Key properties) describe
    it, under `alias`, unless the alias names one already."""
    aliases = {a["AliasName"]: a.get("TargetKeyId") for a in kms.list_aliases()["Aliases"]}
    if alias in aliases and aliases[alias]:
        print(f"[bootstrap] key alias {alias} exists")
        return alias
    key = kms.create_key(
        Description=key_props["Description"],
        KeySpec=key_props["KeySpec"],
        KeyUsage=key_props["KeyUsage"],
    )["KeyMetadata"]
    if key_props.get("EnableKeyRotation"):
        kms.enable_key_rotation(KeyId=key["KeyId"])
    kms.create_alias(AliasName=alias, TargetKeyId=key["KeyId"])
    print(f"[bootstrap] created key {key['KeyId']} ({key_props['KeySpec']}) as {alias}")
    return alias


# Lambda's queue hides a message for six worker timeouts; the local worker
# sets each message's visibility itself when it takes it and renews it as the
# run goes, so the queue's own timeout is only a fallback, kept short.
LOCAL_VISIBILITY_TIMEOUT = 5
# A worker's claim on a task lapses this fast locally, so a retry can take over.
LOCAL_LEASE_SECONDS = 3


def parameter_default(template, value):
    if isinstance(value, dict) and "Ref" in value:
        return template["Parameters"][value["Ref"]]["Default"]
    return value


def ensure_queues(sqs, template, stack):
    redrive = template["Resources"]["TaskQueue"]["Properties"]["RedrivePolicy"]
    max_receives = parameter_default(template, redrive["maxReceiveCount"])
    dead_url = sqs.create_queue(QueueName=f"{stack}-task-dlq")["QueueUrl"]
    dead_arn = sqs.get_queue_attributes(QueueUrl=dead_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    url = sqs.create_queue(
        QueueName=f"{stack}-tasks",
        Attributes={
            "VisibilityTimeout": str(LOCAL_VISIBILITY_TIMEOUT),
            "RedrivePolicy": json.dumps({"deadLetterTargetArn": dead_arn, "maxReceiveCount": str(max_receives)}),
        },
    )["QueueUrl"]
    print(f"[bootstrap] task queue {url} (dead letters after {max_receives} receives to {dead_url})")
    return url, dead_url, dead_arn


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--template", required=True)
    parser.add_argument("--stack", required=True)
    parser.add_argument("--env-file", required=True)
    parser.add_argument("--table-json", required=True)
    args = parser.parse_args()

    template = load_template(args.template)
    definition = table_definition(template)
    write_whole(args.table_json, json.dumps(definition, indent=2))

    endpoint = os.environ["AWS_ENDPOINT_URL"]
    table = f"{args.stack}-state"
    ensure_table(boto3.client("dynamodb", endpoint_url=endpoint), table, definition)
    kms = boto3.client("kms", endpoint_url=endpoint)
    # The requestState key (StateKey, under the template's own alias), and
    # the authorization server's token signing key (TokenSigningKey).
    alias = ensure_key(kms, template["Resources"]["StateKey"]["Properties"],
                       substitute_stack(resource_of_type(template, "AWS::KMS::Alias")[1]["AliasName"], args.stack))
    signing_alias = ensure_key(kms, template["Resources"]["TokenSigningKey"]["Properties"], f"alias/{args.stack}-token-signing")
    queue_url, dead_url, dead_arn = ensure_queues(boto3.client("sqs", endpoint_url=endpoint), template, args.stack)

    # The variables template.yaml gives the function, with local values.
    env = {
        "MCP_TABLE_NAME": table,
        "MCP_STATE_KEY_ID": alias,
        "MCP_AUDIENCE": args.stack,
        "MCP_LOG_LEVEL": "info",
        "MCP_TASK_QUEUE_URL": queue_url,
        "MCP_TASK_DEAD_LETTER_QUEUE_URL": dead_url,
        "MCP_TASK_DEAD_LETTER_QUEUE_ARN": dead_arn,
        "MCP_TASK_LEASE_SECONDS": LOCAL_LEASE_SECONDS,
        # Read by the authorization server only (functions/authorization).
        "MCP_OAUTH_SIGNING_KEY_ID": signing_alias,
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_REGION": os.environ["AWS_REGION"],
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_EC2_METADATA_DISABLED": "true",
        # The emulator's per-call limits (infra/common.sh's emulator_env).
        "MCP_AWS_ATTEMPT_TIMEOUT_MS": os.environ.get("MCP_AWS_ATTEMPT_TIMEOUT_MS", "10000"),
        "MCP_AWS_OPERATION_TIMEOUT_MS": os.environ.get("MCP_AWS_OPERATION_TIMEOUT_MS", "30000"),
    }
    write_whole(args.env_file, "".join(f"export {name}={value}\n" for name, value in env.items()))
    print(f"[bootstrap] wrote {os.path.relpath(args.env_file)} and {os.path.relpath(args.table_json)}")


def write_whole(path, text):
    """Replaces the file at once: the test command runs stages side by side,
    and one that reads the file while another bootstraps sees the old or the
    new text, never half of one."""
    partial = f"{path}.{os.getpid()}.partial"
    with open(partial, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(partial, path)


if __name__ == "__main__":
    main()
