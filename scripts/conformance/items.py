"""What a run opens and closes: text messages, tool calls and reasoning messages (the streaming
pattern, with the chunked form expanded first), reasoning spans, steps, and sub-agent
invocations with their ownership rules. Each finding is `(rule id, message)`."""

from __future__ import annotations

from .schema import ONLY_IN_1_1

# Events that stand aside from chunk assembly: they close no open chunk stream.
STAND_ASIDE = {"RAW", "ACTIVITY_SNAPSHOT", "ACTIVITY_DELTA", "REASONING_ENCRYPTED_VALUE", "SUBAGENT_STARTED"}
# Run-level events close every lane's chunk stream.
RUN_LEVEL = {"RUN_STARTED", "RUN_FINISHED", "RUN_ERROR", "MESSAGES_SNAPSHOT"}
CHUNKS = {"TEXT_MESSAGE_CHUNK": "text", "TOOL_CALL_CHUNK": "tool", "REASONING_MESSAGE_CHUNK": "reasoning"}
# The fields a chunk of each kind opens its item with, and that a continuation may only repeat.
OPENER_FIELDS = {"text": ("role", "name"), "tool": ("toolCallName", "parentMessageId"), "reasoning": ()}
ID_FIELD = {"text": "messageId", "tool": "toolCallId", "reasoning": "messageId"}


def owner_of(event: dict):
    return event.get("subagentRunId")


def find_newer(value, path: str, out: list[str]) -> None:
    """Where `value` carries a field 1.1 added, and (as "") where it carries an encrypted value,
    which a 1.1 stream would type."""
    if isinstance(value, dict):
        for key, inner in value.items():
            if key in ONLY_IN_1_1:
                out.append(f"{path}.{key}")
            elif key == "encryptedValue":
                out.append("")
            find_newer(inner, f"{path}.{key}", out)
    elif isinstance(value, list):
        for number, inner in enumerate(value):
            find_newer(inner, f"{path}[{number}]", out)


