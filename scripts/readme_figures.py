#!/usr/bin/env python3
"""Measures what the README's front page claims and writes its table of figures.

    python3 scripts/readme_figures.py first-answer [--clone-from DIR]   # cargo run, from a fresh clone
    python3 scripts/readme_figures.py test-command [--artifacts DIR]    # from a finished test command
    python3 scripts/readme_figures.py check [--artifacts DIR]           # .ci/run: README vs what just ran

The README holds its figures twice between `<!-- figures -->` and `<!-- /figures -->`: as JSON in
an HTML comment (what this script reads back) and as the table a reader sees (what it writes from
that JSON). Each command measures some of them, keeps the others, and writes both:

first-answer   `git clone`s DIR (default: this repository) into a scratch folder, runs
               `cargo run` there with a build directory of its own (every crate compiles, as on
               a fresh machine; the crates' sources come from ~/.cargo/registry, as the README
               says), times it from the start to the first answer of the README's curl command
               on `/agent`, stops it, times a second `cargo run` the same way, measures the disk
               the build left (`du`), then deletes the clone. About 4 minutes on 2 cores and 2 GB
               while it runs.
test-command   reads a finished `bash scripts/test.sh` run's `.ci/artifacts`: its duration
               (timings.txt's `in all`), the test tools' install (`installing test tools`), its
               test count (summary.txt's last line) and the disk the checkout holds now (`du` of
               target/, .venv/ and every node_modules/, and of `--build-dir` when cargo builds
               elsewhere). Run it right after the test command, in the same checkout.
check          fails when the README's test count and the count of the run in `--artifacts`
               differ by more than 5 %, or the README is longer than 250 lines.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(ROOT, "README.md")
BLOCK = re.compile(r"(<!-- figures -->\n)(.*?)(<!-- /figures -->)", re.DOTALL)
DATA = re.compile(r"<!-- figures-data: (\{.*?\}) -->", re.DOTALL)
MAX_README_LINES = 250
COUNT_TOLERANCE = 0.05
ASK = ('{"messages":[{"id":"m1","role":"user","content":"what time is it?"}],'
       '"tools":[],"context":[]}')


def read_figures(text: str) -> dict:
    block = BLOCK.search(text)
    data = DATA.search(block.group(2)) if block else None
    if not data:
        raise SystemExit("README.md: no <!-- figures --> block with its <!-- figures-data: {…} -->")
    return json.loads(data.group(1))


def minutes(seconds: float) -> str:
    seconds = round(seconds)
    if seconds < 90:
        return f"{seconds} s"
    return f"{seconds // 60} min {seconds % 60} s" if seconds < 600 else f"{round(seconds / 60)} min"


def gigabytes(size: int) -> str:
    return f"{size / 1e9:.1f} GB"


def table(figures: dict) -> str:
    """The rows a reader sees, from the JSON."""
    run = figures["cargo_run"]
    test = figures["test_command"]
    return "\n".join([
        "| you run | the first time | the next time | disk it leaves |",
        "|---|---|---|---|",
        f"| `cargo run`, until `curl … /agent` answers | {minutes(run['first_s'])} (it compiles the "
        f"server) | {minutes(run['next_s'])} | {gigabytes(run['disk_bytes'])} (`target/`) |",
        f"| `bash scripts/test.sh` | {minutes(test['seconds'])}, {test['tests']:,} tests "
        f"({minutes(test['install_s'])} of it installing the test tools) | faster: the tools stay "
        f"installed, only what changed rebuilds (not timed) | {gigabytes(test['disk_bytes'])} "
        f"(`target/`, `node_modules`, `.venv`) |",
        "",
        "After `git clone`, on a 2-core x86_64 Linux machine with Rust, Node, Python and Java "
        "installed and the crates already downloaded; measured by `python3 "
        f"scripts/readme_figures.py` on {run['date']} at {run['commit']} (`cargo run`) and "
        f"{test['date']} at {test['commit']} (the tests); each suite's time is in "
        "[testing](docs/testing.md#what-the-commands-cost).",
    ])


def write_figures(figures: dict) -> None:
    with open(README, encoding="utf-8") as handle:
        text = handle.read()
    read_figures(text)
    body = f"<!-- figures-data: {json.dumps(figures, sort_keys=True)} -->\n{table(figures)}\n"
    text = BLOCK.sub(lambda match: match.group(1) + body + match.group(3), text, count=1)
    with open(README, "w", encoding="utf-8") as handle:
        handle.write(text)
    print(table(figures))


def du(paths: list[str], follow_links: bool = False) -> int:
    """Bytes on disk under `paths` (those that exist), each file counted once; `follow_links`
    counts what symbolic links point to (a build directory whose crates are links into a cache
    shared by several checkouts)."""
    present = [path for path in paths if os.path.exists(path)]
    if not present:
        return 0
    flags = ["-s", "-c", "-B1"] + (["-L"] if follow_links else [])
    out = subprocess.run(["du", *flags, *present], capture_output=True, text=True, check=True)
    return int(out.stdout.strip().splitlines()[-1].split()[0])


def commit(root: str) -> str:
    return subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True, check=True).stdout.strip()


def today() -> str:
    return datetime.date.today().isoformat()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def time_to_answer(clone: str, env: dict[str, str], limit_s: int = 3600) -> float:
    """Seconds from `cargo run` to the first streamed answer on /agent; stops the server."""
    port = free_port()
    env = {**env, "PORT": str(port)}
    started = time.monotonic()
    log = open(os.path.join(clone, "cargo-run.log"), "wb")
    server = subprocess.Popen(["cargo", "run"], cwd=clone, env=env, stdout=log, stderr=subprocess.STDOUT,
                              start_new_session=True)
    request = urllib.request.Request(f"http://127.0.0.1:{port}/agent", data=ASK.encode(),
                                     headers={"content-type": "application/json"})
    try:
        while time.monotonic() - started < limit_s:
            if server.poll() is not None:
                raise SystemExit(f"cargo run exited {server.returncode}: see {clone}/cargo-run.log")
            try:
                with urllib.request.urlopen(request, timeout=30) as response:
                    if b"RUN_FINISHED" in response.read():
                        return time.monotonic() - started
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.2)
        raise SystemExit(f"no answer within {limit_s} s")
    finally:
        os.killpg(server.pid, 15)
        server.wait(timeout=30)


def first_answer(args: argparse.Namespace) -> int:
    scratch = tempfile.mkdtemp(prefix="fresh-agui-lambda-")
    clone = os.path.join(scratch, "agui-lambda")
    try:
        subprocess.run(["git", "clone", "--quiet", args.clone_from, clone], check=True)
        # A build directory of its own: a shared one (a `build-dir` in ~/.cargo/config.toml)
        # would hand the clone crates compiled before, which a fresh machine does not have.
        env = {key: value for key, value in os.environ.items() if not key.startswith(("AWS_", "OPENAI_", "ANTHROPIC_", "GEMINI_", "MODEL_"))}
        env.update({"CARGO_BUILD_BUILD_DIR": os.path.join(clone, "target"),
                    "CARGO_TARGET_DIR": os.path.join(clone, "target"), "CARGO_TERM_COLOR": "never"})
        first = time_to_answer(clone, env)
        print(f"cargo run, first time: {first:.1f} s", flush=True)
        again = time_to_answer(clone, env)
        print(f"cargo run, next time: {again:.1f} s", flush=True)
        disk = du([os.path.join(clone, "target")])
        print(f"target/: {gigabytes(disk)}", flush=True)
        figures = read_figures(open(README, encoding="utf-8").read())
        figures["cargo_run"] = {"first_s": round(first), "next_s": round(again, 1), "disk_bytes": disk,
                                "date": today(), "commit": commit(clone)}
        write_figures(figures)
        return 0
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def artifacts_figures(artifacts: str) -> dict:
    """What a finished test command's artifacts say: its seconds, the install's, its test count."""
    with open(os.path.join(artifacts, "timings.txt"), encoding="utf-8") as handle:
        steps = (re.match(r"\s*(\d+) s  (.+)", line) for line in handle)
        timings = {step.group(2).strip(): int(step.group(1)) for step in steps if step}
    with open(os.path.join(artifacts, "summary.txt"), encoding="utf-8") as handle:
        last = handle.read().strip().splitlines()[-1]
    counted = re.match(r"(\d+) passed, (\d+) failed", last)
    if not counted or "in all" not in timings:
        raise SystemExit(f"{artifacts}: no finished test command (timings.txt's `in all`, summary.txt's count)")
    passed, failed = map(int, counted.groups())
    return {"seconds": timings["in all"], "install_s": timings.get("installing test tools", 0),
            "tests": passed + failed}


def test_command(args: argparse.Namespace) -> int:
    measured = artifacts_figures(args.artifacts)
    node_modules = subprocess.run(["find", ROOT, "-name", "node_modules", "-type", "d", "-prune"],
                                  capture_output=True, text=True, check=True).stdout.split()
    disk = du([os.path.join(ROOT, "target"), os.path.join(ROOT, ".venv"), *node_modules])
    if args.build_dir:
        disk += du([args.build_dir], follow_links=True)
    figures = read_figures(open(README, encoding="utf-8").read())
    figures["test_command"] = {**measured, "disk_bytes": disk, "date": today(), "commit": commit(ROOT)}
    write_figures(figures)
    return 0


def check(args: argparse.Namespace) -> int:
    with open(README, encoding="utf-8") as handle:
        text = handle.read()
    problems = []
    lines = text.count("\n")
    if lines > MAX_README_LINES:
        problems.append(f"README.md has {lines} lines; the front page keeps to {MAX_README_LINES} (the rest goes in docs/)")
    claimed = read_figures(text)["test_command"]["tests"]
    ran = artifacts_figures(args.artifacts)["tests"]
    if abs(ran - claimed) > COUNT_TOLERANCE * ran:
        problems.append(
            f"README.md says {claimed} tests; this run counted {ran} (more than 5 % apart): after the "
            "test command, `python3 scripts/readme_figures.py test-command` writes the new figures")
    for problem in problems:
        print(f"FAILED {problem}")
    if not problems:
        print(f"README figures: {claimed} tests claimed, {ran} run (within 5 %); {lines} lines")
    return 1 if problems else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    first = commands.add_parser("first-answer")
    first.add_argument("--clone-from", default=ROOT)
    for name in ("test-command", "check"):
        command = commands.add_parser(name)
        command.add_argument("--artifacts", default=os.path.join(ROOT, ".ci", "artifacts"))
        if name == "test-command":
            command.add_argument("--build-dir", default="",
                                 help="cargo's build directory, when it is not target/ (build.build-dir)")
    args = parser.parse_args()
    return {"first-answer": first_answer, "test-command": test_command, "check": check}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
