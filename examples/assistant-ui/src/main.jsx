// An assistant-ui chat on agui-lambda's coordinator profile. assistant-ui's AG-UI runtime
// (@assistant-ui/react-ag-ui) nests each sub-agent's work under the tool call that delegated to
// it (SUBAGENT_STARTED.parentToolCallId): the tool card below renders those nested messages, so
// the researcher's text (and the factchecker's, one level deeper) shows inside the coordinator's
// call of it, as it streams. A2UI surfaces the model builds (`a2ui-surface` activities) come
// through the AG-UI runtime as "present" tool calls, painted here with react-generative-ui; a
// click goes back as `forwardedProps.a2uiAction`.
import { StrictMode, useMemo, useRef } from "react";
import { createRoot } from "react-dom/client";
import { HttpAgent } from "@ag-ui/client";
import {
  AssistantRuntimeProvider,
  ComposerPrimitive,
  MessagePartPrimitive,
  MessagePrimitive,
  ThreadPrimitive,
} from "@assistant-ui/react";
import { useAgUiRuntime, useAgUiSendA2uiAction } from "@assistant-ui/react-ag-ui";
import { defaultGenerativeUILibrary, renderGenerativeUI } from "@assistant-ui/react-generative-ui";
import "./app.css";

// server.mjs forwards /api/agent to agui-lambda's AG-UI endpoint.
const AGENT_URL = new URL("/api/agent", location.href).toString();

function Text({ text }) {
  return <p className="text">{text}</p>;
}

// An A2UI surface. assistant-ui's TextField does not write what is typed back to the surface's
// data, so a click's context takes the surface's named fields (a field is named after the last
// segment of its bound path) over the values the surface was painted with.
function A2uiSurface({ args, status }) {
  const sendAction = useAgUiSendA2uiAction();
  const box = useRef(null);
  const dispatch = (action) => {
    const { type: _type, $input: _input, ...userAction } = action;
    const context = { ...(userAction.context ?? {}) };
    for (const field of box.current?.querySelectorAll("input[name], textarea[name]") ?? []) {
      if (field.name in context) context[field.name] = field.type === "checkbox" ? field.checked : field.value;
    }
    sendAction({ ...userAction, context });
  };
  const shown = status?.type === "complete" ? "done" : "streaming";
  return (
    <div className="a2ui" data-testid="a2ui-surface" ref={box}>
      {renderGenerativeUI(args, defaultGenerativeUILibrary, { status: shown, dispatch })}
    </div>
  );
}

// A tool call, and, when a sub-agent ran behind it, that agent's messages nested inside. The
// model's render_a2ui calls are not shown: the surface they paint is.
function ToolCard({ toolName, argsText, result, isError, messages }) {
  if (toolName === "render_a2ui") return null;
  const nested = messages?.length > 0;
  return (
    <div className={`tool ${nested ? "tool-delegated" : ""}`} data-testid="tool-call" data-tool-name={toolName}>
      <div className="tool-head">
        {nested ? "delegated to" : "tool"} <code>{toolName}</code>
      </div>
      {argsText ? <pre className="tool-args">{argsText}</pre> : null}
      {nested ? (
        <div className="subagent" data-testid="subagent">
          <MessagePartPrimitive.Messages>
            {({ message }) => (message.role === "assistant" ? <NestedAssistant name={message.metadata?.custom?.agui?.name} /> : null)}
          </MessagePartPrimitive.Messages>
        </div>
      ) : null}
      {result !== undefined ? (
        <div className={`tool-result ${isError ? "error" : ""}`}>
          result: {typeof result === "string" ? result : JSON.stringify(result)}
        </div>
      ) : null}
    </div>
  );
}

function NestedAssistant({ name }) {
  return (
    <MessagePrimitive.Root className="nested" data-testid="subagent-message" data-subagent-name={name}>
      <div className="nested-head">{name ?? "sub-agent"}</div>
      <MessagePrimitive.Parts components={{ Text, tools: TOOLS }} />
    </MessagePrimitive.Root>
  );
}

const TOOLS = { by_name: { present: A2uiSurface }, Fallback: ToolCard };

function UserMessage() {
  return (
    <MessagePrimitive.Root className="msg msg-user">
      <MessagePrimitive.Parts components={{ Text }} />
    </MessagePrimitive.Root>
  );
}

function AssistantMessage() {
  return (
    <MessagePrimitive.Root className="msg msg-assistant" data-testid="assistant-message">
      <MessagePrimitive.Parts components={{ Text, tools: TOOLS }} />
    </MessagePrimitive.Root>
  );
}

function App() {
  const agent = useMemo(() => new HttpAgent({ url: AGENT_URL }), []);
  const runtime = useAgUiRuntime({ agent, onError: (error) => console.error("agent run failed", error) });
  return (
    <AssistantRuntimeProvider runtime={runtime}>
      <div className="app">
        <header>
          <h1>Coordinator, with a researcher</h1>
          <span className="hint">try “Ask the researcher: what is AG-UI?”</span>
        </header>
        <ThreadPrimitive.Root className="thread">
          <ThreadPrimitive.Viewport className="viewport">
            <ThreadPrimitive.Messages components={{ UserMessage, AssistantMessage }} />
          </ThreadPrimitive.Viewport>
          <ComposerPrimitive.Root className="composer">
            <ComposerPrimitive.Input className="composer-input" placeholder="Ask the coordinator…" data-testid="composer" />
            <ComposerPrimitive.Send className="composer-send" data-testid="send">
              Send
            </ComposerPrimitive.Send>
          </ComposerPrimitive.Root>
        </ThreadPrimitive.Root>
      </div>
    </AssistantRuntimeProvider>
  );
}

createRoot(document.getElementById("root")).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
