"""The suite checked against itself: the conformant stream passes, each mutation is reported
under its rule, every "-fatal" client-conformance fixture of the specification is rejected and
every other one accepted, and the driver's checks bite on a server that misbehaves one way at a
time. Returns the problems found (none: the suite can be trusted)."""

from __future__ import annotations

import json
from pathlib import Path

from . import fake_server
from .captures import check_body
from .drive import Driver, Server
from .mutations import BODY_MUTATIONS, INPUT, MUTATIONS, conformant, notice_stream, with_ids
from .rules import RULES
from .schema import SPEC_DIR, Schema
from .stream import Context, check_stream


def stream_checks(schema: Schema) -> tuple[list[str], dict[str, str]]:
    problems, bitten = [], {}
    clean = check_stream(schema, conformant(), Context(INPUT, ours=False))
    problems += [f"the conformant stream fails: {finding}" for finding in clean.findings]
    clean_body = check_body(schema, with_ids(conformant()), INPUT, ours=True)
    problems += [f"the conformant stream, framed, fails: {finding}" for finding in clean_body.findings]
    clean_notice = check_body(schema, notice_stream(), None, ours=True)
    problems += [f"a conformant notice fails: {finding}" for finding in clean_notice.findings if finding.rule != "run-input.identity"]
    for mutation in MUTATIONS:
        events = conformant()
        mutation.mutate(events)
        report = check_stream(schema, events, Context(mutation.run_input or INPUT, ours=False))
        record(problems, bitten, mutation.rule, mutation.what, report.findings)
    for rule, what, body in BODY_MUTATIONS:
        record(problems, bitten, rule, what, check_body(schema, body(), INPUT, ours=True).findings)
    return problems, bitten


def record(problems: list[str], bitten: dict[str, str], rule: str, what: str, findings) -> None:
    if any(finding.rule == rule for finding in findings):
        bitten[rule] = what
    else:
        problems.append(f"mutation {what!r} is not reported under {rule}: {[str(f) for f in findings]}")


def fixture_checks(schema: Schema) -> list[str]:
    """The specification's client fixtures, read as producer output: a "-fatal" stream breaks a
    producer rule; the others are streams a producer may send (their RUN_STARTED may omit the
    declaration a producer must make, which is the one finding allowed there)."""
    problems = []
    for path in sorted((SPEC_DIR / "fixtures").glob("*.json")):
        fixture = json.loads(path.read_text())
        report = check_stream(schema, fixture["stream"], Context(None, ours=False))
        findings = [f for f in report.findings if f.rule != "versioning.declared"]
        if fixture["name"].endswith("-fatal"):
            if not report.findings:
                problems.append(f"fixture {fixture['name']} (a stream a producer must never emit) passes")
        elif findings:
            problems.append(f"fixture {fixture['name']} (a legal stream) fails: {[str(f) for f in findings]}")
    return problems


def drive_checks(schema: Schema) -> tuple[list[str], dict[str, str]]:
    """The driver against a fake server, well-behaved and then misbehaving one way at a time."""
    problems, bitten = [], {}
    with fake_server.serving(None) as url:
        driver = drive_all(schema, url)
        problems += [f"the well-behaved server fails: {f}" for o in driver.outcomes for f in o.report.findings]
    for fault, (rule, what) in fake_server.FAULTS.items():
        with fake_server.serving(fault) as url:
            driver = drive_all(schema, url)
            findings = [f for o in driver.outcomes for f in o.report.findings]
        record(problems, bitten, rule, what, findings)
    return problems, bitten


def drive_all(schema: Schema, url: str) -> Driver:
    driver = Driver(schema, Server(url + "/agent", url, {}, timeout=10), ours=True, capture_dir=None, prompt="hello")
    driver.versions()
    driver.run_input_cases("1.1")
    driver.capabilities(url + "/capabilities")
    return driver


def run(schema: Schema | None = None) -> tuple[list[str], dict[str, str]]:
    schema = schema or Schema()
    problems, bitten = stream_checks(schema)
    problems += fixture_checks(schema)
    drive_problems, drive_bitten = drive_checks(schema)
    problems += drive_problems
    bitten.update(drive_bitten)
    for rule in RULES:
        if rule.check and rule.id not in bitten:
            problems.append(f"rule {rule.id} has a check but no mutation that shows it bites")
    return problems, bitten


def main() -> int:
    problems, bitten = run()
    for rule, what in sorted(bitten.items()):
        print(f"  bites: {rule:40} {what}")
    for problem in problems:
        print(f"  PROBLEM: {problem}")
    print(f"selftest: {len(bitten)} checks bite, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
