// A CopilotKit page whose runtime is agui-lambda itself (its /copilotkit routes): chat, a frontend
// tool, approvals, reload and Stop, and a thread list beside the chat. No Node server.
import { StrictMode, useState } from "react";
import { createRoot } from "react-dom/client";
import { CopilotChat, CopilotKitProvider, useFrontendTool, useHumanInTheLoop } from "@copilotkit/react-core/v2";
import "@copilotkit/react-core/v2/styles.css";
import "./app.css";
import { ThreadList } from "./threads.jsx";
import { Settings, readSettings } from "./settings.jsx";

// The AG-Kit send-message protocol's frontend tool, as that protocol writes it (its parameters are a JSON Schema string).
const CHANGE_BACKGROUND_COLOR = {
  name: "change-background-color",
  description:
    "Change the background color. The color should be one of the following: blue, red, green, transparent, yellow, purple, orange, pink, brown, gray, black, or white. No other colors or any variants.",
  parameters:
    '{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"color":{"type":"string"}},"required":["color"],"additionalProperties":false}',
};

// The confirm tool agui-lambda asks approvals through for AG-UI 0.0.x clients such as
// CopilotKit 1.74 (APPROVAL_CONFIRM_TOOL, default `confirmAction`).
const CONFIRM_ACTION = {
  name: "confirmAction",
  description: "Ask the user to confirm an action before it is carried out.",
  parameters: {
    type: "object",
    properties: { action: { type: "string", description: "What the agent wants to do" } },
    required: ["action"],
  },
};

// CopilotKit takes tool parameters as a Standard Schema; this one carries a plain JSON Schema
// (Standard JSON Schema V1), so that schema is used as it is, without zod. CopilotKit removes
// `$schema` and `additionalProperties` before it sends a tool's schema to the agent.
function jsonSchema(schema) {
  const check = (value) => {
    if (typeof value !== "object" || value === null || Array.isArray(value)) return "expected an object";
    for (const key of schema.required ?? []) {
      if (!(key in value)) return `missing ${key}`;
    }
    for (const [key, rule] of Object.entries(schema.properties ?? {})) {
      if (key in value && rule.type === "string" && typeof value[key] !== "string") return `${key} must be a string`;
    }
    return null;
  };
  return {
    "~standard": {
      version: 1,
      vendor: "agui-lambda-example",
      validate: (value) => {
        const problem = check(value);
        return problem ? { issues: [{ message: problem }] } : { value };
      },
      jsonSchema: { input: () => structuredClone(schema), output: () => structuredClone(schema) },
    },
  };
}

// The conversation on screen: its id lives in localStorage (or comes from ?thread=), so a reload
// reconnects to it, and to its run in progress.
const THREAD_KEY = "agui-copilotkit-thread";
function initialThreadId() {
  const fromUrl = new URLSearchParams(location.search).get("thread");
  const threadId = fromUrl || localStorage.getItem(THREAD_KEY) || crypto.randomUUID();
  localStorage.setItem(THREAD_KEY, threadId);
  return threadId;
}

function Tools() {
  useFrontendTool({
    name: CHANGE_BACKGROUND_COLOR.name,
    description: CHANGE_BACKGROUND_COLOR.description,
    parameters: jsonSchema(JSON.parse(CHANGE_BACKGROUND_COLOR.parameters)),
    handler: async ({ color }) => {
      if (typeof color !== "string" || !color) return "No color was given: the background is unchanged.";
      document.body.style.background = color;
      document.body.dataset.background = color;
      return `Background color successfully changed to: ${color}`;
    },
    render: ({ args, status }) => (
      <div className="tool" data-testid="tool-change-background-color" data-status={status}>
        change-background-color({args.color ?? "…"}) · {status}
      </div>
    ),
  });

  useHumanInTheLoop({
    name: CONFIRM_ACTION.name,
    description: CONFIRM_ACTION.description,
    parameters: jsonSchema(CONFIRM_ACTION.parameters),
    render: ({ args, status, respond, result }) => (
      <div className="confirm" data-testid="confirm-action" data-status={status}>
        <div className="confirm-title">Approval needed</div>
        <div className="confirm-action">{args.action ?? "…"}</div>
        {status === "executing" && respond ? (
          <div className="confirm-buttons">
            <button type="button" data-testid="approve" onClick={() => respond("confirmed")}>
              Approve
            </button>
            <button type="button" data-testid="deny" onClick={() => respond("denied")}>
              Deny
            </button>
          </div>
        ) : status === "complete" ? (
          <div className="confirm-result" data-testid="confirm-result">
            {result === "confirmed" ? "Approved" : "Denied"}
          </div>
        ) : null}
      </div>
    ),
  });
  return null;
}

function App() {
  const [settings, setSettings] = useState(readSettings);
  const [threadId, setThreadId] = useState(initialThreadId);
  const [errors, setErrors] = useState([]);
  const open = (next) => {
    localStorage.setItem(THREAD_KEY, next);
    if (next !== threadId) {
      document.body.style.background = "";
      delete document.body.dataset.background;
    }
    setThreadId(next);
  };
  const headers = settings.apiKey ? { Authorization: `Bearer ${settings.apiKey}` } : {};
  return (
    <CopilotKitProvider
      runtimeUrl={settings.runtimeUrl}
      headers={headers}
      enableInspector={false}
      onError={({ error, code }) => {
        console.error(`[copilotkit] ${code}: ${error.message}`);
        setErrors((all) => [...all, `${code}: ${error.message}`]);
      }}
    >
      <Tools />
      <main className="app">
        <ThreadList current={threadId} onOpen={open} onNew={() => open(crypto.randomUUID())} />
        <section className="conversation">
          <header>
            <h1>agui-lambda × CopilotKit</h1>
            <span className="thread" data-testid="thread-id" title="thread id">
              {threadId}
            </span>
            <Settings settings={settings} onChange={setSettings} />
          </header>
          {errors.length > 0 && (
            <div className="errors" data-testid="copilotkit-errors">
              {errors.map((error, index) => (
                <div key={index}>{error}</div>
              ))}
            </div>
          )}
          <div className="chat">
            <CopilotChat threadId={threadId} />
          </div>
        </section>
      </main>
    </CopilotKitProvider>
  );
}

createRoot(document.getElementById("root")).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
