"""Drives agui-lambda's A2A 1.0 server with the official Python SDK (a2a-sdk 1.x), over
JSON-RPC and HTTP+JSON: the card, blocking and streamed sends, get, list, cancel, subscribe (by
POST through the SDK, by GET by hand), the input-required round trip, and each error the spec
numbers. The server runs on aimock with APPROVAL_REQUIRED_TOOLS=get_current_time (scripts/test.sh's
approvals server), whose fixtures answer "hello", ask for the clock, stream slowly and fail.

Usage: python tests/python/a2a_server_check.py http://127.0.0.1:PORT
"""

import asyncio
import json
import sys
import uuid

import httpx
from google.protobuf.json_format import MessageToDict
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.client.transports.jsonrpc import JsonRpcTransport
from a2a.client.transports.rest import RestTransport
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    InvalidParamsError,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskNotCancelableError,
    TaskNotFoundError,
    TaskState,
    UnsupportedOperationError,
    VersionNotSupportedError,
)

BINDINGS = ["JSONRPC", "HTTP+JSON"]
results = []


def check(name, condition, detail=""):
    results.append((name, bool(condition)))
    print(("ok   " if condition else "FAIL ") + name + ("" if condition else f": {detail}"), flush=True)


def message(text, task_id="", context_id=""):
    return Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text=text)],
                   task_id=task_id, context_id=context_id)


def request(text, task_id="", context_id="", immediately=False):
    return SendMessageRequest(message=message(text, task_id, context_id),
                              configuration=SendMessageConfiguration(return_immediately=immediately))


def artifact_text(task):
    return "".join(part.text for artifact in task.artifacts for part in artifact.parts)


async def collect(stream):
    return [frame async for frame in stream]


def final_state(frames):
    states = [f.status_update.status.state for f in frames if f.HasField("status_update")]
    return states[-1] if states else None


def streamed_text(frames):
    return "".join(part.text for f in frames if f.HasField("artifact_update")
                   for part in f.artifact_update.artifact.parts)


async def expect_error(name, error_type, coroutine):
    try:
        await coroutine
    except error_type:
        check(name, True)
        return
    except Exception as error:  # noqa: BLE001 - the check reports what came instead
        check(name, False, f"{type(error).__name__}: {error}")
        return
    check(name, False, "no error")


