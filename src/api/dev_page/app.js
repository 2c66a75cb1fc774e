// The dev page: a chat with this agent over its own HTTP API (docs/dev-page.md).
// POST agent with an AG-UI RunAgentInput, the SSE read with fetch + ReadableStream; the
// frontend tools of the AG-Kit send-message protocol and the AG-UI HTTP Agent document run here; AG-UI 1.0 interrupts get approve/deny buttons
// and a run with `resume`; Stop cancels the run; a reload restores the thread
// (GET threads/{id}) and rejoins a run in progress (GET threads/{t}/runs/{r}/events). With
// MEMORY=on, Memories lists what the agent keeps about the caller (GET memories), each with a
// delete button (DELETE memories/{id}), and Forget everything (DELETE memories). A sub-agent's
// work (SUBAGENT_STARTED, then events tagged with its subagentRunId) is shown indented under
// the tool call that delegated to it. A2UI surfaces (`a2ui-surface` activities) are painted by
// a2ui.js; a click on one starts a run with `forwardedProps.a2uiAction`.
import { renderMarkdown } from "./markdown.js";
import { ACTIVITY_TYPE, keptSurface, paintActivity } from "./a2ui.js";

// The AG-Kit send-message protocol's frontend tool, exactly as that protocol defines it (parameters as its JSON string).
const CHANGE_BACKGROUND = {
  name: "change-background-color",
  description:
    "Change the background color. The color should be one of the following: blue, red, green, transparent, yellow, purple, orange, pink, brown, gray, black, or white. No other colors or any variants.",
  parameters:
    '{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"color":{"type":"string"}},"required":["color"],"additionalProperties":false}',
};
// The AG-UI HTTP Agent document's scenario 4: human-in-the-loop through a frontend tool the page shows as a question.
const CONFIRM_ACTION = {
  name: "confirmAction",
  description: "Ask the user to confirm a dangerous action before it is carried out",
  parameters: {
    type: "object",
    properties: { action: { type: "string" }, count: { type: "number" } },
    required: ["action"],
  },
};
const FRONTEND_TOOLS = [CHANGE_BACKGROUND, CONFIRM_ACTION];
const COLORS = ["blue", "red", "green", "transparent", "yellow", "purple", "orange", "pink", "brown", "gray", "black", "white"];
const TOKEN_KEY = "agui-dev:token";
const THREAD_KEY = "agui-dev:thread";
const interruptsKey = () => `agui-dev:interrupts:${state.threadId}`;

const $ = (id) => document.getElementById(id);
const log = $("log");
const pending = $("pending");
const input = $("input");

const state = {
  threadId: "",
  messages: [],
  runId: null,
  running: false,
  controller: null,
  lastEventId: 0,
  runCalls: [], // tool call ids started in the current run
  thinking: null, // the id of an open THINKING_* message
  held: null, // the id of the last message the server is known to hold
  sentLast: null, // the id of the last message the current run's request carried
  subagents: new Map(), // subagentRunId -> { name, parentToolCallId }, for the current view
};

function uuid() {
  if (crypto.randomUUID) return crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 15) | 64;
  b[8] = (b[8] & 63) | 128;
  const h = [...b].map((x) => x.toString(16).padStart(2, "0")).join("");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

// Routes relative to the page, so it also works under a path prefix (cargo lambda watch).
const api = (path) => new URL(path, new URL(".", location.href)).toString();
const enc = encodeURIComponent;

function headers(extra = {}) {
  const h = { accept: "application/json", ...extra };
  const token = localStorage.getItem(TOKEN_KEY);
  if (token) h.authorization = `Bearer ${token}`;
  return h;
}

function timezone() {
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  return zone && /^[A-Za-z_]+(\/[A-Za-z0-9_+-]+)*$/.test(zone) ? zone : undefined;
}

// ---- status, notices ------------------------------------------------------------------------

function setStatus(name, text = name) {
  const status = $("status");
  status.dataset.state = name;
  status.textContent = text;
  state.running = name === "running" || name === "stopping";
  $("send").disabled = state.running;
  $("stop").hidden = !state.running;
}

function notice(text, kind = "") {
  const div = document.createElement("div");
  div.className = `notice ${kind}`;
  div.textContent = text;
  log.append(div);
  scrollDown();
}

