#!/usr/bin/env python3
"""Writes the checked-in seed corpora under fuzz/corpus/. Run from anywhere:

    python3 fuzz/seeds.py

run_agent_input/: request bodies (the bodies of events/*.json, seed 001's examples, the
0.0.59 snake_case form, legacy binary parts, refusals). model_stream/: OpenAI-style SSE
response bodies, each prefixed with the target's split header (see fuzz_targets/model_stream.rs).
Only these seeds are committed; scripts/fuzz.sh fuzzes a scratch copy.
"""

import glob
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RUN_DIR = os.path.join(HERE, "corpus", "run_agent_input")
STREAM_DIR = os.path.join(HERE, "corpus", "model_stream")


def write(directory, name, data):
    os.makedirs(directory, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(directory, name), "wb") as f:
        f.write(data)


def body(obj):
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


# ---- run_agent_input ---------------------------------------------------------------------------
for path in sorted(glob.glob(os.path.join(ROOT, "events", "*.json"))):
    event = json.load(open(path))
    if event.get("body"):
        write(RUN_DIR, "event-" + os.path.basename(path), event["body"])

CONFIRM = {
    "name": "confirmAction",
    "description": "请求用户确认危险操作",
    "parameters": {
        "type": "object",
        "properties": {"action": {"type": "string"}, "count": {"type": "number"}},
        "required": ["action"],
    },
}

# Seed 001, scenario 4, second round: history with an assistant tool call and its result.
write(RUN_DIR, "seed001-hitl-round2.json", body({
    "threadId": "thread_004",
    "runId": "run_006",
    "messages": [
        {"id": "msg_1", "role": "user", "content": "删除所有临时文件"},
        {"id": "msg_2", "role": "assistant", "content": "即将删除 15 个临时文件",
         "toolCalls": [{"id": "call_003", "type": "function", "function": {
             "name": "confirmAction", "arguments": "{\"action\":\"删除临时文件\",\"count\":15}"}}]},
        {"id": "msg_3", "role": "tool", "toolCallId": "call_003", "content": "confirmed"},
    ],
    "tools": [CONFIRM],
    "context": [],
}))

