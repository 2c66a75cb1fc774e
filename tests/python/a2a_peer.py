"""An A2A 1.0 agent written with the official Python SDK (a2a-sdk 1.x), on loopback, for the tests
of agui-lambda's A2A client (tests/api/a2a_client.rs). What it does depends on the message:

  "stream ..."  three artifact chunks (appended, the last closing), then completed
  "data ..."    an artifact with a text and a data part, then completed
  "ask ..."     input required ("Which city?"); the answer (same task) completes it
  "auth ..."    auth required (in-band: execute returns)
  "signin ..."  auth required out of band: the task waits until POST /__authorize/{taskId}, then
                completes with an artifact
  "fail ..."    failed, with a status message carrying a code
  "reject ..."  rejected
  "slow ..."    a chunk every 200 ms until it is canceled

Its card lists gRPC first (this client does not speak it), then JSON-RPC and HTTP+JSON with the
tenant "acme" and a bearer scheme; `/rest/.well-known/agent-card.json` lists HTTP+JSON only, and
`/open/...` is the same agent without security, served at `/open` (no credentials needed).
Every call is recorded (its A2A-Version header, the tenant it named, the message's taskId and
contextId) and read back at GET /__calls. Usage: python tests/python/a2a_peer.py --port PORT --token TOKEN
"""

import argparse
import asyncio
import json

import uvicorn
from a2a.helpers.proto_helpers import new_task_from_user_message
from a2a.server.agent_execution import AgentExecutor
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    HTTPAuthSecurityScheme,
    Part,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)
from google.protobuf import struct_pb2
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route

CALLS = []
# Out-of-band sign-ins awaited, by task id.
SIGNED_IN = {}


def signed_in(task_id):
    return SIGNED_IN.setdefault(task_id, asyncio.Event())


def data_part(value):
    part = Part()
    part.data.CopyFrom(struct_pb2.Value())
    part.data.struct_value.update(value)
    return part


