/**
 * A small Server-Sent Events parser that keeps what @ag-ui/client's `parseSSEStream` drops: the
 * `id:` of each event. Follows the WHATWG event-stream rules that matter here: lines end in
 * `\n`, `\r\n` or `\r`; a blank line dispatches; `:` starts a comment; `data:` lines join with
 * `\n`; one space after the colon is dropped; an event with no data is not dispatched.
 */

/** One dispatched event. `id` is the `id:` field of this event, if it had one. */
export interface SseFrame {
  id?: string;
  event?: string;
  data: string;
}

/** The most a single event may hold, as in @ag-ui/client (10 MB of decoded text). */
export const MAX_FRAME_CHARS = 10 * 1024 * 1024;

export class SseParser {
  private decoder = new TextDecoder("utf-8");
  private pending = "";
  private data: string[] = [];
  private dataChars = 0;
  private id: string | undefined;
  private event: string | undefined;
  private pendingCr = false;

  /** Feeds bytes (or text); returns the events completed by them. */
  push(chunk: Uint8Array | string): SseFrame[] {
    const text = typeof chunk === "string" ? chunk : this.decoder.decode(chunk, { stream: true });
    return this.feed(text);
  }

  /** The end of the stream: an event not closed by a blank line is discarded, per the spec. */
  end(): SseFrame[] {
    const frames = this.feed(this.decoder.decode());
    this.pending = "";
    this.reset();
    return frames;
  }

  private feed(text: string): SseFrame[] {
    const frames: SseFrame[] = [];
    let start = 0;
    let input = text;
    if (this.pendingCr && input.startsWith("\n")) {
      // The "\n" of a "\r\n" that was split across two chunks.
      input = input.slice(1);
    }
    this.pendingCr = false;
    for (let i = 0; i < input.length; i++) {
      const c = input.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      const line = this.pending + input.slice(start, i);
      this.pending = "";
      if (c === 13) {
        if (i + 1 < input.length) {
          if (input.charCodeAt(i + 1) === 10) i++;
        } else {
          this.pendingCr = true;
        }
      }
      start = i + 1;
      const frame = this.line(line);
      if (frame) frames.push(frame);
    }
    this.pending += input.slice(start);
    if (this.pending.length + this.dataChars > MAX_FRAME_CHARS) {
      throw new Error(`SSE event exceeds ${MAX_FRAME_CHARS / (1024 * 1024)} MB`);
    }
    return frames;
  }

  private line(line: string): SseFrame | undefined {
    if (line === "") {
      if (this.data.length === 0) {
        this.reset();
        return undefined;
      }
      const frame: SseFrame = { data: this.data.join("\n") };
      if (this.id !== undefined) frame.id = this.id;
      if (this.event !== undefined) frame.event = this.event;
      this.reset();
      return frame;
    }
    if (line.startsWith(":")) return undefined;
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    switch (field) {
      case "data":
        this.data.push(value);
        this.dataChars += value.length + 1;
        if (this.dataChars > MAX_FRAME_CHARS) {
          throw new Error(`SSE event exceeds ${MAX_FRAME_CHARS / (1024 * 1024)} MB`);
        }
        break;
      case "id":
        if (!value.includes("\0")) this.id = value;
        break;
      case "event":
        this.event = value;
        break;
      default:
        // retry: and unknown fields are ignored.
        break;
    }
    return undefined;
  }

  private reset() {
    this.data = [];
    this.dataChars = 0;
    this.id = undefined;
    this.event = undefined;
  }
}
