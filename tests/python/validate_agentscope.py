#!/usr/bin/env python3
"""Checks captured AgentScope Agent API output against agentscope-runtime's own pydantic schemas.

    python tests/python/validate_agentscope.py CAPTURE...

A capture is an SSE stream (`data: <json>` frames) or one JSON response object (`stream: false`,
or a refusal). Every object must validate, strictly, as the package's `AgentResponse`, `Message`
or content model (by `object` / `type`) and dump back to exactly what was sent (nothing dropped
or coerced). A stream must also follow the AgentScope Agent API document's lifecycle: `sequence_number` 0, 1, 2, ...; the
response `created` -> `in_progress` -> `completed` | `failed` (with `error {code, message}`);
each message `created` -> `in_progress` -> `completed` (or `incomplete` when the run fails);
every content names an open message in `msg_id`; text deltas add up to the completed text.

Only `agentscope_runtime/engine/schemas/agent_schemas.py` is loaded (by path, not through the
package's `__init__`, which pulls in the whole runtime), so a `--no-deps` install of the package
plus pydantic and openai (which that module imports) suffices. Exit status 0 when all is well.
"""

import importlib.util
import json
import pathlib
import sys


def load_schemas():
    spec = importlib.util.find_spec("agentscope_runtime")
    if spec is None or not spec.submodule_search_locations:
        sys.exit(
            "agentscope-runtime is not installed: run scripts/install-test-tools.sh "
            "(or pip install --no-deps agentscope-runtime pydantic openai)"
        )
    root = pathlib.Path(list(spec.submodule_search_locations)[0])
    path = root / "engine" / "schemas" / "agent_schemas.py"
    module_spec = importlib.util.spec_from_file_location("agent_schemas", path)
    module = importlib.util.module_from_spec(module_spec)
    sys.modules["agent_schemas"] = module
    module_spec.loader.exec_module(module)
    return module


S = load_schemas()
CONTENT_MODELS = {
    "text": S.TextContent,
    "data": S.DataContent,
    "image": S.ImageContent,
    "audio": S.AudioContent,
    "file": S.FileContent,
    "refusal": S.RefusalContent,
    "video": S.VideoContent,
}


class Invalid(Exception):
    pass


def model_for(obj):
    kind = obj.get("object")
    if kind == "response":
        return S.AgentResponse
    if kind == "message":
        return S.Message
    if kind == "content":
        model = CONTENT_MODELS.get(obj.get("type"))
        if model is None:
            raise Invalid(f"unknown content type {obj.get('type')!r}")
        return model
    raise Invalid(f"unknown object {kind!r}")


def validate_object(raw):
    obj = json.loads(raw)
    model = model_for(obj)
    try:
        parsed = model.model_validate_json(raw, strict=True)
    except Exception as err:  # pydantic.ValidationError
        raise Invalid(f"{model.__name__} rejects {raw}: {err}") from err
    dumped = parsed.model_dump(mode="json", exclude_unset=True)
    if dumped != obj:
        raise Invalid(f"{model.__name__} does not round-trip:\n sent {obj}\n read {dumped}")
    if obj.get("status") not in (None, *vars(S.RunStatus).values()):
        raise Invalid(f"status {obj.get('status')!r} is not a RunStatus")
    if obj.get("object") == "message" and obj.get("type") not in S.MessageType.all_values():
        raise Invalid(f"message type {obj.get('type')!r} is not a MessageType")
    return obj


