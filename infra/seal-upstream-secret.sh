#!/usr/bin/env bash
# Seals the upstream OpenID provider's client secret for a deployed stack
# (AuthMode oauth with UpstreamIssuer): KMS Encrypt under the stack's own
# key (its StateKeyArn output), bound by the encryption context the
# authorization function opens it with and its IAM grant is conditioned on
# (functions/authorization/src/aws/sealed_secret.rs). Prints the ciphertext
# (base64) on stdout, to pass as the UpstreamClientSecretSealed parameter:
#
#   bash infra/seal-upstream-secret.sh --stack NAME < secret.txt
#   bash infra/seal-upstream-secret.sh --stack NAME    # asks, without echo
#
# The secret is read from standard input, never from the command line
# (which other users see in `ps` and shells keep in their history); one
# trailing newline is dropped. The credentials are your AWS CLI's (the
# default chain: AWS_PROFILE, AWS_REGION, ...); they need
# cloudformation:DescribeStacks and kms:Encrypt on the key. Nothing is
# deployed or written; safe to run again (each run prints a new ciphertext,
# any of which opens).
source "$(dirname "$0")/common.sh"

usage() { echo "usage: seal-upstream-secret.sh --stack NAME  (the secret on standard input)" >&2; exit 2; }
stack=""
while [ $# -gt 0 ]; do
  case "$1" in
    --stack) stack="${2:-}"; [ -n "$stack" ] || usage; shift 2 ;;
    *) usage ;;
  esac
done
[ -n "$stack" ] || usage
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import boto3' 2>/dev/null; then
  say "no boto3 in .venv: run bash infra/install-tools.sh first" >&2
  exit 1
fi

# The encryption context: the purpose (UPSTREAM_SECRET_PURPOSE in
# sealed_secret.rs, kms:EncryptionContext:purpose in template.yaml) and the
# stack, which the function knows as MCP_AUDIENCE.
# Python reads standard input itself (`-c`, not a here-document, which
# would take its place).
"$VENV/bin/python" -c '
import base64, getpass, sys

import boto3
from botocore.exceptions import BotoCoreError, ClientError

stack = sys.argv[1]
PURPOSE = "mcp-upstream-client-secret"


def fail(message):
    print(f"[seal-upstream-secret] {message}", file=sys.stderr)
    sys.exit(1)


if sys.stdin.isatty():
    secret = getpass.getpass("[seal-upstream-secret] the upstream client secret (not shown): ")
else:
    secret = sys.stdin.read()
    secret = secret[:-1] if secret.endswith("\n") else secret
    secret = secret[:-1] if secret.endswith("\r") else secret
plaintext = secret.encode("utf-8")
if not plaintext:
    fail("no secret on standard input")
if len(plaintext) > 4096:
    fail("the secret is longer than the 4096 bytes KMS Encrypt takes")
try:
    found = boto3.client("cloudformation").describe_stacks(StackName=stack)["Stacks"][0]
    outputs = {o["OutputKey"]: o["OutputValue"] for o in found.get("Outputs", [])}
    if "AuthorizationServerIssuer" not in outputs:
        fail(f"stack {stack} runs no authorization server (AuthMode oauth): nothing there would open the secret")
    key = outputs.get("StateKeyArn")
    if not key:
        fail(f"stack {stack} has no StateKeyArn output: deploy it with this template first")
    # The name as CloudFormation knows it (an ARN given names the same stack).
    context = {"purpose": PURPOSE, "audience": found["StackName"]}
    sealed = boto3.client("kms").encrypt(KeyId=key, Plaintext=plaintext, EncryptionContext=context)["CiphertextBlob"]
except (BotoCoreError, ClientError) as error:
    # AWS errors name the stack, the key and the action, never the plaintext.
    fail(f"could not seal for stack {stack}: {error}")
print(base64.b64encode(sealed).decode("ascii"))
print(f"[seal-upstream-secret] sealed under {key} for {context}; deploy with", file=sys.stderr)
print("[seal-upstream-secret]   sam deploy --parameter-overrides ... UpstreamClientSecretSealed=<the line above>", file=sys.stderr)
' "$stack"
