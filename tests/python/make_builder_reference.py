#!/usr/bin/env python3
"""Regenerates tests/fixtures/agentscope/builder-reference.jsonl: the AgentScope Agent API document's streaming example
("这张" + "图片显示...") as agentscope-runtime's own ResponseBuilder produces it, numbered by its
SequenceNumberGenerator the way its Runner numbers a stream. Needs the full agentscope-runtime
package (the builder imports it); the golden test only reads the file."""

import pathlib

from agentscope_runtime.engine.helpers.agent_api_builder import ResponseBuilder
from agentscope_runtime.engine.schemas.agent_schemas import SequenceNumberGenerator

OUT = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "agentscope" / "builder-reference.jsonl"

builder = ResponseBuilder(session_id="session_123")
numbers = SequenceNumberGenerator()
lines = [
    numbers.yield_with_sequence(event).model_dump_json(exclude_none=True)
    for event in builder.generate_streaming_response(text_tokens=["这张", "图片显示..."])
]
OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
print(f"wrote {OUT} ({len(lines)} objects)")
