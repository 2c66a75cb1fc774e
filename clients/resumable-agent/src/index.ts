/**
 * `ResumableHttpAgent`: @ag-ui/client 1.0's `HttpAgent`, for an agui-lambda server, with
 *
 * - resume: when the connection drops before the run's terminal event, it reconnects to
 *   `GET {baseUrl}/threads/{threadId}/runs/{runId}/events` with `Last-Event-ID: <last id seen>`
 *   and goes on delivering events to the same subscribers (bounded retries, exponential backoff);
 * - long runs: a stream that ends with agui-lambda's notice that the run goes on (a run handed
 *   to its next Lambda invocation, a stream past `STREAM_MAX_SECS`) is followed on at once, the
 *   notice never delivered: subscribers see one run;
 * - stop: `abortRun()` also posts `POST {baseUrl}/threads/{threadId}/runs/{runId}/cancel`, so the
 *   run stops on the server too (a run there is not tied to its connection); `cancelRun()` asks
 *   the server to stop and keeps the stream open for the run's own terminal event;
 * - rejoin: `connect()` (behind `connectAgent()`) finds the thread's active run with
 *   `GET {baseUrl}/threads/{threadId}` (`activeRunId`) and streams its events from the start;
 * - only new messages: a request carries the last message the server is known to hold and what
 *   was added after it, not the whole conversation (`agent.messages` stays complete).
 */
import { EventType, HttpAgent, enforceOutgoingInput } from "@ag-ui/client";
import type {
  AgentSubscriber,
  BaseEvent,
  HttpAgentConfig,
  RunAgentInput,
  RunAgentParameters,
  RunAgentResult,
} from "@ag-ui/client";
import { Observable } from "rxjs";
import type { Subscriber } from "rxjs";
import { SseParser } from "./sse.js";
import type { SseFrame } from "./sse.js";

export { SseParser } from "./sse.js";
export type { SseFrame } from "./sse.js";

export interface ReconnectOptions {
  /** Reconnection attempts in a row without a new event before the run fails. Default 6. */
  maxRetries?: number;
  /** Delay before the first attempt, doubled for each further one (with jitter). Default 250 ms. */
  initialDelayMs?: number;
  /** Upper bound of one delay. Default 4000 ms. */
  maxDelayMs?: number;
}

/** Where an event came from: the run's own response, a resumed stream, or `connect()`. */
export type FrameSource = "run" | "resume" | "connect";

export interface ResumableHttpAgentConfig extends HttpAgentConfig {
  /**
   * The server's base URL, under which `/threads/...` lives. Default: `url` without a trailing
   * `/agent` (so `https://host/agent` → `https://host`, `https://host/lambda-url/fn/agent` →
   * `https://host/lambda-url/fn`).
   */
  baseUrl?: string;
  /** Resume settings, or `false` to fail on a dropped connection like `HttpAgent`. */
  reconnect?: ReconnectOptions | false;
  /** Whether `abortRun()` also cancels the run on the server. Default true. */
  cancelOnAbort?: boolean;
  /**
   * Send only the messages the server does not hold yet, after the last one it holds, instead
   * of the whole conversation. Default true.
   */
  sendOnlyNew?: boolean;
  /** Called with every event as it is delivered, with its SSE id (for logging and tests). */
  onFrame?: (frame: { id: string | undefined; event: BaseEvent; source: FrameSource }) => void;
}

/** `runAgent()` / `connectAgent()` parameters, as `HttpAgent` takes them. */
export interface ResumableRunParameters extends RunAgentParameters {
  abortController?: AbortController;
}

/** The run this agent streams (or last streamed). */
export interface RunHandle {
  threadId: string;
  runId: string;
  /** The `id:` of the last event delivered. */
  lastEventId: string | undefined;
  /** A terminal event (`RUN_FINISHED` / `RUN_ERROR`) was delivered. */
  finished: boolean;
  /** The server answered the request that started or joined the run. */
  responded: boolean;
  /** How many times the stream was resumed. */
  resumes: number;
  /** How many times the stream ended with the notice that the run goes on, and was followed on. */
  continuations: number;
}

/** Messages as the agent holds them: an id and a role are all this module reads. */
interface HeldMessage {
  id: string;
  role: string;
}

