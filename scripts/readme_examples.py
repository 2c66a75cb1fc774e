#!/usr/bin/env python3
"""Runs the examples of the README and docs/*.md as written and checks their sample output.

    python3 scripts/readme_examples.py --binary target/debug/agui-lambda [--artifacts DIR]

The README and each docs/*.md page mark an example with an HTML comment right before its code
block (names are unique across the documents):

    <!-- example: NAME -->           a ```bash block of curl commands, or the ```ts example
    <!-- example-output: NAME -->    the sample output of example NAME
    <!-- example-package: NAME -->   the ```json package.json the ```ts example NAME is built in

The script starts the binary as `cargo run` would start it with nothing configured (the demo
model, in-memory threads) on a free port, then:
  - runs each bash example with its `http://127.0.0.1:8787` pointed at that port;
  - writes the TypeScript example into a scratch package with the README's package.json (which
    must say `"type": "module"` and name the versions of its dependencies that tests/node has
    installed), compiles it with the README's `tsc --strict` command against tests/node's
    @ag-ui/client, typescript and @types/node, and runs it with node;
  - compares each output with its sample. A sample line matches a line of the real output (blank
    lines ignored) when it is equal to it, `…` inside a line standing for any text; a line that
    is only `…` stands for any number of lines. Sample lines must appear in order, and without a
    `…` line between them, consecutively; the first and last lines must match the first and last
    lines of the output unless a `…` line stands there.
Exits non-zero, saying which example and line, when an example fails or its sample is wrong.
"""

from __future__ import annotations

import argparse
import glob
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
DOCS = os.path.join(ROOT, "docs")
NODE_DIR = os.path.join(ROOT, "tests", "node")
README_BASE = "http://127.0.0.1:8787"
ELLIPSIS = "…"


def blocks(text: str) -> tuple[dict[str, tuple[str, str]], dict[str, str]]:
    """The marked examples ({name: (language, code)}) and sample outputs ({name: text})."""
    pattern = re.compile(
        r"<!-- example(-output)?: ([\w-]+) -->\n```(\w*)\n(.*?)\n```", re.DOTALL
    )
    examples: dict[str, tuple[str, str]] = {}
    outputs: dict[str, str] = {}
    for match in pattern.finditer(text):
        is_output, name, language, body = match.groups()
        if is_output:
            outputs[name] = body
        else:
            examples[name] = (language, body)
    return examples, outputs


def packages(text: str) -> dict[str, str]:
    """The package.json of each TypeScript example that gives one ({name: json text})."""
    pattern = re.compile(r"<!-- example-package: ([\w-]+) -->\n```json\n(.*?)\n```", re.DOTALL)
    return {name: body for name, body in pattern.findall(text)}


def package_problems(text: str) -> list[str]:
    """What is wrong with a README package.json: not an ES module, or a dependency at another
    version than tests/node's, which the example is checked against."""
    try:
        package = json.loads(text)
    except ValueError as error:
        return [f"its package.json is not JSON: {error}"]
    problems = [] if package.get("type") == "module" else ['its package.json lacks "type": "module"']
    for name, version in {**package.get("dependencies", {}), **package.get("devDependencies", {})}.items():
        installed = os.path.join(NODE_DIR, "node_modules", name, "package.json")
        try:
            with open(installed, encoding="utf-8") as handle:
                have = json.load(handle)["version"]
        except OSError:
            have = None
        if have != version:
            problems.append(f"its package.json names {name} {version}; tests/node has {have}")
    return problems


def read_documents() -> tuple[dict[str, tuple[str, str]], dict[str, str], list[str]]:
    """The marked examples and outputs of the README and docs/*.md, and any name used twice."""
    examples: dict[str, tuple[str, str]] = {}
    outputs: dict[str, str] = {}
    problems: list[str] = []
    paths = [README] + sorted(glob.glob(os.path.join(DOCS, "*.md")))
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            found, samples = blocks(handle.read())
        where = os.path.relpath(path, ROOT)
        for name in sorted(set(found) & set(examples)) + sorted(set(samples) & set(outputs)):
            problems.append(f"{where}: example name {name!r} is used by another document too")
        examples.update(found)
        outputs.update(samples)
    return examples, outputs, problems


def line_pattern(sample: str) -> re.Pattern[str]:
    return re.compile(".*?".join(re.escape(part) for part in sample.split(ELLIPSIS)) + r"\Z")