class Items:
    def __init__(self):
        self.seen: set[str] = set()
        self.newer_fields: list[tuple[int, str]] = []
        # Whether the run carries an encrypted value, typed in 1.1 and untyped in 1.0.
        self.carries_encrypted = False
        # id → {"owner", and the opener's fields}; open and closed (for reopening), per kind.
        self.open = {"text": {}, "tool": {}, "reasoning": {}}
        self.closed = {"text": {}, "tool": {}, "reasoning": {}}
        self.spans: dict[str, object] = {}
        self.steps: set[tuple[object, str]] = set()
        self.subagents: set[str] = set()
        self.finished_subagents: set[str] = set()
        self.attributed: dict[str, int] = {}
        # owner → the chunk stream that owner's lane is assembling: (kind, id).
        self.lanes: dict[object, tuple[str, str]] = {}
        self.findings: list[tuple[str, str]] = []
        self.index = 0

    def fail(self, rule: str, message: str) -> None:
        self.findings.append((rule, message))

    # -- the entry point ---------------------------------------------------------------------
    def apply(self, index: int, event: dict) -> list[tuple[str, str]]:
        self.findings = []
        self.index = index
        kind = event.get("type")
        newer: list[str] = []
        find_newer(event, str(kind), newer)
        self.carries_encrypted |= bool(newer)
        self.newer_fields.extend((index, where) for where in newer if where)
        owner = owner_of(event)
        if owner is not None:
            self.attributed.setdefault(owner, index)
        if kind in CHUNKS:
            self.chunk(CHUNKS[kind], event)
            return self.findings
        self.end_chunks_before(kind, event)
        self.explicit(kind, event)
        return self.findings

    def explicit(self, kind: str, event: dict) -> None:
        if kind == "TEXT_MESSAGE_START":
            self.start("text", event.get("messageId"), event, {"role": event.get("role", "assistant"), "name": event.get("name")})
        elif kind in ("TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END"):
            self.cont("text", event.get("messageId"), event, kind == "TEXT_MESSAGE_END")
        elif kind == "TOOL_CALL_START":
            self.start("tool", event.get("toolCallId"), event, {"name": event.get("toolCallName"), "parent": event.get("parentMessageId")})
            self.parent_agrees(event)
        elif kind in ("TOOL_CALL_ARGS", "TOOL_CALL_END"):
            self.cont("tool", event.get("toolCallId"), event, kind == "TOOL_CALL_END")
        elif kind == "REASONING_MESSAGE_START":
            self.start("reasoning", event.get("messageId"), event, {})
        elif kind in ("REASONING_MESSAGE_CONTENT", "REASONING_MESSAGE_END"):
            self.cont("reasoning", event.get("messageId"), event, kind == "REASONING_MESSAGE_END")
        elif kind in ("REASONING_START", "REASONING_END"):
            self.span(kind, event)
        elif kind in ("STEP_STARTED", "STEP_FINISHED"):
            self.step(kind, event)
        elif kind in ("SUBAGENT_STARTED", "SUBAGENT_FINISHED", "SUBAGENT_ERROR"):
            self.subagent(kind, event)

    # -- the streaming pattern ---------------------------------------------------------------
    def start(self, family: str, item_id, event: dict, fields: dict) -> None:
        self.seen.add("streaming.open-close")
        owner = owner_of(event)
        if item_id in self.open[family]:
            return self.fail("streaming.open-close", f"{event['type']} opens {family} {item_id!r}, which is already open")
        reopened = self.closed[family].pop(item_id, None)
        if reopened is not None:
            self.seen.add("streaming.reopen-agrees")
            mine = {"owner": owner, **fields}
            differ = [key for key, value in reopened.items() if mine.get(key) != value]
            if differ:
                self.fail("streaming.reopen-agrees", f"{event['type']} reopens {family} {item_id!r} with other {', '.join(differ)} than it had")
        self.open[family][item_id] = {"owner": owner, **fields}

    def cont(self, family: str, item_id, event: dict, closes: bool) -> None:
        self.seen.add("streaming.open-close")
        item = self.open[family].get(item_id)
        if item is None:
            return self.fail("streaming.open-close", f"{event['type']} for {family} {item_id!r}, which is not open")
        self.owner_agrees(event, item["owner"], f"{family} {item_id!r}")
        if family == "text" and not closes and event.get("delta") == "":
            self.fail("schema.event", "TEXT_MESSAGE_CONTENT with an empty delta")
        if closes:
            self.closed[family][item_id] = self.open[family].pop(item_id)

    def owner_agrees(self, event: dict, owner, what: str) -> None:
        tag = owner_of(event)
        self.seen.add("subagents.ownership")
        if tag is not None and tag != owner:
            self.fail("subagents.ownership", f"{event['type']} tagged {tag!r} continues {what}, which {owner!r} opened")

    def parent_agrees(self, event: dict) -> None:
        parent = event.get("parentMessageId")
        message = self.open["text"].get(parent) or self.closed["text"].get(parent)
        if message is not None and message["owner"] != owner_of(event):
            self.seen.add("subagents.ownership")
            self.fail("subagents.ownership", f"tool call {event.get('toolCallId')!r} is attributed to {owner_of(event)!r}, its message {parent!r} to {message['owner']!r}")

    def span(self, kind: str, event: dict) -> None:
        span = event.get("messageId")
        self.seen.add("reasoning.spans")
        if kind == "REASONING_START":
            if span in self.spans:
                return self.fail("reasoning.spans", f"REASONING_START reopens span {span!r}, which is open")
            self.spans[span] = owner_of(event)
        else:
            if span not in self.spans:
                return self.fail("reasoning.spans", f"REASONING_END for span {span!r}, which is not open")
            self.owner_agrees(event, self.spans.pop(span), f"reasoning span {span!r}")

    def step(self, kind: str, event: dict) -> None:
        key = (owner_of(event), event.get("stepName"))
        self.seen.add("lifecycle.steps")
        if kind == "STEP_STARTED":
            if key in self.steps:
                return self.fail("lifecycle.steps", f"STEP_STARTED for step {key[1]!r}, already open{self.by(key[0])}")
            self.steps.add(key)
        elif key not in self.steps:
            self.fail("lifecycle.steps", f"STEP_FINISHED for step {key[1]!r}, which is not open{self.by(key[0])}")
        else:
            self.steps.remove(key)

    @staticmethod
    def by(owner) -> str:
        return f" under {owner!r}" if owner is not None else ""

    # -- sub-agents --------------------------------------------------------------------------
    def subagent(self, kind: str, event: dict) -> None:
        invocation = event.get("subagentRunId")
        self.seen.add("subagents.lifecycle")
        if kind == "SUBAGENT_STARTED":
            if invocation in self.subagents or invocation in self.finished_subagents:
                return self.fail("subagents.lifecycle", f"SUBAGENT_STARTED for {invocation!r}, an invocation already announced in this run")
            parent = event.get("parentSubagentRunId")
            if parent is not None and parent not in self.subagents and parent not in self.finished_subagents:
                self.fail("subagents.lifecycle", f"SUBAGENT_STARTED names parent {parent!r}, never announced")
            first = self.attributed.get(invocation)
            if first is not None and first < self.index:
                self.fail("subagents.lifecycle", f"events attributed to {invocation!r} came before its SUBAGENT_STARTED")
            self.subagents.add(invocation)
            return
        if invocation not in self.subagents:
            return self.fail("subagents.lifecycle", f"{kind} for {invocation!r}, which is not active")
        self.close_lane(invocation)
        self.subagents.remove(invocation)
        self.finished_subagents.add(invocation)

    # -- the chunked form --------------------------------------------------------------------
    def chunk(self, family: str, event: dict) -> None:
        self.seen.add("streaming.chunks")
        item_id = event.get(ID_FIELD[family])
        tag = owner_of(event)
        lane = tag if tag is not None else self.lane_for(family, item_id)
        if lane is _AMBIGUOUS:
            return self.fail("streaming.chunks", f"{event['type']} without an id or a tag while several sub-agents have one open: its referent is ambiguous")
        pending = self.lanes.get(lane)
        if pending is not None and (pending[0] != family or (item_id is not None and item_id != pending[1])):
            self.close_pending(lane)
            pending = None
        if pending is None:
            if item_id is None:
                return self.fail("streaming.chunks", f"the first {event['type']} carries no {ID_FIELD[family]}")
            if family == "tool" and not event.get("toolCallName"):
                return self.fail("streaming.chunks", "the first TOOL_CALL_CHUNK carries no toolCallName")
            fields = {"role": event.get("role", "assistant"), "name": event.get("name")} if family == "text" else {}
            if family == "tool":
                fields = {"name": event.get("toolCallName"), "parent": event.get("parentMessageId")}
            self.start(family, item_id, event, fields)
            self.lanes[lane] = (family, item_id)
            return
        item = self.open[family].get(pending[1], {})
        mapping = {"role": "role", "name": "name", "toolCallName": "name", "parentMessageId": "parent"}
        for field in OPENER_FIELDS[family]:
            if field in event and event[field] != item.get(mapping[field]):
                self.fail("streaming.chunks", f"{event['type']} repeats {field} {event[field]!r}, which does not match the open stream's {item.get(mapping[field])!r}")
        self.owner_agrees(event, item.get("owner"), f"{family} {pending[1]!r}")

    def lane_for(self, family: str, item_id):
        """The lane an untagged chunk continues: the parent's, else the sole open one."""
        if item_id is not None or (None in self.lanes and self.lanes[None][0] == family):
            return None
        lanes = [lane for lane, (kind, _) in self.lanes.items() if kind == family]
        if len(lanes) > 1:
            return _AMBIGUOUS
        return lanes[0] if lanes else None

    def close_pending(self, lane) -> None:
        family, item_id = self.lanes.pop(lane)
        if item_id in self.open[family]:
            self.closed[family][item_id] = self.open[family].pop(item_id)

    def close_lane(self, owner) -> None:
        if owner in self.lanes:
            self.close_pending(owner)

    def end_chunks_before(self, kind: str, event: dict) -> None:
        """An event that ends open chunk streams: run-level ones end all, others their lane's."""
        if kind in RUN_LEVEL:
            for lane in list(self.lanes):
                self.close_pending(lane)
        elif kind not in STAND_ASIDE:
            self.close_lane(owner_of(event))

    # -- the run's end -----------------------------------------------------------------------
    def open_at_finish(self) -> list[tuple[str, str]]:
        self.end_chunks_before("RUN_FINISHED", {})
        findings = []
        for family, items in self.open.items():
            for item_id in items:
                findings.append(("streaming.closed-before-finish", f"{family} {item_id!r} is still open at RUN_FINISHED"))
        for span in self.spans:
            findings.append(("reasoning.spans-closed", f"reasoning span {span!r} is still open at RUN_FINISHED"))
        for owner, step in self.steps:
            findings.append(("lifecycle.steps-closed", f"step {step!r}{self.by(owner)} is still open at RUN_FINISHED"))
        for invocation in self.subagents:
            findings.append(("subagents.closed-before-finish", f"sub-agent {invocation!r} is still active at RUN_FINISHED"))
        return findings


_AMBIGUOUS = object()
