// How one call is sent: its deadline and signal, its attempts, and which
// failures it is sent again after. The rules are the Go client's
// (client/client.go), so that an app behaves the same in either language.
import { CountersError, errorOfAnswer } from "./errors.js";

/** Options every call takes. */
export interface CallOptions {
  /** Aborts the call, its retries and the pauses between them. */
  signal?: AbortSignal;
  /**
   * How long the whole call may take, retries included, in ms; past it the
   * call fails with a "TimeoutError" DOMException, and a retry whose pause
   * would end after it is not tried. The client's timeoutMs by default; 0
   * for none.
   */
  timeoutMs?: number;
}

/** Which failures a request may be sent again after. */
export type RetryPolicy =
  // reads, deletes, resets, and writes with an idempotency key: sending
  // them twice has the effect of sending them once.
  | "safe"
  // creations without a key: tried again only when the service certainly
  // did nothing (429, or a connection never made).
  | "unsent";

/** One call: what to send, and how it may be retried. */
export interface Request {
  method: string;
  /** Below /v1 (unless ops), already escaped. */
  path: string;
  /** The path is an operations endpoint, outside /v1 (/readyz). */
  ops?: boolean;
  query?: Record<string, string | undefined>;
  /** Called once per attempt; undefined sends no body. */
  body?: () => BodyInit;
  /** The body is a stream (fetch needs duplex: "half" for it). */
  streamed?: boolean;
  contentType?: string;
  headers?: Record<string, string>;
  retry?: RetryPolicy;
  /** The request carries an Idempotency-Key: key, or one made for the call. */
  idempotent?: boolean;
  key?: string;
  /** Overrides the client's retries (0: sent once). */
  retries?: number;
}

/** The settings of sending. */
export interface Transport {
  base: string;
  token: string;
  fetch: typeof globalThis.fetch;
  retries: number;
  backoffMs: number;
  maxBackoffMs: number;
}

/**
 * The signal and deadline of one call: the caller's signal, and its
 * timeout. done() lets both go once the call is over.
 */
export class Scope {
  readonly signal: AbortSignal;
  readonly deadline: number | undefined;
  private readonly ctl = new AbortController();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private unlink: (() => void) | undefined;

  constructor(signal: AbortSignal | undefined, timeoutMs: number | undefined) {
    this.signal = this.ctl.signal;
    if (signal) {
      if (signal.aborted) this.ctl.abort(signal.reason);
      else {
        const onAbort = () => this.ctl.abort(signal.reason);
        signal.addEventListener("abort", onAbort, { once: true });
        this.unlink = () => signal.removeEventListener("abort", onAbort);
      }
    }
    if (timeoutMs !== undefined && timeoutMs > 0) {
      this.deadline = Date.now() + timeoutMs;
      this.timer = setTimeout(
        () => this.ctl.abort(new DOMException(`The call took longer than its timeout of ${timeoutMs} ms.`, "TimeoutError")),
        timeoutMs,
      );
    }
  }

  /** Aborts what the scope still runs (a stream that is no longer read). */
  abort(reason?: unknown): void {
    this.ctl.abort(reason);
  }

  /** Throws the reason the scope was aborted for, if it was. */
  check(): void {
    if (this.signal.aborted) throw this.signal.reason;
  }

  done(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.unlink?.();
    this.timer = this.unlink = undefined;
  }
}

/** Waits ms, or until the signal aborts (then throws its reason). */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const t = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal.reason);
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * A new Idempotency-Key: a random UUID (122 random bits). crypto.randomUUID
 * is global in browsers (secure contexts) and Node 19+; Node 18 has it in
 * node:crypto, which a bundler must not try to resolve for a browser.
 */
export async function newIdempotencyKey(): Promise<string> {
  const c = (globalThis as { crypto?: Crypto }).crypto;
  if (typeof c?.randomUUID === "function") return c.randomUUID();
  if (typeof c?.getRandomValues === "function") {
    const b = c.getRandomValues(new Uint8Array(16));
    b[6] = (b[6]! & 0x0f) | 0x40;
    b[8] = (b[8]! & 0x3f) | 0x80;
    const h = Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
  }
  const specifier = "node:crypto";
  const m = (await import(/* webpackIgnore: true */ /* @vite-ignore */ specifier)) as { randomUUID(): string };
  return m.randomUUID();
}