function scrollDown() {
  log.scrollTop = log.scrollHeight;
}

// ---- rendering ------------------------------------------------------------------------------

function textOf(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content.map((part) => (part.type === "text" ? part.text : `[${part.type}]`)).join("\n");
  }
  return content == null ? "" : JSON.stringify(content);
}

function element(tag, className, text) {
  const el = document.createElement(tag);
  if (className) el.className = className;
  if (text !== undefined) el.textContent = text;
  return el;
}

function nodeFor(message, tag = "div") {
  let node = log.querySelector(`[data-id="${CSS.escape(message.id)}"]`);
  if (!node) {
    node = element(tag, `msg msg-${message.role}`);
    node.dataset.id = message.id;
    (message.subagentRunId ? subagentLog(message.subagentRunId) : log).append(node);
  }
  return node;
}

// Where a sub-agent's messages go: a box under the tool call that delegated to it (nested
// again for its own sub-agents), or the main log when that call is not shown.
function subagentLog(subagentRunId) {
  let box = log.querySelector(`[data-subagent="${CSS.escape(subagentRunId)}"]`);
  if (!box) {
    const known = state.subagents.get(subagentRunId);
    box = element("div", "subagent");
    box.dataset.subagent = subagentRunId;
    box.append(element("div", "subagent-head", `${known?.name ?? "sub-agent"} (sub-agent)`), element("div", "subagent-log"));
    const call = known?.parentToolCallId && log.querySelector(`[data-tool-call-id="${CSS.escape(known.parentToolCallId)}"]`);
    (call || log).append(box);
  }
  return box.querySelector(":scope > .subagent-log");
}

function ownerOfCall(toolCallId) {
  return state.messages.find((m) => m.role === "assistant" && m.toolCalls?.some((c) => c.id === toolCallId));
}

function renderMessage(message) {
  switch (message.role) {
    case "user": {
      const node = nodeFor(message);
      node.textContent = textOf(message.content);
      break;
    }
    case "assistant": {
      const node = nodeFor(message);
      let body = node.querySelector(":scope > .body");
      if (!body) {
        body = element("div", "body markdown");
        node.prepend(body);
      }
      const html = renderMarkdown(textOf(message.content));
      if (body.innerHTML !== html) body.innerHTML = html;
      body.hidden = !message.content;
      let calls = node.querySelector(":scope > .calls");
      if (!calls) node.append((calls = element("div", "calls")));
      for (const call of message.toolCalls ?? []) renderCall(calls, call);
      break;
    }
    case "reasoning": {
      const node = nodeFor(message, "details");
      node.open = true;
      if (!node.firstChild) node.append(element("summary", "", "Reasoning"), element("div", "markdown"));
      node.lastChild.innerHTML = renderMarkdown(textOf(message.content));
      break;
    }
    case "tool": {
      const owner = ownerOfCall(message.toolCallId);
      if (owner) {
        renderMessage(owner);
      } else {
        const node = nodeFor(message);
        node.textContent = `tool result: ${textOf(message.content)}`;
      }
      break;
    }
    case "activity":
      if (message.activityType === ACTIVITY_TYPE) paintActivity(nodeFor(message), message.content, sendAction);
      break;
    default:
      break; // system, developer and other activity messages are not shown
  }
  scrollDown();
}

function renderCall(container, call) {
  let node = container.querySelector(`[data-tool-call-id="${CSS.escape(call.id)}"]`);
  if (!node) {
    node = element("details", "tool-call");
    node.open = call.function.name !== "render_a2ui"; // the surface itself is shown below
    node.dataset.toolCallId = call.id;
    const summary = element("summary");
    summary.append("tool call ", element("span", "tool-name", call.function.name));
    node.append(summary, element("pre", "tool-args"), element("div", "tool-result"));
    container.append(node);
  }
  node.querySelector(".tool-args").textContent = call.function.arguments || "";
  const result = state.messages.find((m) => m.role === "tool" && m.toolCallId === call.id);
  const slot = node.querySelector(".tool-result");
  slot.replaceChildren();
  if (result) {
    slot.append(element("span", "tool-result-label", "result: "), element("code", "tool-result-text", textOf(result.content)));
  }
}

function renderAll() {
  log.replaceChildren();
  for (const message of state.messages) if (message.role !== "tool" || !ownerOfCall(message.toolCallId)) renderMessage(message);
}

