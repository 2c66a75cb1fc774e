#!/usr/bin/env python3
"""Checks the traces the function exported while `cargo lambda watch` served the end-to-end tests.

    python tests/check_lambda_traces.py http://127.0.0.1:<receiver port>

scripts/test.sh runs the function with OTEL_BSP_SCHEDULE_DELAY of ten minutes and a batch as large
as the queue, so the batch processor never exports by itself during the tests: every span the
receiver (tests/otlp_receiver.py) holds was flushed at the end of its invocation, which is what
keeps spans from being lost when Lambda freezes the environment. Checks that runs arrived whole:
each `invoke_agent` span with its request span and its model calls, and a server-tool round trip
as one tree (POST -> invoke_agent -> chat, execute_tool get_current_time, chat).
"""
import json
import sys
import urllib.request


def main() -> int:
    receiver = sys.argv[1].rstrip("/")
    with urllib.request.urlopen(f"{receiver}/spans") as response:
        spans = json.load(response)
    by_trace: dict[str, list[dict]] = {}
    for span in spans:
        by_trace.setdefault(span["traceId"], []).append(span)
    runs = [span for span in spans if span["name"].startswith("invoke_agent ")]
    problems = []
    if len(runs) < 5:
        problems.append(f"only {len(runs)} invoke_agent spans arrived")
    for run in runs:
        trace = by_trace[run["traceId"]]
        ids = {span["spanId"]: span for span in trace}
        parent = ids.get(run["parentSpanId"])
        if parent is None or parent["kind"] != "SPAN_KIND_SERVER":
            problems.append(f"run {run['attributes'].get('agui.run.id')}: no request span as parent")
        if run["attributes"].get("gen_ai.operation.name") != "invoke_agent":
            problems.append(f"run {run['spanId']}: no gen_ai.operation.name")
    round_trips = 0
    for trace in by_trace.values():
        tools = [s for s in trace if s["name"] == "execute_tool get_current_time"]
        if not tools:
            continue
        ids = {span["spanId"]: span for span in trace}
        agent = ids.get(tools[0]["parentSpanId"])
        if agent is None or not agent["name"].startswith("invoke_agent "):
            problems.append("execute_tool get_current_time is not inside invoke_agent")
            continue
        chats = [s for s in trace if s["name"].startswith("chat ") and s["parentSpanId"] == agent["spanId"]]
        if len(chats) < 2:
            problems.append(f"a server-tool round trip with {len(chats)} chat spans")
            continue
        round_trips += 1
    if round_trips == 0:
        problems.append("no server-tool round trip (get_current_time) among the traces")
    failed = [run for run in runs if run["status"]["code"] == "STATUS_CODE_ERROR"]
    if not failed:
        problems.append("no failed run among the traces (the suite plays model errors)")
    if problems:
        for problem in problems:
            print(f"check_lambda_traces: {problem}", file=sys.stderr)
        return 1
    print(
        f"traces under cargo lambda watch: {len(spans)} spans, {len(runs)} runs, "
        f"{round_trips} server-tool round trips, {len(failed)} failed runs, all flushed by "
        "their invocations"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
