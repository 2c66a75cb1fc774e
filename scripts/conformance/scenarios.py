"""Conversations of the caller's own, from a JSON file: a prompt (and the frontend tools to
offer), then what a client does next: answer the run's interrupts, answer its frontend calls
(with text, or with parts a model cannot take), cancel it mid-run, or follow a stream that ended
before its run. Each scenario runs once per declared version; every stream is checked.

    [{"name": "approval", "prompt": "What time is it?", "then": ["approve"], "expect": "finished"},
     {"name": "cancel", "prompt": "[slow] tell me a story", "cancelAfterMs": 400, "expect": "cancelled"}]
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from urllib.parse import urljoin

from . import sse
from .drive import VIDEO, Driver, Outcome
from .stream import Context, Finding, check_stream


class History:
    """The messages a client holds after a stream, as the reference client assembles them."""

    def __init__(self, messages: list[dict]):
        self.messages = [dict(message) for message in messages]

    def find(self, message_id):
        return next((m for m in self.messages if m.get("id") == message_id), None)

    def apply(self, events: list[dict]) -> None:
        calls: dict = {}
        for event in events:
            kind = event.get("type")
            if kind == "TEXT_MESSAGE_START" and self.find(event["messageId"]) is None:
                self.messages.append({"id": event["messageId"], "role": "assistant", "content": ""})
            elif kind == "TEXT_MESSAGE_CONTENT":
                message = self.find(event["messageId"])
                if message is not None:
                    message["content"] = (message.get("content") or "") + event.get("delta", "")
            elif kind == "TOOL_CALL_START":
                parent = self.find(event.get("parentMessageId")) if event.get("parentMessageId") else None
                if parent is None:
                    parent = {"id": event.get("parentMessageId") or str(uuid.uuid4()), "role": "assistant"}
                    self.messages.append(parent)
                call = {"id": event["toolCallId"], "type": "function", "function": {"name": event["toolCallName"], "arguments": ""}}
                parent.setdefault("toolCalls", []).append(call)
                calls[event["toolCallId"]] = call
            elif kind == "TOOL_CALL_ARGS" and event.get("toolCallId") in calls:
                calls[event["toolCallId"]]["function"]["arguments"] += event.get("delta", "")
            elif kind == "TOOL_CALL_RESULT":
                self.messages.append({"id": event["messageId"], "role": "tool", "toolCallId": event["toolCallId"], "content": event.get("content", "")})
            elif kind == "MESSAGES_SNAPSHOT":
                self.messages = [dict(message) for message in event.get("messages", [])]

    def unanswered(self) -> list[dict]:
        answered = {m.get("toolCallId") for m in self.messages if m.get("role") == "tool"}
        return [call for m in self.messages for call in m.get("toolCalls", []) if call["id"] not in answered]


def outcome_of(events: list[dict]) -> dict:
    last = events[-1] if events else {}
    return last.get("outcome") or {} if last.get("type") == "RUN_FINISHED" else {}


def run_scenario(driver: Driver, spec: dict, declare: str | None, cancel_url: str | None) -> None:
    tag = f"{spec['name']}-{declare or 'nothing'}"
    run_input = {
        "threadId": str(uuid.uuid4()),
        "runId": str(uuid.uuid4()),
        "messages": [{"id": str(uuid.uuid4()), "role": "user", "content": spec["prompt"]}],
        "tools": spec.get("tools", []),
        "context": [],
        "state": {},
        "forwardedProps": {},
    }
    if declare is not None:
        run_input["protocolVersion"] = declare
    history = History(run_input["messages"])
    steps = list(spec.get("then", []))
    for number in range(1, len(steps) + 2):
        outcome = send(driver, f"{tag}-{number}", run_input, spec.get("cancelAfterMs") if number == 1 else None, cancel_url)
        events = sse.parse(outcome.answer.body).events
        if events and events[-1].get("type") == "RUN_FINISHED" and (events[-1].get("result") or {}).get("continues") is True:
            events = follow(driver, outcome, events)
        history.apply(events)
        if not steps:
            return expect(driver, outcome, events, spec.get("expect", "finished"), declare)
        step = steps.pop(0)
        run_input = dict(run_input, runId=str(uuid.uuid4()), messages=list(history.messages))
        run_input.pop("resume", None)
        if step == "approve":
            interrupts = outcome_of(events).get("interrupts", [])
            run_input["resume"] = [{"interruptId": i["id"], "status": "resolved", "payload": {"approved": True}} for i in interrupts]
        elif step in ("answer-tools", "answer-tools-with-parts"):
            driver.exercised.add("tool-calls.unusable-result-parts" if step == "answer-tools-with-parts" else "tool-calls.frontend-unanswered")
            for call in history.unanswered():
                content = [VIDEO] if step == "answer-tools-with-parts" else "done"
                run_input["messages"].append({"id": str(uuid.uuid4()), "role": "tool", "toolCallId": call["id"], "content": content})
            history = History(run_input["messages"])


def send(driver: Driver, name: str, run_input: dict, cancel_after_ms, cancel_url: str | None) -> Outcome:
    if not cancel_after_ms or not cancel_url:
        return driver.served(name, run_input, ("transport.status",), finish=False)
    url = cancel_url.format(threadId=run_input["threadId"], runId=run_input["runId"])
    cancel = threading.Thread(target=lambda: (time.sleep(cancel_after_ms / 1000), driver.server.request("POST", url, b"{}", {"Accept": "application/json"})))
    cancel.start()
    outcome = driver.served(name, run_input, ("transport.status",), finish=False)
    cancel.join()
    return outcome


def follow(driver: Driver, outcome: Outcome, events: list[dict]) -> list[dict]:
    """The rest of a run whose stream ended with agui-lambda's notice, from `events` after
    `lastEventId`: the run's numbered events of every stream, together, must be one run that
    holds every rule (what only ended a stream, without an id, is left out)."""
    numbered = [frame.event for frame in sse.parse(outcome.answer.body).frames if frame.id is not None]
    result = events[-1]["result"]
    driver.exercised.add("ours.notice")
    for _ in range(100):
        url = urljoin(driver.server.base + "/", str(result.get("events", "")).lstrip("/"))
        answer = driver.server.request("GET", url, extra={"Last-Event-ID": str(result.get("lastEventId", 0))})
        frames = sse.parse(answer.body).frames
        numbered += [frame.event for frame in frames if frame.id is not None]
        last = frames[-1].event if frames else {}
        if last.get("type") == "RUN_FINISHED" and (last.get("result") or {}).get("continues") is True:
            result = last["result"]
            continue
        break
    report = check_stream(driver.schema, numbered, Context(outcome.run_input, driver.ours))
    for finding in report.findings:
        outcome.report.findings.append(Finding(finding.rule, finding.index, f"{outcome.name}, followed to its end: {finding.message}"))
    return numbered


def expect(driver: Driver, outcome: Outcome, events: list[dict], wanted: str, declare) -> None:
    last = events[-1] if events else {}
    got = {"RUN_ERROR": "error"}.get(last.get("type"), "finished")
    if last.get("type") == "RUN_FINISHED" and outcome_of(events).get("type") == "cancelled":
        got = "cancelled"
    if wanted == "cancelled":
        driver.exercised.add("lifecycle.cancelled")
    if wanted != "any" and got != wanted:
        rule = "lifecycle.cancelled" if wanted == "cancelled" else "transport.status"
        outcome.report.findings.append(Finding(rule, None, f"{outcome.name}: the conversation ended {got} ({last.get('type')} {last.get('code', '')}), not {wanted}"))


def load(path: str) -> list[dict]:
    with open(path) as file:
        return json.load(file)
