#!/usr/bin/env python3
"""Runs the examples of the README and docs/*.md as written and checks their sample output.

    python3 scripts/readme_examples.py --binary target/debug/agui-lambda [--artifacts DIR] [--only NAME]

The README and each docs/*.md page mark an example with an HTML comment right before its code
block (names are unique across the documents):

    <!-- example: NAME -->                 a ```bash block of curl commands, or the ```ts example
    <!-- example: NAME servers=GROUP -->   the same, against the servers of GROUP
    <!-- example-output: NAME -->          the sample output of example NAME
    <!-- example-package: NAME -->         the ```json package.json the ```ts example NAME is built in
    <!-- example-servers: GROUP -->        a ```bash block of the commands that start GROUP's servers

An example without `servers=` runs against the binary as `cargo run` starts it with nothing
configured (the demo model, in-memory threads), on a free port. A servers block holds one command
a line (`\` continues a line; `#` starts a comment): `[NAME=VALUE …] cargo run`, which starts the
binary with those settings and nothing else (as `cargo run` would in a shell that exported
nothing), or any other command ending in `&` (a server the example needs, started in tests/node
so that `npx` finds the packages the test command installed there). Every port the group names
(`PORT=8788`, `127.0.0.1:8788`, `localhost:8788`; 8787 when a `cargo run` names none) is mapped
to a free port in its servers and its examples alike. The servers of a group start in order,
each waited for (an agui-lambda until it serves, another until its port accepts connections),
and stop after the group's last example.

The script then:
  - runs each bash example with `bash -euo pipefail` in the repository's root;
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
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from typing import NamedTuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(ROOT, "README.md")
DOCS = os.path.join(ROOT, "docs")
NODE_DIR = os.path.join(ROOT, "tests", "node")
ELLIPSIS = "…"


class Example(NamedTuple):
    language: str
    code: str
    servers: str | None  # the group of servers it runs against; None: the plain `cargo run`
    document: str


def blocks(text: str, document: str = "README.md") -> tuple[dict[str, Example], dict[str, str], dict[str, str]]:
    """The marked examples, sample outputs ({name: text}) and server groups ({group: commands})."""
    pattern = re.compile(
        r"<!-- example(-output|-servers)?: ([\w-]+)(?: servers=([\w-]+))? -->\n```(\w*)\n(.*?)\n```",
        re.DOTALL,
    )
    examples: dict[str, Example] = {}
    outputs: dict[str, str] = {}
    servers: dict[str, str] = {}
    for match in pattern.finditer(text):
        kind, name, group, language, body = match.groups()
        if kind == "-output":
            outputs[name] = body
        elif kind == "-servers":
            servers[name] = body
        else:
            examples[name] = Example(language, body, group, document)
    return examples, outputs, servers


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


def read_documents() -> tuple[dict[str, Example], dict[str, str], dict[str, str], list[str]]:
    """The marked examples, outputs and server groups of the README and docs/*.md, and what is
    wrong with them: a name used twice, a group no block starts."""
    examples: dict[str, Example] = {}
    outputs: dict[str, str] = {}
    servers: dict[str, str] = {}
    problems: list[str] = []
    paths = [README] + sorted(glob.glob(os.path.join(DOCS, "*.md")))
    for path in paths:
        where = os.path.relpath(path, ROOT)
        with open(path, encoding="utf-8") as handle:
            found, samples, groups = blocks(handle.read(), where)
        for name in sorted(set(found) & set(examples)) + sorted(set(samples) & set(outputs)) + sorted(set(groups) & set(servers)):
            problems.append(f"{where}: example name {name!r} is used by another document too")
        examples.update(found)
        outputs.update(samples)
        servers.update(groups)
    for name, example in examples.items():
        if example.servers is not None and example.servers not in servers:
            problems.append(f"{example.document}: example {name} names servers={example.servers}, which no <!-- example-servers --> block starts")
    return examples, outputs, servers, problems


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


def wait_for_agui(base: str, process: subprocess.Popen[bytes], log_path: str) -> None:
    """Until the binary at `base` serves: a thread that does not exist is its own 404."""
    for _ in range(600):
        if process.poll() is not None:
            raise SystemExit(f"agui-lambda exited at start; log: {log_path}")
        try:
            urllib.request.urlopen(f"{base}/threads/ready-check", timeout=1)
        except urllib.error.HTTPError:
            return
        except OSError:
            time.sleep(0.1)
            continue
        return
    raise SystemExit(f"agui-lambda did not serve {base}; log: {log_path}")


def wait_for_port(port: int, process: subprocess.Popen[bytes], log_path: str) -> None:
    for _ in range(600):
        if process.poll() is not None:
            raise SystemExit(f"a server exited at start; log: {log_path}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise SystemExit(f"nothing listened on port {port}; log: {log_path}")


def commands(block: str) -> list[str]:
    """The command lines of a servers block: `\\` continuations and quotes left open across
    lines joined, comments and blanks dropped."""
    lines: list[str] = []
    pending = ""
    for line in re.sub(r"\\\n\s*", " ", block).splitlines():
        line = re.sub(r"(^|\s)#(\s.*)?$", "", line)  # a comment: `# …` after a space
        pending = f"{pending}\n{line}" if pending else line
        try:
            shlex.split(pending)
        except ValueError:
            continue  # a quote still open: the command goes on on the next line
        if pending.strip():
            lines.append(pending.strip())
        pending = ""
    if pending:
        raise SystemExit(f"a servers block leaves a quote open: {pending}")
    return lines


PORT_IN_TEXT = re.compile(r"(?<=PORT=)(\d{4,5})|(?<=127\.0\.0\.1:)(\d{4,5})|(?<=localhost:)(\d{4,5})")


class Servers:
    """The processes an example group runs against, on free ports; stopped together."""

    def __init__(self, binary: str, artifacts: str) -> None:
        self.binary = binary
        self.artifacts = artifacts
        self.ports: dict[str, str] = {}
        self.processes: list[subprocess.Popen[bytes]] = []

    def port_for(self, written: str) -> str:
        if written not in self.ports:
            self.ports[written] = str(free_port())
        return self.ports[written]

    def mapped(self, text: str) -> str:
        """`text` with every port it names replaced by the free port standing for it."""
        return PORT_IN_TEXT.sub(lambda match: self.port_for(match.group(0)), text)

    def start(self, name: str, block: str) -> None:
        for index, line in enumerate(commands(block)):
            log_path = os.path.join(self.artifacts, f"{name}-server-{index + 1}.log")
            words = shlex.split(line)
            settings = [word for word in words if re.match(r"^[A-Z_][A-Z0-9_]*=", word)]
            rest = words[len(settings):]
            if rest[:2] == ["cargo", "run"]:
                self.start_agui(settings, rest[2:], log_path)
            elif line.endswith("&"):
                self.start_other(self.mapped(line[:-1].strip()), log_path)
            else:
                raise SystemExit(f"servers {name}: neither `… cargo run` nor a command ending in `&`: {line}")

    def start_agui(self, settings: list[str], rest: list[str], log_path: str) -> None:
        if rest[:1] == ["&"]:
            rest = rest[1:]
        if rest:
            raise SystemExit(f"a servers block passes arguments to cargo run: {rest}")
        # What `cargo run` sees in a shell that exported nothing.
        env = {key: os.environ[key] for key in ("PATH", "HOME") if key in os.environ}
        env["RUST_LOG"] = "info"
        for setting in settings:
            key, _, value = setting.partition("=")
            env[key] = self.mapped(value) if key != "PORT" else self.port_for(value)
        env.setdefault("PORT", self.port_for("8787"))
        log = open(log_path, "wb")
        process = subprocess.Popen([self.binary], env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.processes.append(process)
        wait_for_agui(f"http://127.0.0.1:{env['PORT']}", process, log_path)

    def start_other(self, line: str, log_path: str) -> None:
        log = open(log_path, "wb")
        process = subprocess.Popen(["bash", "-c", line], cwd=NODE_DIR, stdout=log,
                                   stderr=subprocess.STDOUT, start_new_session=True)
        self.processes.append(process)
        port = next((int(port) for port in re.findall(r"PORT=(\d+)", line)), None)
        if port is None:
            raise SystemExit(f"a server started with `{line}` names no PORT= to wait for")
        wait_for_port(port, process, log_path)

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def run(command: list[str], cwd: str, timeout: int = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
    )


def document_problems(examples: dict[str, Example], outputs: dict[str, str], package_files: dict[str, str]) -> list[str]:
    """What is wrong with the marked blocks themselves, before anything runs."""
    problems = []
    if "typescript" not in package_files:
        problems.append("README: the TypeScript example's package.json is missing (<!-- example-package: typescript -->)")
    if "typescript" not in examples or not any(example.language == "bash" for example in examples.values()):
        problems.append("README: the marked examples are missing (<!-- example: NAME --> before a block)")
    orphans = sorted(set(outputs) - set(examples))
    if orphans:
        problems.append(f"sample output without an example: {', '.join(orphans)}")
    return problems


def run_example(name: str, example: Example, package_files: dict[str, str], code: str, artifacts: str) -> tuple[subprocess.CompletedProcess[str] | None, list[str]]:
    if example.language == "bash":
        return run(["bash", "-euo", "pipefail", "-c", code], cwd=ROOT), []
    if example.language == "ts":
        wrong = package_problems(package_files.get(name, "{}"))
        if wrong:
            return None, [f"{name}: {problem}" for problem in wrong]
        return typescript(code, package_files[name], artifacts), []
    return None, [f"{name}: no runner for ```{example.language} blocks"]


def run_group(names: list[str], examples: dict[str, Example], outputs: dict[str, str], servers: Servers,
              package_files: dict[str, str], artifacts: str) -> list[str]:
    """Runs the examples `names` in order against `servers` (already started); their failures."""
    failures: list[str] = []
    for name in names:
        example = examples[name]
        started = time.monotonic()
        result, wrong = run_example(name, example, package_files, servers.mapped(example.code), artifacts)
        failures.extend(wrong)
        if result is None:
            continue
        with open(os.path.join(artifacts, f"{name}.out"), "w", encoding="utf-8") as out:
            out.write(result.stdout)
            out.write(result.stderr)
        took = time.monotonic() - started
        if result.returncode != 0:
            failures.append(f"{name}: exit {result.returncode}\n{result.stdout[-2000:]}{result.stderr[-2000:]}")
            continue
        if not result.stdout.strip():
            failures.append(f"{name}: printed nothing")
            continue
        problems = check_sample(name, outputs[name], result.stdout) if name in outputs else []
        failures.extend(problems)
        checked = "output matches its sample" if name in outputs else "ran"
        print(f"example {name} ({example.document}, {example.language}): {'FAILED' if problems else checked} in {took:.1f} s", flush=True)
    return failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", default=os.path.join(ROOT, "target", "debug", "agui-lambda"))
    parser.add_argument("--artifacts", default=os.path.join(ROOT, ".ci", "artifacts", "readme"))
    parser.add_argument("--only", action="append", default=[], help="run only this example (repeatable)")
    args = parser.parse_args()
    os.makedirs(args.artifacts, exist_ok=True)

    examples, outputs, groups, problems = read_documents()
    with open(README, encoding="utf-8") as handle:
        package_files = packages(handle.read())
    problems += document_problems(examples, outputs, package_files)
    if problems:
        for problem in problems:
            print(problem)
        return 1
    chosen = [name for name in examples if not args.only or name in args.only]
    # The plain `cargo run` first (examples in document order), then each group of servers.
    order: dict[str | None, list[str]] = {}
    for name in chosen:
        order.setdefault(examples[name].servers, []).append(name)
    failures: list[str] = []
    for group, names in order.items():
        servers = Servers(args.binary, args.artifacts)
        try:
            servers.start(group or "cargo-run", groups.get(group, "cargo run"))
            failures += run_group(names, examples, outputs, servers, package_files, args.artifacts)
        finally:
            servers.stop()

    ran = sum(1 for name in chosen) + sum(1 for name in chosen if name in outputs)
    for failure in failures:
        print(f"FAILED {failure}")
    if failures:
        print(f"readme: {ran - len(failures)} passed, {len(failures)} failed")
        print(f"outputs in {args.artifacts}/")
        return 1
    print(f"examples: {len(chosen)} ran, {sum(1 for name in chosen if name in outputs)} samples matched")
    print(f"readme: {ran} passed, 0 failed")
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