// ---- the message list, as events change it --------------------------------------------------

function find(id) {
  return state.messages.find((m) => m.id === id);
}

function upsert(message) {
  const known = find(message.id);
  if (known) return Object.assign(known, message);
  state.messages.push(message);
  return message;
}

// A sub-agent's message keeps its producer, so it renders under its delegation.
const tagged = (event, message) => (event.subagentRunId ? { ...message, subagentRunId: event.subagentRunId } : message);

function handleEvent(event) {
  switch (event.type) {
    case "SUBAGENT_STARTED":
      state.subagents.set(event.subagentRunId, { name: event.name, parentToolCallId: event.parentToolCallId });
      subagentLog(event.subagentRunId);
      break;
    case "SUBAGENT_FINISHED":
    case "SUBAGENT_ERROR": {
      const box = log.querySelector(`[data-subagent="${CSS.escape(event.subagentRunId)}"]`);
      if (box) {
        const suspended = event.outcome?.type === "suspended";
        box.dataset.state = event.type === "SUBAGENT_ERROR" ? "error" : suspended ? "waiting" : "done";
        if (event.type === "SUBAGENT_ERROR") box.append(element("div", "notice error", `failed: ${event.message}`));
      }
      break;
    }
    case "RUN_STARTED":
      state.runCalls = [];
      // A run that started has stored what its request carried.
      state.held = state.sentLast ?? state.held;
      break;
    case "MESSAGES_SNAPSHOT":
      state.messages = withKeptSurfaces(event.messages.map((m) => ({ ...m })));
      renderAll();
      break;
    case "TEXT_MESSAGE_START":
      // A rejoined run replays from its start: the message starts over.
      renderMessage(upsert(tagged(event, { id: event.messageId, role: event.role ?? "assistant", content: "" })));
      break;
    case "TEXT_MESSAGE_CONTENT":
    case "TEXT_MESSAGE_CHUNK": {
      const id = event.messageId ?? state.messages.at(-1)?.id;
      const message = find(id) ?? upsert(tagged(event, { id, role: "assistant", content: "" }));
      message.content = (message.content ?? "") + (event.delta ?? "");
      renderMessage(message);
      break;
    }
    case "REASONING_MESSAGE_START":
      renderMessage(upsert(tagged(event, { id: event.messageId, role: "reasoning", content: "" })));
      break;
    case "REASONING_MESSAGE_CONTENT":
    case "REASONING_MESSAGE_CHUNK": {
      const message = find(event.messageId) ?? upsert(tagged(event, { id: event.messageId, role: "reasoning", content: "" }));
      message.content += event.delta ?? "";
      renderMessage(message);
      break;
    }
    case "THINKING_TEXT_MESSAGE_START":
      state.thinking = `thinking-${uuid()}`;
      renderMessage(upsert({ id: state.thinking, role: "reasoning", content: "" }));
      break;
    case "THINKING_TEXT_MESSAGE_CONTENT": {
      const message = find(state.thinking) ?? upsert({ id: (state.thinking = `thinking-${uuid()}`), role: "reasoning", content: "" });
      message.content += event.delta ?? "";
      renderMessage(message);
      break;
    }
    case "TOOL_CALL_START": {
      const parentId = event.parentMessageId ?? `calls-${event.toolCallId}`;
      const parent = find(parentId) ?? upsert(tagged(event, { id: parentId, role: "assistant", content: "" }));
      parent.toolCalls ??= [];
      const call = { id: event.toolCallId, type: "function", function: { name: event.toolCallName, arguments: "" } };
      const known = parent.toolCalls.findIndex((c) => c.id === call.id);
      if (known >= 0) parent.toolCalls[known] = call;
      else parent.toolCalls.push(call);
      state.runCalls.push(call.id);
      renderMessage(parent);
      break;
    }
    case "TOOL_CALL_ARGS": {
      const owner = ownerOfCall(event.toolCallId);
      if (!owner) break;
      owner.toolCalls.find((c) => c.id === event.toolCallId).function.arguments += event.delta ?? "";
      renderMessage(owner);
      break;
    }
    case "TOOL_CALL_RESULT":
      renderMessage(upsert(tagged(event, { id: event.messageId, role: "tool", toolCallId: event.toolCallId, content: event.content })));
      break;
    case "ACTIVITY_SNAPSHOT":
      if (event.activityType !== ACTIVITY_TYPE) break;
      renderMessage(upsert(tagged(event, { id: event.messageId, role: "activity", activityType: event.activityType, content: event.content })));
      break;
    default:
      break; // steps, state, custom and raw events change nothing shown here
  }
}