export interface CancelResult {
  /** HTTP status: 202 cancelling, 200 already ended, 404 unknown run; 0 when the request failed. */
  status: number;
  body: unknown;
  error?: unknown;
}

interface RunContext extends RunHandle {
  /** Numeric form of lastEventId, for dropping replayed duplicates. */
  lastSeq: number | undefined;
  /** The last message the request carried: stored once the run has started. */
  sentLastId: string | undefined;
  /** RUN_STARTED was delivered. */
  started: boolean;
  /** The terminal event's type, once delivered. */
  terminal: string | undefined;
  /** The ids of a MESSAGES_SNAPSHOT's messages, in the server's order. */
  snapshotOrder: string[] | undefined;
  /** False once an event without an id was delivered: a resume could then repeat it. */
  resumable: boolean;
  /** This agent stopped streaming it (terminal event, error or abort). */
  closed: boolean;
  delivered: number;
}

/** An HTTP error shaped like @ag-ui/client's (`HTTP <status>: <body>`, `.status`, `.payload`). */
export class HttpStatusError extends Error {
  constructor(
    public readonly status: number,
    public readonly payload: unknown,
  ) {
    super(`HTTP ${status}: ${typeof payload === "string" ? payload : JSON.stringify(payload)}`);
    this.name = "HttpStatusError";
  }
}

/** A malformed stream: not retried. */
class StreamProtocolError extends Error {
  override name = "StreamProtocolError";
}

const DEFAULT_RECONNECT: Required<ReconnectOptions> = {
  maxRetries: 6,
  initialDelayMs: 250,
  maxDelayMs: 4000,
};

export class ResumableHttpAgent extends HttpAgent {
  public baseUrl: string;
  public reconnect: Required<ReconnectOptions> | false;
  public cancelOnAbort: boolean;
  public sendOnlyNew: boolean;
  /**
   * The id of the last message the server is known to hold: set when a run ends and after
   * `connectAgent()`. Requests carry it and what follows it; undefined sends everything.
   */
  public heldMessageId: string | undefined;
  public onFrame: ResumableHttpAgentConfig["onFrame"];
  /** The cancel request made by the last `abortRun()` / `cancelRun()`, to await if needed. */
  public lastCancel: Promise<CancelResult> | undefined;

  private current: RunContext | undefined;
  private connectRunId: string | undefined;

  constructor(config: ResumableHttpAgentConfig) {
    super(config);
    this.baseUrl = trimSlashes(config.baseUrl ?? config.url.replace(/\/+$/, "").replace(/\/agent$/, ""));
    this.reconnect =
      config.reconnect === false ? false : { ...DEFAULT_RECONNECT, ...(config.reconnect ?? {}) };
    this.cancelOnAbort = config.cancelOnAbort ?? true;
    this.sendOnlyNew = config.sendOnlyNew ?? true;
    this.onFrame = config.onFrame;
  }

  /** The run being streamed, or the last one; undefined before the first. */
  get activeRun(): Readonly<RunHandle> | undefined {
    if (!this.current) return undefined;
    const { threadId, runId, lastEventId, finished, responded, resumes, continuations } = this.current;
    return { threadId, runId, lastEventId, finished, responded, resumes, continuations };
  }

  public override async runAgent(
    parameters?: ResumableRunParameters,
    subscriber?: AgentSubscriber,
  ): Promise<RunAgentResult> {
    try {
      return await super.runAgent(parameters, subscriber);
    } finally {
      this.noteHeld(this.current);
    }
  }

  /**
   * Rejoins a run. With `parameters.runId`, that run; without, the thread's active run (none:
   * resolves with no new messages). The run's events are replayed from its start.
   */
  public override connectAgent(
    parameters?: ResumableRunParameters,
    subscriber?: AgentSubscriber,
  ): Promise<RunAgentResult> {
    // HttpAgent renews its controller in runAgent() only.
    this.abortController = parameters?.abortController ?? new AbortController();
    this.connectRunId = parameters?.runId;
    return super.connectAgent(parameters, subscriber).then((result) => {
      // The messages were loaded from the server, and the run it replayed has ended.
      this.heldMessageId = lastId(this.messages);
      return result;
    });
  }

