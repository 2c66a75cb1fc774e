#!/usr/bin/env python3
"""Sums the tests of every suite log in a directory and prints one closing line, `N passed, M failed`.

    python3 scripts/test_summary.py .ci/artifacts/suites

Reads the closing counts each runner prints: cargo's `test result: ok. N passed; M failed; ...`
(one per test binary), a bench run by `cargo test --bench` (one test per bench binary that ran,
one skip for a bench that says it skipped), node's test runner (`# pass N` / `# fail N` in TAP, `ℹ pass N` / `ℹ fail N`
in its spec reporter), and the plain `NAME: N passed, M failed` our own checks print. A log with
none of these counts as a failure of one, so a suite that stopped printing its counts is seen.
Exits 1 when anything failed.
"""
import pathlib
import re
import sys

CARGO = re.compile(r"^test result: \w+\. (\d+) passed; (\d+) failed", re.M)
NODE_PASS = re.compile(r"^(?:#|ℹ) pass (\d+)$", re.M)
NODE_FAIL = re.compile(r"^(?:#|ℹ) fail (\d+)$", re.M)
BENCH = re.compile(r"^\s+Running benches/", re.M)
BENCH_SKIPPED = re.compile(r"; skipped$", re.M)
PLAIN = re.compile(r"^(?:[\w-]+: )?(\d+) passed, (\d+) failed$", re.M)


def counts(text: str) -> tuple[int, int, int] | None:
    benches = len(BENCH.findall(text))
    if benches:
        skipped = len(BENCH_SKIPPED.findall(text))
        return benches - skipped, 0, skipped
    for pattern in (CARGO, PLAIN):
        found = pattern.findall(text)
        if found:
            return sum(int(p) for p, _ in found), sum(int(f) for _, f in found), 0
    passes, fails = NODE_PASS.findall(text), NODE_FAIL.findall(text)
    if passes or fails:
        return sum(map(int, passes)), sum(map(int, fails)), 0
    return None


def main() -> int:
    passed = failed = skipped = 0
    for log in sorted(pathlib.Path(sys.argv[1]).glob("*.log")):
        found = counts(log.read_text(encoding="utf-8", errors="replace"))
        if found is None:
            print(f"{log.stem}: no test counts in {log}")
            found = (0, 1, 0)
        print(f"  {log.stem}: {found[0]} passed, {found[1]} failed, {found[2]} skipped")
        passed, failed, skipped = passed + found[0], failed + found[1], skipped + found[2]
    print(f"{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
