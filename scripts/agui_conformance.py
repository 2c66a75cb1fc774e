#!/usr/bin/env python3
"""AG-UI 1.1 producer conformance: checks streams an AG-UI server produced, or drives one.

    python scripts/agui_conformance.py --url http://127.0.0.1:8787/agent
        drives a server: runs declaring "1.1", "1.0", none, "1.7" and "banana", the run-input cases
        (unknown members, unusable and unknown content parts, a resume entry for no interrupt,
        malformed input), every stream checked; exits 1 on a violation.
        --header 'Authorization: Bearer …'   sent with every request (repeatable)
        --capabilities URL                    also check an AgentCapabilities document
        --scenarios FILE                      conversations of your own (scripts/conformance/scenarios.py)
        --cancel-url TEMPLATE                 how to cancel a run, for scenarios with cancelAfterMs:
                                              e.g. http://…/threads/{threadId}/runs/{runId}/cancel
        --capture-dir DIR, --report FILE      keep the streams (with their inputs) and the findings
        --name NAME                           the captures' names start conformance-NAME-
        --ours                                also hold agui-lambda's own guarantees
    python scripts/agui_conformance.py check DIR [--ours]
        checks every DIR/*.sse (with DIR/*.input.json, the input it answered, when there is one)
    python scripts/agui_conformance.py selftest
        each check against a stream (or a server) that breaks its rule, and the spec's fixtures
    python scripts/agui_conformance.py table [--check]
        writes docs/conformance.md (with --check: fails when the committed page differs)
    python scripts/agui_conformance.py ci --captures DIR --reports DIR
        the test command's step: selftest, every capture, the drive reports, every rule
        exercised, docs/conformance.md unchanged

Needs Python 3.10+ and `jsonschema` (tests/requirements.txt).
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from conformance import captures, rules, scenarios, selftest, table  # noqa: E402
from conformance.drive import Driver, Server  # noqa: E402
from conformance.schema import Schema  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "conformance.md"


def relaxed(finding, klass: str) -> bool:
    """A SHOULD departure the rules document for this client class."""
    rule = rules.BY_ID.get(finding.rule)
    return bool(rule and rule.level.startswith("SHOULD") and (klass in rule.departs or "all" in rule.departs))


def print_findings(items) -> int:
    failures = 0
    for name, klass, finding in items:
        if relaxed(finding, klass):
            continue
        failures += 1
        rule = rules.BY_ID.get(finding.rule)
        print(f"  {name} ({klass}): {finding}" + (f"\n      {rule.link}" if rule else ""))
    return failures


def check(args) -> int:
    summary = captures.check_directory(Schema(), Path(args.dir), args.ours)
    items = [(item.name, item.klass, finding) for item in summary.checked for finding in item.report.findings]
    failures = print_findings(items)
    print(f"checked {len(summary.checked)} streams {summary.by_class()}: {failures} violations")
    return 1 if failures or not summary.checked else 0


def drive(args) -> int:
    schema = Schema()
    headers = dict(header.split(":", 1) for header in args.header)
    headers = {key.strip(): value.strip() for key, value in headers.items()}
    server = Server(args.url, args.base, headers, args.timeout)
    driver = Driver(schema, server, args.ours, Path(args.capture_dir) if args.capture_dir else None, args.prompt, args.name)
    if not args.skip_builtin:
        driver.versions()
        for declared in args.versions.split(","):
            driver.run_input_cases(None if declared == "none" else declared)
    if args.capabilities:
        driver.capabilities(args.capabilities)
    for spec in scenarios.load(args.scenarios) if args.scenarios else []:
        for declared in spec.get("versions", args.versions.split(",")):
            scenarios.run_scenario(driver, spec, None if declared == "none" else declared, args.cancel_url)
    items = [(o.name, scenarios_class(o), f) for o in driver.outcomes for f in o.report.findings]
    failures = print_findings(items)
    if args.report:
        Path(args.report).parent.mkdir(parents=True, exist_ok=True)
        Path(args.report).write_text(json.dumps({
            "server": args.url,
            "requests": len(driver.outcomes),
            "exercised": sorted(driver.exercised),
            "findings": [{"name": n, "class": k, "rule": f.rule, "message": str(f)} for n, k, f in items if not relaxed(f, k)],
        }, indent=1))
    print(f"drove {args.url}: {len(driver.outcomes)} requests, {failures} violations")
    return 1 if failures else 0


def scenarios_class(outcome) -> str:
    return captures.client_class(outcome.run_input)


def write_table(args) -> int:
    text = table.render()
    if args.check:
        return compare_table(text)
    DOC.write_text(text)
    print(f"wrote {DOC.relative_to(ROOT)}")
    return 0


def compare_table(text: str) -> int:
    committed = DOC.read_text() if DOC.exists() else ""
    if committed == text:
        print("docs/conformance.md is what the suite generates")
        return 0
    sys.stdout.writelines(difflib.unified_diff(committed.splitlines(True), text.splitlines(True), "docs/conformance.md (committed)", "generated"))
    print("docs/conformance.md differs from what the suite generates: run `python scripts/agui_conformance.py table` and commit it")
    return 1


def ci(args) -> int:
    """Everything the test command asks of the suite, counted as one suite: each self-test
    mutation that bites, each captured stream and each request of the drives that holds every
    rule, each rule exercised, and the published table unchanged."""
    started = time.monotonic()
    problems, bitten = selftest.run()
    for problem in problems:
        print(f"  selftest: {problem}")
    print(f"selftest: {len(bitten)} checks bite on their mutations, {len(problems)} problems")
    passed, failed = len(bitten), len(problems)
    summary = captures.check_directory(Schema(), Path(args.captures), ours=True)
    bad_streams = set()
    for item in summary.checked:
        if print_findings([(item.name, item.klass, finding) for finding in item.report.findings]):
            bad_streams.add(item.name)
    classes = summary.by_class()
    print(f"captures: {len(summary.checked)} streams by what the client declared {classes}: {len(bad_streams)} with violations")
    passed, failed = passed + len(summary.checked) - len(bad_streams), failed + len(bad_streams)
    missing = [klass for klass in ("1.1", "1.0", "none") if not classes.get(klass)]
    if missing:
        print(f"  no captured stream for clients declaring {missing}")
        failed += len(missing)
    exercised = set(summary.exercised)
    for report in sorted(Path(args.reports).glob("*.json")):
        data = json.loads(report.read_text())
        exercised |= set(data["exercised"])
        for finding in data["findings"]:
            print(f"  {report.stem}: {finding['name']} ({finding['class']}): {finding['message']}")
        bad = len({finding["name"] for finding in data["findings"]})
        print(f"drive {report.stem}: {data['requests']} requests to {data['server']}, {bad} with violations")
        passed, failed = passed + data["requests"] - bad, failed + bad
    never = [rule.id for rule in rules.RULES if rule.check and rule.exercise and rule.id not in exercised]
    for rule in never:
        print(f"  no stream or request met the situation of {rule}")
    failed += len(never)
    if compare_table(table.render()):
        failed += 1
    else:
        passed += 1
    print(f"in {time.monotonic() - started:.1f} s")
    print(f"agui-conformance: {passed} passed, {failed} failed")
    return 1 if failed else 0


def main(argv: list[str]) -> int:
    if argv and argv[0].startswith("--url"):
        argv = ["drive", *argv]
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("drive")
    run.add_argument("--url", required=True)
    run.add_argument("--base", help="the server's base URL for its own routes (default: the url's parent)")
    run.add_argument("--header", action="append", default=[])
    run.add_argument("--prompt", default="Say hello in five words.")
    run.add_argument("--versions", default="1.1,1.0,none")
    run.add_argument("--scenarios")
    run.add_argument("--cancel-url")
    run.add_argument("--capabilities")
    run.add_argument("--capture-dir")
    run.add_argument("--report")
    run.add_argument("--name", default="", help="a prefix for the captured streams' names")
    run.add_argument("--timeout", type=float, default=60)
    run.add_argument("--ours", action="store_true")
    run.add_argument("--skip-builtin", action="store_true", help="only the scenarios")
    run.set_defaults(handler=drive)
    checking = commands.add_parser("check")
    checking.add_argument("dir")
    checking.add_argument("--ours", action="store_true")
    checking.set_defaults(handler=check)
    commands.add_parser("selftest").set_defaults(handler=lambda _: selftest.main())
    tabling = commands.add_parser("table")
    tabling.add_argument("--check", action="store_true")
    tabling.set_defaults(handler=write_table)
    whole = commands.add_parser("ci")
    whole.add_argument("--captures", required=True)
    whole.add_argument("--reports", required=True)
    whole.set_defaults(handler=ci)
    args = parser.parse_args(argv)
    return args.handler(args)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
