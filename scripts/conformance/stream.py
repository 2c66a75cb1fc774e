"""The producer rules over one stream, event by event. Every finding names a rule of `rules`
(and through it the section of the specification it enforces); `exercised` records which rules
met the situation they are about, so a suite can tell a rule that held from one never tried."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from . import patch
from .items import Items
from .schema import PUBLISHED, Schema

TERMINAL = ("RUN_FINISHED", "RUN_ERROR")
VERSION = re.compile(r"^(\d+)\.(\d+)$")


@dataclass
class Finding:
    rule: str
    index: int | None
    message: str

    def __str__(self) -> str:
        where = f"event {self.index}" if self.index is not None else "stream"
        return f"[{self.rule}] {where}: {self.message}"


@dataclass
class Context:
    """What is known besides the stream: the input that asked for it (its declared version,
    ids, frontend tools, state), and whether to hold agui-lambda's own negotiation policy."""

    input: dict | None = None
    ours: bool = False


@dataclass
class Report:
    findings: list[Finding] = field(default_factory=list)
    exercised: set[str] = field(default_factory=set)
    runs: list[dict] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.findings


def version_of(value) -> tuple[int, int] | None:
    match = VERSION.match(value) if isinstance(value, str) else None
    return (int(match[1]), int(match[2])) if match else None


def expected_declaration(declared) -> str:
    """agui-lambda's answer to a client's `protocolVersion`: its own 1.1, except "1.0" to a
    client that declared 1.0 (a downgrade by version)."""
    return "1.0" if declared == "1.0" else PUBLISHED[-1]


class Run:
    """What one run of the stream has opened, said and answered so far."""

    def __init__(self, started: dict, index: int):
        self.started = started
        self.index = index
        self.items = Items()
        self.calls_started: list[str] = []
        self.call_names: dict[str, str] = {}
        self.answered: set[str] = set()
        self.declared = started.get("protocolVersion")


