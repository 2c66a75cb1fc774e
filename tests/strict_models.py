#!/usr/bin/env python3
"""Strict stand-ins for two model APIs, on loopback, refusing what the real APIs refuse.

- `POST /v1/responses`: the OpenAI Responses API, stateless (`store: false`). Every reasoning item
  it sends carries encrypted content; a later request must send each one back unaltered and right
  before the item it produced ("Item 'rs_…' of type 'reasoning' was provided without its required
  following item"), a function call it produced after reasoning needs that reasoning before it
  ("Item 'fc_…' of type 'function_call' was provided without its required 'reasoning' item"), a
  function call output must answer a call of the input, and tools are flat.
- `POST /v1beta/openai/chat/completions` (and `/v1/chat/completions`): Gemini's OpenAI-compatible
  endpoint. Its tool calls carry `extra_content.google.thought_signature` (on the first call of a
  turn, as Gemini does); replaying a call without its signature, or with another one, is refused
  with Gemini's 400 "Function call is missing a thought_signature in functionCall parts".

What a request gets is decided by a marker in its last user message:
`[time]` a server tool round trip (get_current_time), `[color]` a frontend tool
(change-background-color), `[parallel]` two calls at once, anything else a plain answer. Failures
for the retry policy, each once per distinct message unless said: `[retry-after-ms]` 429 with
`retry-after-ms: 700`, `[529]` an overloaded 529, `[overload-in-stream]` a 200 whose stream opens
with an error event, `[quota]` 429 `insufficient_quota` (always), `[stall]` headers then silence
for any model but `fallback-model` (always), `[drop-after-output]` some text then the connection
closed (always), `[down]` 503 for the model `primary-down` (always).

`GET /__journal` lists every request received (path, headers, body, when); `GET /health` answers.
Run: python3 tests/strict_models.py --port 0 (prints `listening on PORT`).
"""

import argparse
import base64
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
JOURNAL = []
SEEN = {}  # failure marker + message -> times asked
ISSUED_REASONING = {}  # rs id -> (item as sent, id of the item it produced)
ISSUED_AFTER_REASONING = {}  # fc/msg id -> rs id that produced it
ISSUED_SIGNATURES = {}  # tool call id -> thought signature
COUNTER = [0]

GEMINI_MISSING = (
    "Function call is missing a thought_signature in functionCall parts. This is required for "
    "tools to work correctly, and missing thought_signature may lead to degraded model "
    "performance. Additional data, function call `default_api:{name}` , position {position}. "
    "Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details."
)


def next_id(prefix):
    with LOCK:
        COUNTER[0] += 1
        return f"{prefix}_{COUNTER[0]:04d}{os.urandom(3).hex()}"


def first_time(key):
    with LOCK:
        SEEN[key] = SEEN.get(key, 0) + 1
        return SEEN[key] == 1


class Refused(Exception):
    def __init__(self, status, body, headers=None):
        super().__init__(status)
        self.status, self.body, self.headers = status, body, headers or {}


def openai_error(status, message, code=None, kind="invalid_request_error", param=None, headers=None):
    return Refused(status, {"error": {"message": message, "type": kind, "param": param, "code": code}}, headers)


