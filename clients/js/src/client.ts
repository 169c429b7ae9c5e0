import { CountersError, invalidArgument } from "./errors.js";
import { type CallOptions, type Request, type Transport, Scope, send, sleep } from "./http.js";
import { SSEParser } from "./sse.js";
import { checkIdempotencyKey, checkInteger, checkLabels, checkName } from "./validate.js";
import type {
  Board,
  Breakdown,
  Counter,
  CounterEvent,
  CounterPage,
  CounterValue,
  Delivery,
  History,
  HistoryStep,
  ImportReport,
  Key,
  KeyRequest,
  KeyWithSecret,
  Labels,
  Readiness,
  Step,
  Ticket,
  TicketPage,
  Webhook,
  WebhookRequest,
  WebhookRotated,
  WebhookWithSecret,
} from "./types.js";

/** The client's settings; all optional. */
export interface ClientOptions {
  /**
   * Sent as "Authorization: Bearer <token>": the admin token
   * (COUNTERS_API_TOKEN) or an API key's secret. None is sent without it,
   * which the service allows for clients on its own machine when it has no
   * admin token, and for the public page-hit endpoints.
   */
  token?: string;
  /** How many times a failed attempt is tried again (default 4); negative turns retries off. */
  retries?: number;
  /** The pause before the first retry, in ms (default 100); it doubles for each later one, up to maxBackoffMs. */
  backoffMs?: number;
  /** The longest pause between retries, in ms (default 2000). Each pause is drawn between half of it and all of it. */
  maxBackoffMs?: number;
  /**
   * How long a call may take, retries included, in ms (default 30000; 0 for
   * none). Export, import and watch have none unless their call gives one:
   * they last as long as their data.
   */
  timeoutMs?: number;
  /** The fetch to send with; globalThis.fetch by default. */
  fetch?: typeof globalThis.fetch;
}

export type { CallOptions } from "./http.js";

/** Options of a write that counts once however often it is retried. */
export interface WriteOptions extends CallOptions {
  /**
   * The Idempotency-Key of the call (1 to 255 printable ASCII characters)
   * instead of one made for it: an app that keeps the key with its own
   * record (an order) can retry the call after a restart and still count
   * once. The service keeps a key for 24 hours; the same key with another
   * request is "conflict".
   */
  idempotencyKey?: string;
}

/** Options of an increment. */
export interface IncrementOptions extends WriteOptions {
  /** What the step was made of, counted with it and read back by breakdown(). */
  labels?: Labels;
}

/** Options of a set. */
export interface SetOptions extends WriteOptions {
  /** The lower bound: a number sets it, null removes it, undefined keeps it as it is. */
  min?: number | null;
  /** The upper bound, as min. */
  max?: number | null;
  /** Only create: "conflict" when the counter exists (If-None-Match: *). */
  createOnly?: boolean;
}

/** Which counters a list shows. */
export interface ListOptions extends CallOptions {
  /** Only names that start with it; all the key may see when left out. */
  prefix?: string;
  /** Start after this name. */
  after?: string;
  /** Counters per request, 1 to 1000 (the service's default: 100). */
  pageSize?: number;
}

/** The periods of a history; the last 30 days in UTC by default. */
export interface HistoryOptions extends CallOptions {
  /** "day" by default. */
  step?: HistoryStep;
  /**
   * The half-open range [from, to), widened to whole periods: a Date, an
   * RFC 3339 time, "YYYY-MM-DD" (local midnight in tz) or "YYYY-MM".
   */
  from?: Date | string;
  to?: Date | string;
  /** An IANA zone where days and months start; UTC by default. */
  tz?: string;
}

/** The range of a breakdown and how many rows it lists; the last 30 days and 20 rows by default. */
export interface BreakdownOptions extends CallOptions {
  /** As in HistoryOptions; the service widens the range to whole UTC days, and the answer's from and to say what it counted. */
  from?: Date | string;
  to?: Date | string;
  tz?: string;
  /** Rows, 1 to 1000; 20 by default. */
  limit?: number;
}

/** The `by` of a prefixBreakdown that splits it by counter. */
export const BY_NAME = "name";

/** Which counters an export writes. */
export interface ExportOptions extends CallOptions {
  /** Only names that start with it; every counter when left out. */
  prefix?: string;
}