// ---- SSE over fetch -------------------------------------------------------------------------

// agui-lambda's key in an event's `metadata`: its place in the run, or (on the notice that ends a
// stream while the run goes on) where the run goes on.
const VENDOR_KEY = "agui-lambda";

// Calls `onEvent` for each `data:` frame of the response; returns the terminal event, if any, or
// `{continues}` when the stream ended with the notice that the run goes on (a hand-off to the
// next invocation, a stream's time limit): that notice is not one of the run's events.
async function readEvents(response, onEvent) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let terminal = null;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = [];
      for (const line of frame.split("\n")) {
        if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
        else if (line.startsWith("id:")) state.lastEventId = Number(line.slice(3).trim()) || state.lastEventId;
      }
      if (!data.length) continue; // a `: ping`
      const event = JSON.parse(data.join("\n"));
      const ours = event.metadata?.[VENDOR_KEY];
      if (ours?.continues) {
        state.lastEventId = ours.continues.lastEventId ?? state.lastEventId;
        return { continues: true };
      }
      if (typeof ours?.eventId === "number") state.lastEventId = ours.eventId;
      onEvent(event);
      if (event.type === "RUN_FINISHED" || event.type === "RUN_ERROR") terminal = event;
    }
  }
  return terminal;
}

async function refusal(response) {
  try {
    const body = await response.json();
    return `${response.status} ${body.error?.code ?? ""}: ${body.error?.message ?? ""}`;
  } catch {
    return `HTTP ${response.status}`;
  }
}

// Follows one run to its end: the response already open, else the run's events route. A
// stream cut before its terminal event is rejoined from its last event id; one that ends with
// the notice that the run goes on is followed on at once (a long run outlasts its streams).
async function follow(runId, response) {
  state.runId = runId;
  setStatus("running");
  let terminal = null;
  for (let attempt = 0; !terminal && attempt < 5; attempt++) {
    try {
      if (!response) {
        state.controller = new AbortController();
        const extra = state.lastEventId ? { "last-event-id": String(state.lastEventId) } : {};
        response = await fetch(api(`threads/${enc(state.threadId)}/runs/${enc(runId)}/events`), {
          headers: headers({ accept: "text/event-stream", ...extra }),
          signal: state.controller.signal,
        });
        if (!response.ok) {
          notice(`could not follow the run: ${await refusal(response)}`, "error");
          setStatus("error");
          return;
        }
      }
      terminal = await readEvents(response, handleEvent);
      if (terminal?.continues) {
        terminal = null;
        attempt = -1; // not a failure: the next stream of the same run
      }
    } catch (error) {
      if (state.controller?.signal.aborted) return;
      console.warn("stream broke, rejoining", error);
    }
    response = null;
  }
  await finished(terminal);
}

// The server holds the thread: a request carries the last message it holds (so it can tell the
// page is up to date) and the new ones, never the whole conversation.
function outgoing(messages) {
  const anchor = state.held && find(state.held);
  return anchor && !messages.some((m) => m.id === anchor.id) ? [anchor, ...messages] : messages;
}

async function startRun({ messages = [], resume, a2uiAction } = {}) {
  const runId = uuid();
  const sent = outgoing(messages);
  state.sentLast = sent.at(-1)?.id ?? null;
  const body = {
    threadId: state.threadId,
    runId,
    protocolVersion: "1.0",
    messages: sent,
    tools: FRONTEND_TOOLS,
    context: [],
    // The page paints A2UI surfaces of the basic catalog (a2ui.js).
    forwardedProps: {
      ...(timezone() ? { client_time: { device_timezone: timezone() } } : {}),
      a2uiCatalogAvailable: true,
      ...(a2uiAction ? { a2uiAction } : {}),
    },
  };
  if (resume) body.resume = resume;
  state.lastEventId = 0;
  state.runId = runId;
  setStatus("running");
  state.controller = new AbortController();
  let response;
  try {
    response = await fetch(api("agent"), {
      method: "POST",
      headers: headers({ "content-type": "application/json", accept: "text/event-stream" }),
      body: JSON.stringify(body),
      signal: state.controller.signal,
    });
  } catch (error) {
    notice(`the request failed: ${error}`, "error");
    setStatus("error");
    return;
  }
  if (!response.ok) {
    notice(await refusal(response), "error");
    setStatus("error");
    return;
  }
  await follow(runId, response);
}