def failure_for(marker_text, model):
    """The failure a marker asks for, raised before anything is streamed; or None."""
    if "[retry-after-ms]" in marker_text and first_time("retry-after-ms" + marker_text):
        return openai_error(429, "Rate limit reached. Please try again in 700ms.", "rate_limit_exceeded",
                            "requests", headers={"retry-after-ms": "700", "retry-after": "30"})
    if "[529]" in marker_text and first_time("529" + marker_text):
        return Refused(529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    if "[quota]" in marker_text:
        return openai_error(429, "You exceeded your current quota, please check your plan and billing details.",
                            "insufficient_quota", "insufficient_quota")
    if "[down]" in marker_text and model == "primary-down":
        return openai_error(503, "The engine is currently overloaded, please try again later", None, "server_error")
    return None


# ---------------------------------------------------------------------------- Responses API

def check_responses(body):
    if body.get("stream") is not True:
        raise openai_error(400, "this stand-in only streams", param="stream")
    for index, tool in enumerate(body.get("tools") or []):
        if "function" in tool or not tool.get("name"):
            raise openai_error(400, f"Missing required parameter: 'tools[{index}].name'.", "missing_required_parameter",
                               param=f"tools[{index}].name")
    items = body.get("input") or []
    if isinstance(items, str):
        return
    calls = set()
    for position, item in enumerate(items):
        kind = item.get("type") or ("message" if "role" in item else None)
        if kind == "reasoning":
            issued = ISSUED_REASONING.get(item.get("id"))
            if issued is None:
                raise openai_error(404, f"Item with id '{item.get('id')}' not found.", param="input")
            sent, following = issued
            if item != sent:
                raise openai_error(400, "The encrypted content for item " + str(item.get("id")) +
                                   " could not be verified.", "invalid_encrypted_content", param="input")
            nxt = items[position + 1] if position + 1 < len(items) else None
            if following is not None and (nxt is None or nxt.get("id") != following):
                raise openai_error(400, f"Item '{item['id']}' of type 'reasoning' was provided without its required following item.",
                                   param="input")
        elif kind in ("function_call", "message") and item.get("id") in ISSUED_AFTER_REASONING:
            reasoning_id = ISSUED_AFTER_REASONING[item["id"]]
            before = [earlier.get("id") for earlier in items[:position]]
            if reasoning_id not in before:
                raise openai_error(400, f"Item '{item['id']}' of type '{kind}' was provided without its required 'reasoning' item: '{reasoning_id}'.",
                                   param="input")
        if kind == "function_call":
            calls.add(item.get("call_id"))
        if kind == "function_call_output" and item.get("call_id") not in calls:
            raise openai_error(400, f"No tool call found for function call output with call_id {item.get('call_id')}.",
                               param="input")


def last_user_text(items):
    for item in reversed(items if isinstance(items, list) else []):
        if item.get("role") == "user":
            content = item.get("content")
            if isinstance(content, str):
                return content
            return " ".join(part.get("text", "") for part in content or [] if isinstance(part, dict))
    return items if isinstance(items, str) else ""


def answered_calls(items):
    return [item for item in items if isinstance(item, dict) and item.get("type") == "function_call_output"]


def plan(marker_text, answered):
    """What the model does: a list of ("text", str) and ("call", name, args)."""
    if "[time]" in marker_text and not answered:
        return [("call", "get_current_time", {"timezone": "Europe/Paris"})]
    if "[color]" in marker_text and not answered:
        return [("call", "change-background-color", {"color": "green"})]
    if "[parallel]" in marker_text and not answered:
        return [("call", "get_current_time", {"timezone": "UTC"}), ("call", "get_current_time", {"timezone": "Asia/Tokyo"})]
    if answered:
        return [("text", "Done: " + str(answered[-1].get("output") or answered[-1].get("content"))[:60])]
    return [("text", "Hello from the strict model.")]


class Stream:
    def __init__(self, handler):
        self.handler = handler

    def event(self, data, name=None):
        frame = (f"event: {name}\n" if name else "") + "data: " + json.dumps(data) + "\n\n"
        self.handler.wfile.write(frame.encode())
        self.handler.wfile.flush()


def stream_responses(handler, body, steps, marker_text):
    model = body.get("model")
    out = Stream(handler)
    response_id = next_id("resp")
    sequence = [0]

    def send(data):
        data["sequence_number"] = sequence[0]
        sequence[0] += 1
        out.event(data, data["type"])

    send({"type": "response.created", "response": {"id": response_id, "status": "in_progress", "model": model, "output": []}})
    if "[overload-in-stream]" in marker_text and first_time("overload-in-stream" + marker_text):
        send({"type": "error", "code": "server_error", "message": "The server is overloaded.", "param": None})
        return
    index = 0
    wants_reasoning = "reasoning.encrypted_content" in (body.get("include") or [])
    reasoning_id = None
    if wants_reasoning:
        reasoning_id = next_id("rs")
        send({"type": "response.output_item.added", "output_index": index, "item": {"id": reasoning_id, "type": "reasoning", "summary": []}})
        summary = "Thinking about what the user asked."
        for piece in ("Thinking about ", "what the user asked."):
            send({"type": "response.reasoning_summary_text.delta", "item_id": reasoning_id, "output_index": index,
                  "summary_index": 0, "delta": piece})
        reasoning_item = {"id": reasoning_id, "type": "reasoning", "summary": [{"type": "summary_text", "text": summary}],
                          "encrypted_content": base64.b64encode(os.urandom(48)).decode()}
        send({"type": "response.output_item.done", "output_index": index, "item": reasoning_item})
        index += 1
    first_item_id = None
    for step in steps:
        if step[0] == "text":
            item_id = next_id("msg")
            first_item_id = first_item_id or item_id
            send({"type": "response.output_item.added", "output_index": index,
                  "item": {"id": item_id, "type": "message", "role": "assistant", "status": "in_progress", "content": []}})
            text = step[1]
            for start in range(0, len(text), 8):
                send({"type": "response.output_text.delta", "item_id": item_id, "output_index": index, "content_index": 0,
                      "delta": text[start:start + 8], "logprobs": []})
                if "[drop-after-output]" in marker_text:
                    handler.close_connection = True
                    return
            send({"type": "response.output_item.done", "output_index": index,
                  "item": {"id": item_id, "type": "message", "role": "assistant", "status": "completed",
                           "content": [{"type": "output_text", "text": text, "annotations": []}]}})
        else:
            item_id = next_id("fc")
            first_item_id = first_item_id or item_id
            call_id = next_id("call")
            arguments = json.dumps(step[2])
            send({"type": "response.output_item.added", "output_index": index,
                  "item": {"id": item_id, "type": "function_call", "call_id": call_id, "name": step[1], "arguments": "", "status": "in_progress"}})
            for start in range(0, len(arguments), 10):
                send({"type": "response.function_call_arguments.delta", "item_id": item_id, "output_index": index,
                      "delta": arguments[start:start + 10]})
            send({"type": "response.output_item.done", "output_index": index,
                  "item": {"id": item_id, "type": "function_call", "call_id": call_id, "name": step[1], "arguments": arguments, "status": "completed"}})
        if reasoning_id:
            ISSUED_AFTER_REASONING[item_id] = reasoning_id
        index += 1
    if reasoning_id:
        ISSUED_REASONING[reasoning_id] = (reasoning_item, first_item_id)
    # About four characters a token, as a tokenizer would count the request.
    input_tokens = 64 + len(json.dumps(body)) // 4
    send({"type": "response.completed", "response": {
        "id": response_id, "status": "completed", "model": model,
        "usage": {"input_tokens": input_tokens, "input_tokens_details": {"cached_tokens": 64, "cache_write_tokens": 0},
                  "output_tokens": 40, "output_tokens_details": {"reasoning_tokens": 16 if reasoning_id else 0},
                  "total_tokens": input_tokens + 40}}})


# ---------------------------------------------------------------------- Gemini (OpenAI-compatible)

def check_gemini(body):
    messages = body.get("messages") or []
    for message in messages:
        for position, call in enumerate(message.get("tool_calls") or []):
            issued = ISSUED_SIGNATURES.get(call.get("id"))
            if issued is None:
                continue
            sent = ((call.get("extra_content") or {}).get("google") or {}).get("thought_signature")
            if sent != issued:
                raise Refused(400, [{"error": {"code": 400, "message": GEMINI_MISSING.format(
                    name=call.get("function", {}).get("name"), position=position + 1), "status": "INVALID_ARGUMENT"}}])


def stream_gemini(handler, body, steps, marker_text):
    out = Stream(handler)
    completion = next_id("chatcmpl")
    model = body.get("model")

    def chunk(delta, finish=None, usage=None):
        data = {"id": completion, "object": "chat.completion.chunk", "created": int(time.time()), "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        if usage:
            data["usage"] = usage
        out.event(data)

    if "[overload-in-stream]" in marker_text and first_time("overload-in-stream" + marker_text):
        out.event({"error": {"code": 503, "message": "The model is overloaded. Please try again later.", "status": "UNAVAILABLE", "type": "server_error"}})
        return
    chunk({"role": "assistant"})
    calls = 0
    for step in steps:
        if step[0] == "text":
            text = step[1]
            for start in range(0, len(text), 8):
                chunk({"content": text[start:start + 8]})
                if "[drop-after-output]" in marker_text:
                    handler.close_connection = True
                    return
        else:
            call_id = next_id("function-call")
            call = {"index": calls, "id": call_id, "type": "function", "function": {"name": step[1], "arguments": json.dumps(step[2])}}
            if calls == 0:
                signature = base64.b64encode(os.urandom(32)).decode()
                ISSUED_SIGNATURES[call_id] = signature
                call["extra_content"] = {"google": {"thought_signature": signature}}
            chunk({"tool_calls": [call]})
            calls += 1
    chunk({}, "tool_calls" if calls else "stop")
    prompt_tokens = len(json.dumps(body)) // 4
    chunk({}, None, {"prompt_tokens": prompt_tokens, "completion_tokens": 20, "total_tokens": prompt_tokens + 20})
    handler.wfile.write(b"data: [DONE]\n\n")
    handler.wfile.flush()


# ---------------------------------------------------------------------------------- the server

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path == "/health":
            return self.reply(200, {"status": "ok"})
        if self.path == "/__journal":
            with LOCK:
                return self.reply(200, list(JOURNAL))
        return self.reply(404, {"error": "not found"})

    def do_POST(self):
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            return self.reply(400, {"error": {"message": "invalid JSON"}})
        with LOCK:
            JOURNAL.append({"path": self.path, "at": time.time(), "body": body,
                            "headers": {k.lower(): v for k, v in self.headers.items()}})
        try:
            if self.path.endswith("/responses"):
                check_responses(body)
                items = body.get("input") or []
                marker_text = last_user_text(items)
                stream, answered = stream_responses, answered_calls(items)
            elif self.path.endswith("/chat/completions"):
                check_gemini(body)
                messages = body.get("messages") or []
                marker_text = last_user_text(messages)
                stream = stream_gemini
                answered = [m for m in messages if m.get("role") == "tool"]
                last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
                answered = [m for i, m in enumerate(messages) if m.get("role") == "tool" and i > last_user]
            else:
                return self.reply(404, {"error": {"message": f"no route {self.path}"}})
            refused = failure_for(marker_text, body.get("model"))
            if refused:
                raise refused
        except Refused as refused:
            return self.reply(refused.status, refused.body, refused.headers)
        if "[stall]" in marker_text and body.get("model") != "fallback-model":
            self.start_stream()
            time.sleep(30)
            return
        self.start_stream()
        try:
            stream(self, body, plan(marker_text, answered), marker_text)
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True

    def start_stream(self):
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        self.wfile.flush()

    def reply(self, status, body, headers=None):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    print(f"listening on {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
