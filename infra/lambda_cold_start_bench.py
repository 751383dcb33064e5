"""Cold starts as Lambda bills them: a function binary started as Lambda
starts it (a stand-in Runtime API, infra/runtime_api.py), against the
emulator behind TLS (infra/tls_front.py: one port per service, a throwaway
CA trusted through SSL_CERT_FILE), held to the CPU share of a memory size
by a CFS quota (cgroup v1; Lambda gives one vCPU at 1,769 MB), beside a
reference function (tests/reference: lambda_http and the same AWS SDK
crates making the same AWS calls, nothing else) built the same way.

For each memory size and transport (buffered: HTTP API v2 events, whole
answers; streaming: REST v1 events, streamed answers), each kind of request
is the first one after Init in cold starts of its own, interleaved with the
reference's: Init (exec to the first `next` poll), then the first and the
tenth answer of that kind (the first against the tenth: what a cold start
adds to the answer itself). Reported as medians (p90) of wall and CPU time,
with the ratio to the reference. Figures hold for this machine only; the
ratios are the point.

usage: lambda_cold_start_bench.py --project BIN --reference BIN --env FILE
       [--default-reference BIN] [--starts 20] [--memory 256[,128,...]]
       [--transports buffered,streaming] [--kinds discover,sealed,handle,task,listen]
       [--syscalls] [--authorization BIN]
(FILE: the emulator's variables, .tmp/local.env, as infra/bootstrap.sh writes it.
Each function trusts the throwaway CA as it is built to take roots, so that it
loads as many as it would on Lambda: the reference reads the system's roots,
so its SSL_CERT_FILE is the system's bundle with the CA added; the project
trusts Amazon's roots, compiled in, plus SSL_CERT_FILE's (functions/mcp-aws/
src/sdk.rs), so its SSL_CERT_FILE is the CA alone.
--default-reference: the reference as anyone builds it, with aws-lc's default
settings, measured too and compared with on Init + first answer.
--syscalls: instead of timing, one cold start per kind and function under
strace, listing the files each opened and every connection it made, named
(the Runtime API, each service's TLS front): what a cold start reads and
whom it calls, credentials endpoints included.)
"""

import argparse
import copy
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

import mcp_client
import runtime_api
import tls_front

ROOT = pathlib.Path(__file__).resolve().parents[1]
ONE_VCPU_MB = 1769
PERIOD_US = 100_000
CGROUP = pathlib.Path("/sys/fs/cgroup/cpu")
TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}}

# kind: (method, tool, arguments (a listen's params), capabilities, what the
# project's answer holds). A listen open counts to its acknowledgement: the
# stream itself stays open (MCP_LISTEN_SECONDS=1 closes it for the next
# invocation), and exists only where answers stream.
LISTEN = {"notifications": {"toolsListChanged": True}}
KINDS = {
    "discover": ("server/discover", None, None, {}, '"supportedVersions"'),
    "sealed": ("tools/call", "plan_reminder", {}, {"elicitation": {"form": {}}}, '"requestState"'),
    "handle": ("tools/call", "create_basket", {}, {}, "Created basket"),
    "task": ("tools/call", "build_report", {"topic": "tides", "sections": 1}, TASKS, '"task"'),
    "listen": ("subscriptions/listen", None, LISTEN, {}, "notifications/subscriptions/acknowledged"),
}


def event(transport, kind, subject):
    """The API Gateway event for one request of `kind` by caller `subject`
    (one per cold start: per-caller caps would refuse a long run's baskets)."""
    method, tool, arguments, capabilities, _ = KINDS[kind]
    params = (arguments or {}) if tool is None else {"name": tool, "arguments": arguments}
    body = json.dumps(mcp_client.request(method, params, capabilities=capabilities))
    headers = dict(mcp_client.request_headers(method, tool))
    if transport == "buffered":
        e = copy.deepcopy(json.loads((ROOT / "tests/fixtures/apigw-v2-tools-list.json").read_text()))
        e["headers"] = {**{k: v for k, v in e["headers"].items() if not k.startswith("mcp-")},
                        **{k.lower(): v for k, v in headers.items()}}
        e["requestContext"]["authorizer"]["jwt"]["claims"]["sub"] = subject
    else:
        e = copy.deepcopy(json.loads((ROOT / "tests/fixtures/apigw-rest-whoami.json").read_text()))
        e["headers"] = {**{k: v for k, v in e["headers"].items() if not k.lower().startswith("mcp-")}, **headers}
        e["multiValueHeaders"] = {k: [v] for k, v in e["headers"].items()}
        e["requestContext"]["authorizer"]["claims"]["sub"] = subject
    e["headers"].pop("x-mcp-dev-principal", None)
    e.get("multiValueHeaders", {}).pop("x-mcp-dev-principal", None)
    e["body"] = body
    return e