/** The lines an import takes: JSON lines as export writes them. */
export type ImportBody = string | Uint8Array | ArrayBuffer | Blob | ReadableStream<Uint8Array> | AsyncIterable<Uint8Array | string>;

/** How an import applies its lines. */
export interface ImportOptions extends WriteOptions {
  /** Replace existing counters' values and bounds; by default an existing counter is skipped. */
  overwrite?: boolean;
  /** Apply all lines or none, in one transaction. */
  atomic?: boolean;
  /** The lines are gzipped (Content-Encoding: gzip). */
  gzip?: boolean;
}

/** Options of a watch: it runs until the loop breaks or the signal aborts. */
export interface WatchOptions {
  signal?: AbortSignal;
}

/** Options of a webhook's deliveries. */
export interface DeliveriesOptions extends CallOptions {
  /** How many, newest first; the service's default when left out. */
  limit?: number;
}

/**
 * How much of an import from a stream is read ahead: all of a short one,
 * which can then be sent again.
 */
const importBuffer = 1 << 20;

/**
 * How long a stream may stay silent before it is taken for dead and
 * reconnected: the service sends a comment at least every 15 seconds, so
 * three missed ones mean the connection is gone.
 */
const watchIdleMs = 45_000;

const utf8 = new TextEncoder();

/** A counter name, or any value, as one path segment: "/" escaped too. */
function esc(s: string): string {
  try {
    return encodeURIComponent(s);
  } catch {
    throw invalidArgument(`${JSON.stringify(s)} is not valid UTF-8.`);
  }
}

/** An id of the API as a path segment. */
function id(what: string, n: number): string {
  if (!Number.isSafeInteger(n)) throw invalidArgument(`${what} must be an integer, not ${n}.`);
  return String(n);
}

function time(t: Date | string | undefined): string | undefined {
  return t instanceof Date ? t.toISOString() : t;
}

function jsonBody(v: unknown): () => BodyInit {
  const s = JSON.stringify(v);
  return () => s;
}