class PeerAgent(AgentExecutor):
    async def execute(self, context, event_queue):
        task = context.current_task
        if task is None:
            task = new_task_from_user_message(context.message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        text = context.get_user_input()
        first = task.history[0].parts[0].text if task.history else text
        if first.startswith("ask") and context.current_task is not None and text != first:
            await updater.add_artifact([Part(text=f"Booked for {text}.")], name="booking",
                                       last_chunk=True)
            await updater.complete()
            return
        await updater.start_work()
        if text.startswith("stream"):
            for index, chunk in enumerate(["Hello", " from", " the peer."]):
                await updater.add_artifact([Part(text=chunk)], artifact_id="answer", name="answer",
                                           append=index > 0, last_chunk=index == 2)
            await updater.complete()
        elif text.startswith("data"):
            await updater.add_artifact([Part(text="A table:"), data_part({"rows": [1, 2, 3]})],
                                       artifact_id="table", last_chunk=True)
            await updater.complete()
        elif text.startswith("ask"):
            await updater.requires_input(updater.new_agent_message(
                [Part(text="Which city?"), data_part({"type": "object", "properties": {"city": {}}})]))
        elif text.startswith("auth"):
            await updater.requires_auth(updater.new_agent_message([Part(text="Sign in to the calendar first.")]))
        elif text.startswith("signin"):
            await updater.requires_auth(updater.new_agent_message([Part(text="Sign in to the calendar, please.")]))
            await signed_in(task.id).wait()
            await updater.start_work()
            await updater.add_artifact([Part(text="Signed in: your calendar is free.")],
                                       artifact_id="calendar", last_chunk=True)
            await updater.complete()
        elif text.startswith("fail"):
            await updater.failed(updater.new_agent_message(
                [Part(text="The peer broke."), data_part({"code": "PEER_BROKE"})]))
        elif text.startswith("reject"):
            await updater.reject(updater.new_agent_message([Part(text="I will not do that.")]))
        elif text.startswith("slow"):
            for index in range(150):
                await updater.add_artifact([Part(text=f"tick {index}. ")], artifact_id="ticks",
                                           append=index > 0)
                await asyncio.sleep(0.2)
            await updater.complete()
        else:
            await updater.add_artifact([Part(text=f"You said: {text}")], last_chunk=True)
            await updater.complete()

    async def cancel(self, context, event_queue):
        task = context.current_task
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.cancel()


def card(base, bindings, secured):
    interfaces = [AgentInterface(url="grpc.invalid:443", protocol_binding="GRPC", protocol_version="1.0")]
    interfaces += [AgentInterface(url=f"{base}", protocol_binding=b, protocol_version="1.0", tenant="acme")
                   for b in bindings]
    result = AgentCard(
        name="peer", description="A test peer", version="1.0.0",
        supported_interfaces=interfaces,
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"], default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="Echo", description="Answers", tags=["test"])],
    )
    if secured:
        result.security_schemes["bearer"].CopyFrom(
            SecurityScheme(http_auth_security_scheme=HTTPAuthSecurityScheme(scheme="Bearer")))
        requirement = SecurityRequirement()
        requirement.schemes["bearer"].CopyFrom(StringList())
        result.security_requirements.append(requirement)
    return result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--token", required=True)
    args = parser.parse_args()
    base = f"http://127.0.0.1:{args.port}"
    secured = card(f"{base}/a2a", ["JSONRPC", "HTTP+JSON"], True)
    handler = DefaultRequestHandler(agent_executor=PeerAgent(), task_store=InMemoryTaskStore(),
                                    agent_card=secured)
    open_card = card(f"{base}/open", ["JSONRPC"], False)
    open_handler = DefaultRequestHandler(agent_executor=PeerAgent(), task_store=InMemoryTaskStore(),
                                         agent_card=open_card)

    async def calls(_request):
        return JSONResponse(CALLS)

    async def authorize(request):
        signed_in(request.path_params["task_id"]).set()
        return JSONResponse({"ok": True})

    routes = [
        Route("/__calls", calls),
        Route("/__authorize/{task_id}", authorize, methods=["POST"]),
        *create_agent_card_routes(secured, cache_control="public, max-age=60"),
        *create_agent_card_routes(card(f"{base}/a2a", ["HTTP+JSON"], True),
                                  card_url="/rest/.well-known/agent-card.json"),
        *create_agent_card_routes(open_card, card_url="/open/.well-known/agent-card.json"),
        Mount("/a2a", routes=[*create_jsonrpc_routes(handler, rpc_url="/"), *create_rest_routes(handler)]),
        Mount("/open", routes=[*create_jsonrpc_routes(open_handler, rpc_url="/")]),
    ]
    app = Starlette(routes=routes)

    async def recorder(scope, receive, send):
        if scope["type"] != "http" or scope["path"].startswith("/__"):
            return await app(scope, receive, send)
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        try:
            parsed = json.loads(body) if body else {}
        except ValueError:
            parsed = {}
        params = parsed.get("params", parsed) if isinstance(parsed, dict) else {}
        message = params.get("message") if isinstance(params, dict) else None
        message = message if isinstance(message, dict) else {}
        segments = scope["path"].split("/")
        CALLS.append({
            "path": scope["path"], "method": scope["method"],
            "query": scope.get("query_string", b"").decode(),
            "version": headers.get("a2a-version"),
            "rpc": parsed.get("method") if isinstance(parsed, dict) else None,
            "taskId": message.get("taskId") or (params.get("id") if isinstance(params, dict) else None),
            "contextId": message.get("contextId"),
            "tenant": params.get("tenant") if isinstance(params, dict) and params.get("tenant")
            else (segments[2] if len(segments) > 3 and segments[1] == "a2a" else None),
        })
        if scope["path"].startswith("/a2a/") and headers.get("authorization") != f"Bearer {args.token}":
            response = JSONResponse({"error": {"code": 401, "message": "missing or wrong token"}},
                                    status_code=401, headers={"WWW-Authenticate": "Bearer"})
            return await response(scope, receive, send)
        sent = False

        async def replay():
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        return await app(scope, replay, send)

    uvicorn.run(recorder, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