# The authorization server's requests (--authorization): its metadata
# (nothing but the function), and its key set (its first AWS call: KMS
# GetPublicKey), each beside the MCP function's first `server/discover`.
AUTHORIZATION_KINDS = {
    "metadata": ("/.well-known/oauth-authorization-server", '"code_challenge_methods_supported"'),
    "jwks": ("/oauth/jwks", '"keys"'),
}


def authorization_event(path):
    """An HTTP API GET of `path`, as the authorization server's route sends it."""
    e = copy.deepcopy(json.loads((ROOT / "tests/fixtures/apigw-v2-tools-list.json").read_text()))
    e["routeKey"] = f"GET {path}"
    e["rawPath"] = path
    e["requestContext"]["http"]["method"] = "GET"
    e["requestContext"]["http"]["path"] = path
    e["requestContext"].pop("authorizer", None)
    e["headers"] = {k: v for k, v in e["headers"].items() if not k.startswith(("mcp-", "x-mcp-", "content-"))}
    e.pop("body", None)
    e["isBase64Encoded"] = False
    return json.dumps(e).encode()


def authorization_section(args, base, bundle, group, memory):
    """The authorization server's cold starts beside the MCP function's."""
    import boto3

    emulator = {k: v for k, v in base.items() if k.startswith("AWS_")}
    kms = boto3.client("kms", endpoint_url=args.emulator_url, region_name=emulator["AWS_REGION"],
                       aws_access_key_id=emulator["AWS_ACCESS_KEY_ID"], aws_secret_access_key=emulator["AWS_SECRET_ACCESS_KEY"])
    key = kms.create_key(KeySpec="ECC_NIST_P256", KeyUsage="SIGN_VERIFY")["KeyMetadata"]["Arn"]
    env = dict(base, AWS_LAMBDA_FUNCTION_MEMORY_SIZE=str(memory), SSL_CERT_FILE=str(bundle.parent / "ca.pem"),
               MCP_OAUTH_SIGNING_KEY_ID=key, MCP_OAUTH_ISSUER="https://mcp.example.com", MCP_TRANSPORT="buffered")
    discover = json.dumps(event("buffered", "discover", "bench")).encode()
    runs = {kind: [] for kind in (*AUTHORIZATION_KINDS, "mcp discover")}
    for _ in range(args.starts):
        for kind, (path, expected) in AUTHORIZATION_KINDS.items():
            runs[kind].append(cold_start_with(args.authorization, env, group, authorization_event(path), expected, False, 10))
        runs["mcp discover"].append(cold_start_with(args.project, env, group, discover, KINDS["discover"][4], False, 10))
    print(f"\nthe authorization server, {memory} MB, beside the MCP function's first server/discover "
          "(wall and CPU ms, median (p90); ratio = authorization server / MCP function):")
    print("| request | figure | authorization wall | MCP wall | ratio | authorization CPU | MCP CPU | ratio |")
    print("|---|---|---|---|---|---|---|---|")
    for kind in AUTHORIZATION_KINDS:
        for figure, parts in (("Init", ("init",)), ("Init + first", ("init", "first")), ("tenth", ("last",))):
            row = [kind, figure]
            for measure in ("wall", "cpu"):
                medians = []
                for runs_of in (runs[kind], runs["mcp discover"]):
                    values = [sum(r[f"{part}_{measure}"] for part in parts) * 1000 for r in runs_of]
                    medians.append(statistics.median(values))
                    row.append(f"{medians[-1]:.1f} ({p(values, 0.9):.1f})")
                row.append(f"{medians[0] / medians[1]:.2f}x" if medians[1] else "-")
            print("| " + " | ".join(row) + " |")


def cpu_ns(pid):
    """Time on CPU of every thread of `pid` so far (schedstat, nanoseconds)."""
    total = 0
    for task in pathlib.Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass
    return total


def cgroup_for(memory_mb):
    """A cgroup holding its processes to the CPU share of `memory_mb`."""
    group = CGROUP / f"mcp-bench-{memory_mb}"
    group.mkdir(exist_ok=True)
    (group / "cpu.cfs_period_us").write_text(str(PERIOD_US))
    quota = PERIOD_US if memory_mb >= ONE_VCPU_MB else round(PERIOD_US * memory_mb / ONE_VCPU_MB)
    (group / "cpu.cfs_quota_us").write_text(str(quota))
    return group


