#!/usr/bin/env python3
"""The tokio runtime choice, measured: sequential 500-token runs against the release binary.

usage: runtime_bench.py BIN AIMOCK_PORT OUT.json

For each runtime (RUNTIME_FLAVOR=current-thread, the Lambda default; multi-thread with a worker per
core, the local default; multi-thread with one worker) one fresh server answers RUNS sequential
500-token runs (aimock sends one chunk per token, without delay). Reported per runtime:
  - added time: median run duration minus the floor, the median duration of the same answer
    streamed by aimock straight to the client;
  - CPU per run and per event: the server's user + system time over the runs (on-CPU ns of its
    threads from /proc/<pid>/task/*/schedstat, checked against /proc/<pid>/stat);
  - peak RSS (VmHWM).
Then, when this runs as root with the cgroup v1 cpu controller: the same runs with the server in a
cgroup whose CPU quota is a 128 MB Lambda function's share (128/1769 of a vCPU: Lambda gives a
full vCPU at 1,769 MB), reporting the added time of a 500-token burst.
"""
import json, os, socket, statistics, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import cpu_ns_schedstat, cpu_seconds, free_port, run, start_server, status_kb, stop  # noqa: E402

BIN, AIMOCK_PORT, OUT = sys.argv[1], int(sys.argv[2]), sys.argv[3]
RUNS = int(os.environ.get("RUNTIME_BENCH_RUNS", "60"))
QUOTA_RUNS = int(os.environ.get("RUNTIME_BENCH_QUOTA_RUNS", "20"))
PROMPT = "benchmark 500-token answer"
CGROUP_V1_CPU = "/sys/fs/cgroup/cpu"
PERIOD_US = 100_000
QUOTA_US = round(PERIOD_US * 128 / 1769)  # 7,236 µs per 100 ms
LOG_DIR = os.path.dirname(os.path.abspath(OUT))
RUNTIMES = [
    ("current-thread (Lambda default)", {"RUNTIME_FLAVOR": "current-thread"}),
    (f"multi-thread, {os.cpu_count()} workers (local default)", {"RUNTIME_FLAVOR": "multi-thread"}),
    ("multi-thread, 1 worker", {"RUNTIME_FLAVOR": "multi-thread", "TOKIO_WORKER_THREADS": "1"}),
]


def floor_run():
    """The 500-token answer streamed by aimock straight to this client: seconds to the last byte."""
    body = json.dumps({"model": "bench-model", "stream": True,
                       "messages": [{"role": "user", "content": PROMPT}]}).encode()
    request = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{AIMOCK_PORT}\r\n"
               f"Content-Type: application/json\r\nConnection: close\r\n"
               f"Content-Length: {len(body)}\r\n\r\n").encode() + body
    began = time.perf_counter()
    sock = socket.create_connection(("127.0.0.1", AIMOCK_PORT))
    sock.sendall(request)
    raw = bytearray()
    # aimock may keep the connection open after the stream: the answer ends at [DONE].
    while b"[DONE]" not in raw and (data := sock.recv(65536)):
        raw += data
    sock.close()
    if b"[DONE]" not in raw:
        raise SystemExit(f"aimock did not stream the answer: {bytes(raw[:300])!r}")
    return time.perf_counter() - began


