// A2A 1.0 with @a2a-js/sdk: agui-lambda's A2A server over JSON-RPC and HTTP+JSON, through the
// SDK's own ClientFactory and transports. The server (A2A_BASE) runs on aimock with
// APPROVAL_REQUIRED_TOOLS=get_current_time: "hello" is answered, "what time is it" waits for an
// approval, "stream slowly" takes a second and a half, "server error please" fails.
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import {
  ClientFactory,
  ClientFactoryOptions,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from "@a2a-js/sdk/client";
import { ListTasksRequest, TaskState, SendMessageRequest } from "@a2a-js/sdk";

const BASE = process.env.A2A_BASE ?? "http://127.0.0.1:8787";

function send(text, { taskId = "", contextId = "", returnImmediately = false } = {}) {
  // From the wire's own JSON: the SDK fills in every default.
  return SendMessageRequest.fromJSON({
    message: { messageId: randomUUID(), role: "ROLE_USER", taskId, contextId, parts: [{ text }] },
    configuration: { returnImmediately },
  });
}

async function client(binding) {
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory(), new RestTransportFactory()],
      preferredTransports: [binding],
    }),
  );
  return factory.createFromUrl(BASE);
}

async function frames(stream) {
  const out = [];
  for await (const frame of stream) out.push(frame.payload);
  return out;
}

const finalState = (list) => list.filter((f) => f.$case === "statusUpdate").at(-1)?.value.status.state;
const text = (list) =>
  list
    .filter((f) => f.$case === "artifactUpdate")
    .flatMap((f) => f.value.artifact.parts)
    .map((p) => p.content?.value ?? "")
    .join("");
const artifactText = (task) =>
  task.artifacts.flatMap((a) => a.parts).map((p) => p.content?.value ?? "").join("");

async function rejects(promise, reason) {
  await assert.rejects(promise, (error) => {
    assert.equal(error.reason, reason, `${error.name}: ${error.message}`);
    return true;
  });
}

for (const binding of ["JSONRPC", "HTTP+JSON"]) {
  test(`${binding}: the card, blocking and streamed sends, get and list`, async () => {
    const a2a = await client(binding);
    const answer = await a2a.sendMessage(send("hello"));
    assert.equal(answer.$case ?? "task", "task");
    const task = answer.value ?? answer;
    assert.equal(task.status.state, TaskState.TASK_STATE_COMPLETED);
    assert.equal(artifactText(task), "Hello! How can I help you today?");

    const streamed = await frames(a2a.sendMessageStream(send("hello")));
    assert.equal(streamed[0].$case, "task");
    assert.equal(text(streamed), "Hello! How can I help you today?");
    assert.equal(finalState(streamed), TaskState.TASK_STATE_COMPLETED);
    const first = streamed[0].value;

    const got = await a2a.getTask({ id: first.id, tenant: "" });
    assert.equal(got.status.state, TaskState.TASK_STATE_COMPLETED);
    const listed = await a2a.listTasks(ListTasksRequest.fromJSON({ contextId: first.contextId }));
    assert.deepEqual(listed.tasks.map((t) => t.id), [first.id]);
    assert.equal(listed.nextPageToken, "");
  });

  test(`${binding}: input required, the answer, completion`, async () => {
    const a2a = await client(binding);
    const asked = await frames(a2a.sendMessageStream(send("what time is it")));
    assert.equal(finalState(asked), TaskState.TASK_STATE_INPUT_REQUIRED);
    const waiting = asked[0].value;
    const question = asked.at(-1).value.status.message;
    assert.match(question.parts[0].content.value, /get_current_time/);
    assert.equal(question.parts[1].content.$case, "data");

    await rejects(
      a2a.sendMessage(send("yes", { taskId: waiting.id, contextId: "not-the-task-context" })),
      "INVALID_PARAMS",
    );
    const resumed = await frames(a2a.sendMessageStream(send("yes", { taskId: waiting.id, contextId: waiting.contextId })));
    assert.equal(finalState(resumed), TaskState.TASK_STATE_COMPLETED);
    assert.match(text(resumed), /It is now the time shown in Paris\./);
    await rejects(a2a.sendMessage(send("again", { taskId: waiting.id })), "UNSUPPORTED_OPERATION");
  });

  test(`${binding}: subscribe, cancel, a failed run and each error`, async () => {
    const a2a = await client(binding);
    const slow = await a2a.sendMessage(send("stream slowly", { returnImmediately: true }));
    const working = slow.value ?? slow;
    assert.equal(working.status.state, TaskState.TASK_STATE_WORKING);
    const followed = await frames(a2a.resubscribeTask({ id: working.id, tenant: "" }));
    assert.equal(followed[0].$case, "task");
    assert.equal(finalState(followed), TaskState.TASK_STATE_COMPLETED);
    assert.match(text(followed), /ten\./);
    await rejects(frames(a2a.resubscribeTask({ id: working.id, tenant: "" })), "UNSUPPORTED_OPERATION");

    const other = await a2a.sendMessage(send("stream slowly", { returnImmediately: true }));
    const cancelled = await a2a.cancelTask({ id: (other.value ?? other).id, tenant: "" });
    assert.equal(cancelled.status.state, TaskState.TASK_STATE_CANCELED);
    await rejects(a2a.cancelTask({ id: cancelled.id, tenant: "" }), "TASK_NOT_CANCELABLE");
    await rejects(a2a.getTask({ id: "task_missing", tenant: "" }), "TASK_NOT_FOUND");

    const failed = await a2a.sendMessage(send("server error please"));
    assert.equal((failed.value ?? failed).status.state, TaskState.TASK_STATE_FAILED);
  });
}

test("HTTP+JSON: subscribe by GET, as the proto declares it", async () => {
  const a2a = await client("HTTP+JSON");
  const slow = await a2a.sendMessage(send("stream slowly", { returnImmediately: true }));
  const id = (slow.value ?? slow).id;
  const response = await fetch(`${BASE}/a2a/tasks/${id}:subscribe`, { headers: { "A2A-Version": "1.0" } });
  assert.equal(response.status, 200);
  const body = await response.text();
  const lines = body.split("\n").filter((line) => line.startsWith("data: ")).map((line) => JSON.parse(line.slice(6)));
  assert.ok(lines[0].task);
  assert.equal(lines.at(-1).statusUpdate.status.state, "TASK_STATE_COMPLETED");
});

test("a request without A2A-Version is 0.3, which the server refuses with -32009", async () => {
  const rpc = await fetch(`${BASE}/a2a`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: "1", method: "GetTask", params: { id: "task_x" } }),
  });
  assert.equal(rpc.status, 200);
  assert.equal((await rpc.json()).error.code, -32009);
  const rest = await fetch(`${BASE}/a2a/tasks/task_x`);
  assert.equal(rest.status, 400);
  assert.equal((await rest.json()).error.details[0].reason, "VERSION_NOT_SUPPORTED");
});