function concat(chunks: Uint8Array[]): Uint8Array {
  let n = 0;
  for (const c of chunks) n += c.length;
  const out = new Uint8Array(n);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

/**
 * A client of one countersvc service. Every call takes an AbortSignal and
 * a timeout; failures that may pass (no connection, a lost answer, 429,
 * 502, 503, 504) are retried with backoff and jitter, or after the
 * answer's Retry-After; writes that must count once (increment, set,
 * batch, an import that can be sent again) carry one Idempotency-Key on
 * every attempt, so a sale is never counted twice. Creations without a key
 * (a board, a ticket, an API key, a webhook) and page hits are sent again
 * only when the service certainly did nothing (429, no connection). An
 * answered error is a CountersError carrying the API's code.
 */
export class CountersClient {
  private readonly t: Transport;
  private readonly timeoutMs: number;

  /** A client of the service at baseURL, such as "http://localhost:8080" (with or without /v1). */
  constructor(baseURL: string, options: ClientOptions = {}) {
    let u: URL;
    try {
      u = new URL(baseURL.trim());
    } catch {
      throw new TypeError(`countersvc: the service's URL must be http://host[:port] or https://..., not ${JSON.stringify(baseURL)}`);
    }
    if ((u.protocol !== "http:" && u.protocol !== "https:") || u.host === "") {
      throw new TypeError(`countersvc: the service's URL must be http://host[:port] or https://..., not ${JSON.stringify(baseURL)}`);
    }
    const path = u.pathname.replace(/\/$/, "").replace(/\/v1$/, "");
    const retries = options.retries ?? 4;
    const f = options.fetch ?? globalThis.fetch;
    if (typeof f !== "function") throw new TypeError("countersvc: no fetch: give one in the options (Node 18 or later has one)");
    this.t = {
      base: u.origin + path,
      token: options.token ?? "",
      // Called unbound, fetch of some browsers throws "Illegal invocation".
      fetch: (input, init) => f(input, init),
      retries: Math.max(0, retries),
      backoffMs: options.backoffMs && options.backoffMs > 0 ? options.backoffMs : 100,
      maxBackoffMs: options.maxBackoffMs && options.maxBackoffMs > 0 ? options.maxBackoffMs : 2000,
    };
    this.timeoutMs = options.timeoutMs ?? 30_000;
  }

  /** Sends r and decodes its JSON answer; status tells 200 from 201. */
  private async call<T>(r: Request, opts: CallOptions = {}): Promise<{ status: number; value: T }> {
    const scope = new Scope(opts.signal, opts.timeoutMs ?? this.timeoutMs);
    try {
      const { status, text } = await send(this.t, r, scope, async (res) => ({ status: res.status, text: await res.text() }));
      let value: T = undefined as T;
      if (text !== "") {
        try {
          value = JSON.parse(text) as T;
        } catch (e) {
          throw new Error(`countersvc: the service's answer to ${r.method} ${r.path} is not what the API says (${e}): ${text.slice(0, 200)}`);
        }
      }
      return { status, value };
    } finally {
      scope.done();
    }
  }

  private async json<T>(r: Request, opts?: CallOptions): Promise<T> {
    return (await this.call<T>(r, opts)).value;
  }

  /** An idempotent write: its key checked, or one made by send. */
  private keyed(r: Request, opts: WriteOptions): Request {
    if (opts.idempotencyKey !== undefined) checkIdempotencyKey(opts.idempotencyKey);
    return { ...r, idempotent: true, key: opts.idempotencyKey };
  }

  // Counters

  /**
   * Adds by (negative and 0 allowed; 1 by default) to the counter name,
   * creating it at 0 first, and returns the value this increment produced.
   * A retry after a lost answer is recognised by the service and counts
   * once. Errors: out_of_range (past int64 or the bounds; nothing changed),
   * permission_denied, invalid_argument, conflict (idempotencyKey reused
   * for another request).
   */
  async increment(name: string, by = 1, opts: IncrementOptions = {}): Promise<number> {
    checkName(name);
    checkInteger("by", by);
    checkLabels(opts.labels);
    const r = this.keyed({ method: "POST", path: `/counters/${esc(name)}/increment`, body: jsonBody({ by, labels: opts.labels }) }, opts);
    return (await this.json<CounterValue>(r, opts)).value;
  }

  /** The counter name. Errors: not_found. */
  async get(name: string, opts?: CallOptions): Promise<Counter> {
    checkName(name);
    return this.json<Counter>({ method: "GET", path: `/counters/${esc(name)}` }, opts);
  }

  /**
   * Sets (resets) the counter name to value, creating it when missing;
   * created says whether this call created it. Errors: out_of_range (the
   * value outside the bounds), conflict (createOnly, and it exists),
   * permission_denied, invalid_argument (min above max).
   */
  async set(name: string, value: number, opts: SetOptions = {}): Promise<{ counter: Counter; created: boolean }> {
    checkName(name);
    checkInteger("value", value);
    const body: { value: number; min?: number | null; max?: number | null } = { value };
    for (const k of ["min", "max"] as const) {
      const b = opts[k];
      if (b === undefined) continue;
      if (b !== null) checkInteger(k, b);
      body[k] = b;
    }
    const r = this.keyed(
      { method: "PUT", path: `/counters/${esc(name)}`, body: jsonBody(body), headers: opts.createOnly ? { "If-None-Match": "*" } : {} },
      opts,
    );
    const { status, value: counter } = await this.call<Counter>(r, opts);
    return { counter, created: status === 201 };
  }

  /** Removes the counter name and its history. Errors: not_found. */
  async delete(name: string, opts?: CallOptions): Promise<void> {
    checkName(name);
    await this.call({ method: "DELETE", path: `/counters/${esc(name)}` }, opts);
  }

  /** One page of counters in name order; its next_after is the after of the next. */
  async listPage(opts: ListOptions = {}): Promise<CounterPage> {
    const query = { prefix: opts.prefix || undefined, after: opts.after || undefined, limit: opts.pageSize ? String(opts.pageSize) : undefined };
    return this.json<CounterPage>({ method: "GET", path: "/counters", query }, opts);
  }

  /**
   * The counters in name order (byte order), following the pages to the
   * last: `for await (const c of client.list({prefix: "books/"}))`.
   * Breaking out of the loop stops it; an error ends it.
   */
  async *list(opts: ListOptions = {}): AsyncGenerator<Counter, void, undefined> {
    let after = opts.after ?? "";
    for (;;) {
      const page = await this.listPage({ ...opts, after });
      yield* page.counters;
      if (page.next_after === null || page.next_after === after) return;
      after = page.next_after;
    }
  }

  /**
   * Sets every counter whose name starts with prefix (not empty) to value
   * and returns how many it set; names starting with _ are never touched.
   */
  async reset(prefix: string, value = 0, opts?: CallOptions): Promise<number> {
    if (prefix === "") throw invalidArgument("A reset needs a prefix that is not empty; resetAll sets every counter.");
    checkInteger("value", value);
    // A reset sets values: sending it twice is sending it once.
    return (await this.json<{ reset: number }>({ method: "POST", path: "/counters/reset", body: jsonBody({ prefix, value }) }, opts)).reset;
  }

  /** Sets every counter to value (admin only) and returns how many it set. */
  async resetAll(value = 0, opts?: CallOptions): Promise<number> {
    checkInteger("value", value);
    return (await this.json<{ reset: number }>({ method: "POST", path: "/counters/reset", body: jsonBody({ all: true, value }) }, opts)).reset;
  }

  /**
   * Applies 1 to 100 increments all or nothing and returns the values they
   * produced, in order. If any fails, nothing changed and the error names
   * the item.
   */
  async batch(steps: Step[], opts: WriteOptions = {}): Promise<CounterValue[]> {
    if (steps.length < 1 || steps.length > 100) throw invalidArgument(`A batch carries 1 to 100 increments, not ${steps.length}.`);
    steps.forEach((s, i) => {
      try {
        checkName(s.name);
        checkInteger("by", s.by);
        checkLabels(s.labels);
      } catch (e) {
        throw e instanceof CountersError ? invalidArgument(`Increment ${i}: ${e.message}`) : e;
      }
    });
    const increments = steps.map((s) => ({ name: s.name, by: s.by, labels: s.labels }));
    const r = this.keyed({ method: "POST", path: "/counters/batch", body: jsonBody({ increments }) }, opts);
    return (await this.json<{ counters: CounterValue[] }>(r, opts)).counters;
  }

  /**
   * Asks the service whether it is ready to serve (GET /readyz): its
   * answer when it is, a CountersError "unavailable" while MySQL does not
   * answer.
   */
  async ready(opts?: CallOptions): Promise<Readiness> {
    return this.json<Readiness>({ method: "GET", path: "/readyz", ops: true }, opts);
  }

  // History and breakdowns

  /**
   * The counts of the counter name per period. Errors: not_found (neither
   * a value nor history), invalid_argument (an unknown step or zone, a bad
   * time, more than 1,000 points).
   */
  async history(name: string, opts: HistoryOptions = {}): Promise<History> {
    checkName(name);
    return this.json<History>({ method: "GET", path: `/counters/${esc(name)}/history`, query: historyQuery(opts) }, opts);
  }

  /** Sums the counts of every counter whose name starts with prefix (not empty) per period. */
  async prefixHistory(prefix: string, opts: HistoryOptions = {}): Promise<History> {
    return this.json<History>({ method: "GET", path: "/history", query: { ...historyQuery(opts), prefix } }, opts);
  }

  /**
   * Splits the count of the counter name by the label `by`. Errors:
   * not_found, invalid_argument (a bad label, time or zone, a limit outside
   * 1 to 1000).
   */
  async breakdown(name: string, by: string, opts: BreakdownOptions = {}): Promise<Breakdown> {
    checkName(name);
    return this.json<Breakdown>({ method: "GET", path: `/counters/${esc(name)}/breakdown`, query: breakdownQuery(by, opts) }, opts);
  }

  /** Splits the count of every counter under prefix (not empty) by the label `by`, or by counter with BY_NAME. */
  async prefixBreakdown(prefix: string, by: string, opts: BreakdownOptions = {}): Promise<Breakdown> {
    return this.json<Breakdown>({ method: "GET", path: "/breakdown", query: { ...breakdownQuery(by, opts), prefix } }, opts);
  }

  // Page hits

  /**
   * Counts a page hit of name, which must be under one of the service's
   * public prefixes (hits/ by default), and returns the value: what the
   * page-hit snippet does, for a program that serves the page itself. A
   * repeat from the same client within the service's window answers the
   * value without counting; past the client's rate limit the answer is
   * "rate_limited" (retried after its Retry-After when the timeout leaves
   * room). It is not retried after a lost answer, which would count the
   * hit twice.
   */
  async hit(name: string, opts?: CallOptions): Promise<number> {
    checkName(name);
    return (await this.json<CounterValue>({ method: "GET", path: `/hits/${esc(name)}`, retry: "unsent" }, opts)).value;
  }

  // Boards and tickets

  /**
   * Makes a board of the company. The slug is upper-cased and must then
   * match ^[A-Z][A-Z0-9]{0,9}$. Errors: conflict (the company has the
   * slug), invalid_argument.
   */
  async createBoard(companyId: number, slug: string, title: string, opts?: CallOptions): Promise<Board> {
    const body = jsonBody({ company_id: companyId, slug, title });
    return this.json<Board>({ method: "POST", path: "/boards", body, retry: "unsent" }, opts);
  }

  /** The board id. Errors: not_found. */
  async board(boardId: number, opts?: CallOptions): Promise<Board> {
    return this.json<Board>({ method: "GET", path: `/boards/${id("boardId", boardId)}` }, opts);
  }

  /** Takes the board's next number for a new ticket. Not retried after a lost answer: a retry would take another number. */
  async createTicket(boardId: number, title: string, description = "", opts?: CallOptions): Promise<Ticket> {
    const r: Request = { method: "POST", path: `/boards/${id("boardId", boardId)}/tickets`, body: jsonBody({ title, description }), retry: "unsent" };
    return this.json<Ticket>(r, opts);
  }

  /** Ticket localId of the board. Errors: not_found. */
  async ticket(boardId: number, localId: number, opts?: CallOptions): Promise<Ticket> {
    return this.json<Ticket>({ method: "GET", path: `/boards/${id("boardId", boardId)}/tickets/${id("localId", localId)}` }, opts);
  }

  /** The company's ticket of a key such as NINJA-7. Errors: not_found. */
  async ticketByKey(companyId: number, key: string, opts?: CallOptions): Promise<Ticket> {
    return this.json<Ticket>({ method: "GET", path: `/companies/${id("companyId", companyId)}/tickets/${esc(key)}` }, opts);
  }

  /** One page of the board's tickets, by number, after the ticket `after`. */
  async ticketsPage(boardId: number, after = 0, opts?: CallOptions): Promise<TicketPage> {
    const query = { after: after > 0 ? id("after", after) : undefined };
    return this.json<TicketPage>({ method: "GET", path: `/boards/${id("boardId", boardId)}/tickets`, query }, opts);
  }

  /** The board's tickets by number, following the pages to the last. */
  async *tickets(boardId: number, opts?: CallOptions): AsyncGenerator<Ticket, void, undefined> {
    let after = 0;
    for (;;) {
      const page = await this.ticketsPage(boardId, after, opts);
      yield* page.tickets;
      if (page.next_after === null || page.next_after <= after) return;
      after = page.next_after;
    }
  }

  /** Deletes a ticket; its number stays used. Errors: not_found. */
  async deleteTicket(boardId: number, localId: number, opts?: CallOptions): Promise<void> {
    await this.call({ method: "DELETE", path: `/boards/${id("boardId", boardId)}/tickets/${id("localId", localId)}` }, opts);
  }

  // API keys

  /** Makes an API key (admin only) and returns it with its secret, which is shown only here. */
  async createKey(k: KeyRequest, opts?: CallOptions): Promise<KeyWithSecret> {
    return this.json<KeyWithSecret>({ method: "POST", path: "/keys", body: jsonBody(k), retry: "unsent" }, opts);
  }

  /** The API keys, without secrets. */
  async keys(opts?: CallOptions): Promise<Key[]> {
    return (await this.json<{ keys: Key[] }>({ method: "GET", path: "/keys" }, opts)).keys;
  }

  /** The API key id, without its secret. Errors: not_found. */
  async key(keyId: number, opts?: CallOptions): Promise<Key> {
    return this.json<Key>({ method: "GET", path: `/keys/${id("keyId", keyId)}` }, opts);
  }

  /** Revokes the API key id: every process of the service refuses it within a second. */
  async deleteKey(keyId: number, opts?: CallOptions): Promise<void> {
    await this.call({ method: "DELETE", path: `/keys/${id("keyId", keyId)}` }, opts);
  }

  // Webhooks

  /** Makes a webhook and returns it with its secret. Errors: invalid_argument (such as a URL of a private address). */
  async createWebhook(w: WebhookRequest, opts?: CallOptions): Promise<WebhookWithSecret> {
    return this.json<WebhookWithSecret>({ method: "POST", path: "/webhooks", body: jsonBody(w), retry: "unsent" }, opts);
  }

  /** The webhooks, without secrets. */
  async webhooks(opts?: CallOptions): Promise<Webhook[]> {
    return (await this.json<{ webhooks: Webhook[] }>({ method: "GET", path: "/webhooks" }, opts)).webhooks;
  }

  /** The webhook id, without its secret. */
  async webhook(hookId: number, opts?: CallOptions): Promise<Webhook> {
    return this.json<Webhook>({ method: "GET", path: `/webhooks/${id("hookId", hookId)}` }, opts);
  }

  /** Deletes the webhook id. */
  async deleteWebhook(hookId: number, opts?: CallOptions): Promise<void> {
    await this.call({ method: "DELETE", path: `/webhooks/${id("hookId", hookId)}` }, opts);
  }

  /** The webhook's latest deliveries, newest first. */
  async deliveries(hookId: number, opts: DeliveriesOptions = {}): Promise<Delivery[]> {
    const query = { limit: opts.limit ? String(opts.limit) : undefined };
    return (await this.json<{ deliveries: Delivery[] }>({ method: "GET", path: `/webhooks/${id("hookId", hookId)}/deliveries`, query }, opts))
      .deliveries;
  }

  /** Makes a webhook that was disabled (by a 410, or by failing for days) deliver again. */
  async enableWebhook(hookId: number, opts?: CallOptions): Promise<void> {
    await this.call({ method: "POST", path: `/webhooks/${id("hookId", hookId)}/enable` }, opts);
  }

  /**
   * Gives the webhook a new secret and returns the hook with it (shown only
   * here); for a day the secret it replaced signs the calls too. Never sent
   * again once it may have reached the service: a second rotation would
   * replace the secret this one returned.
   */
  async rotateWebhookSecret(hookId: number, opts?: CallOptions): Promise<WebhookRotated> {
    return this.json<WebhookRotated>({ method: "POST", path: `/webhooks/${id("hookId", hookId)}/rotate`, retry: "unsent" }, opts);
  }

  // Export and import

  /**
   * Every counter whose name starts with prefix, as the service streams
   * them: JSON lines in name order, one counter a line, the input of
   * import(). The promise settles once the service answers; the stream
   * then passes whole lines only, and errors (never just ends) when the
   * service ended it with an error line or it was cut short: a partial
   * export is never taken for the whole.
   */
  async export(opts: ExportOptions = {}): Promise<ReadableStream<Uint8Array>> {
    const scope = new Scope(opts.signal, opts.timeoutMs);
    const r: Request = { method: "GET", path: "/export", query: { prefix: opts.prefix || undefined }, headers: { Accept: "application/x-ndjson" } };
    let res: Response;
    try {
      res = await send(this.t, r, scope, async (res) => res);
    } catch (e) {
      scope.done();
      throw e;
    }
    return checkedLines(res, scope);
  }

  /**
   * Brings in counters from JSON lines as export() writes them ({"name":
   * ..., "value": n} with optional min, max and created_at). A string,
   * bytes or a Blob carry an Idempotency-Key and are retried like an
   * increment; so is a stream (or async iterable) of up to 1 MiB, which is
   * read whole first. A longer stream is sent once, as it arrives, since
   * the lines read cannot be read again (and in a browser, only where
   * fetch can stream a request body). An import that failed part-way
   * throws a CountersError whose report says what was committed; importing
   * again finishes it.
   */
  async import(lines: ImportBody, opts: ImportOptions = {}): Promise<ImportReport> {
    const query = { mode: opts.overwrite ? "overwrite" : undefined, atomic: opts.atomic ? "true" : undefined };
    let r: Request = {
      method: "POST",
      path: "/import",
      query,
      contentType: "application/x-ndjson",
      headers: opts.gzip ? { "Content-Encoding": "gzip" } : {},
    };
    const whole = await readAhead(lines);
    if (whole.complete) {
      const bytes = whole.bytes;
      r = this.keyed({ ...r, body: () => bytes as BodyInit }, opts);
    } else {
      let sent = false;
      const body = whole.rest;
      r = {
        ...r,
        streamed: true,
        retries: 0,
        body: () => {
          if (sent) throw new Error("countersvc: the import's lines were sent once and cannot be read again");
          sent = true;
          return body;
        },
      };
      if (opts.idempotencyKey !== undefined) r = this.keyed(r, opts);
    }
    return this.json<ImportReport>(r, { signal: opts.signal, timeoutMs: opts.timeoutMs ?? 0 });
  }

  // Live updates

  /**
   * The values of the counter name as they change: the current value at
   * once, then each new one (a stream may skip intermediate values, never
   * go back). When the connection drops it reconnects after the pause the
   * service asked for, sending the last event's id as Last-Event-ID, so
   * that nothing comes again unless the counter changed meanwhile. It runs
   * until the loop breaks or the signal aborts (then it throws the
   * signal's reason), or an answered error (not_found before the counter
   * exists) or a reconnection that failed after the retries ends it.
   */
  watch(name: string, opts: WatchOptions = {}): AsyncGenerator<CounterEvent, void, undefined> {
    checkName(name);
    return this.stream(`/counters/${esc(name)}/events`, {}, opts);
  }

  /** The changes of every counter whose name starts with prefix (not empty), from now on. */
  watchPrefix(prefix: string, opts: WatchOptions = {}): AsyncGenerator<CounterEvent, void, undefined> {
    return this.stream("/events", { prefix }, opts);
  }

  /**
   * The hit count of a page under the service's public prefixes, then each
   * new value, as watch() does; it needs no key, counts no hit, and a page
   * that has none yet starts at 0: what a page shows live.
   */
  watchHits(name: string, opts: WatchOptions = {}): AsyncGenerator<CounterEvent, void, undefined> {
    checkName(name);
    return this.stream(`/hits/${esc(name)}/events`, {}, opts);
  }

  private async *stream(path: string, query: Record<string, string>, opts: WatchOptions): AsyncGenerator<CounterEvent, void, undefined> {
    const parser = new SSEParser(this.t.backoffMs);
    const outer = new Scope(opts.signal, undefined);
    try {
      for (;;) {
        outer.check();
        // One connection: aborted when the stream goes silent, when the
        // loop breaks, or with the caller's signal.
        const conn = new Scope(outer.signal, undefined);
        const headers: Record<string, string> = { Accept: "text/event-stream" };
        if (parser.lastId !== "") headers["Last-Event-ID"] = parser.lastId;
        try {
          // An error here (no connection after the retries, an answered
          // error) ends the watch.
          const res = await send(this.t, { method: "GET", path, query, headers }, conn, async (res) => res);
          if (!res.body) throw new Error("countersvc: the service answered a watch without a stream");
          const reader = res.body.getReader();
          const text = new TextDecoder();
          let idle = setTimeout(() => conn.abort(), watchIdleMs);
          // Not every fetch errors a body it is reading when its signal
          // aborts (Debian's Node 18 with undici 5.15 leaves the read
          // pending): the abort ends the read here.
          const aborted = new Promise<never>((_, reject) => {
            if (conn.signal.aborted) reject(conn.signal.reason);
            conn.signal.addEventListener("abort", () => reject(conn.signal.reason), { once: true });
          });
          aborted.catch(() => {});
          try {
            for (;;) {
              let chunk: ReadableStreamReadResult<Uint8Array>;
              try {
                chunk = await Promise.race([reader.read(), aborted]);
              } catch {
                break; // the stream broke: reconnect
              }
              if (chunk.done) break; // the stream ended: reconnect
              clearTimeout(idle);
              idle = setTimeout(() => conn.abort(), watchIdleMs);
              yield* parser.feed(text.decode(chunk.value, { stream: true }));
            }
          } finally {
            clearTimeout(idle);
            conn.abort();
            reader.cancel().catch(() => {});
          }
        } finally {
          conn.done();
        }
        parser.reset();
        outer.check();
        await sleep(parser.retryMs, outer.signal);
      }
    } finally {
      outer.done();
    }
  }
}

function historyQuery(o: HistoryOptions): Record<string, string | undefined> {
  return { step: o.step, from: time(o.from), to: time(o.to), tz: o.tz };
}

function breakdownQuery(by: string, o: BreakdownOptions): Record<string, string | undefined> {
  return { by, from: time(o.from), to: time(o.to), tz: o.tz, limit: o.limit !== undefined ? String(o.limit) : undefined };
}

/** The lines of an export's answer, whole ones only; an error line, or a cut, errors the stream. */
function checkedLines(res: Response, scope: Scope): ReadableStream<Uint8Array> {
  const requestId = res.headers.get("X-Request-ID") ?? "";
  let pending: Uint8Array[] = [];
  let lines = 0;
  const errorStart = utf8.encode('{"error"');
  const startsWithError = (b: Uint8Array) => b.length >= errorStart.length && errorStart.every((x, i) => b[i] === x);
  const body = res.body ?? new ReadableStream<Uint8Array>({ start: (c) => c.close() });
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      start(out) {
        // The call's signal or timeout ends the stream even where fetch
        // leaves a body read pending on abort (see stream()).
        const stop = () => out.error(scope.signal.reason);
        if (scope.signal.aborted) stop();
        else scope.signal.addEventListener("abort", stop, { once: true });
      },
      transform(chunk, out) {
        let start = 0;
        for (;;) {
          const nl = chunk.indexOf(10, start);
          if (nl < 0) {
            if (start < chunk.length) pending.push(chunk.subarray(start));
            return;
          }
          const line = concat([...pending, chunk.subarray(start, nl + 1)]);
          pending = [];
          start = nl + 1;
          if (startsWithError(line)) {
            scope.done();
            const text = new TextDecoder().decode(line);
            let e = new CountersError({ code: "internal", status: res.status, message: "The export failed.", requestId, body: text });
            try {
              const shape = JSON.parse(text) as { error: { code: CountersError["code"]; message: string } };
              e = new CountersError({ code: shape.error.code, status: res.status, message: shape.error.message, requestId, body: text });
            } catch {
              // keep the generic error
            }
            throw e;
          }
          out.enqueue(line);
          lines++;
        }
      },
      flush() {
        scope.done();
        if (pending.length > 0) throw new Error(`countersvc: the export stream was cut after ${lines} lines`);
      },
    }),
  );
}