  /** Stops the local stream, and (unless `cancelOnAbort` is false) the run on the server. */
  public override abortRun(): void {
    const run = this.current;
    if (this.cancelOnAbort && run && run.runId !== "" && !run.finished && !run.closed) {
      this.lastCancel = this.postCancel(run);
    }
    super.abortRun();
  }

  /**
   * Asks the server to stop the current run, and keeps streaming: the stream then ends with the
   * run's own terminal event (`RUN_FINISHED` with `outcome: {type: "cancelled"}` for this client).
   * Resolves with the cancel endpoint's answer; undefined when no run is streaming.
   */
  public cancelRun(): Promise<CancelResult | undefined> {
    const run = this.current;
    if (!run || run.runId === "" || run.finished || run.closed) return Promise.resolve(undefined);
    this.lastCancel = this.postCancel(run);
    return this.lastCancel;
  }

  override run(input: RunAgentInput): Observable<BaseEvent> {
    return this.stream("run", input, async (run, signal) => {
      const outgoing = this.onlyNew(enforceOutgoingInput(input));
      run.sentLastId = outgoing.messages.at(-1)?.id;
      const init = this.requestInit(outgoing);
      const response = await this.fetch(this.url, { ...init, signal });
      await throwIfNotOk(response);
      run.threadId = response.headers.get("x-thread-id") ?? run.threadId;
      run.runId = response.headers.get("x-run-id") ?? run.runId;
      run.responded = true;
      return response;
    });
  }

  protected override connect(input: RunAgentInput): Observable<BaseEvent> {
    const requested = this.connectRunId;
    this.connectRunId = undefined;
    return this.stream("connect", input, async (run, signal) => {
      let runId = requested;
      run.runId = runId ?? ""; // not known until the thread says (no cancel meanwhile)
      if (runId === undefined) {
        const response = await this.fetch(`${this.baseUrl}/threads/${enc(input.threadId)}`, {
          method: "GET",
          headers: { ...this.headers, Accept: "application/json" },
          signal,
        });
        if (response.status === 404) return undefined;
        await throwIfNotOk(response);
        const thread = (await response.json()) as { activeRunId?: string | null };
        if (typeof thread.activeRunId !== "string" || thread.activeRunId === "") return undefined;
        runId = thread.activeRunId;
      }
      run.runId = runId;
      const response = await this.fetch(this.eventsUrl(run), {
        method: "GET",
        headers: { ...this.headers, Accept: "text/event-stream" },
        signal,
      });
      // The run ended and is gone since the thread said it was active: nothing to rejoin.
      if (response.status === 404 && requested === undefined) return undefined;
      await throwIfNotOk(response);
      run.responded = true;
      return response;
    });
  }

  public override clone(): ResumableHttpAgent {
    const cloned = super.clone() as ResumableHttpAgent;
    cloned.baseUrl = this.baseUrl;
    cloned.reconnect = this.reconnect === false ? false : { ...this.reconnect };
    cloned.cancelOnAbort = this.cancelOnAbort;
    cloned.sendOnlyNew = this.sendOnlyNew;
    cloned.heldMessageId = this.heldMessageId;
    cloned.onFrame = this.onFrame;
    cloned.lastCancel = undefined;
    cloned.current = undefined;
    cloned.connectRunId = undefined;
    return cloned;
  }

  /**
   * `input` with only the messages from the last one the server holds on. Without that message
   * among them (none known yet, or the messages were replaced), the whole conversation.
   */
  private onlyNew(input: RunAgentInput): RunAgentInput {
    const held = this.heldMessageId;
    if (!this.sendOnlyNew || held === undefined) return input;
    for (let at = input.messages.length - 1; at >= 0; at--) {
      if (input.messages[at]?.id === held) return { ...input, messages: input.messages.slice(at) };
    }
    return input;
  }

  /**
   * After a run: the messages in the server's order when it sent a snapshot, and what the
   * server holds: a finished run leaves everything the agent holds stored; one that failed
   * after it started, at least what its request carried.
   */
  private noteHeld(run: RunContext | undefined): void {
    if (!run) return;
    if (run.snapshotOrder) this.messages = inOrder(this.messages, run.snapshotOrder);
    if (run.terminal === EventType.RUN_FINISHED) {
      this.heldMessageId = lastId(this.messages) ?? this.heldMessageId;
    } else if (run.started && run.sentLastId !== undefined) {
      this.heldMessageId = run.sentLastId;
    }
  }