// What a run's end asks of the page: nothing, a frontend tool, or a person's answer.
async function finished(terminal) {
  state.controller = null;
  // The thread holds the run's own messages; its sub-agents' are theirs.
  if (terminal?.type === "RUN_FINISHED") state.held = state.messages.findLast((m) => !m.subagentRunId)?.id ?? state.held;
  if (!terminal) {
    notice("the run's stream ended without its end", "error");
    setStatus("error");
    return;
  }
  if (terminal.type === "RUN_ERROR") {
    notice(`run failed: ${terminal.code ?? ""} ${terminal.message ?? ""}`, "error");
    setStatus("error");
    return;
  }
  const outcome = terminal.outcome;
  if (outcome?.type === "cancelled") {
    notice("run cancelled");
    setStatus("cancelled");
    return;
  }
  if (outcome?.type === "interrupt") {
    localStorage.setItem(interruptsKey(), JSON.stringify(outcome.interrupts));
    showInterrupts(outcome.interrupts);
    return;
  }
  const answered = new Set(state.messages.filter((m) => m.role === "tool").map((m) => m.toolCallId));
  const ids = outcome?.pendingToolCallIds ?? state.runCalls.filter((id) => !answered.has(id));
  const calls = ids
    .map((id) => ownerOfCall(id)?.toolCalls.find((c) => c.id === id))
    .filter((call) => call && FRONTEND_TOOLS.some((tool) => tool.name === call.function.name));
  if (!calls.length) {
    setStatus("done");
    if ($("memories").open) loadMemories(); // the run may have saved or deleted some
    return;
  }
  const results = [];
  for (const call of calls) results.push(await runFrontendTool(call));
  const messages = results.map((content, i) => ({ id: uuid(), role: "tool", toolCallId: calls[i].id, content }));
  for (const message of messages) renderMessage(upsert(message));
  await startRun({ messages });
}

function parseArgs(call) {
  try {
    return JSON.parse(call.function.arguments || "{}");
  } catch {
    return {};
  }
}

// Runs one of the page's tools; resolves to its result text.
function runFrontendTool(call) {
  const args = parseArgs(call);
  if (call.function.name === CHANGE_BACKGROUND.name) {
    const color = String(args.color ?? "").toLowerCase();
    if (!COLORS.includes(color)) return Promise.resolve(`Error: ${color || "no color"} is not one of ${COLORS.join(", ")}`);
    document.body.style.backgroundColor = color;
    return Promise.resolve(`Background color successfully changed to: ${color}`);
  }
  // confirmAction: the person decides.
  setStatus("waiting", "waiting for you");
  return new Promise((resolve) => {
    const card = approvalCard(
      `Confirm: ${args.action ?? "the action"}${args.count !== undefined ? ` (${args.count})` : ""}?`,
      call,
      (approved) => {
        card.remove();
        resolve(approved ? "confirmed" : "denied");
      },
    );
  });
}

function approvalCard(question, call, answer) {
  const card = element("div", "approval");
  card.append(element("p", "question", question));
  if (call) {
    const detail = element("p");
    detail.append(element("span", "tool-name", call.function.name), " ", element("code", "", call.function.arguments || "{}"));
    card.append(detail);
  }
  const approve = element("button", "approve", "Approve");
  const deny = element("button", "deny", "Deny");
  approve.type = deny.type = "button";
  approve.addEventListener("click", () => answer(true));
  deny.addEventListener("click", () => answer(false));
  card.append(approve, deny);
  pending.append(card);
  return card;
}

