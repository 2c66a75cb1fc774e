"""Proof that each check bites: a conformant stream that passes every check, and per rule a
mutation of it that breaks that rule alone and must be reported under that rule's id."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass

INPUT = {
    "threadId": "t1",
    "runId": "r1",
    "protocolVersion": "1.1",
    "messages": [{"id": "u1", "role": "user", "content": "hi"}],
    "tools": [{"name": "show_chart", "description": "Shows a chart.", "parameters": {"type": "object"}}],
    "state": {"count": 0},
}


def conformant() -> list[dict]:
    """One run with every family the checks know: steps, reasoning, text, a server call and its
    result, state, a sub-agent, an activity, a pending frontend call, usage."""
    events = [
        {"type": "RUN_STARTED", "threadId": "t1", "runId": "r1", "protocolVersion": "1.1"},
        {"type": "STEP_STARTED", "stepName": "model_turn_1"},
        {"type": "REASONING_START", "messageId": "rs1"},
        {"type": "REASONING_MESSAGE_START", "messageId": "rm1", "role": "reasoning"},
        {"type": "REASONING_MESSAGE_CONTENT", "messageId": "rm1", "delta": "thinking"},
        {"type": "REASONING_MESSAGE_END", "messageId": "rm1"},
        {"type": "REASONING_ENCRYPTED_VALUE", "subtype": "message", "entityId": "rm1", "encryptedValue": "sig", "encryptedValueType": "example.signature"},
        {"type": "REASONING_END", "messageId": "rs1"},
        {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "Hello"},
        {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
        {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "get_time", "parentMessageId": "m1"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": "{}"},
        {"type": "TOOL_CALL_END", "toolCallId": "c1"},
        {"type": "TOOL_CALL_RESULT", "messageId": "tm1", "toolCallId": "c1", "content": "12:00", "role": "tool"},
        {"type": "STATE_DELTA", "delta": [{"op": "replace", "path": "/count", "value": 1}]},
        {"type": "MESSAGES_SNAPSHOT", "messages": [
            {"id": "u1", "role": "user", "content": "hi"},
            {"id": "rm1", "role": "reasoning", "content": "thinking", "encryptedValue": "sig", "encryptedValueType": "example.signature"},
        ]},
        {"type": "SUBAGENT_STARTED", "subagentRunId": "s1", "name": "researcher"},
        {"type": "TEXT_MESSAGE_START", "messageId": "s1:m", "role": "assistant", "subagentRunId": "s1"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "s1:m", "delta": "child", "subagentRunId": "s1"},
        {"type": "TEXT_MESSAGE_END", "messageId": "s1:m"},
        {"type": "SUBAGENT_FINISHED", "subagentRunId": "s1"},
        {"type": "ACTIVITY_SNAPSHOT", "messageId": "a1", "activityType": "progress", "content": {"done": 0}},
        {"type": "ACTIVITY_DELTA", "messageId": "a1", "activityType": "progress", "patch": [{"op": "replace", "path": "/done", "value": 1}]},
        {"type": "TOOL_CALL_START", "toolCallId": "c2", "toolCallName": "show_chart", "parentMessageId": "m1"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c2", "delta": "{}"},
        {"type": "TOOL_CALL_END", "toolCallId": "c2"},
        {"type": "STEP_FINISHED", "stepName": "model_turn_1"},
        {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1",
         "outcome": {"type": "success", "pendingToolCallIds": ["c2"]},
         "usage": [{"provider": "example", "model": "m", "inputTokens": 10, "outputTokens": 5, "totalTokens": 15, "reasoningTokens": 2, "cachedInputTokens": 3}]},
    ]
    return copy.deepcopy(events)


def index_of(events: list[dict], kind: str, **fields) -> int:
    return next(i for i, e in enumerate(events) if e["type"] == kind and all(e.get(k) == v for k, v in fields.items()))


def finished(events: list[dict]) -> dict:
    return events[-1]


def without(kind: str, **fields) -> Callable:
    def mutate(events):
        del events[index_of(events, kind, **fields)]
    return mutate


def set_field(kind: str, field: str, value, **match) -> Callable:
    def mutate(events):
        events[index_of(events, kind, **match)][field] = value
    return mutate


def insert(before_kind: str, event: dict, **match) -> Callable:
    def mutate(events):
        events.insert(index_of(events, before_kind, **match), event)
    return mutate


def outcome(value) -> Callable:
    def mutate(events):
        if value is None:
            finished(events).pop("outcome", None)
        else:
            finished(events)["outcome"] = value
    return mutate


def chain(*mutations: Callable) -> Callable:
    def mutate(events):
        for mutation in mutations:
            mutation(events)
    return mutate


@dataclass
class Mutation:
    rule: str
    what: str
    mutate: Callable
    # The input the stream answers, when the mutation is about it.
    run_input: dict | None = None


def declaring(version) -> dict:
    run_input = copy.deepcopy(INPUT)
    run_input["protocolVersion"] = version
    return run_input


MUTATIONS = [
    Mutation("transport.terminal-event", "the stream stops before RUN_FINISHED", lambda e: e.pop()),
    Mutation("schema.event", "a TEXT_MESSAGE_CONTENT delta that is a number", set_field("TEXT_MESSAGE_CONTENT", "delta", 42, messageId="m1")),
    Mutation("processing.described-events", "a retired THINKING_START event", insert("TEXT_MESSAGE_START", {"type": "THINKING_START"}, messageId="m1")),
    Mutation("event-model.absent-means-absent", "parentMessageId sent as null", set_field("TOOL_CALL_START", "parentMessageId", None, toolCallId="c1")),
    Mutation("event-model.ids", "a tool result reusing a text message's id", set_field("TOOL_CALL_RESULT", "messageId", "m1")),
    Mutation("metadata.reserved-key", "metadata under the reserved `ag-ui` key", set_field("TEXT_MESSAGE_END", "metadata", {"ag-ui": {"x": 1}}, messageId="m1")),
    Mutation("versioning.declared", "RUN_STARTED without protocolVersion", lambda e: e[0].pop("protocolVersion")),
    Mutation("versioning.negotiation", "RUN_STARTED echoing a client's 1.7", set_field("RUN_STARTED", "protocolVersion", "1.7"), declaring("1.7")),
    Mutation("versioning.shapes-match", "a run declaring 1.0 that carries encryptedValueType", set_field("RUN_STARTED", "protocolVersion", "1.0"), declaring("1.0")),
    Mutation("run-input.identity", "RUN_FINISHED naming another run", lambda e: finished(e).update(runId="r2")),
    Mutation("lifecycle.stream-begins", "a stream opening with STEP_STARTED", lambda e: e.pop(0)),
    Mutation("lifecycle.after-close", "an event after RUN_FINISHED", lambda e: e.append({"type": "STEP_STARTED", "stepName": "late"})),
    Mutation("lifecycle.one-run-at-a-time", "a RUN_STARTED inside the run", insert("STEP_STARTED", {"type": "RUN_STARTED", "threadId": "t1", "runId": "r0", "protocolVersion": "1.1"})),
    Mutation("lifecycle.steps", "a step started twice", insert("STEP_FINISHED", {"type": "STEP_STARTED", "stepName": "model_turn_1"})),
    Mutation("lifecycle.steps-closed", "a step left open", without("STEP_FINISHED")),
    Mutation("lifecycle.cancelled", "a cancelled run with a result", chain(outcome({"type": "cancelled"}), lambda e: finished(e).update(result={"partial": True}))),
    Mutation("lifecycle.usage", "a total that is not input plus output", lambda e: finished(e)["usage"][0].update(totalTokens=99)),
    Mutation("streaming.open-close", "content for a message never opened", insert("TEXT_MESSAGE_END", {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m9", "delta": "x"}, messageId="m1")),
    Mutation("streaming.closed-before-finish", "a text message left open", without("TEXT_MESSAGE_END", messageId="m1")),
    Mutation("streaming.reopen-agrees", "a message reopened under another name", chain(
        insert("TOOL_CALL_START", {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant", "name": "other"}, toolCallId="c1"),
        insert("TOOL_CALL_START", {"type": "TEXT_MESSAGE_END", "messageId": "m1"}, toolCallId="c1"))),
    Mutation("streaming.chunks", "a first TEXT_MESSAGE_CHUNK without a messageId", insert("STEP_FINISHED", {"type": "TEXT_MESSAGE_CHUNK", "delta": "x"})),
    Mutation("tool-calls.frontend-unanswered", "the producer answering a frontend call", insert("STEP_FINISHED", {"type": "TOOL_CALL_RESULT", "messageId": "tm2", "toolCallId": "c2", "content": "done", "role": "tool"})),
    Mutation("tool-calls.frontend-not-interrupt", "a frontend call reported as an interrupt", outcome({"type": "interrupt", "interrupts": [{"id": "i1", "reason": "tool_call", "toolCallId": "c2"}]})),
    Mutation("tool-calls.pending", "pendingToolCallIds naming an answered call", outcome({"type": "success", "pendingToolCallIds": ["c1", "c2"]})),
    Mutation("tool-calls.pending-sent", "a frontend call left pending without pendingToolCallIds", outcome(None)),
    Mutation("reasoning.spans", "a span closed that never opened", insert("STEP_FINISHED", {"type": "REASONING_END", "messageId": "rs9"})),
    Mutation("reasoning.spans-closed", "a span left open", without("REASONING_END")),
    Mutation("reasoning.value-type-with-value", "a snapshot message with a type and no value", lambda e: e[index_of(e, "MESSAGES_SNAPSHOT")]["messages"][1].pop("encryptedValue")),
    Mutation("reasoning.value-type-prefixed", "an encryptedValueType naming no provider", set_field("REASONING_ENCRYPTED_VALUE", "encryptedValueType", "signature")),
    Mutation("state.delta-baseline", "a delta against a path the state does not have", set_field("STATE_DELTA", "delta", [{"op": "replace", "path": "/missing", "value": 1}])),
    Mutation("activity.delta-baseline", "a delta for an activity never created", set_field("ACTIVITY_DELTA", "messageId", "a9")),
    Mutation("subagents.lifecycle", "a sub-agent announced twice", insert("ACTIVITY_SNAPSHOT", {"type": "SUBAGENT_STARTED", "subagentRunId": "s1", "name": "researcher"})),
    Mutation("subagents.ownership", "a sub-agent's message continued under another tag", set_field("TEXT_MESSAGE_CONTENT", "subagentRunId", "s2", messageId="s1:m")),
    Mutation("subagents.closed-before-finish", "a sub-agent left active", without("SUBAGENT_FINISHED")),
    Mutation("interrupts.unique-ids", "two interrupts with one id", outcome({"type": "interrupt", "interrupts": [{"id": "i1", "reason": "tool_call", "toolCallId": "c1"}, {"id": "i1", "reason": "tool_call", "toolCallId": "c1"}]})),
]


def with_ids(events: list[dict], notice_after: int | None = None) -> str:
    """agui-lambda's framing of a run: `id: n` and `eventId` n on every event."""
    frames = []
    for number, event in enumerate(events, 1):
        event = dict(event, metadata={"agui-lambda": {"eventId": number}})
        frames.append(f"id: {number}\ndata: {json_dumps(event)}\n\n")
    return "".join(frames)