class StreamChecker:
    def __init__(self, schema: Schema, context: Context | None = None):
        self.schema = schema
        self.context = context or Context()
        self.report = Report()
        self.run: Run | None = None
        self.state_of_run = "none"  # none | active | finished | errored
        self.run_ids: set[str] = set()
        self.message_kinds: dict[str, str] = {}
        self.state = (self.context.input or {}).get("state")
        if self.state is None:
            self.state = {}
        self.activities: dict[str, str | None] = {}
        self.pending_identity: tuple[int, str] | None = None

    # -- reporting ---------------------------------------------------------------------------
    def fail(self, rule: str, index: int | None, message: str) -> None:
        self.report.findings.append(Finding(rule, index, message))

    def saw(self, *rules: str) -> None:
        self.report.exercised.update(rules)

    # -- the stream --------------------------------------------------------------------------
    def check(self, events: list[dict]) -> Report:
        for index, event in enumerate(events):
            self.event(index, event)
        self.saw("transport.terminal-event")
        if self.state_of_run == "active":
            self.fail("transport.terminal-event", None, "the stream ends inside a run: no terminal event (a truncated run)")
        return self.report

    def event(self, index: int, event: dict) -> None:
        kind = event.get("type")
        self.shape(index, event)
        if index == 0 and kind not in ("RUN_STARTED", "RUN_ERROR"):
            self.fail("lifecycle.stream-begins", index, f"the stream opens with {kind}, not RUN_STARTED or RUN_ERROR")
            self.begin({"type": "RUN_STARTED"}, index)
        self.saw("lifecycle.stream-begins")
        if kind == "RUN_STARTED":
            return self.run_started(index, event)
        if self.state_of_run == "errored" or (self.state_of_run == "finished" and kind != "RUN_ERROR"):
            self.saw("lifecycle.after-close")
            return self.fail("lifecycle.after-close", index, f"{kind} after the run closed with {'RUN_ERROR' if self.state_of_run == 'errored' else 'RUN_FINISHED'}")
        if kind == "RUN_FINISHED":
            return self.run_finished(index, event)
        if kind == "RUN_ERROR":
            return self.run_error(index, event)
        if self.run is None:
            return
        for rule, message in self.run.items.apply(index, event):
            self.fail(rule, index, message)
        self.saw(*self.run.items.seen)
        self.track(index, kind, event)

    def shape(self, index: int, event: dict) -> None:
        """The schema, the absent-means-absent rule and the reserved metadata key."""
        kind = event.get("type")
        self.saw("schema.event", "processing.described-events", "event-model.absent-means-absent")
        if isinstance(kind, str) and kind not in self.schema.event_validators:
            self.fail("processing.described-events", index, f"event type {kind!r} is not one the protocol describes")
        else:
            for error in self.schema.event_errors(event):
                self.fail("schema.event", index, f"{kind}: {error}")
        required = self.schema.required(kind) if isinstance(kind, str) else set()
        for key, value in event.items():
            if value is None and key not in required:
                self.fail("event-model.absent-means-absent", index, f"{kind}.{key} is null: an optional field without a value is omitted")
        metadata = event.get("metadata")
        if isinstance(metadata, dict):
            self.saw("metadata.reserved-key")
            if "ag-ui" in metadata:
                self.fail("metadata.reserved-key", index, "metadata uses the `ag-ui` key, reserved for the protocol")

    # -- the lifecycle -----------------------------------------------------------------------
    def begin(self, started: dict, index: int) -> None:
        self.run = Run(started, index)
        self.state_of_run = "active"

    def run_started(self, index: int, event: dict) -> None:
        if self.state_of_run == "active":
            self.fail("lifecycle.one-run-at-a-time", index, "RUN_STARTED while a run is still active")
        if self.state_of_run in ("finished", "errored"):
            self.saw("lifecycle.one-run-at-a-time")
        self.begin(event, index)
        run_id = event.get("runId")
        if run_id in self.run_ids:
            self.fail("event-model.ids", index, f"runId {run_id!r} is used by two runs")
        self.run_ids.add(run_id)
        self.declaration(index, event)
        self.identity(index, event)

    def run_finished(self, index: int, event: dict) -> None:
        run = self.run
        self.state_of_run = "finished"
        self.saw("lifecycle.after-close")
        if run is None:
            return
        for rule, message in run.items.open_at_finish():
            self.fail(rule, index, message)
        self.saw("streaming.closed-before-finish", "lifecycle.steps-closed", "reasoning.spans-closed", "subagents.closed-before-finish")
        if event.get("runId") != run.started.get("runId"):
            self.fail("run-input.identity", index, f"RUN_FINISHED.runId {event.get('runId')!r} differs from RUN_STARTED's {run.started.get('runId')!r}")
        self.identity(index, event)
        self.outcome(index, event)
        self.usage(index, event)
        self.one_point_zero(index, event)

    def run_error(self, index: int, event: dict) -> None:
        self.state_of_run = "errored"
        self.saw("lifecycle.after-close")
        self.usage(index, event)

    def identity(self, index: int, event: dict) -> None:
        run_input = self.context.input
        if not run_input:
            return
        self.saw("run-input.identity")
        if "threadId" in run_input and event.get("threadId") != run_input["threadId"]:
            self.fail("run-input.identity", index, f"{event['type']}.threadId {event.get('threadId')!r} is not the input's {run_input['threadId']!r}")
        if event["type"] == "RUN_STARTED" and "runId" in run_input and event.get("runId") != run_input["runId"]:
            # A replayed run carries its own id; only the requested (last) run echoes the input's.
            self.pending_identity = (index, event.get("runId"))

    def finish_stream(self) -> None:
        run_input = self.context.input or {}
        pending = self.pending_identity
        if pending and self.run and self.run.index == pending[0]:
            self.fail("run-input.identity", pending[0], f"the requested run's RUN_STARTED.runId {pending[1]!r} is not the input's {run_input.get('runId')!r}")

    # -- versions ----------------------------------------------------------------------------
    def declaration(self, index: int, event: dict) -> None:
        declared = event.get("protocolVersion")
        self.saw("versioning.declared")
        if declared is None:
            return self.fail("versioning.declared", index, "RUN_STARTED declares no protocolVersion")
        if declared not in PUBLISHED:
            self.fail("versioning.declared", index, f"RUN_STARTED declares {declared!r}, not a version the specification publishes ({', '.join(PUBLISHED)})")
        run_input = self.context.input
        if run_input is None:
            return
        asked = run_input.get("protocolVersion")
        self.saw("versioning.negotiation")
        if asked is not None and declared == asked and asked not in PUBLISHED:
            self.fail("versioning.negotiation", index, f"RUN_STARTED echoes the input's {asked!r} instead of declaring its own version")
        if self.context.ours and declared != expected_declaration(asked):
            self.fail("versioning.negotiation", index, f"a client declaring {asked!r} is answered {expected_declaration(asked)!r} by agui-lambda; this stream declares {declared!r}")

    def one_point_zero(self, index: int, event: dict) -> None:
        """A run declaring 1.0 carries no field 1.1 added (checked at its end, over the run)."""
        if self.run and self.run.declared == "1.0" and self.run.items.carries_encrypted:
            self.saw("versioning.shapes-match")
            for at, where in self.run.items.newer_fields:
                self.fail("versioning.shapes-match", at, f"a run declaring 1.0 carries {where}, new in 1.1")

    # -- what a finished run reports ---------------------------------------------------------
    def outcome(self, index: int, event: dict) -> None:
        run = self.run
        outcome = event.get("outcome")
        if not isinstance(outcome, dict):
            outcome = {}
        kind = outcome.get("type")
        frontend = self.frontend_tools()
        pending = [call for call in run.calls_started if call not in run.answered]
        frontend_pending = [call for call in pending if run.call_names.get(call) in frontend]
        if kind == "cancelled":
            self.saw("lifecycle.cancelled")
            if "result" in event:
                self.fail("lifecycle.cancelled", index, "a cancelled run carries a result")
        if kind == "interrupt":
            self.saw("interrupts.unique-ids", "tool-calls.frontend-not-interrupt")
            ids = [interrupt.get("id") for interrupt in outcome.get("interrupts", [])]
            if len(ids) != len(set(ids)):
                self.fail("interrupts.unique-ids", index, f"interrupt ids repeat: {ids}")
            for interrupt in outcome.get("interrupts", []):
                if interrupt.get("toolCallId") in frontend_pending:
                    self.fail("tool-calls.frontend-not-interrupt", index, f"interrupt {interrupt.get('id')!r} stands for frontend call {interrupt['toolCallId']!r}")
        if "pendingToolCallIds" in outcome:
            self.saw("tool-calls.pending")
            if outcome["pendingToolCallIds"] != pending:
                self.fail("tool-calls.pending", index, f"pendingToolCallIds {outcome['pendingToolCallIds']} are not the calls started and unanswered, in order: {pending}")
        elif frontend_pending and kind != "interrupt" and not self.notice(event):
            self.saw("tool-calls.pending-sent")
            self.fail("tool-calls.pending-sent", index, f"the run leaves frontend calls {frontend_pending} unanswered without pendingToolCallIds")

    def notice(self, event: dict) -> bool:
        """agui-lambda's notice that a stream ends while its run goes on: not the run's end."""
        result = event.get("result")
        return self.context.ours and isinstance(result, dict) and result.get("continues") is True

    def usage(self, index: int, event: dict) -> None:
        entries = event.get("usage")
        if not isinstance(entries, list):
            return
        self.saw("lifecycle.usage")
        seen = set()
        for number, entry in enumerate(entries):
            if not isinstance(entry, dict):
                continue
            key = (entry.get("provider"), entry.get("model"))
            if key in seen:
                self.fail("lifecycle.usage", index, f"usage has two entries for provider/model {key}")
            seen.add(key)
            count = lambda name: entry.get(name) if isinstance(entry.get(name), int) else None  # noqa: E731
            total, given, taken = count("totalTokens"), count("inputTokens"), count("outputTokens")
            if total is not None and given is not None and taken is not None and total != given + taken:
                self.fail("lifecycle.usage", index, f"usage[{number}].totalTokens {total} is not inputTokens + outputTokens ({given + taken})")
            cached = (count("cachedInputTokens") or 0) + (count("cacheWriteInputTokens") or 0)
            if given is not None and cached > given:
                self.fail("lifecycle.usage", index, f"usage[{number}]: cache reads and writes ({cached}) exceed inputTokens ({given}), of which they are parts")
            reasoning = count("reasoningTokens")
            if taken is not None and reasoning is not None and reasoning > taken:
                self.fail("lifecycle.usage", index, f"usage[{number}]: reasoningTokens ({reasoning}) exceed outputTokens ({taken}), of which they are a part")

    # -- everything else a run's events say --------------------------------------------------
    def frontend_tools(self) -> set[str]:
        tools = (self.context.input or {}).get("tools") or []
        return {tool.get("name") for tool in tools if isinstance(tool, dict)}

    def track(self, index: int, kind: str, event: dict) -> None:
        run = self.run
        if kind == "TOOL_CALL_START":
            call = event.get("toolCallId")
            if call not in run.call_names:
                run.calls_started.append(call)
            run.call_names[call] = event.get("toolCallName")
        elif kind == "TOOL_CALL_RESULT":
            call = event.get("toolCallId")
            run.answered.add(call)
            if run.call_names.get(call) in self.frontend_tools():
                self.fail("tool-calls.frontend-unanswered", index, f"the producer answers frontend call {call!r} itself")
            self.saw("tool-calls.frontend-unanswered")
        if kind in ("TEXT_MESSAGE_START", "TOOL_CALL_RESULT", "REASONING_MESSAGE_START", "ACTIVITY_SNAPSHOT"):
            self.message_id(index, kind, event.get("messageId"))
        if kind == "STATE_SNAPSHOT":
            self.state = event.get("snapshot")
        elif kind == "STATE_DELTA":
            self.saw("state.delta-baseline")
            try:
                self.state = patch.apply(self.state, event.get("delta") or [])
            except patch.PatchError as error:
                self.fail("state.delta-baseline", index, f"STATE_DELTA does not apply to the state so far: {error}")
        elif kind == "ACTIVITY_SNAPSHOT":
            self.activities[event.get("messageId")] = event.get("activityType")
        elif kind == "ACTIVITY_DELTA":
            self.saw("activity.delta-baseline")
            if event.get("messageId") not in self.activities:
                self.fail("activity.delta-baseline", index, f"ACTIVITY_DELTA for {event.get('messageId')!r}, which no ACTIVITY_SNAPSHOT created")
        elif kind == "REASONING_ENCRYPTED_VALUE" and "encryptedValueType" in event:
            # The event's value is required by the schema: the type never comes alone there.
            self.saw("reasoning.value-type-prefixed", "reasoning.value-type-with-value")
            if "." not in str(event["encryptedValueType"]):
                self.fail("reasoning.value-type-prefixed", index, f"encryptedValueType {event['encryptedValueType']!r} names no provider or framework")
        elif kind == "MESSAGES_SNAPSHOT":
            self.snapshot_values(index, event)

    def snapshot_values(self, index: int, event: dict) -> None:
        for message in event.get("messages") or []:
            if not isinstance(message, dict):
                continue
            holders = [message] + [call for call in message.get("toolCalls") or [] if isinstance(call, dict)]
            for holder in holders:
                if "encryptedValueType" in holder:
                    self.saw("reasoning.value-type-with-value")
                    if "encryptedValue" not in holder:
                        self.fail("reasoning.value-type-with-value", index, f"message {message.get('id')!r} has an encryptedValueType without an encryptedValue")

    def message_id(self, index: int, kind: str, message_id) -> None:
        family = {"TEXT_MESSAGE_START": "text", "TOOL_CALL_RESULT": "tool", "REASONING_MESSAGE_START": "reasoning", "ACTIVITY_SNAPSHOT": "activity"}[kind]
        known = self.message_kinds.get(message_id)
        self.saw("event-model.ids")
        if known is not None and (known != family or family == "tool"):
            self.fail("event-model.ids", index, f"messageId {message_id!r} names a {known} message and now a {family} one")
        self.message_kinds[message_id] = family


def check_stream(schema: Schema, events: list[dict], context: Context | None = None) -> Report:
    checker = StreamChecker(schema, context)
    report = checker.check(events)
    checker.finish_stream()
    return report