  /**
   * The observable behind run() and connect(): `open` makes the first request (undefined: no
   * run, complete at once); the body is then read, and resumed through the events endpoint when
   * it breaks before the terminal event.
   */
  private stream(
    source: "run" | "connect",
    input: RunAgentInput,
    open: (run: RunContext, signal: AbortSignal) => Promise<Response | undefined>,
  ): Observable<BaseEvent> {
    return new Observable<BaseEvent>((subscriber) => {
      const teardown = new AbortController();
      const signal = linkedSignal(this.abortController.signal, teardown.signal);
      const run: RunContext = {
        threadId: input.threadId,
        runId: input.runId,
        lastEventId: undefined,
        lastSeq: undefined,
        sentLastId: undefined,
        started: false,
        terminal: undefined,
        snapshotOrder: undefined,
        finished: false,
        responded: false,
        resumable: true,
        closed: false,
        delivered: 0,
        resumes: 0,
        continuations: 0,
      };
      this.current = run;
      (async () => {
        const first = await open(run, signal);
        if (first !== undefined) {
          await this.follow(run, first, source, subscriber, signal);
        }
        run.closed = true;
        subscriber.complete();
      })().catch((error: unknown) => {
        run.closed = true;
        if (teardown.signal.aborted) return;
        if (signal.aborted || isAbortError(error)) {
          // As HttpAgent does: an aborted request ends the run with RUN_ERROR "abort".
          const message = error instanceof Error && error.message ? error.message : "Request aborted";
          subscriber.next({ type: EventType.RUN_ERROR, message, code: "abort" } as BaseEvent);
          subscriber.complete();
          return;
        }
        subscriber.error(error);
      });
      return () => {
        run.closed = true;
        teardown.abort();
      };
    });
  }

  /** Reads `response`, then resumes until the terminal event, the retry budget or an abort. */
  private async follow(
    run: RunContext,
    response: Response,
    source: "run" | "connect",
    sink: Subscriber<BaseEvent>,
    signal: AbortSignal,
  ): Promise<void> {
    let body: Response = response;
    let frameSource: FrameSource = source;
    let attempt = 0;
    for (;;) {
      const before = run.delivered;
      let failure: unknown;
      try {
        const ended = await this.read(run, body, frameSource, sink, signal);
        if (ended === "terminal") return;
        if (signal.aborted) throw abortReason(signal);
        if (ended === "continues") {
          // The run goes on (another invocation has it): follow it from where this stream ended.
          run.continuations++;
          attempt = 0;
          body = await this.reopen(run, new Error("the run goes on"), () => attempt++, signal, 0);
          frameSource = "resume";
          continue;
        }
        // A clean end without a terminal event: a cut proxy, a Lambda deadline.
        if (!run.resumable || this.reconnect === false) return; // as HttpAgent: just end
        failure = new Error("the stream ended before the run's terminal event");
      } catch (error) {
        if (signal.aborted || error instanceof StreamProtocolError) throw error;
        failure = error;
      }
      if (this.reconnect === false || !run.resumable) throw failure;
      if (run.delivered > before) attempt = 0;
      body = await this.reopen(run, failure, () => attempt++, signal);
      run.resumes++;
      frameSource = "resume";
    }
  }

  /** Reconnects to the events endpoint after the last delivered id, with backoff. */
  private async reopen(
    run: RunContext,
    cause: unknown,
    nextAttempt: () => number,
    signal: AbortSignal,
    firstDelayMs?: number,
  ): Promise<Response> {
    const settings = this.reconnect === false ? DEFAULT_RECONNECT : this.reconnect;
    let failure = cause;
    let first = true;
    for (;;) {
      const attempt = nextAttempt();
      if (attempt >= settings.maxRetries) throw failure;
      const delay = Math.min(settings.maxDelayMs, settings.initialDelayMs * 2 ** attempt);
      await sleep(first && firstDelayMs !== undefined ? firstDelayMs : delay * (0.5 + Math.random() * 0.5), signal);
      first = false;
      const headers: Record<string, string> = { ...this.headers, Accept: "text/event-stream" };
      if (run.lastEventId !== undefined) headers["Last-Event-ID"] = run.lastEventId;
      let response: Response;
      try {
        response = await this.fetch(this.eventsUrl(run), { method: "GET", headers, signal });
      } catch (error) {
        if (signal.aborted) throw error;
        failure = error;
        continue;
      }
      if (response.ok) return response;
      const error = await httpError(response);
      // 404: the run is unknown (or not ours); other 4xx will not get better by retrying.
      if (response.status < 500 && response.status !== 408 && response.status !== 429) throw error;
      failure = error;
    }
  }