def json_dumps(value) -> str:
    import json
    return json.dumps(value, separators=(",", ":"))


def notice_stream(close_with_pointer: bool = True) -> str:
    """A stream cut inside a text message: the closing and the notice, without ids."""
    events = [
        {"type": "RUN_STARTED", "threadId": "t1", "runId": "r1", "protocolVersion": "1.1"},
        {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "Hel"},
    ]
    body = with_ids(events)
    pointer = {"events": "/threads/t1/runs/r1/events", "lastEventId": 3}
    closing = {"type": "TEXT_MESSAGE_END", "messageId": "m1"}
    if close_with_pointer:
        closing["metadata"] = {"agui-lambda": {"continues": pointer}}
    notice = {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1", "result": {"continues": True, **pointer}, "metadata": {"agui-lambda": {"continues": pointer}}}
    return body + f"data: {json_dumps(closing)}\n\n" + f"data: {json_dumps(notice)}\n\n"


BODY_MUTATIONS = [
    ("transport.framing", "CRLF line endings", lambda: with_ids(conformant()).replace("\n", "\r\n")),
    ("ours.event-ids", "an event id skipped", lambda: with_ids(conformant()).replace("id: 5\n", "id: 6\n", 1)),
    ("ours.notice", "a closing at a stream's cut without the pointer to the rest", lambda: notice_stream(close_with_pointer=False)),
]
