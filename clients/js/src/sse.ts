// A parser of Server-Sent Events (the WHATWG event-stream format), fed the
// text of fetch's body stream as it comes. EventSource would do this in a
// browser, but Node has none, and EventSource can neither send an
// Authorization header nor say which answer (404, 429) ended a stream.
import type { CounterEvent } from "./types.js";

export class SSEParser {
  /** Text after the last line break: the start of a line still coming. */
  private rest = "";
  /** The previous text ended with \r: a \n starting the next is the same break. */
  private afterCR = false;
  private event = "";
  private data = "";
  private hasData = false;
  /** The id of the event being read. */
  private idBuf = "";
  /** The id of the last whole event, sent back as Last-Event-ID. */
  lastId = "";
  /** The pause before a reconnection, in ms, as the stream's retry: field sets it. */
  retryMs: number;

  constructor(retryMs: number) {
    this.retryMs = retryMs;
  }

  /** Takes the next piece of the stream's text and returns the events it completed. */
  feed(text: string): CounterEvent[] {
    const out: CounterEvent[] = [];
    let s = this.rest + text;
    if (this.afterCR && s.startsWith("\n")) s = s.slice(1);
    this.afterCR = false;
    let start = 0;
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      const ev = this.line(s.slice(start, i));
      if (ev) out.push(ev);
      if (c === 13) {
        if (i + 1 === s.length) this.afterCR = true;
        else if (s.charCodeAt(i + 1) === 10) i++;
      }
      start = i + 1;
    }
    this.rest = s.slice(start);
    return out;
  }

  /**
   * Forgets the event that a broken connection cut, keeping the last whole
   * event's id and the retry: a new connection starts with a new event.
   */
  reset(): void {
    this.rest = "";
    this.afterCR = false;
    this.event = "";
    this.data = "";
    this.hasData = false;
    this.idBuf = this.lastId;
  }

  private line(l: string): CounterEvent | undefined {
    if (l === "") {
      // An event counts as seen only once it is whole: the id of one cut
      // by a broken connection must not be sent back, or its value would
      // be taken for delivered.
      this.lastId = this.idBuf;
      const ev = this.hasData ? this.dispatch() : undefined;
      this.event = "";
      this.data = "";
      this.hasData = false;
      return ev;
    }
    if (l.startsWith(":")) return undefined; // a comment: the keep-alive
    const colon = l.indexOf(":");
    const field = colon < 0 ? l : l.slice(0, colon);
    let value = colon < 0 ? "" : l.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    switch (field) {
      case "event":
        this.event = value;
        break;
      case "data":
        this.data = this.hasData ? this.data + "\n" + value : value;
        this.hasData = true;
        break;
      case "id":
        if (!value.includes("\u0000")) this.idBuf = value;
        break;
      case "retry":
        if (/^\d+$/.test(value)) this.retryMs = Number(value);
        break;
    }
    return undefined;
  }

  private dispatch(): CounterEvent | undefined {
    let d: { name?: unknown; value?: unknown; at?: unknown };
    try {
      d = JSON.parse(this.data);
    } catch {
      return undefined; // not an event of the contract: nothing to report
    }
    if (d === null || typeof d !== "object" || typeof d.name !== "string") return undefined;
    const ev: CounterEvent = { type: this.event || "message", id: this.lastId, name: d.name, data: this.data };
    if (typeof d.value === "number") ev.value = d.value;
    if (typeof d.at === "string") ev.at = d.at;
    return ev;
  }
}
