"""A minimal AG-UI server on loopback for the suite's self-test: well-behaved by default, or
misbehaving in one named way, so each of the driver's checks is seen to catch its fault."""

from __future__ import annotations

import contextlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

KNOWN = {"threadId", "runId", "parentRunId", "state", "messages", "tools", "context", "forwardedProps", "protocolVersion", "resume"}
PART_KINDS = {"text", "image", "audio", "video", "document"}
SOURCE_KINDS = {"data", "url"}

# fault → (the rule that must catch it, what the server does wrong)
FAULTS = {
    "wrong-content-type": ("transport.status", "a run answered as text/plain"),
    "stream-malformed": ("transport.rejected-input", "malformed input answered with a stream"),
    "reject-newer-minor": ("versioning.newer-minor", "a client declaring 1.7 refused"),
    "reject-uninterpretable": ("versioning.uninterpretable", "a client declaring \"banana\" refused"),
    "fail-video": ("run-input.unusable-parts", "a run failed over a video part"),
    "fail-file-handle": ("run-input.file-handles", "a provider file handle refused"),
    "fail-unknown-part": ("run-input.unknown-parts", "a part of an unknown kind refused"),
    "reject-unknown-member": ("run-input.asymmetry", "an unknown top-level member refused"),
    "require-tools": ("run-input.missing-tools", "an input without `tools` refused"),
    "fail-unknown-resume": ("interrupts.unknown-entry", "a run failed over a resume entry for no interrupt"),
    "bad-capabilities": ("capabilities.shape", "capabilities with a string where a boolean belongs"),
    "no-skipped-report": ("ours.skipped-parts", "skipped parts not reported"),
}


def skipped_parts(run_input: dict) -> list[dict]:
    skipped = []
    for index, message in enumerate(run_input.get("messages", [])):
        content = message.get("content")
        for number, part in enumerate(content if isinstance(content, list) else []):
            source = part.get("source") if isinstance(part, dict) else None
            usable = part.get("type") in ("text", "image") and (source is None or source.get("type") in SOURCE_KINDS)
            if not usable:
                skipped.append({"field": f"messages[{index}].content[{number}]", "reason": "not usable"})
    return skipped


class Handler(BaseHTTPRequestHandler):
    fault: str | None = None

    def log_message(self, *args):  # quiet
        pass

    def reply(self, status: int, content_type: str, body: str) -> None:
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def refuse(self, message: str) -> None:
        self.reply(422, "application/json", json.dumps({"error": {"message": message}}))

    def do_GET(self):
        streaming = "yes" if self.fault == "bad-capabilities" else True
        self.reply(200, "application/json", json.dumps({"transport": {"streaming": streaming}}))

    def do_POST(self):
        length = int(self.headers.get("Content-Length", 0))
        try:
            run_input = json.loads(self.rfile.read(length))
        except json.JSONDecodeError:
            return self.reply(400, "application/json", '{"error":{"message":"not JSON"}}')
        fault = self.fault
        if not isinstance(run_input, dict) or not isinstance(run_input.get("messages"), list):
            if fault != "stream-malformed":
                return self.refuse("messages must be a list")
            run_input = {"threadId": "t", "runId": "r", "messages": []}
        declared = run_input.get("protocolVersion")
        parts = [p for m in run_input["messages"] if isinstance(m.get("content"), list) for p in m["content"]]
        refusals = {
            "reject-newer-minor": declared == "1.7",
            "reject-uninterpretable": declared == "banana",
            "fail-file-handle": any((p.get("source") or {}).get("type") == "file" for p in parts),
            "fail-unknown-part": any(p.get("type") not in PART_KINDS for p in parts),
            "reject-unknown-member": bool(set(run_input) - KNOWN),
            "require-tools": "tools" not in run_input,
        }
        if refusals.get(fault):
            return self.refuse(f"refused ({fault})")
        failed = (fault == "fail-video" and any(p.get("type") == "video" for p in parts)) or (
            fault == "fail-unknown-resume" and run_input.get("resume"))
        self.stream(run_input, failed)

    def stream(self, run_input: dict, failed: bool) -> None:
        thread, run = run_input.get("threadId", "t"), run_input.get("runId", "r")
        ours = {} if self.fault == "no-skipped-report" else {"skippedParts": skipped_parts(run_input)}
        events = [
            {"type": "RUN_STARTED", "threadId": thread, "runId": run, "protocolVersion": "1.0" if run_input.get("protocolVersion") == "1.0" else "1.1", "_ours": ours},
            {"type": "TEXT_MESSAGE_START", "messageId": f"{run}-m", "role": "assistant"},
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": f"{run}-m", "delta": "Hello."},
            {"type": "TEXT_MESSAGE_END", "messageId": f"{run}-m"},
            {"type": "RUN_ERROR", "message": "failed"} if failed else {"type": "RUN_FINISHED", "threadId": thread, "runId": run},
        ]
        frames = []
        for number, event in enumerate(events, 1):
            extra = event.pop("_ours", {})
            event["metadata"] = {"agui-lambda": {"eventId": number, **extra}}
            frames.append(f"id: {number}\ndata: {json.dumps(event)}\n\n")
        content_type = "text/plain" if self.fault == "wrong-content-type" else "text/event-stream"
        self.reply(200, content_type, "".join(frames))


@contextlib.contextmanager
def serving(fault: str | None):
    handler = type("FaultyHandler", (Handler,), {"fault": fault})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
