"""Shared by the bench scripts: the release binary as a local server, one measured run over a raw
socket, and a process's CPU time and memory from /proc."""
import json, os, signal, socket, subprocess, time

CLK_TCK = os.sysconf("SC_CLK_TCK")

def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close(); return port

def start_server(binary, aimock_port, log_dir, extra_env=None, preexec_fn=None):
    """The binary as the local server on a free port, aimock as its model. Returns (process,
    port, seconds from spawn to accepting connections)."""
    port = free_port()
    env = dict(os.environ, PORT=str(port), HOST="127.0.0.1",
               OPENAI_BASE_URL=f"http://127.0.0.1:{aimock_port}/v1", OPENAI_API_KEY="bench-key",
               AGENT_MODEL="bench-model", MODEL_MAX_RETRIES="0", RUST_LOG="warn")
    env.pop("THREADS_TABLE", None)
    env.pop("AWS_LAMBDA_RUNTIME_API", None)
    env.update(extra_env or {})
    began = time.perf_counter()
    proc = subprocess.Popen([binary], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=open(os.path.join(log_dir, "server.log"), "ab"),
                            start_new_session=True, preexec_fn=preexec_fn)
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if proc.poll() is not None:
                raise SystemExit(f"server exited with {proc.returncode}; see server.log")
            if time.perf_counter() - began > 10:
                raise SystemExit("server not ready after 10 s")
            time.sleep(0.0005)
    return proc, port, time.perf_counter() - began

def stop(proc):
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL); proc.wait()

def dechunk(raw):
    out, i = bytearray(), 0
    while True:
        j = raw.index(b"\r\n", i)
        size = int(raw[i:j].split(b";")[0], 16)
        if size == 0:
            return bytes(out)
        out += raw[j + 2:j + 2 + size]
        i = j + 2 + size + 2

run_counter = 0
def run(port, text):
    """One POST /agent on a fresh connection. Returns (ttfb, time to first TEXT_MESSAGE_CONTENT,
    total, events)."""
    global run_counter
    run_counter += 1
    body = json.dumps({"threadId": f"bench-{os.getpid()}-{run_counter}", "runId": f"run-{run_counter}",
                       "messages": [{"id": "m1", "role": "user", "content": text}],
                       "tools": [], "context": [], "forwardedProps": {}}).encode()
    request = (f"POST /agent HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
               f"Accept: text/event-stream\r\nConnection: close\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body
    began = time.perf_counter()
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(request)
    raw, ttfb, first_text = bytearray(), None, None
    while True:
        data = sock.recv(65536)
        if not data:
            break
        now = time.perf_counter()
        if ttfb is None:
            ttfb = now - began
        raw += data
        if first_text is None and b'"TEXT_MESSAGE_CONTENT"' in raw:
            first_text = now - began
    total = time.perf_counter() - began
    sock.close()
    head, _, payload = bytes(raw).partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200"):
        raise SystemExit(f"run failed: {head[:200]!r} {payload[:300]!r}")
    if b"transfer-encoding: chunked" in head.lower():
        payload = dechunk(payload)
    # Frames are `id: <seq>\ndata: <json>`; pings are comments.
    frames = [f.split(b"data: ", 1)[1] for f in payload.split(b"\n\n") if b"data: " in f]
    last = json.loads(frames[-1])
    if last["type"] != "RUN_FINISHED":
        raise SystemExit(f"run did not finish: {last}")
    return ttfb, first_text, total, len(frames)

def cpu_seconds(pid):
    """(utime, stime) in seconds: fields 14 and 15 of /proc/<pid>/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) / CLK_TCK, int(fields[12]) / CLK_TCK

def cpu_ns_schedstat(pid):
    """Sum of on-CPU ns of the live threads: finer than clock ticks."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass
    return total

def status_kb(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0