/**
 * Reads an import's lines ahead: all of them when they are bytes already
 * or come to at most importBuffer; else the stream of what was read and
 * what follows.
 */
async function readAhead(src: ImportBody): Promise<{ complete: true; bytes: Uint8Array | Blob } | { complete: false; rest: ReadableStream<Uint8Array> }> {
  if (typeof src === "string") return { complete: true, bytes: utf8.encode(src) };
  if (src instanceof Uint8Array) return { complete: true, bytes: src };
  if (src instanceof ArrayBuffer) return { complete: true, bytes: new Uint8Array(src) };
  if (typeof Blob !== "undefined" && src instanceof Blob) return { complete: true, bytes: src };
  const next: () => Promise<IteratorResult<Uint8Array | string>> =
    src instanceof ReadableStream
      ? ((r) => () => r.read() as Promise<IteratorResult<Uint8Array>>)(src.getReader())
      : ((it) => () => it.next())((src as AsyncIterable<Uint8Array | string>)[Symbol.asyncIterator]());
  const bytes = (v: Uint8Array | string) => (typeof v === "string" ? utf8.encode(v) : v);
  const head: Uint8Array[] = [];
  let size = 0;
  while (size <= importBuffer) {
    const r = await next();
    if (r.done) return { complete: true, bytes: concat(head) };
    head.push(bytes(r.value));
    size += head[head.length - 1]!.length;
  }
  const rest = new ReadableStream<Uint8Array>({
    async pull(c) {
      const h = head.shift();
      if (h) return c.enqueue(h);
      const r = await next();
      if (r.done) c.close();
      else c.enqueue(bytes(r.value));
    },
  });
  return { complete: false, rest };
}
