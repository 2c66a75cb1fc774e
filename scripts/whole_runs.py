#!/usr/bin/env python3
"""Whole runs against the release binary as a local server: cold start, TTFB, CPU per event, RSS.

usage: whole_runs.py BIN AIMOCK_PORT OUT.json [KEY=VALUE ...] [warm-only]
"""
import json, os, statistics, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import cpu_ns_schedstat, cpu_seconds, run, start_server as start, status_kb, stop  # noqa: E402

BIN, AIMOCK_PORT, OUT = sys.argv[1], int(sys.argv[2]), sys.argv[3]
# Further arguments: KEY=VALUE settings for the server (e.g. a DynamoDB table), and "warm-only"
# to skip the cold starts.
EXTRA_ENV = dict(arg.split("=", 1) for arg in sys.argv[4:] if "=" in arg)
WARM_ONLY = "warm-only" in sys.argv[4:]
COLD_STARTS = 0 if WARM_ONLY else 15  # fresh processes: start → ready, then the first run's TTFB
WARM_RUNS = 30        # short answers on a warm process
LONG_RUNS = 50        # 2,000-token runs for CPU per event
CLK_TCK = os.sysconf("SC_CLK_TCK")
BODY_LONG = "benchmark long answer"
BODY_SHORT = "benchmark short answer"


def start_server():
    return start(BIN, AIMOCK_PORT, os.path.dirname(OUT), EXTRA_ENV)


procs = []
try:
    figures = {}
    # Cold starts, each followed by that process's first run (cold model-connection pool).
    colds, first_ttfb, first_text = [], [], []
    for _ in range(COLD_STARTS):
        proc, port, ready = start_server(); procs.append(proc)
        ttfb, text, _, _ = run(port, BODY_SHORT)
        colds.append(ready); first_ttfb.append(ttfb); first_text.append(text)
        stop(proc); procs.remove(proc)
    if colds:
        figures["cold_start_ms"] = statistics.median(colds) * 1e3
        figures["cold_start_ms_min_max"] = [min(colds) * 1e3, max(colds) * 1e3]
        figures["first_run_ttfb_ms"] = statistics.median(first_ttfb) * 1e3
        figures["first_run_first_text_ms"] = statistics.median(first_text) * 1e3

    # One fresh process: RSS after start, after one 2,000-token run, then warm runs and CPU.
    proc, port, _ = start_server(); procs.append(proc)
    figures["rss_idle_kb"] = status_kb(proc.pid, "VmRSS")
    _, _, long_total, long_events = run(port, BODY_LONG)
    figures["peak_rss_one_long_run_kb"] = status_kb(proc.pid, "VmHWM")
    figures["long_run_events"] = long_events
    figures["long_run_wall_ms"] = long_total * 1e3
    for _ in range(3):
        run(port, BODY_SHORT)
    warm_ttfb, warm_text = [], []
    for _ in range(WARM_RUNS):
        ttfb, text, _, _ = run(port, BODY_SHORT)
        warm_ttfb.append(ttfb); warm_text.append(text)
    figures["warm_runs"] = WARM_RUNS
    figures["warm_run_ttfb_ms"] = statistics.median(warm_ttfb) * 1e3
    figures["warm_run_first_text_ms"] = statistics.median(warm_text) * 1e3

    cpu0, ns0, events, walls = cpu_seconds(proc.pid), cpu_ns_schedstat(proc.pid), 0, []
    for _ in range(LONG_RUNS):
        _, _, total, n = run(port, BODY_LONG)
        events += n; walls.append(total)
    cpu1, ns1 = cpu_seconds(proc.pid), cpu_ns_schedstat(proc.pid)
    figures["long_runs"] = LONG_RUNS
    figures["long_runs_events"] = events
    figures["cpu_per_event_us"] = (sum(cpu1) - sum(cpu0)) / events * 1e6
    figures["user_per_event_us"] = (cpu1[0] - cpu0[0]) / events * 1e6
    figures["sys_per_event_us"] = (cpu1[1] - cpu0[1]) / events * 1e6
    figures["cpu_per_event_us_schedstat"] = (ns1 - ns0) / events / 1e3
    figures["cpu_tick_ms"] = 1e3 / CLK_TCK
    figures["long_run_wall_ms_median"] = statistics.median(walls) * 1e3
    figures["peak_rss_after_all_runs_kb"] = status_kb(proc.pid, "VmHWM")
    figures["threads"] = status_kb(proc.pid, "Threads")
    stop(proc); procs.remove(proc)
    with open(OUT, "w") as f:
        json.dump(figures, f, indent=2)
finally:
    for proc in procs:
        stop(proc)