def cold_start(binary, environment, group, transport, kind, repeats, trace=None):
    """One cold start: Init, then `repeats` answers of `kind` (under strace,
    writing to `trace`, when given). Answers {init_wall, init_cpu,
    first_wall, first_cpu, last_wall, last_cpu} in seconds, and the Runtime
    API's port."""
    request = json.dumps(event(transport, kind, f"bench-{os.urandom(6).hex()}")).encode()
    return cold_start_with(binary, environment, group, request, KINDS[kind][4], kind == "listen", repeats, trace)


def cold_start_with(binary, environment, group, request, expected, streams, repeats, trace=None):
    """`cold_start` for any event: `request` (JSON bytes), whose answers must
    hold `expected`; `streams`: time the first event, not the answer's end."""
    api = runtime_api.RuntimeApi()
    env = dict(environment, AWS_LAMBDA_RUNTIME_API=api.address)
    command = [binary] if trace is None else ["strace", "-f", "-qq", "-e", "trace=openat,connect", "-o", str(trace), binary]

    def enter_cgroup():
        (group / "cgroup.procs").write_text(str(os.getpid()))

    began = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=enter_cgroup)
    try:
        while not api.polls:
            if process.poll() is not None:
                raise RuntimeError(f"{binary} exited during Init: {process.stderr.read().decode()[-2000:]}")
            time.sleep(0.0005)
        out = {"init_wall": api.polls[0] - began, "init_cpu": cpu_ns(process.pid) / 1e9, "api_port": api.address.split(":")[1]}
        for n in range(1, repeats + 1):
            before_cpu = cpu_ns(process.pid)
            pushed = time.perf_counter()
            api.push(request)
            _, finished, status, body = api.answer(timeout=120)
            if streams:
                finished = api.first_event
            wall, cpu = finished - pushed, (cpu_ns(process.pid) - before_cpu) / 1e9
            if status != 200 or expected.encode() not in body:
                raise RuntimeError(f"{pathlib.Path(binary).name} answered with {status}, not {expected}: {body[:400]!r}")
            if n == 1:
                out["first_wall"], out["first_cpu"] = wall, cpu
            out["last_wall"], out["last_cpu"] = wall, cpu
        return out
    finally:
        process.kill()
        process.wait()
        api.close()


def syscalls(functions, envs, group, transport, kinds, fronts):
    """What each function's cold start opened and connected to, per kind."""
    names = {str(front.port): f"{service} (TLS)" for service, front in fronts.items()}
    for kind in kinds:
        for function, binary in functions:
            trace = ROOT / f".tmp/bench-syscalls-{function}-{kind}.txt"
            api_port = cold_start(binary, envs[function], group, transport, kind, 1, trace)["api_port"]
            opened, connected = [], []
            for line in trace.read_text().splitlines():
                if "openat(" in line and '"' in line:
                    path = line.split('"')[1] + (" (absent)" if "ENOENT" in line else "")
                    if not path.startswith(("/proc/", "/sys/")) and path not in opened:
                        opened.append(path)
                elif "connect(" in line:
                    if "sun_path=" in line:
                        connected.append(line.split('sun_path="')[1].split('"')[0])
                    elif "sin_port=htons(" in line:
                        port = line.split("sin_port=htons(")[1].split(")")[0]
                        connected.append("Runtime API" if port == api_port else names.get(port, f"port {port} (unknown)"))
            print(f"{function}, {transport} {kind}: opened {', '.join(opened)}; connected to {', '.join(connected)}")