async def binding_checks(base, card, binding, http):
    factory = ClientFactory(ClientConfig(supported_protocol_bindings=[binding], httpx_client=http))
    streaming = factory.create(card)
    blocking = ClientFactory(ClientConfig(supported_protocol_bindings=[binding], httpx_client=http,
                                          streaming=False)).create(card)
    tag = f"[{binding}] "

    # A blocking send: the task, completed, with its answer as an artifact.
    [answer] = await collect(blocking.send_message(request("hello")))
    task = answer.task
    check(tag + "blocking send completes", task.status.state == TaskState.TASK_STATE_COMPLETED,
          task.status)
    check(tag + "the answer is the artifact", artifact_text(task) == "Hello! How can I help you today?",
          artifact_text(task))
    check(tag + "the user's message is in the history",
          any(m.role == Role.ROLE_USER for m in task.history))

    # A streamed send: the task first, text as appended chunks, then the final status.
    frames = await collect(streaming.send_message(request("hello")))
    check(tag + "a stream opens with the task", frames and frames[0].HasField("task"))
    updates = [f.artifact_update for f in frames if f.HasField("artifact_update")]
    check(tag + "text streams as artifact updates, appended, closed by lastChunk",
          updates and not updates[0].append and all(u.append for u in updates[1:])
          and updates[-1].last_chunk, updates)
    check(tag + "the stream ends completed", final_state(frames) == TaskState.TASK_STATE_COMPLETED)
    streamed = frames[0].task

    got = await blocking.get_task(GetTaskRequest(id=streamed.id))
    check(tag + "get: the streamed task, completed, with its artifact",
          got.status.state == TaskState.TASK_STATE_COMPLETED
          and artifact_text(got) == "Hello! How can I help you today?")
    got = await blocking.get_task(GetTaskRequest(id=streamed.id, history_length=0))
    check(tag + "get with historyLength 0 leaves the history out", len(got.history) == 0)

    listed = await blocking.list_tasks(ListTasksRequest(context_id=streamed.context_id))
    check(tag + "list by context", [t.id for t in listed.tasks] == [streamed.id]
          and listed.next_page_token == "" and listed.total_size == 1, listed)
    page = await blocking.list_tasks(ListTasksRequest(page_size=1))
    check(tag + "list pages by pageSize", len(page.tasks) == 1 and page.next_page_token != "")

    # The input-required round trip: the tool waits for approval, the answer resumes the task.
    frames = await collect(streaming.send_message(request("what time is it")))
    check(tag + "an approval is input required",
          final_state(frames) == TaskState.TASK_STATE_INPUT_REQUIRED, frames[-1:])
    waiting = frames[0].task
    status = frames[-1].status_update.status
    interrupts = [MessageToDict(p)["data"]["interrupts"] for p in status.message.parts
                  if p.HasField("data")]
    check(tag + "the status message asks, with the interrupt as data",
          "get_current_time" in status.message.parts[0].text
          and interrupts and interrupts[0][0]["reason"] == "tool_call", status)
    subscribed = await collect(streaming.subscribe(SubscribeToTaskRequest(id=waiting.id)))
    check(tag + "subscribing to a waiting task gives the task",
          len(subscribed) == 1 and subscribed[0].task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED)
    await expect_error(tag + "a contextId that does not match the task", InvalidParamsError,
                       collect(blocking.send_message(request("yes", waiting.id, "another-context"))))
    frames = await collect(streaming.send_message(request("yes", waiting.id, waiting.context_id)))
    check(tag + "the answer resumes the task to completion",
          final_state(frames) == TaskState.TASK_STATE_COMPLETED
          and "It is now the time shown in Paris." in streamed_text(frames), frames[-1:])
    resumed = await blocking.get_task(GetTaskRequest(id=waiting.id))
    check(tag + "the same task holds both runs' artifacts",
          "Let me check the time." in artifact_text(resumed)
          and "It is now the time shown in Paris." in artifact_text(resumed), artifact_text(resumed))
    await expect_error(tag + "a message to a completed task is unsupported", UnsupportedOperationError,
                       collect(blocking.send_message(request("again", waiting.id))))

    # returnImmediately, subscribe (the SDK's POST), cancel.
    [working] = await collect(blocking.send_message(request("stream slowly", immediately=True)))
    check(tag + "returnImmediately answers at once, working",
          working.task.status.state == TaskState.TASK_STATE_WORKING, working.task.status)
    frames = await collect(streaming.subscribe(SubscribeToTaskRequest(id=working.task.id)))
    check(tag + "subscribe follows the task to its end",
          frames[0].HasField("task") and final_state(frames) == TaskState.TASK_STATE_COMPLETED
          and "ten." in streamed_text(frames), frames[-1:])
    await expect_error(tag + "subscribing to an ended task is unsupported", UnsupportedOperationError,
                       collect(streaming.subscribe(SubscribeToTaskRequest(id=working.task.id))))

    [slow] = await collect(blocking.send_message(request("stream slowly", immediately=True)))
    cancelled = await blocking.cancel_task(CancelTaskRequest(id=slow.task.id))
    check(tag + "cancel stops a working task", cancelled.status.state == TaskState.TASK_STATE_CANCELED,
          cancelled.status)
    await expect_error(tag + "cancelling it again: not cancelable", TaskNotCancelableError,
                       blocking.cancel_task(CancelTaskRequest(id=slow.task.id)))
    await expect_error(tag + "an unknown task is not found", TaskNotFoundError,
                       blocking.get_task(GetTaskRequest(id="task_does_not_exist")))
    await expect_error(tag + "cancelling an unknown task: not found", TaskNotFoundError,
                       blocking.cancel_task(CancelTaskRequest(id="task_does_not_exist")))

    [failed] = await collect(blocking.send_message(request("server error please")))
    check(tag + "a run error fails the task", failed.task.status.state == TaskState.TASK_STATE_FAILED,
          failed.task.status)

    # No A2A-Version header means 0.3, which this server does not speak.
    async with httpx.AsyncClient(timeout=30) as bare:
        interface = next(i for i in card.supported_interfaces if i.protocol_binding == binding)
        transport = (JsonRpcTransport if binding == "JSONRPC" else RestTransport)(bare, card, interface.url)
        await expect_error(tag + "no A2A-Version header: version not supported", VersionNotSupportedError,
                           transport.get_task(GetTaskRequest(id=streamed.id)))

    # SubscribeToTask by GET, as the proto declares it (HTTP+JSON only).
    if binding == "HTTP+JSON":
        [slow] = await collect(blocking.send_message(request("stream slowly", immediately=True)))
        async with http.stream("GET", f"{base}/a2a/tasks/{slow.task.id}:subscribe",
                               headers={"A2A-Version": "1.0"}) as response:
            lines = [line async for line in response.aiter_lines() if line.startswith("data: ")]
        frames = [json.loads(line[len("data: "):]) for line in lines]
        check("[HTTP+JSON] subscribe by GET streams the task to its end",
              response.status_code == 200 and "task" in frames[0]
              and frames[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED", frames[-1:])


async def main(base):
    async with httpx.AsyncClient(timeout=60, headers={"A2A-Version": "1.0"}) as http:
        card = await A2ACardResolver(http, base).get_agent_card()
        bindings = [i.protocol_binding for i in card.supported_interfaces]
        check("the card lists JSON-RPC then HTTP+JSON, both 1.0",
              bindings == BINDINGS and all(i.protocol_version == "1.0" for i in card.supported_interfaces),
              card.supported_interfaces)
        check("the card says it streams", card.capabilities.streaming)
        response = await http.get(f"{base}/.well-known/agent-card.json")
        again = await http.get(f"{base}/.well-known/agent-card.json",
                               headers={"If-None-Match": response.headers["etag"]})
        check("the card is cacheable: max-age, and 304 for its ETag",
              "max-age" in response.headers.get("cache-control", "") and again.status_code == 304)
        for binding in BINDINGS:
            await binding_checks(base, card, binding, http)
    failed = sum(1 for _, ok in results if not ok)
    print(f"{len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1].rstrip("/"))))