def measure(env, runs, cgroup=None):
    join = None
    if cgroup:
        def join():
            with open(os.path.join(cgroup, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))
    proc, port, _ = start_server(BIN, AIMOCK_PORT, LOG_DIR, env, preexec_fn=join)
    try:
        for _ in range(3):
            run(port, PROMPT)
        ticks0, ns0 = cpu_seconds(proc.pid), cpu_ns_schedstat(proc.pid)
        walls, events = [], 0
        for _ in range(runs):
            _, _, total, n = run(port, PROMPT)
            walls.append(total)
            events += n
        ticks1, ns1 = cpu_seconds(proc.pid), cpu_ns_schedstat(proc.pid)
        return {
            "runs": runs,
            "events_per_run": events / runs,
            "run_ms_median": statistics.median(walls) * 1e3,
            "cpu_ms_per_run": (ns1 - ns0) / runs / 1e6,
            "cpu_ms_per_run_ticks": (sum(ticks1) - sum(ticks0)) / runs * 1e3,
            "user_ms_per_run_ticks": (ticks1[0] - ticks0[0]) / runs * 1e3,
            "system_ms_per_run_ticks": (ticks1[1] - ticks0[1]) / runs * 1e3,
            "cpu_us_per_event": (ns1 - ns0) / events / 1e3,
            "peak_rss_kb": status_kb(proc.pid, "VmHWM"),
            "threads": status_kb(proc.pid, "Threads"),
        }
    finally:
        stop(proc)


def quota_cgroup():
    """A cgroup v1 cpu group with a 128 MB Lambda's CPU quota, or None (with why) when unavailable."""
    if os.geteuid() != 0 or not os.path.isfile(os.path.join(CGROUP_V1_CPU, "cpu.cfs_quota_us")):
        return None, "needs root and the cgroup v1 cpu controller at /sys/fs/cgroup/cpu"
    path = os.path.join(CGROUP_V1_CPU, f"agui-bench-{os.getpid()}")
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "cpu.cfs_period_us"), "w") as f:
        f.write(str(PERIOD_US))
    with open(os.path.join(path, "cpu.cfs_quota_us"), "w") as f:
        f.write(str(QUOTA_US))
    return path, ""


floors = [floor_run() for _ in range(RUNS)]
floor_ms = statistics.median(floors) * 1e3
figures = {"floor_ms_median": floor_ms, "runtimes": {}, "quota": {}}
for name, env in RUNTIMES:
    result = measure(env, RUNS)
    result["added_ms"] = result["run_ms_median"] - floor_ms
    figures["runtimes"][name] = result

cgroup, why = quota_cgroup()
if cgroup:
    try:
        figures["quota"]["quota_us_per_period"] = [QUOTA_US, PERIOD_US]
        for name, env in RUNTIMES[:2]:
            result = measure(env, QUOTA_RUNS, cgroup)
            result["added_ms"] = result["run_ms_median"] - floor_ms
            figures["quota"][name] = result
    finally:
        os.rmdir(cgroup)
else:
    figures["quota"]["skipped"] = why

with open(OUT, "w") as f:
    json.dump(figures, f, indent=2)

print(f"{RUNS} sequential 500-token runs per runtime; floor (aimock straight to the client): "
      f"{floor_ms:.1f} ms median")
print("runtime | added time over the floor | CPU per run | CPU per event | peak RSS | threads")
print("---|---|---|---|---|---")
for name, r in figures["runtimes"].items():
    print(f"{name} | {r['added_ms']:+.1f} ms | {r['cpu_ms_per_run']:.2f} ms "
          f"(ticks: {r['cpu_ms_per_run_ticks']:.1f}) | {r['cpu_us_per_event']:.2f} µs | "
          f"{r['peak_rss_kb'] / 1024:.1f} MiB | {r['threads']}")
if "skipped" in figures["quota"]:
    print(f"CPU quota of a 128 MB Lambda: skipped ({figures['quota']['skipped']})")
else:
    print(f"\nserver in a cgroup with cpu.cfs_quota_us={QUOTA_US} per cpu.cfs_period_us={PERIOD_US} "
          f"(a 128 MB Lambda's share), {QUOTA_RUNS} runs:")
    print("runtime | added time of a 500-token burst | run duration | CPU per run")
    print("---|---|---|---")
    for name, r in figures["quota"].items():
        if isinstance(r, dict):
            print(f"{name} | {r['added_ms']:+.1f} ms | {r['run_ms_median']:.1f} ms | "
                  f"{r['cpu_ms_per_run']:.2f} ms")