def p(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, round(q * (len(values) - 1)))]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--project", required=True)
    parser.add_argument("--reference", required=True)
    parser.add_argument("--default-reference")
    parser.add_argument("--env", required=True)
    parser.add_argument("--starts", type=int, default=20)
    parser.add_argument("--memory", default="256")
    parser.add_argument("--transports", default="buffered,streaming")
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--syscalls", action="store_true")
    parser.add_argument("--authorization", help="the authorization server's binary: its cold starts too, at the first memory size")
    args = parser.parse_args()

    if not os.access(CGROUP, os.W_OK):
        sys.exit(f"lambda cold-start bench: {CGROUP} is not writable (cgroup v1's CPU controller, as root): "
                 "cannot hold the function to Lambda's CPU share")
    emulator = dict(line.split("=", 1) for line in pathlib.Path(args.env).read_text().split("\n")
                    if "=" in line and not line.startswith("#"))
    emulator = {k.removeprefix("export "): v.strip().strip('"') for k, v in emulator.items()}
    endpoint = emulator["AWS_ENDPOINT_URL"].removeprefix("http://").split(":")
    args.emulator_url = emulator["AWS_ENDPOINT_URL"]
    bundle, certificate, key = tls_front.make_ca(ROOT / ".tmp/bench-tls")
    fronts = {service: tls_front.TlsFront((endpoint[0], int(endpoint[1])), certificate, key)
              for service in ("KMS", "DYNAMODB", "SQS")}
    base = {
        "PATH": "/usr/bin:/bin", "SSL_CERT_FILE": str(bundle),
        "AWS_LAMBDA_FUNCTION_NAME": "bench", "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
        "AWS_LAMBDA_LOG_STREAM_NAME": "bench", "AWS_LAMBDA_LOG_GROUP_NAME": "bench",
        "AWS_REGION": emulator.get("AWS_REGION", "eu-west-1"),
        "AWS_ACCESS_KEY_ID": emulator["AWS_ACCESS_KEY_ID"], "AWS_SECRET_ACCESS_KEY": emulator["AWS_SECRET_ACCESS_KEY"],
        "AWS_SESSION_TOKEN": emulator.get("AWS_SESSION_TOKEN", "bench"),
        "MCP_STATE_KEY_ID": emulator["MCP_STATE_KEY_ID"], "MCP_TABLE_NAME": emulator["MCP_TABLE_NAME"],
        "MCP_TASK_QUEUE_URL": emulator["MCP_TASK_QUEUE_URL"], "MCP_AUDIENCE": emulator.get("MCP_AUDIENCE", "bench"),
        "MCP_LOG_LEVEL": "warn",
        **{f"AWS_ENDPOINT_URL_{service}": f"https://localhost:{front.port}" for service, front in fronts.items()},
    }
    kinds = args.kinds.split(",")
    print(f"lambda cold starts: {args.starts} interleaved cold starts per kind and function; "
          "wall and CPU ms, median (p90); ratio = this project / the reference")
    for memory in [int(m) for m in args.memory.split(",")]:
        group = cgroup_for(memory)
        for transport in args.transports.split(","):
            env = dict(base, AWS_LAMBDA_FUNCTION_MEMORY_SIZE=str(memory), MCP_TRANSPORT=transport, MCP_LISTEN_SECONDS="1")
            if transport == "streaming":
                env["MCP_BASE_PATH"] = "/api"
            functions = [("project", args.project), ("reference", args.reference)]
            if args.default_reference:
                functions.append(("default", args.default_reference))
            envs = {function: env for function, _ in functions}
            envs["project"] = dict(env, SSL_CERT_FILE=str(bundle.parent / "ca.pem"))
            served = [k for k in kinds if k != "listen" or transport == "streaming"]
            if args.syscalls:
                syscalls(functions, envs, group, transport, served, fronts)
                continue
            runs = {(f, k): [] for f, _ in functions for k in served}
            for _ in range(args.starts):
                for kind in served:
                    for function, binary in functions:
                        runs[(function, kind)].append(cold_start(binary, envs[function], group, transport, kind, 10))
            share = min(1.0, memory / ONE_VCPU_MB)
            print(f"\n{memory} MB ({share * 100:.1f} % of a vCPU), {transport}:")
            print("| kind | figure | project wall | reference wall | ratio | project CPU | reference CPU | ratio |")
            print("|---|---|---|---|---|---|---|---|")
            for kind in served:
                for figure, parts in (("Init", ("init",)), ("Init + first", ("init", "first")), ("first", ("first",)), ("tenth", ("last",))):
                    row = [kind, figure]
                    for measure in ("wall", "cpu"):
                        medians = []
                        for function in ("project", "reference"):
                            values = [sum(r[f"{part}_{measure}"] for part in parts) * 1000 for r in runs[(function, kind)]]
                            medians.append(statistics.median(values))
                            row.append(f"{medians[-1]:.1f} ({p(values, 0.9):.1f})")
                        row.append(f"{medians[0] / medians[1]:.2f}x" if medians[1] else "-")
                    print("| " + " | ".join(row) + " |")
            if args.default_reference:
                for kind in served:
                    project, default = (statistics.median((r["init_wall"] + r["first_wall"]) * 1000 for r in runs[(f, kind)])
                                        for f in ("project", "default"))
                    print(f"{kind}: Init + first answer {project:.1f} ms against the reference built with aws-lc's "
                          f"defaults {default:.1f} ms ({project / default:.2f}x)")
    if args.authorization:
        memory = int(args.memory.split(",")[0])
        authorization_section(args, base, bundle, cgroup_for(memory), memory)
    for front in fronts.values():
        front.close()


if __name__ == "__main__":
    main()