# Seed 001's example request, every role, parent run, state.
write(RUN_DIR, "seed001-all-roles.json", body({
    "threadId": "550e8400-e29b-41d4-a716-446655440000",
    "runId": "run_001",
    "parentRunId": "run_000",
    "state": {"step": 2, "items": ["a", "b"]},
    "messages": [
        {"id": "d1", "role": "developer", "content": "be brief", "name": "dev"},
        {"id": "s1", "role": "system", "content": "You are helpful."},
        {"id": "msg_1", "role": "user", "content": "今天北京天气怎么样?", "name": "alice"},
        {"id": "a1", "role": "assistant", "content": "让我查询一下"},
        {"id": "r1", "role": "reasoning", "content": "thinking..."},
        {"id": "act1", "role": "activity", "activityType": "PLAN", "content": {"steps": []}},
        {"id": "t0", "role": "tool", "toolCallId": "call_x", "content": "", "error": "timeout"},
    ],
    "tools": [{"name": "get_weather", "description": "获取指定城市的天气",
               "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                              "required": ["city"]}}],
    "context": [{"description": "user locale", "value": "zh-CN"},
                {"description": "structured", "value": {"k": [1, 2]}}],
    "forwardedProps": {"clientTime": {"deviceTimezone": "Asia/Shanghai"}},
}))

# @ag-ui/client 0.0.59 / CopilotKit: snake_case keys, state null, parameters as a JSON string.
write(RUN_DIR, "snake-case-0059.json", body({
    "thread_id": "thread_001",
    "run_id": "run-xxx",
    "parent_run_id": None,
    "state": None,
    "messages": [
        {"id": "m1", "role": "user", "content": "hello"},
        {"id": "m2", "role": "assistant", "content": None,
         "tool_calls": [{"id": "c1", "type": "function",
                         "function": {"name": "search", "arguments": {"q": "x"}}}]},
        {"id": "m3", "role": "tool", "tool_call_id": "c1", "content": {"hits": 3}},
    ],
    "tools": [{"name": "search", "parameters": "{\"type\":\"object\",\"properties\":{\"q\":{\"type\":\"string\"}}}"}],
    "context": [],
    "forwarded_props": {"client_time": {"device_timezone": "Europe/Paris"}},
}))

# Multimodal: text, image by url, legacy binary part with url.
write(RUN_DIR, "parts-image-binary.json", body({
    "protocolVersion": "1.0",
    "threadId": "t-parts",
    "runId": "r-parts",
    "messages": [{"id": "u1", "role": "user", "content": [
        {"type": "text", "text": "what is in these?"},
        {"type": "image", "source": {"type": "url", "value": "https://example.com/a.png",
                                     "mimeType": "image/png"}},
        {"type": "binary", "mimeType": "image/jpeg", "url": "https://example.com/b.jpg",
         "filename": "b.jpg", "id": "att-1"},
        {"type": "binary", "mime_type": "image/webp", "url": "http://example.com/c.webp"},
    ]}],
    "tools": [], "context": [],
}))

# Refusals: each is an InputError, exercised so the fuzzer keeps those branches reachable.
write(RUN_DIR, "bad-binary-data.json", body({
    "messages": [{"id": "u1", "role": "user", "content": [
        {"type": "binary", "mimeType": "image/png", "data": "iVBORw0KGgo="}]}]}))
write(RUN_DIR, "bad-audio-part.json", body({
    "messages": [{"id": "u1", "role": "user", "content": [
        {"type": "audio", "source": {"type": "url", "value": "https://x/a.mp3"}}]}]}))
write(RUN_DIR, "bad-duplicate-ids.json", body({
    "messages": [{"id": "m1", "role": "user", "content": "a"},
                 {"id": "m1", "role": "user", "content": "b"}]}))
write(RUN_DIR, "bad-tool-name-schema.json", body({
    "messages": [{"id": "m1", "role": "user", "content": "a"}],
    "tools": [{"name": "ok_tool", "parameters": {"type": "object", "properties": {"a": {"type": 7}}}},
              {"name": "bad name!", "parameters": {}}]}))
write(RUN_DIR, "bad-timezone.json", body({
    "messages": [{"id": "m1", "role": "user", "content": "a"}],
    "forwardedProps": {"client_time": {"device_timezone": "Mars/Olympus"}}}))
write(RUN_DIR, "bad-id-characters.json", body({
    "threadId": "thread with spaces/..", "runId": "r1",
    "messages": [{"id": "m1", "role": "user", "content": "a"}]}))
write(RUN_DIR, "bad-syntax.json", '{"threadId":"t1","messages":[{"id":"m1","role":"user","content":"unterminated')
write(RUN_DIR, "bad-wrong-types.json", '{"messages":{"id":"m1"},"tools":"none","state":[1,2'
      ',{"a":null}],"runId":42}')

# AG-UI 1.0: a resume answering an approval, inline media parts of every kind, a reasoning
# message carrying its encrypted value back, and sampling options.
write(RUN_DIR, "agui10-resume-media-reasoning.json", body({
    "protocolVersion": "1.0",
    "threadId": "t-v1",
    "runId": "r-v1",
    "messages": [
        {"id": "u1", "role": "user", "content": [
            {"type": "text", "text": "look"},
            {"type": "image", "source": {"type": "data", "value": "iVBORw0KGgo=", "mimeType": "image/png"}},
            {"type": "audio", "source": {"type": "data", "value": "UklGRg==", "mimeType": "audio/wav"}},
            {"type": "document", "source": {"type": "data", "value": "JVBERi0=", "mimeType": "application/pdf"},
             "metadata": {"filename": "a.pdf"}},
        ]},
        {"id": "u2", "role": "user", "content": [
            {"type": "binary", "mimeType": "image/png", "data": "iVBORw0KGgo="},
            {"type": "image", "source": {"type": "url", "value": "data:image/png;base64,iVBORw0KGgo="}},
        ]},
        {"id": "r1", "role": "reasoning", "content": "thinking", "encryptedValue": "signature:abc"},
        {"id": "a1", "role": "assistant", "toolCalls": [{"id": "c1", "type": "function",
            "function": {"name": "get_current_time", "arguments": "{\"timezone\":\"UTC\"}"}}]},
    ],
    "resume": [{"interruptId": "int-1", "status": "resolved",
                "payload": {"approved": True, "editedArgs": {"timezone": "Asia/Tokyo"}}},
               {"interruptId": "int-2", "status": "cancelled"}],
    "tools": [], "context": [],
    "forwardedProps": {"temperature": 0.3, "top_p": 0.9, "max_tokens": 200, "stop": ["END"], "seed": 7},
}))

# ---- model_stream ------------------------------------------------------------------------------
def chunk(delta=None, finish=None, index=0, **extra):
    choice = {"index": index, "delta": delta if delta is not None else {}}
    if finish is not None:
        choice["finish_reason"] = finish
    obj = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1795291200,
           "model": "gpt-4o-mini", "choices": [choice]}
    obj.update(extra)
    return obj


def sse(*items, eol="\n"):
    out = []
    for item in items:
        if isinstance(item, str):
            out.append(item)  # raw line(s), already framed
        else:
            out.append("data: " + json.dumps(item, ensure_ascii=False) + eol + eol)
    return "".join(out)


def stream_seed(name, text, cuts=(0, 0)):
    """Prefixes the split header: len(cuts) cut points as u16 LE."""
    data = text.encode() if isinstance(text, str) else text
    header = bytes([len(cuts)]) + b"".join(struct.pack("<H", c % 65536) for c in cuts)
    write(STREAM_DIR, name, header + data)


def tool_start(i, call_id, name, args=""):
    return {"tool_calls": [{"index": i, "id": call_id, "type": "function",
                            "function": {"name": name, "arguments": args}}]}


def tool_args(i, args):
    return {"tool_calls": [{"index": i, "function": {"arguments": args}}]}


USAGE = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [],
         "usage": {"prompt_tokens": 42, "completion_tokens": 7, "total_tokens": 49}}