// AG-UI 1.0 interrupts: one card each; once all are answered, a run resumes with the answers.
function showInterrupts(interrupts) {
  pending.replaceChildren();
  setStatus("waiting", "waiting for you");
  const answers = new Map();
  for (const interrupt of interrupts) {
    const call = ownerOfCall(interrupt.toolCallId)?.toolCalls.find((c) => c.id === interrupt.toolCallId);
    const card = approvalCard(interrupt.message ?? "Approve this tool call?", call, (approved) => {
      card.remove();
      answers.set(interrupt.id, {
        interruptId: interrupt.id,
        status: "resolved",
        payload: approved ? { approved: true } : { approved: false, reason: "denied on the dev page" },
      });
      if (answers.size === interrupts.length) {
        localStorage.removeItem(interruptsKey());
        startRun({ resume: [...answers.values()] });
      }
    });
  }
}

// ---- the page's controls --------------------------------------------------------------------

// A click on a surface: a run with no new message, the action in `forwardedProps.a2uiAction`.
function sendAction(userAction) {
  if (state.running) return;
  startRun({ a2uiAction: { userAction } });
}

// The thread as the history route returns it: each surface a tool result keeps (for a reload)
// shown right after that result, as a MESSAGES_SNAPSHOT has it.
function withKeptSurfaces(messages) {
  const known = new Set(messages.map((m) => m.id));
  return messages.flatMap((message) => {
    const kept = message.role === "tool" ? keptSurface(message) : null;
    return kept && !known.has(kept.id) ? [message, kept] : [message];
  });
}

async function send(text) {
  const message = { id: uuid(), role: "user", content: text };
  renderMessage(upsert(message));
  await startRun({ messages: [message] });
}

async function stop() {
  if (!state.runId) return;
  setStatus("stopping");
  const runId = state.runId;
  const response = await fetch(api(`threads/${enc(state.threadId)}/runs/${enc(runId)}/cancel`), {
    method: "POST",
    headers: headers(),
  });
  if (!response.ok) notice(`could not stop the run: ${await refusal(response)}`, "error");
  // The stream ends with RUN_FINISHED (outcome cancelled); if it does not, stop reading.
  setTimeout(() => {
    if (state.running && state.runId === runId) state.controller?.abort();
  }, 10_000);
}

function useThread(id) {
  state.threadId = id;
  localStorage.setItem(THREAD_KEY, id);
  history.replaceState(null, "", `#thread=${enc(id)}`);
  $("thread-id").textContent = id;
}

// Restores the thread's messages, then rejoins its run in progress or shows its open questions.
async function restore() {
  const messages = [];
  let after = null;
  let activeRunId = null;
  do {
    const query = `limit=500${after ? `&after=${enc(after)}` : ""}`;
    const response = await fetch(api(`threads/${enc(state.threadId)}?${query}`), { headers: headers() });
    if (response.status === 404) break; // a new thread
    if (!response.ok) {
      notice(`could not load the thread: ${await refusal(response)}${response.status === 401 ? " (set a key under Settings)" : ""}`, "error");
      return;
    }
    const page = await response.json();
    messages.push(...page.messages);
    activeRunId = page.activeRunId ?? null;
    after = page.next ?? null;
  } while (after);
  state.messages = withKeptSurfaces(messages);
  state.held = messages.at(-1)?.id ?? null;
  renderAll();
  if (activeRunId) {
    state.lastEventId = 0;
    await follow(activeRunId);
    return;
  }
  const open = JSON.parse(localStorage.getItem(interruptsKey()) || "null");
  if (open?.length) showInterrupts(open);
}

// ---- memories ------------------------------------------------------------------------------

// Lists the caller's memories when the panel is opened (never before: a server with memory off
// answers 404, which the browser would log as an error on every page load).
async function loadMemories() {
  const memories = [];
  let cursor = null;
  do {
    const response = await fetch(api(`memories?limit=200${cursor ? `&cursor=${enc(cursor)}` : ""}`), { headers: headers() });
    if (!response.ok) {
      const line = document.createElement("li");
      line.className = "dim";
      const why = await refusal(response);
      const off = response.status === 404 && why.includes("memory_disabled");
      // With memory off there is nothing to list or forget: say how to turn it on instead.
      line.textContent = off
        ? "Memory is off on this server: nothing is kept about you. Start it with MEMORY=on (or give a profile \"memory\": true) to keep facts across threads."
        : why;
      $("forget-all").hidden = off;
      $("memory-list").replaceChildren(line);
      return;
    }
    $("forget-all").hidden = false;
    const page = await response.json();
    memories.push(...page.memories);
    cursor = page.next ?? null;
  } while (cursor);
  const items = memories.map((memory) => {
    const item = document.createElement("li");
    item.className = "memory";
    item.dataset.id = memory.id;
    const text = document.createElement("span");
    text.className = "memory-text";
    text.textContent = memory.pinned ? `📌 ${memory.text}` : memory.text;
    const forget = document.createElement("button");
    forget.type = "button";
    forget.className = "memory-delete";
    forget.textContent = "Delete";
    forget.title = `Forget ${memory.id}`;
    forget.addEventListener("click", () => forgetMemory(`memories/${enc(memory.id)}`));
    item.append(text, forget);
    return item;
  });
  if (!items.length) {
    const none = document.createElement("li");
    none.className = "dim";
    none.textContent = "nothing kept";
    items.push(none);
  }
  $("memory-list").replaceChildren(...items);
}

