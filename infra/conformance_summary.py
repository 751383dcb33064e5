"""Reads the conformance suite's checks.json files (one folder per scenario
run) and prints, per scenario, its counts and each failing check with its id
and message; last, `conformance: N passed, M failed` (checks with status
SUCCESS and FAILURE). Exits 1 when any check failed, no scenario ran, or
more checks were skipped than the optional second argument allows. With
$CONFORMANCE_EXPECTED_FAILURES (scenario names, space-separated), exactly
those scenarios must fail, each with a failing check, and nothing else."""

import json
import os
import pathlib
import re
import sys

raw = pathlib.Path(sys.argv[1])
totals = {"SUCCESS": 0, "FAILURE": 0, "WARNING": 0, "SKIPPED": 0}
scenarios = 0
failing = set()
for checks_file in sorted(raw.glob("*/checks.json")):
    scenarios += 1
    name = re.sub(r"^server-|-\d{4}-\d{2}-\d{2}T.*$", "", checks_file.parent.name)
    try:
        checks = json.loads(checks_file.read_text())
    except ValueError as error:
        checks = [{"id": "checks.json", "status": "FAILURE", "errorMessage": f"unreadable: {error}"}]
    counts = {status: sum(1 for c in checks if c.get("status") == status) for status in totals}
    for status, count in counts.items():
        totals[status] += count
    if counts["FAILURE"]:
        failing.add(name)
    mark = "FAIL" if counts["FAILURE"] else "ok  "
    extra = f" ({counts['WARNING']} warnings, {counts['SKIPPED']} skipped)" if counts["WARNING"] or counts["SKIPPED"] else ""
    print(f"{mark} {name:<45} {counts['SUCCESS']:>3} passed, {counts['FAILURE']:>3} failed{extra}")
    for check in checks:
        if check.get("status") == "FAILURE":
            why = " ".join(str(check.get("errorMessage", "")).split())[:300]
            print(f"       {name} / {check.get('id')}: {why}")
print(f"scenarios: {scenarios}; checks: {totals['WARNING']} warnings, {totals['SKIPPED']} skipped")
print(f"conformance: {totals['SUCCESS']} passed, {totals['FAILURE']} failed")
max_skipped = int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2] else None
if max_skipped is not None and totals["SKIPPED"] > max_skipped:
    print(f"conformance: {totals['SKIPPED']} checks skipped, at most {max_skipped} allowed", file=sys.stderr)
    sys.exit(1)
expected = os.environ.get("CONFORMANCE_EXPECTED_FAILURES")
if expected is not None:
    if failing != set(expected.split()):
        print(f"conformance: failing scenarios {sorted(failing)}, expected exactly {sorted(expected.split())}", file=sys.stderr)
        sys.exit(1)
    sys.exit(0 if scenarios else 1)
sys.exit(0 if scenarios and not totals["FAILURE"] else 1)