  /**
   * Delivers the events of one response body: `terminal` once the run's terminal event was
   * delivered, `continues` when the stream ended with the notice that the run goes on, `ended`
   * when it ended (or broke) otherwise.
   */
  private async read(
    run: RunContext,
    response: Response,
    source: FrameSource,
    sink: Subscriber<BaseEvent>,
    signal: AbortSignal,
  ): Promise<"terminal" | "continues" | "ended"> {
    const reader = response.body?.getReader();
    if (!reader) throw new Error("Failed to getReader() from response");
    const cancel = () => {
      reader.cancel().catch(() => undefined);
    };
    signal.addEventListener("abort", cancel, { once: true });
    const parser = new SseParser();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        const frames = done ? parser.end() : parser.push(value);
        for (const frame of frames) {
          const delivered = this.deliver(run, frame, source, sink);
          if (delivered !== "event") {
            cancel();
            return delivered;
          }
        }
        if (done) return "ended";
      }
    } finally {
      signal.removeEventListener("abort", cancel);
    }
  }

  /**
   * Parses, de-duplicates and emits one frame: `terminal` for the run's terminal event,
   * `continues` for the notice that the run goes on (never emitted), `event` otherwise.
   */
  private deliver(
    run: RunContext,
    frame: SseFrame,
    source: FrameSource,
    sink: Subscriber<BaseEvent>,
  ): "terminal" | "continues" | "event" {
    let event: unknown;
    try {
      event = JSON.parse(frame.data);
    } catch (error) {
      throw new StreamProtocolError(`Invalid event: ${(error as Error).message}`);
    }
    if (typeof event !== "object" || event === null || Array.isArray(event)) {
      throw new StreamProtocolError("Invalid event: the frame is not a JSON object.");
    }
    const type: unknown = (event as { type?: unknown }).type;
    if (typeof type !== "string" || type === "") {
      throw new StreamProtocolError("Invalid event: the frame carries no event type.");
    }
    const typed = event as BaseEvent & { threadId?: unknown; runId?: unknown };
    const ours = vendorMetadata(typed);
    const continues = ours?.continues as { lastEventId?: unknown } | undefined;
    if (continues !== undefined && typeof continues === "object" && continues !== null) {
      // Not one of the run's events: where this stream of it ended.
      if (typeof continues.lastEventId === "number") {
        run.lastSeq = continues.lastEventId;
        run.lastEventId = String(continues.lastEventId);
      }
      return "continues";
    }
    // The event's place in the run: its SSE id, else the one its metadata names.
    const id = frame.id ?? (typeof ours?.eventId === "number" ? String(ours.eventId) : undefined);
    if (id === undefined) {
      run.resumable = false;
    } else {
      const seq = /^\d+$/.test(id) ? Number(id) : undefined;
      if (seq !== undefined && run.lastSeq !== undefined && seq <= run.lastSeq) {
        return "event"; // already delivered before the reconnect
      }
      run.lastSeq = seq;
      run.lastEventId = id;
    }
    if (typed.type === EventType.RUN_STARTED) {
      if (typeof typed.threadId === "string") run.threadId = typed.threadId;
      if (typeof typed.runId === "string") run.runId = typed.runId;
      run.started = true;
    }
    if (typed.type === EventType.MESSAGES_SNAPSHOT) {
      const messages: unknown = (typed as { messages?: unknown }).messages;
      if (Array.isArray(messages)) run.snapshotOrder = messages.map((message: { id?: unknown }) => String(message.id));
    }
    const terminal = typed.type === EventType.RUN_FINISHED || typed.type === EventType.RUN_ERROR;
    if (terminal) {
      run.finished = true;
      run.terminal = typed.type;
    }
    run.delivered++;
    this.onFrame?.({ id: frame.id, event: typed, source });
    sink.next(typed);
    return terminal ? "terminal" : "event";
  }

  private eventsUrl(run: RunHandle): string {
    return `${this.baseUrl}/threads/${enc(run.threadId)}/runs/${enc(run.runId)}/events`;
  }

  /**
   * `POST .../cancel`, never with the run's (about to be aborted) signal. When the server has
   * not answered the run's request yet, it may not know the run: a 404 is then retried briefly.
   */
  private async postCancel(run: RunContext): Promise<CancelResult> {
    const url = `${this.baseUrl}/threads/${enc(run.threadId)}/runs/${enc(run.runId)}/cancel`;
    let tries = run.responded ? 1 : 8;
    for (;;) {
      tries--;
      try {
        const response = await this.fetch(url, {
          method: "POST",
          headers: { ...this.headers, "Content-Type": "application/json", Accept: "application/json" },
          body: "{}",
        });
        const body = await readBody(response);
        if (response.status === 404 && tries > 0 && !run.responded) {
          await sleep(250);
          continue;
        }
        return { status: response.status, body };
      } catch (error) {
        if (tries > 0) {
          await sleep(250);
          continue;
        }
        return { status: 0, body: undefined, error };
      }
    }
  }
}

