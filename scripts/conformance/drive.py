"""Driving a live AG-UI server: run inputs that declare each version and that carry what a
producer must tolerate (unknown members, unusable and unknown content parts, a resume entry for
no interrupt), and malformed input it must refuse before the run starts. Every stream it gets
is checked like a capture; `scenarios` (a JSON file) add conversations of the caller's own:
prompts that reach its tools, approvals answered, a cancel, frontend tool results."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from . import sse
from .captures import VENDOR, check_body, client_class, vendor
from .schema import Schema
from .stream import Finding, Report

VIDEO = {"type": "video", "source": {"type": "data", "value": "AAAAIGZ0eXBpc29t", "mimeType": "video/mp4"}}
FOREIGN_HANDLE = {"type": "image", "source": {"type": "file", "value": "file-0123456789abcdef", "mimeType": "image/png", "provider": "another-provider"}}
UNKNOWN_KIND = {"type": "hologram", "uri": "https://example.com/h.holo"}
UNKNOWN_SOURCE = {"type": "image", "source": {"type": "carrier-pigeon", "value": "coo"}}


@dataclass
class Answer:
    status: int
    content_type: str
    body: str
    error: str | None = None


@dataclass
class Outcome:
    """One request and what the checks made of it."""

    name: str
    run_input: dict | None
    answer: Answer
    report: Report = field(default_factory=Report)


class Server:
    def __init__(self, url: str, base: str | None, headers: dict, timeout: float):
        self.url = url
        self.base = (base or url.rsplit("/", 1)[0]).rstrip("/")
        self.headers = headers
        self.timeout = timeout

    def request(self, method: str, url: str, body: bytes | None = None, extra: dict | None = None) -> Answer:
        headers = {"Accept": "text/event-stream", **self.headers, **(extra or {})}
        if body is not None:
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(url, data=body, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                text = response.read().decode("utf-8", errors="replace")
                return Answer(response.status, response.headers.get("content-type", ""), text)
        except urllib.error.HTTPError as error:
            return Answer(error.code, error.headers.get("content-type", ""), error.read().decode("utf-8", errors="replace"))
        except (urllib.error.URLError, TimeoutError, ConnectionError) as error:
            return Answer(0, "", "", error=str(error))

    def run(self, run_input: dict | str) -> Answer:
        body = run_input if isinstance(run_input, str) else json.dumps(run_input)
        return self.request("POST", self.url, body.encode())


def new_input(prompt: str, declare: str | None, **extra) -> dict:
    run_input = {
        "threadId": str(uuid.uuid4()),
        "runId": str(uuid.uuid4()),
        "messages": [{"id": str(uuid.uuid4()), "role": "user", "content": prompt}],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }
    if declare is not None:
        run_input["protocolVersion"] = declare
    run_input.update(extra)
    return run_input


class Driver:
    def __init__(self, schema: Schema, server: Server, ours: bool, capture_dir: Path | None, prompt: str, name: str = ""):
        self.schema = schema
        self.server = server
        self.ours = ours
        self.capture_dir = capture_dir
        self.prompt = prompt
        self.name = name
        self.outcomes: list[Outcome] = []
        self.exercised: set[str] = set()

    # -- one request ---------------------------------------------------------------------------
    def served(self, name: str, run_input: dict, rules: tuple[str, ...], finish: bool = True) -> Outcome:
        """A run the server must serve: 200, an event stream, a conformant run; with `finish`,
        one that ends with RUN_FINISHED (nothing in the input is a reason to fail it)."""
        outcome = self.send(name, run_input)
        self.exercised.update(rules)
        answer, report = outcome.answer, outcome.report
        fail = lambda rule, message: report.findings.append(Finding(rule, None, f"{name}: {message}"))  # noqa: E731
        if answer.status != 200 or not answer.content_type.startswith("text/event-stream"):
            for rule in rules:
                fail(rule, f"answered {answer.status or answer.error} {answer.content_type!r}: {answer.body[:300]}")
            return outcome
        events = sse.parse(answer.body).events
        if finish and (not events or events[-1].get("type") != "RUN_FINISHED"):
            last = events[-1] if events else {}
            for rule in rules:
                fail(rule, f"the run did not finish: {last.get('type')} {last.get('message', '')}")
        return outcome

    def refused(self, name: str, body: dict | str, rules: tuple[str, ...]) -> Outcome:
        """Input the server must refuse before the run starts: an HTTP error, no event stream."""
        outcome = self.send(name, body, stream=False)
        self.exercised.update(rules)
        answer = outcome.answer
        if not 400 <= answer.status < 500 or answer.content_type.startswith("text/event-stream"):
            for rule in rules:
                outcome.report.findings.append(Finding(rule, None, f"{name}: malformed input answered {answer.status} {answer.content_type!r}, not a 4xx without a stream"))
        return outcome

    def send(self, name: str, run_input: dict | str, stream: bool = True) -> Outcome:
        answer = self.server.run(run_input)
        outcome = Outcome(name, run_input if isinstance(run_input, dict) else None, answer)
        if stream and answer.status == 200:
            outcome.report = check_body(self.schema, answer.body, outcome.run_input, self.ours)
            self.exercised.update(outcome.report.exercised)
            self.capture(name, answer.body, run_input)
        self.outcomes.append(outcome)
        return outcome

    def capture(self, name: str, body: str, run_input) -> None:
        if self.capture_dir is None:
            return
        self.capture_dir.mkdir(parents=True, exist_ok=True)
        label = f"{self.name}-{name}" if self.name else name
        stem = "conformance-" + "".join(c if c.isalnum() or c in "-." else "-" for c in label)
        (self.capture_dir / f"{stem}.sse").write_text(body)
        if isinstance(run_input, dict):
            (self.capture_dir / f"{stem}.input.json").write_text(json.dumps(run_input))

    # -- the built-in cases ------------------------------------------------------------------
    def versions(self) -> None:
        for declared in ("1.1", "1.0", None, "1.7", "banana"):
            rules = ("transport.status",)
            if declared == "1.7":
                rules += ("versioning.newer-minor",)
            if declared == "banana":
                rules += ("versioning.uninterpretable",)
            self.served(f"declares-{declared or 'nothing'}", new_input(self.prompt, declared), rules)

    def run_input_cases(self, declare: str | None) -> None:
        tag = declare or "nothing"
        ask = lambda *parts: [{"type": "text", "text": self.prompt}, *parts]  # noqa: E731
        unknown_member = new_input(self.prompt, declare, agentMood="cheerful")
        self.served(f"unknown-member-{tag}", unknown_member, ("run-input.asymmetry",))
        unknown_property = new_input(self.prompt, declare)
        unknown_property["messages"][0]["sentiment"] = {"score": 0.9}
        self.served(f"unknown-message-property-{tag}", unknown_property, ("run-input.asymmetry",))
        bare = new_input(self.prompt, declare)
        del bare["tools"], bare["context"]
        self.served(f"no-tools-{tag}", bare, ("run-input.missing-tools",))
        for name, part, rule in (
            ("video-part", VIDEO, "run-input.unusable-parts"),
            ("foreign-file-handle", FOREIGN_HANDLE, "run-input.file-handles"),
            ("unknown-part-kind", UNKNOWN_KIND, "run-input.unknown-parts"),
            ("unknown-source-kind", UNKNOWN_SOURCE, "run-input.unknown-parts"),
        ):
            run_input = new_input(self.prompt, declare)
            run_input["messages"][0]["content"] = ask(part)
            outcome = self.served(f"{name}-{tag}", run_input, (rule,))
            if self.ours and outcome.answer.status == 200:
                self.reported(outcome, "messages[0].content[1]")
        resume = new_input(self.prompt, declare, resume=[{"interruptId": "never-raised", "status": "resolved", "payload": {"approved": True}}])
        self.served(f"resume-unknown-interrupt-{tag}", resume, ("interrupts.unknown-entry",))
        malformed = new_input(self.prompt, declare)
        malformed["messages"] = "hello"
        self.refused(f"malformed-messages-{tag}", malformed, ("transport.rejected-input", "run-input.asymmetry"))
        self.refused(f"not-json-{tag}", '{"threadId": ', ("transport.rejected-input",))

    def reported(self, outcome: Outcome, field_name: str) -> None:
        """agui-lambda reports the parts it skipped on RUN_STARTED."""
        self.exercised.add("ours.skipped-parts")
        events = sse.parse(outcome.answer.body).events
        skipped = vendor(events[0]).get("skippedParts", []) if events else []
        if not any(entry.get("field") == field_name for entry in skipped if isinstance(entry, dict)):
            outcome.report.findings.append(Finding("ours.skipped-parts", 0, f"{outcome.name}: RUN_STARTED.metadata[{VENDOR!r}].skippedParts does not name {field_name}: {skipped}"))

    def capabilities(self, url: str) -> None:
        answer = self.server.request("GET", url, extra={"Accept": "application/json"})
        report = Report()
        self.exercised.add("capabilities.shape")
        try:
            document = json.loads(answer.body)
            errors = sorted(self.schema.validator("AgentCapabilities").iter_errors(document), key=str)
        except json.JSONDecodeError as error:
            errors = [error]
        for error in errors if answer.status == 200 else [f"answered {answer.status}"]:
            report.findings.append(Finding("capabilities.shape", None, f"GET {url}: {getattr(error, 'message', error)}"))
        self.outcomes.append(Outcome("capabilities", None, answer, report))


def class_of(outcome: Outcome) -> str:
    return client_class(outcome.run_input)
