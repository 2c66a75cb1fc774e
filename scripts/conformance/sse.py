"""The HTTP + SSE binding's framing, read strictly (basic/transports/http-sse#response): LF line
endings only, each `data` payload exactly one JSON object, `id:`/`event:`/`retry:` fields and
`:` comments allowed, the body ending on a blank line."""

from __future__ import annotations

import json
from dataclasses import dataclass, field


@dataclass
class Frame:
    """One dispatched SSE event: its `id:` when it had one, and its JSON."""

    id: str | None
    event: dict
    raw: str


@dataclass
class Parsed:
    frames: list[Frame] = field(default_factory=list)
    # (message) for every framing defect; a defective frame is left out of `frames`.
    defects: list[str] = field(default_factory=list)

    @property
    def events(self) -> list[dict]:
        return [frame.event for frame in self.frames]


def parse(body: str) -> Parsed:
    parsed = Parsed()
    if "\r" in body:
        parsed.defects.append("the stream contains CR characters: the binding pins LF framing")
        body = body.replace("\r\n", "\n").replace("\r", "\n")
    if body and not body.endswith("\n\n"):
        parsed.defects.append("the stream does not end with a blank line (a truncated last frame)")
    for block in body.split("\n\n"):
        if not block.strip("\n"):
            continue
        frame_id: str | None = None
        data: list[str] = []
        for line in block.split("\n"):
            if line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "data":
                data.append(value)
            elif name == "id":
                frame_id = value
            elif name in ("event", "retry"):
                continue
            else:
                parsed.defects.append(f"a line that is no SSE field: {line[:120]!r}")
        if not data:
            continue
        text = "\n".join(data)
        try:
            event = json.loads(text)
        except json.JSONDecodeError as error:
            parsed.defects.append(f"a data payload that is not JSON ({error}): {text[:120]!r}")
            continue
        if not isinstance(event, dict):
            parsed.defects.append(f"a data payload that is not one JSON object: {text[:120]!r}")
            continue
        parsed.frames.append(Frame(frame_id, event, text))
    return parsed
