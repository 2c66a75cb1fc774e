#!/usr/bin/env python3
"""A small OTLP/HTTP trace receiver for the tests: decodes what an exporter sends, keeps the spans.

    python tests/otlp_receiver.py --port 4318      # or --port 0: picks a free port
    python tests/otlp_receiver.py --self-test      # checks itself, exits 0 when all is well

The first line on stdout is always `listening <port>` (flushed), so a test can start it with
--port 0 and read the port back. Point the function at it with
OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:<port>.

Routes:
  POST   /v1/traces  an ExportTraceServiceRequest, as application/x-protobuf or application/json
                     (OTLP JSON: hex trace/span ids), optionally Content-Encoding: gzip.
                     Answers 200 with an empty ExportTraceServiceResponse in the same content type;
                     400 when the body does not decode, 415 for another content type.
  GET    /spans      a JSON array of every span received so far, in arrival order, flattened:
                     {traceId, spanId, parentSpanId ("" for a root), name, kind ("SPAN_KIND_..."),
                      startTimeUnixNano, endTimeUnixNano, status: {code ("STATUS_CODE_..."), message},
                      attributes: {key: plain value}, resource: {key: plain value}, scope,
                      scopeVersion, events: [{name, timeUnixNano, attributes}],
                      links: [{traceId, spanId, attributes}]}
  DELETE /spans      forgets every span (and request) received so far.
  GET    /requests   one entry per export request: {contentType, contentEncoding, spans}.
  GET    /health     200 "ok".

Only the standard library and the `opentelemetry-proto` package (tests/requirements.txt).
"""
import argparse
import base64
import gzip
import json
import sys
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
MAX_BODY = 64 * 1024 * 1024


# ---- decoding ---------------------------------------------------------------------------------