stream_seed("text.txt", sse(
    chunk({"role": "assistant", "content": ""}),
    chunk({"content": "Hello"}),
    chunk({"content": ", été 北京 🌍"}),
    chunk({}, "stop"),
    USAGE,
    "data: [DONE]\n\n"), cuts=(7, 120, 121))

stream_seed("tool-call-fragments.txt", sse(
    chunk({"role": "assistant", "content": None, **tool_start(0, "call_abc", "get_current_time")}),
    chunk(tool_args(0, "{\"tim")),
    chunk(tool_args(0, "ezone\":\"Eu")),
    chunk(tool_args(0, "rope/Paris\"}")),
    chunk({}, "tool_calls"),
    "data: [DONE]\n\n"), cuts=(30, 31, 200, 400))

stream_seed("parallel-calls.txt", sse(
    chunk({"role": "assistant", "content": "Let me check both."}),
    chunk(tool_start(0, "call_1", "search", "{\"q\":")),
    chunk(tool_start(1, "call_2", "get_current_time", "")),
    chunk(tool_args(0, "\"rust\"}")),
    chunk(tool_args(1, "{}")),
    chunk({}, "tool_calls"),
    USAGE,
    "data: [DONE]\n\n"))

# Ollama: index 0 reused for parallel calls, id repeated, name only on the first fragment.
stream_seed("ollama-reused-index.txt", sse(
    chunk({"role": "assistant", "content": "",
           "tool_calls": [{"index": 0, "id": "call_a", "function": {"name": "search", "arguments": "{\"q\":\"a\"}"}}]}),
    chunk({"tool_calls": [{"index": 0, "id": "call_b", "function": {"name": "search", "arguments": "{\"q\":\"b\"}"}}]}),
    chunk({"tool_calls": [{"id": "", "function": {"arguments": ""}}]}),
    chunk({}, "stop"),
    "data: [DONE]\n\n"))

stream_seed("reasoning-content.txt", sse(
    chunk({"role": "assistant", "reasoning_content": "The user wants"}),
    chunk({"reasoning_content": " a greeting."}),
    chunk({"reasoning": "(openrouter field)"}),
    chunk({"content": "Hi!"}),
    chunk({}, "stop"),
    "data: [DONE]\n\n"))

stream_seed("keep-alive-crlf.txt", sse(
    ": keep-alive\r\n\r\n",
    ": OPENROUTER PROCESSING\r\n\r\n",
    "event: message\r\nid: 1\r\nretry: 3000\r\n",
    chunk({"content": "multi"}, eol="\r\n"),
    "data: {\"choices\":[{\"delta\":\r\ndata: {\"content\":\" line\"}}]}\r\n\r\n",
    chunk({}, "stop", eol="\r\n"),
    "data:[DONE]\r\n\r\n"), cuts=(13, 14, 15))

stream_seed("error-mid-stream.txt", sse(
    chunk({"content": "Partial"}),
    {"error": {"message": "Rate limit reached for gpt-4o-mini", "type": "requests", "code": "rate_limit_exceeded"}},
    chunk({"content": "never seen"}),
    "data: [DONE]\n\n"))

stream_seed("missing-done-cut-off.txt", sse(
    chunk({"content": "The answer is"}),
    chunk(tool_start(0, "call_z", "search", "{\"q\"")),
    "data: {\"choices\":[{\"delta\":{\"content\":\" trunc"))

stream_seed("finish-without-done.txt", sse(
    chunk({"content": "ok"}),
    chunk({}, "length"),
    USAGE))

stream_seed("args-before-name-n2.txt", sse(
    ": ping\n\n",
    chunk({"tool_calls": [{"index": 3, "function": {"arguments": "{\"x\":1}"}}]}),
    chunk({"tool_calls": [{"index": 3, "id": "call_late", "function": {"name": "late_name"}}]}),
    chunk({"content": "other choice"}, index=1),
    chunk({}, "function_call"),
    "data: [DONE]\n\n",
    "data: {\"after\": \"done is ignored\"}\n\n"))

stream_seed("malformed-chunk.txt", sse(
    chunk({"content": "a"}),
    "data: {not json}\n\n",
    "data: [DONE]\n\n"))

stream_seed("bom-bad-utf8.txt", b"\xef\xbb\xbf" + sse(chunk({"content": "x"})).encode()
            + b"data: {\"choices\":[{\"delta\":{\"content\":\"\xe4\xb8\"}}]}\n\n")

total = sum(os.path.getsize(p) for d in (RUN_DIR, STREAM_DIR) for p in glob.glob(d + "/*"))
print(f"{len(os.listdir(RUN_DIR))} run_agent_input seeds, {len(os.listdir(STREAM_DIR))} "
      f"model_stream seeds, {total} bytes")