async function forgetMemory(path) {
  const response = await fetch(api(path), { method: "DELETE", headers: headers() });
  if (!response.ok && response.status !== 404) notice(`could not delete: ${await refusal(response)}`, "error");
  await loadMemories();
}

// The suggestions this agent can take: a delegation when it has sub-agents (GET capabilities),
// a form when it paints A2UI surfaces, and whether the clock asks first. `#hints[data-ready]` once settled, whatever the answer.
async function suggest() {
  const hints = $("hints");
  try {
    const response = await fetch(api("capabilities"), { headers: headers() });
    if (!response.ok) return;
    const capabilities = await response.json();
    const first = capabilities.multiAgent?.subagents?.[0];
    if (first?.name) {
      const hint = element("button", "hint", `Ask the ${first.name.replaceAll("_", " ")}: what is AG-UI?`);
      hint.type = "button";
      hints.querySelector(".hint:last-of-type").after(hint);
      $("hints-about").append(` "Ask the ${first.name.replaceAll("_", " ")}" delegates to the sub-agent ${first.name}, whose work shows under its call.`);
    }
    // This page declares it paints A2UI (a2uiCatalogAvailable): unless the server turned A2UI
    // off, the model is offered the render tool and the demo model builds a form when asked.
    const a2ui = capabilities.custom?.a2ui?.mode;
    if (a2ui && a2ui !== "off") {
      const hint = element("button", "hint", "Show me a form");
      hint.type = "button";
      hints.querySelector(".hint:last-of-type").after(hint);
      $("hints-about").append(" \"Show me a form\" asks for an A2UI surface, painted here; fill it in and press its button.");
    }
    if (capabilities.humanInTheLoop?.approvals) {
      $("hints-about").append(" Tools that need approval (APPROVAL_REQUIRED_TOOLS) ask you before they run.");
    }
  } catch (error) {
    console.warn("no capabilities", error);
  } finally {
    hints.dataset.ready = "true";
  }
}

function main() {
  const known = new URLSearchParams(location.hash.slice(1)).get("thread") || localStorage.getItem(THREAD_KEY);
  useThread(known || uuid());
  const token = $("token");
  token.value = localStorage.getItem(TOKEN_KEY) ?? "";
  token.addEventListener("change", () => {
    if (token.value.trim()) localStorage.setItem(TOKEN_KEY, token.value.trim());
    else localStorage.removeItem(TOKEN_KEY);
  });
  $("composer").addEventListener("submit", (event) => {
    event.preventDefault();
    const text = input.value.trim();
    if (!text || state.running) return;
    input.value = "";
    send(text);
  });
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      $("composer").requestSubmit();
    }
  });
  $("stop").addEventListener("click", stop);
  // The empty state's suggestions: a click sends the suggestion as if typed.
  $("hints").addEventListener("click", (event) => {
    const hint = event.target.closest(".hint");
    if (!hint || state.running) return;
    input.value = hint.textContent;
    $("composer").requestSubmit();
  });
  suggest();
  $("new-thread").addEventListener("click", () => {
    if (state.running) return;
    useThread(uuid());
    state.messages = [];
    state.held = null;
    pending.replaceChildren();
    document.body.style.backgroundColor = "";
    renderAll();
    setStatus("idle");
  });
  $("memories").addEventListener("toggle", () => {
    if ($("memories").open) loadMemories();
  });
  $("forget-all").addEventListener("click", () => forgetMemory("memories"));
  setStatus("idle");
  if (known) restore(); // a new thread has nothing to restore
}

main();
