"""AG-UI 1.1 producer conformance: the checks a stream (and a server's handling of run input)
must pass, each named after the section of the specification it enforces.

- `sse`: the HTTP + SSE framing, parsed strictly.
- `schema`: every event against the frozen 1.1 JSON Schema.
- `stream`: the sequence rules over one stream (lifecycle, triads, ownership, outcomes, usage,
  version declaration).
- `rules`: every MUST and SHOULD of the producer rules, what agui-lambda does, and what proves it.
- `drive`: requests sent to a live server (versions declared, run-input cases).
- `table`: docs/conformance.md, generated from `rules` and checked against the committed copy.

Entry point: scripts/agui_conformance.py.
"""
