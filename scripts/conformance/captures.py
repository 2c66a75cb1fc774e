"""Checking recorded streams: a directory of `NAME.sse` response bodies, each with the
`NAME.input.json` it answered when the recorder kept it (which tells who declared what), and
agui-lambda's own guarantees on top of the specification's (`--ours`)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from . import sse
from .schema import PUBLISHED, Schema
from .stream import Context, Finding, Report, check_stream

VENDOR = "agui-lambda"


def client_class(run_input: dict | None) -> str:
    """Who asked: the version the input declared ("1.1", "1.0"), "none", "other" (a newer or
    uninterpretable declaration), or "unknown" when the input was not kept."""
    if run_input is None:
        return "unknown"
    declared = run_input.get("protocolVersion")
    if declared is None:
        return "none"
    return declared if declared in PUBLISHED else "other"


@dataclass
class Checked:
    name: str
    klass: str
    report: Report
    events: int


@dataclass
class Summary:
    checked: list[Checked] = field(default_factory=list)

    @property
    def findings(self) -> list[tuple[str, Finding]]:
        return [(item.name, finding) for item in self.checked for finding in item.report.findings]

    @property
    def exercised(self) -> set[str]:
        return set().union(*(item.report.exercised for item in self.checked)) if self.checked else set()

    def by_class(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for item in self.checked:
            counts[item.klass] = counts.get(item.klass, 0) + 1
        return counts


def check_body(schema: Schema, body: str, run_input: dict | None, ours: bool) -> Report:
    parsed = sse.parse(body)
    report = check_stream(schema, parsed.events, Context(run_input, ours))
    report.exercised.add("transport.framing")
    for defect in parsed.defects:
        report.findings.insert(0, Finding("transport.framing", None, defect))
    if not parsed.frames and not parsed.defects:
        report.findings.append(Finding("transport.terminal-event", None, "an empty event stream"))
    if ours:
        check_ours(parsed, report)
    return report


def vendor(event: dict) -> dict:
    metadata = event.get("metadata")
    ours = metadata.get(VENDOR) if isinstance(metadata, dict) else None
    return ours if isinstance(ours, dict) else {}


def check_ours(parsed: sse.Parsed, report: Report) -> None:
    """Run events carry `id: n` and `eventId` n, consecutive; what has no id is the end of a
    stream cut before its run: closings, then the notice, all saying where the run goes on."""
    fail = lambda rule, index, message: report.findings.append(Finding(rule, index, message))  # noqa: E731
    previous = None
    unnumbered_from = None
    frames = list(enumerate(parsed.frames))
    replayed = replay_length(parsed.frames)
    if replayed == len(frames):
        return  # a thread at rest replayed: no run's log, so no numbering
    for index, frame in frames[replayed:]:
        if frame.id is None:
            unnumbered_from = index if unnumbered_from is None else unnumbered_from
            continue
        report.exercised.add("ours.event-ids")
        if unnumbered_from is not None:
            fail("ours.event-ids", index, "a numbered event after events without an id")
        if not frame.id.isdigit():
            fail("ours.event-ids", index, f"id {frame.id!r} is not a sequence number")
            continue
        number = int(frame.id)
        if previous is not None and number != previous + 1:
            fail("ours.event-ids", index, f"id {number} follows {previous}")
        if vendor(frame.event).get("eventId") != number:
            fail("ours.event-ids", index, f"metadata[{VENDOR!r}].eventId {vendor(frame.event).get('eventId')!r} is not the frame's id {number}")
        previous = number
    last = parsed.frames[-1].event if parsed.frames else {}
    if len(parsed.frames) == 1 and last.get("type") == "RUN_ERROR":
        return  # a run refused before it started: no run, no numbering
    continues = isinstance(last.get("result"), dict) and last["result"].get("continues") is True
    if unnumbered_from is None and not continues:
        return
    report.exercised.add("ours.notice")
    if not continues or last.get("type") != "RUN_FINISHED":
        return fail("ours.notice", len(parsed.frames) - 1, "events without an id that do not end with the notice that the run goes on")
    for index in range(unnumbered_from if unnumbered_from is not None else len(parsed.frames) - 1, len(parsed.frames)):
        pointer = vendor(parsed.frames[index].event).get("continues")
        if not isinstance(pointer, dict) or pointer.get("lastEventId") != (previous or 0):
            fail("ours.notice", index, f"an event of the stream's end whose metadata[{VENDOR!r}].continues does not point after the last event sent ({previous})")


def replay_length(frames: list) -> int:
    """How many leading events are a thread's replay (CopilotKit's `/connect`): `RUN_STARTED`
    and `MESSAGES_SNAPSHOT` without an id, then the rest without one. They are read from the
    thread, not the run's log, so they carry no id; a run in progress that the replay joins goes
    on with its log's numbered events, which the rules above then check."""
    types = [frame.event.get("type") for frame in frames[:2]]
    if types != ["RUN_STARTED", "MESSAGES_SNAPSHOT"] or any(frame.id is not None for frame in frames[:2]):
        return 0
    return next((index for index, frame in enumerate(frames) if frame.id is not None), len(frames))


def check_directory(schema: Schema, directory: Path, ours: bool) -> Summary:
    summary = Summary()
    for path in sorted(directory.glob("*.sse")):
        input_path = path.with_name(path.stem + ".input.json")
        run_input = json.loads(input_path.read_text()) if input_path.exists() else None
        body = path.read_text(encoding="utf-8", errors="replace")
        report = check_body(schema, body, run_input, ours)
        summary.checked.append(Checked(path.name, client_class(run_input), report, body.count("data:")))
    return summary