/**
 * `messages` in `order` (a snapshot's ids), those it does not name after them as they were. The
 * 1.0 client merges a snapshot into the messages it has, keeping their order: a message it sent
 * after ones it had not seen yet would stay before them, where the server does not have it.
 */
function inOrder<M extends HeldMessage>(messages: M[], order: readonly string[]): M[] {
  const byId = new Map(messages.map((message) => [message.id, message]));
  const ordered = order.flatMap((id) => {
    const message = byId.get(id);
    return message ? [message] : [];
  });
  const named = new Set(order);
  return [...ordered, ...messages.filter((message) => !named.has(message.id))];
}

/** The id of the last message the server can hold (activity messages are UI state, never sent). */
function lastId(messages: readonly HeldMessage[]): string | undefined {
  for (let at = messages.length - 1; at >= 0; at--) {
    const message = messages[at];
    if (message && message.role !== "activity") return message.id;
  }
  return undefined;
}

/** The event's `metadata` under agui-lambda's key, when it has one. */
function vendorMetadata(event: BaseEvent): Record<string, unknown> | undefined {
  const metadata = (event as { metadata?: unknown }).metadata;
  if (typeof metadata !== "object" || metadata === null) return undefined;
  const ours = (metadata as Record<string, unknown>)[VENDOR_KEY];
  return typeof ours === "object" && ours !== null ? (ours as Record<string, unknown>) : undefined;
}

/** agui-lambda's key in an event's `metadata`. */
export const VENDOR_KEY = "agui-lambda";

function enc(id: string): string {
  return encodeURIComponent(id);
}

function trimSlashes(url: string): string {
  return url.replace(/\/+$/, "");
}

async function readBody(response: Response): Promise<unknown> {
  const text = await response.text();
  if ((response.headers.get("content-type") ?? "").includes("application/json")) {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      return text;
    }
  }
  return text;
}

async function httpError(response: Response): Promise<HttpStatusError> {
  return new HttpStatusError(response.status, await readBody(response).catch(() => ""));
}

async function throwIfNotOk(response: Response): Promise<void> {
  if (!response.ok) throw await httpError(response);
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException("This operation was aborted", "AbortError");
}

function isAbortError(error: unknown): boolean {
  return typeof error === "object" && error !== null && (error as { name?: unknown }).name === "AbortError";
}

/** Aborted when either signal is (AbortSignal.any, for runtimes without it). */
function linkedSignal(a: AbortSignal, b: AbortSignal): AbortSignal {
  const controller = new AbortController();
  for (const signal of [a, b]) {
    if (signal.aborted) {
      controller.abort(signal.reason);
      break;
    }
    signal.addEventListener("abort", () => controller.abort(signal.reason), { once: true });
  }
  return controller.signal;
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