def any_value(v):
    """An OTLP AnyValue as a plain Python value."""
    kind = v.WhichOneof("value")
    if kind is None:
        return None
    if kind == "string_value":
        return v.string_value
    if kind == "bool_value":
        return v.bool_value
    if kind == "int_value":
        return v.int_value
    if kind == "double_value":
        return v.double_value
    if kind == "array_value":
        return [any_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return attributes(v.kvlist_value.values)
    if kind == "bytes_value":
        return v.bytes_value.hex()
    return None


def attributes(kvs):
    return {kv.key: any_value(kv.value) for kv in kvs}


def flatten(req):
    """Every span of an ExportTraceServiceRequest, as JSON-ready dicts."""
    out = []
    for rs in req.resource_spans:
        resource = attributes(rs.resource.attributes)
        for ss in rs.scope_spans:
            for s in ss.spans:
                out.append({
                    "traceId": s.trace_id.hex(),
                    "spanId": s.span_id.hex(),
                    "parentSpanId": s.parent_span_id.hex(),
                    "name": s.name,
                    "kind": Span.SpanKind.Name(s.kind),
                    "startTimeUnixNano": s.start_time_unix_nano,
                    "endTimeUnixNano": s.end_time_unix_nano,
                    "status": {
                        "code": Status.StatusCode.Name(s.status.code),
                        "message": s.status.message,
                    },
                    "attributes": attributes(s.attributes),
                    "resource": resource,
                    "scope": ss.scope.name,
                    "scopeVersion": ss.scope.version,
                    "events": [
                        {"name": e.name, "timeUnixNano": e.time_unix_nano,
                         "attributes": attributes(e.attributes)}
                        for e in s.events
                    ],
                    "links": [
                        {"traceId": link.trace_id.hex(), "spanId": link.span_id.hex(),
                         "attributes": attributes(link.attributes)}
                        for link in s.links
                    ],
                })
    return out


def _hex_ids_to_base64(obj, keys=("traceId", "spanId", "parentSpanId", "trace_id", "span_id",
                                  "parent_span_id")):
    """OTLP JSON writes trace and span ids as hex, where protobuf's JSON mapping expects base64."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k in keys and isinstance(v, str):
                try:
                    obj[k] = base64.b64encode(bytes.fromhex(v)).decode()
                except ValueError:
                    pass  # already base64 (or garbage: let json_format complain)
            else:
                _hex_ids_to_base64(v, keys)
    elif isinstance(obj, list):
        for v in obj:
            _hex_ids_to_base64(v, keys)
    return obj


def decode(body, content_type):
    req = ExportTraceServiceRequest()
    if content_type == PROTOBUF:
        req.ParseFromString(body)
    else:
        doc = _hex_ids_to_base64(json.loads(body))
        json_format.ParseDict(doc, req, ignore_unknown_fields=True)
    return req


# ---- server -----------------------------------------------------------------------------------

class Store:
    def __init__(self):
        self.lock = threading.Lock()
        self.spans = []
        self.requests = []


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as exporters' connection pools expect
    server_version = "otlp-receiver/1"

    def log_message(self, fmt, *args):
        if self.server.verbose:
            sys.stderr.write("otlp_receiver: " + (fmt % args) + "\n")

    def _send(self, code, body=b"", content_type="text/plain"):
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _json(self, code, value):
        self._send(code, json.dumps(value).encode(), JSON)

    def _body(self):
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            raise ValueError(f"body of {length} bytes is too large")
        return self.rfile.read(length)

    def do_GET(self):
        path = self.path.split("?")[0]
        store = self.server.store
        if path == "/health":
            self._send(200, b"ok")
        elif path == "/spans":
            with store.lock:
                self._json(200, list(store.spans))
        elif path == "/requests":
            with store.lock:
                self._json(200, list(store.requests))
        else:
            self._send(404, b"not found")

    def do_DELETE(self):
        store = self.server.store
        if self.path.split("?")[0] == "/spans":
            with store.lock:
                store.spans.clear()
                store.requests.clear()
            self._send(200, b"")
        else:
            self._send(404, b"not found")

    def do_POST(self):
        try:
            body = self._body()
        except ValueError as e:
            self.close_connection = True
            self._send(400, str(e).encode())
            return
        if self.path.split("?")[0] != "/v1/traces":
            self._send(404, b"not found")
            return
        content_type = self.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if content_type not in (PROTOBUF, JSON):
            self._send(415, f"unsupported content type {content_type!r}".encode())
            return
        encoding = self.headers.get("Content-Encoding", "").strip().lower()
        try:
            if encoding == "gzip":
                body = gzip.decompress(body)
            elif encoding not in ("", "identity"):
                self._send(415, f"unsupported content encoding {encoding!r}".encode())
                return
            spans = flatten(decode(body, content_type))
        except Exception as e:  # noqa: BLE001 - any decode failure is the client's
            sys.stderr.write(f"otlp_receiver: cannot decode {content_type} body: {e}\n")
            self._send(400, f"cannot decode the request: {e}".encode())
            return
        store = self.server.store
        with store.lock:
            store.spans.extend(spans)
            store.requests.append({"contentType": content_type, "contentEncoding": encoding,
                                   "spans": len(spans)})
        if content_type == PROTOBUF:
            self._send(200, ExportTraceServiceResponse().SerializeToString(), PROTOBUF)
        else:
            self._send(200, json_format.MessageToJson(ExportTraceServiceResponse()).encode(), JSON)


def make_server(host, port, verbose=False):
    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    server.store = Store()
    server.verbose = verbose
    return server


# ---- self-test --------------------------------------------------------------------------------

def _sample_request():
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue

    def kv(key, **value):
        return KeyValue(key=key, value=AnyValue(**value))

    req = ExportTraceServiceRequest()
    rs = req.resource_spans.add()
    rs.resource.attributes.extend([kv("service.name", string_value="agui-test")])
    ss = rs.scope_spans.add()
    ss.scope.name = "agui-lambda"
    ss.scope.version = "0.1.0"
    trace_id = bytes.fromhex("4bf92f3577b34da6a3ce929d0e0e4736")
    root = ss.spans.add(trace_id=trace_id, span_id=bytes.fromhex("00f067aa0ba902b7"),
                        name="invoke_agent", kind=Span.SPAN_KIND_SERVER,
                        start_time_unix_nano=1_000, end_time_unix_nano=9_000)
    root.attributes.extend([
        kv("gen_ai.operation.name", string_value="invoke_agent"),
        kv("gen_ai.usage.input_tokens", int_value=12),
        kv("x.ratio", double_value=0.5),
        kv("x.ok", bool_value=True),
        kv("gen_ai.response.finish_reasons",
           array_value=ArrayValue(values=[AnyValue(string_value="stop")])),
    ])
    root.status.code = Status.STATUS_CODE_ERROR
    root.status.message = "boom"
    ev = root.events.add(name="exception", time_unix_nano=5_000)
    ev.attributes.extend([kv("exception.message", string_value="boom")])
    ss.spans.add(trace_id=trace_id, span_id=bytes.fromhex("1111111111111111"),
                 parent_span_id=root.span_id, name="chat gpt-4o-mini",
                 kind=Span.SPAN_KIND_CLIENT, start_time_unix_nano=2_000,
                 end_time_unix_nano=8_000)
    return req


def _call(base, method, path, body=None, headers=None):
    r = urllib.request.Request(base + path, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(r, timeout=10) as resp:
            return resp.status, resp.headers.get("Content-Type"), resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type"), e.read()


def self_test():
    server = make_server("127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    req = _sample_request()
    failures = []

    def check(cond, what):
        print(("ok   " if cond else "FAIL ") + what)
        if not cond:
            failures.append(what)

    status, _, _ = _call(base, "GET", "/health")
    check(status == 200, "GET /health answers 200")

    # protobuf
    status, ctype, body = _call(base, "POST", "/v1/traces", req.SerializeToString(),
                                {"Content-Type": PROTOBUF})
    resp = ExportTraceServiceResponse()
    resp.ParseFromString(body)
    check(status == 200 and ctype == PROTOBUF and not resp.HasField("partial_success"),
          "protobuf export answered 200 with an empty protobuf ExportTraceServiceResponse")
    spans = json.loads(_call(base, "GET", "/spans")[2])
    check(len(spans) == 2, "two spans stored")
    root, child = spans
    check(root["traceId"] == "4bf92f3577b34da6a3ce929d0e0e4736" and root["spanId"] == "00f067aa0ba902b7"
          and root["parentSpanId"] == "", "root ids are hex, its parent empty")
    check(child["parentSpanId"] == root["spanId"] and child["kind"] == "SPAN_KIND_CLIENT",
          "child's parent is the root; kind is the enum name")
    check(root["status"] == {"code": "STATUS_CODE_ERROR", "message": "boom"}, "status flattened")
    check(root["attributes"] == {"gen_ai.operation.name": "invoke_agent",
                                 "gen_ai.usage.input_tokens": 12, "x.ratio": 0.5, "x.ok": True,
                                 "gen_ai.response.finish_reasons": ["stop"]},
          "attributes are plain values")
    check(root["resource"] == {"service.name": "agui-test"} and root["scope"] == "agui-lambda",
          "resource attributes and scope name")
    check(root["startTimeUnixNano"] == 1000 and root["endTimeUnixNano"] == 9000,
          "times are integers")
    check(root["events"] == [{"name": "exception", "timeUnixNano": 5000,
                              "attributes": {"exception.message": "boom"}}], "events flattened")

    # gzip protobuf
    status, _, _ = _call(base, "POST", "/v1/traces", gzip.compress(req.SerializeToString()),
                         {"Content-Type": PROTOBUF, "Content-Encoding": "gzip"})
    check(status == 200 and len(json.loads(_call(base, "GET", "/spans")[2])) == 4,
          "gzip protobuf export decoded")

    # OTLP JSON, hex ids, enums as integers (as OTLP JSON exporters write them)
    doc = json_format.MessageToDict(req)
    for s in doc["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        for k in ("traceId", "spanId", "parentSpanId"):
            if k in s:
                s[k] = base64.b64decode(s[k]).hex()
        s["kind"] = Span.SpanKind.Value(s["kind"])
    status, ctype, body = _call(base, "POST", "/v1/traces", json.dumps(doc).encode(),
                                {"Content-Type": "application/json; charset=utf-8"})
    check(status == 200 and ctype == JSON and json.loads(body) == {},
          "JSON export answered 200 with an empty JSON response")
    spans = json.loads(_call(base, "GET", "/spans")[2])
    check(len(spans) == 6 and spans[4] == spans[0] and spans[5] == spans[1],
          "JSON spans flatten exactly like protobuf ones")
    reqs = json.loads(_call(base, "GET", "/requests")[2])
    check([r["contentType"] for r in reqs] == [PROTOBUF, PROTOBUF, JSON]
          and reqs[1]["contentEncoding"] == "gzip", "requests recorded")

    # errors
    check(_call(base, "POST", "/v1/traces", b"\xff\xff\xff", {"Content-Type": PROTOBUF})[0] == 400,
          "undecodable protobuf answers 400")
    check(_call(base, "POST", "/v1/traces", b"x", {"Content-Type": "text/plain"})[0] == 415,
          "other content type answers 415")

    status, _, _ = _call(base, "DELETE", "/spans")
    check(status == 200 and json.loads(_call(base, "GET", "/spans")[2]) == [],
          "DELETE /spans clears")
    server.shutdown()
    server.server_close()
    print("self-test " + ("ok" if not failures else f"FAILED ({len(failures)})"))
    return 0 if not failures else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=4318, help="0 picks a free port")
    ap.add_argument("--verbose", action="store_true", help="log each request on stderr")
    ap.add_argument("--self-test", action="store_true", help="check the receiver and exit")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    server = make_server(args.host, args.port, args.verbose)
    print(f"listening {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
