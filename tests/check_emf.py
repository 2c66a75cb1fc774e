#!/usr/bin/env python3
"""Checks the EMF records in a function's output against the EMF specification's JSON schema.

    python tests/check_emf.py .ci/artifacts/watch.log

Every line holding a record (`{"_aws":...`, possibly after a prefix the emulator adds) must be
one JSON object valid against tests/fixtures/emf/emf-schema.json (draft-07), with a number for
each metric and a string for each dimension it declares, as CloudWatch requires. At least five
records must be there: the end-to-end suite plays many runs.
"""
import json
import pathlib
import sys

from jsonschema import Draft7Validator

ROOT = pathlib.Path(__file__).resolve().parent.parent


def main() -> int:
    schema = json.loads((ROOT / "tests/fixtures/emf/emf-schema.json").read_text())
    validator = Draft7Validator(schema)
    records = 0
    outcomes: dict[str, int] = {}
    problems = []
    for number, line in enumerate(pathlib.Path(sys.argv[1]).read_text().splitlines(), 1):
        start = line.find('{"_aws"')
        if start < 0:
            continue
        try:
            record = json.loads(line[start:])
        except json.JSONDecodeError as error:
            problems.append(f"line {number}: not one JSON object: {error}")
            continue
        records += 1
        for error in validator.iter_errors(record):
            problems.append(f"line {number}: {error.message}")
        directive = record["_aws"]["CloudWatchMetrics"][0]
        for metric in directive["Metrics"]:
            if not isinstance(record.get(metric["Name"]), (int, float)):
                problems.append(f"line {number}: metric {metric['Name']} has no number")
        for dimensions in directive["Dimensions"]:
            for dimension in dimensions:
                if not isinstance(record.get(dimension), str):
                    problems.append(f"line {number}: dimension {dimension} has no string")
        outcomes[record.get("outcome", "?")] = outcomes.get(record.get("outcome", "?"), 0) + 1
    if records < 5:
        problems.append(f"only {records} EMF records")
    if problems:
        for problem in problems[:20]:
            print(f"check_emf: {problem}", file=sys.stderr)
        return 1
    print(f"EMF: {records} records, all valid; outcomes {json.dumps(outcomes, sort_keys=True)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