def check_sample(name: str, sample: str, output: str) -> list[str]:
    """Problems found comparing `output` with the README's `sample`, as readable lines. After a
    `…` line, the run of sample lines up to the next one matches at the first place where all of
    them match, one after the other."""
    real = [line for line in output.splitlines() if line.strip()]
    wanted = [line for line in sample.splitlines() if line.strip()]
    position = 0
    index = 0
    gap = False
    while index < len(wanted):
        if wanted[index].strip() == ELLIPSIS:
            gap, index = True, index + 1
            continue
        block = []
        while index + len(block) < len(wanted) and wanted[index + len(block)].strip() != ELLIPSIS:
            block.append(line_pattern(wanted[index + len(block)]))
        fits = lambda at: at + len(block) <= len(real) and all(  # noqa: E731
            pattern.match(real[at + offset]) for offset, pattern in enumerate(block)
        )
        starts = range(position, len(real)) if gap else [position]
        found = next((at for at in starts if fits(at)), None)
        if found is None:
            # Name the first sample line that fails where the block was expected.
            at = position
            for offset, pattern in enumerate(block):
                if at + offset >= len(real) or not pattern.match(real[at + offset]):
                    near = real[at + offset] if at + offset < len(real) else "(end of output)"
                    return [
                        f"{name}: sample line {index + offset + 1} does not match the real output"
                        f"{' (after a gap)' if gap else ' at this point'}:\n"
                        f"    sample: {wanted[index + offset]}\n    real:   {near}"
                    ]
            return [f"{name}: sample lines {index + 1}… match nowhere after a gap"]
        position, index, gap = found + len(block), index + len(block), False
    if not gap and position != len(real):
        return [
            f"{name}: the real output goes on after the sample's last line:\n"
            f"    real:   {real[position]}"
        ]
    return []


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(binary: str, log_path: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    # What `cargo run` sees on a machine with nothing configured.
    env = {key: os.environ[key] for key in ("PATH", "HOME") if key in os.environ}
    env.update({"PORT": str(port), "RUST_LOG": "info"})
    log = open(log_path, "wb")
    server = subprocess.Popen([binary], env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    for _ in range(300):
        if server.poll() is not None:
            raise SystemExit(f"{binary} exited at start; log: {log_path}")
        try:
            urllib.request.urlopen(f"{base}/threads/ready-check", timeout=1)
        except urllib.error.HTTPError:
            return server, base  # 404 thread_not_found: serving
        except OSError:
            time.sleep(0.1)
            continue
        return server, base
    server.kill()
    raise SystemExit(f"{binary} did not serve {base}; log: {log_path}")


def run(command: list[str], cwd: str, timeout: int = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", default=os.path.join(ROOT, "target", "debug", "agui-lambda"))
    parser.add_argument("--artifacts", default=os.path.join(ROOT, ".ci", "artifacts", "readme"))
    args = parser.parse_args()
    os.makedirs(args.artifacts, exist_ok=True)

    examples, outputs, problems = read_documents()
    if problems:
        for problem in problems:
            print(problem)
        return 1
    with open(README, encoding="utf-8") as handle:
        package_files = packages(handle.read())
    if "typescript" not in package_files:
        print("README: the TypeScript example's package.json is missing (<!-- example-package: typescript -->)")
        return 1
    if "typescript" not in examples or not any(lang == "bash" for lang, _ in examples.values()):
        print("README: the marked examples are missing (<!-- example: NAME --> before a block)")
        return 1
    orphans = sorted(set(outputs) - set(examples))
    if orphans:
        print(f"README: sample output without an example: {', '.join(orphans)}")
        return 1

    server, base = start_server(args.binary, os.path.join(args.artifacts, "server.log"))
    failures: list[str] = []
    try:
        for name, (language, code) in examples.items():
            code = code.replace(README_BASE, base)
            started = time.monotonic()
            if language == "bash":
                result = run(["bash", "-euo", "pipefail", "-c", code], cwd=ROOT)
            elif language == "ts":
                wrong = package_problems(package_files.get(name, "{}"))
                if wrong:
                    failures.extend(f"{name}: {problem}" for problem in wrong)
                    continue
                result = typescript(code, package_files[name], args.artifacts)
            else:
                failures.append(f"{name}: no runner for ```{language} blocks")
                continue
            with open(os.path.join(args.artifacts, f"{name}.out"), "w", encoding="utf-8") as out:
                out.write(result.stdout)
                out.write(result.stderr)
            took = time.monotonic() - started
            if result.returncode != 0:
                failures.append(
                    f"{name}: exit {result.returncode}\n{result.stdout[-2000:]}{result.stderr[-2000:]}"
                )
                continue
            if not result.stdout.strip():
                failures.append(f"{name}: printed nothing")
                continue
            problems = check_sample(name, outputs[name], result.stdout) if name in outputs else []
            failures.extend(problems)
            checked = "output matches the README's sample" if name in outputs else "ran"
            print(f"readme example {name} ({language}): {'FAILED' if problems else checked} in {took:.1f} s")
    finally:
        server.terminate()
        server.wait(timeout=10)

    for failure in failures:
        print(f"FAILED {failure}")
    if failures:
        print(f"readme: {len(examples) + len(outputs) - len(failures)} passed, {len(failures)} failed")
        print(f"outputs in {args.artifacts}/")
        return 1
    print(f"README examples: {len(examples)} ran, {len(outputs)} samples matched")
    print(f"readme: {len(examples) + len(outputs)} passed, 0 failed")
    return 0


def typescript(code: str, package_json: str, artifacts: str) -> subprocess.CompletedProcess[str]:
    """Compiles the example as the README says (in its package.json, tsc --strict) and runs it."""
    scratch = tempfile.mkdtemp(prefix="agui-readme-ts-")
    try:
        with open(os.path.join(scratch, "package.json"), "w", encoding="utf-8") as package:
            package.write(package_json + "\n")
        os.symlink(os.path.join(NODE_DIR, "node_modules"), os.path.join(scratch, "node_modules"))
        with open(os.path.join(scratch, "agent.ts"), "w", encoding="utf-8") as source:
            source.write(code + "\n")
        shutil.copy(os.path.join(scratch, "agent.ts"), os.path.join(artifacts, "agent.ts"))
        tsc = os.path.join(scratch, "node_modules", ".bin", "tsc")
        compiled = run(
            [tsc, "--strict", "--module", "nodenext", "--target", "es2022", "--types", "node", "agent.ts"],
            cwd=scratch,
        )
        if compiled.returncode != 0:
            compiled.stdout = "tsc --strict failed:\n" + compiled.stdout
            return compiled
        return run(["node", "agent.js"], cwd=scratch, timeout=60)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