def check_stream(events):
    if not events:
        raise Invalid("empty stream")
    for number, event in enumerate(events):
        if event.get("sequence_number") != number:
            raise Invalid(f"frame {number} has sequence_number {event.get('sequence_number')}")
    responses = [e for e in events if e["object"] == "response"]
    statuses = [e["status"] for e in responses]
    if statuses[:2] != ["created", "in_progress"] or events[0] is not responses[0]:
        raise Invalid(f"the stream must open with response created, in_progress: {statuses}")
    if len(statuses) != 3 or statuses[2] not in ("completed", "failed") or events[-1] is not responses[-1]:
        raise Invalid(f"the stream must end with one completed/failed response: {statuses}")
    final = events[-1]
    if len({r["id"] for r in responses}) != 1:
        raise Invalid("the response id changes")
    if final["status"] == "failed":
        if not (final.get("error") or {}).get("code"):
            raise Invalid("a failed response needs error {code, message}")
    elif final.get("error") is not None:
        raise Invalid("a completed response has an error")

    messages = {}  # id -> status
    texts = {}  # msg_id -> streamed text
    data_args = {}  # msg_id -> streamed arguments
    completed = []
    for event in events[2:-1]:
        kind = event["object"]
        if kind == "response":
            raise Invalid("a response object in the middle of the stream")
        if kind == "message":
            mid, status = event["id"], event["status"]
            before = messages.get(mid)
            allowed = {
                None: {"created"},
                "created": {"in_progress"},
                "in_progress": {"completed", "incomplete"},
            }.get(before, set())
            if status not in allowed:
                raise Invalid(f"message {mid}: {before} -> {status}")
            messages[mid] = status
            if status == "completed":
                completed.append(event)
                content = event.get("content") or []
                for part in content:
                    if part.get("msg_id") != mid:
                        raise Invalid(f"message {mid} holds content of {part.get('msg_id')}")
                    if part["type"] == "text" and mid in texts and part["text"] != texts[mid]:
                        raise Invalid(f"message {mid}: deltas {texts[mid]!r} != {part['text']!r}")
            continue
        mid = event.get("msg_id")
        if messages.get(mid) != "in_progress":
            raise Invalid(f"content for message {mid} which is {messages.get(mid)}")
        if event["type"] == "text":
            if event["delta"]:
                texts[mid] = texts.get(mid, "") + event["text"]
            elif event["status"] == "completed" and mid in texts and texts[mid] != event["text"]:
                raise Invalid(f"message {mid}: deltas {texts[mid]!r} != {event['text']!r}")
        if event["type"] == "data":
            data = event["data"]
            if event["delta"]:
                data_args[mid] = data_args.get(mid, "") + data.get("arguments", "")
            elif event["status"] == "completed" and "arguments" in data:
                if data_args.get(mid, "") not in ("", data["arguments"]):
                    raise Invalid(f"message {mid}: argument deltas do not add up")
                for key in ("call_id", "name", "arguments"):
                    if not isinstance(data.get(key), str):
                        raise Invalid(f"function_call data needs {key}: {data}")
            elif event["status"] == "completed" and "output" in data:
                S.FunctionCallOutput.model_validate(data, strict=True)

    if final["status"] == "completed":
        still_open = [m for m, status in messages.items() if status != "completed"]
        if still_open:
            raise Invalid(f"messages left open: {still_open}")
        if [m["id"] for m in final.get("output") or []] != [m["id"] for m in completed]:
            raise Invalid("the completed response's output is not the completed messages")
    for message in completed:
        if message["type"] == "function_call":
            for part in message["content"]:
                S.FunctionCall.model_validate(part["data"], strict=True)


def check_capture(path):
    text = pathlib.Path(path).read_text(encoding="utf-8")
    if text.lstrip().startswith("{"):
        obj = validate_object(text.strip())
        if obj.get("object") != "response":
            raise Invalid("a JSON body must be a response object")
        return 1
    if "\r" in text:
        raise Invalid("CR in an SSE stream")
    events = []
    for frame in text.split("\n\n"):
        if not frame.strip() or frame.startswith(":"):
            continue
        if not frame.startswith("data: ") or "\n" in frame:
            raise Invalid(f"not a one-line data frame: {frame[:80]!r}")
        events.append(validate_object(frame[len("data: "):]))
    check_stream(events)
    return len(events)


def main(paths):
    failed = False
    for path in paths:
        try:
            count = check_capture(path)
            print(f"ok {path}: {count} objects")
        except Invalid as err:
            failed = True
            print(f"INVALID {path}: {err}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