// The codes of Node's fetch (undici) for a connection that was never
// made: nothing was sent. Browsers say only "Failed to fetch", which is
// taken for an answer that may have been lost.
const notConnected = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH", "UND_ERR_CONNECT_TIMEOUT"]);

function neverConnected(err: unknown): boolean {
  const e = err as { code?: unknown; cause?: { code?: unknown; errors?: { code?: unknown }[] } } | undefined;
  const code = e?.cause?.code ?? e?.code;
  if (typeof code === "string" && notConnected.has(code)) return true;
  // Node tries each address of a name; all refused is an AggregateError.
  const all = e?.cause?.errors;
  return Array.isArray(all) && all.length > 0 && all.every((x) => typeof x?.code === "string" && notConnected.has(x.code));
}

/** Whether a failed attempt may be sent again under policy. */
function retriable(err: unknown, policy: RetryPolicy): boolean {
  if (err instanceof CountersError) {
    if (err.status === 429) return true;
    if (err.status === 502 || err.status === 503 || err.status === 504) return policy === "safe";
    return false;
  }
  if (policy === "unsent") return neverConnected(err);
  return true; // a network error: the connection broke, the answer was lost
}

/** Reads a Retry-After header, seconds or an HTTP date, as ms; 0 for none. */
function retryAfter(v: string | null): number {
  if (v === null || v.trim() === "") return 0;
  if (/^\s*\d+\s*$/.test(v)) return Number(v) * 1000;
  const t = Date.parse(v);
  return Number.isNaN(t) ? 0 : Math.max(0, t - Date.now());
}

/**
 * The pause before retry attempt+1: exponential, capped, and drawn between
 * half and all of it, so that clients that failed together do not come
 * back together.
 */
function pause(t: Transport, attempt: number): number {
  let d = t.backoffMs * 2 ** Math.min(attempt, 20);
  if (d > t.maxBackoffMs) d = t.maxBackoffMs;
  return d / 2 + Math.random() * (d / 2);
}

/**
 * Sends the request with its retries. On a 2xx answer it returns what
 * finish makes of it, within the attempt: a body that breaks while it is
 * read is a lost answer, retried as one. Any other answer is read and
 * thrown as a CountersError.
 */
export async function send<T>(t: Transport, r: Request, scope: Scope, finish: (res: Response) => Promise<T>): Promise<T> {
  let url = t.base + (r.ops ? "" : "/v1") + r.path;
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(r.query ?? {})) if (v !== undefined) q.set(k, v);
  if ([...q.keys()].length > 0) url += "?" + q.toString();
  const headers: Record<string, string> = { Accept: "application/json", ...r.headers };
  if (r.body) headers["Content-Type"] = r.contentType ?? "application/json";
  if (t.token) headers["Authorization"] = "Bearer " + t.token;
  if (r.idempotent) headers["Idempotency-Key"] = r.key ?? (await newIdempotencyKey());
  const retries = r.retries ?? t.retries;
  const policy = r.retry ?? "safe";
  let lost = false; // an earlier attempt's answer was lost: it may have done its work
  for (let attempt = 0; ; attempt++) {
    scope.check();
    const init: RequestInit & { duplex?: "half" } = { method: r.method, headers, signal: scope.signal };
    if (r.body) init.body = r.body();
    if (r.streamed) init.duplex = "half";
    let err: unknown;
    let wait = 0;
    try {
      const res = await t.fetch(url, init);
      if (res.status < 300) return await finish(res);
      if (lost && r.method === "DELETE" && res.status === 404) {
        // The attempt whose answer was lost deleted it: what was asked is done.
        await res.body?.cancel();
        return await finish(new Response(null, { status: 204 }));
      }
      // A proxy's 502 or 504 may also have come after the service did it.
      lost ||= res.status === 502 || res.status === 504;
      wait = retryAfter(res.headers.get("Retry-After"));
      err = errorOfAnswer(res.status, res.statusText, res.headers, await res.text());
    } catch (e) {
      scope.check(); // aborted, or past the timeout: not retried
      err = e;
      lost = true;
    }
    if (attempt >= retries || !retriable(err, policy)) throw err;
    if (wait <= 0) wait = pause(t, attempt);
    // No room for another attempt: the answer we have is the honest one.
    if (scope.deadline !== undefined && Date.now() + wait > scope.deadline) throw err;
    await sleep(wait, scope.signal);
  }
}
