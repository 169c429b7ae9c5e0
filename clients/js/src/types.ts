// The API's JSON shapes, with the names openapi.yaml gives their fields;
// test/types/check.ts holds each to the type openapi-typescript generates
// from openapi.yaml, both ways.
//
// Counter values are int64 in the API and `number` here: exact up to
// Number.MAX_SAFE_INTEGER (2^53-1). The client refuses to send a step or a
// value beyond it (it could not be sent exactly); a stored value beyond it
// reads rounded. Times are RFC 3339 strings, as the service sends them.

/** A named signed 64-bit value. */
export interface Counter {
  name: string;
  value: number;
  /** Lower bound; present only when set. */
  min?: number | null;
  /** Upper bound; present only when set. */
  max?: number | null;
  created_at: string;
  updated_at: string;
}

/** A counter's name and the value a write produced. */
export interface CounterValue {
  name: string;
  value: number;
}

/** One page of a list: pass next_after as `after` for the next; null after the last. */
export interface CounterPage {
  counters: Counter[];
  next_after: string | null;
}

/**
 * What an increment was made of, such as {channel: "web", region: "EU"}:
 * at most 8; a key is 1 to 32 characters of a-z, 0-9 and _, a value 1 to
 * 128 bytes of printable UTF-8.
 */
export type Labels = Record<string, string>;

/** One increment of a batch. */
export interface Step {
  name: string;
  by: number;
  labels?: Labels;
}

/** The length of a history's periods. */
export type HistoryStep = "hour" | "day" | "month";

/** One period of a history; start carries the zone's offset. */
export interface HistoryPoint {
  start: string;
  count: number;
  /** The period's distinct visitors where the service counts them (page hits, day steps). */
  visitors?: number;
}

/** How many increments each period counted. */
export interface History {
  name?: string;
  prefix?: string;
  step: HistoryStep;
  tz: string;
  from: string;
  to: string;
  points: HistoryPoint[];
  total: number;
  /** The range's annotations, by `at`, when asked (`annotations=true`). */
  annotations?: Annotation[];
}

/** A short text on a counter (`name`) or on every counter under `prefix`, at a moment. */
export interface Annotation {
  id: number;
  name?: string;
  prefix?: string;
  at: string;
  text: string;
  created_at: string;
}

/** One value of a breakdown. */
export interface BreakdownRow {
  value: string;
  count: number;
}

/**
 * How a count splits by one label: rows by count descending then value,
 * `more` the count of the rows left out; every row plus `more` is `total`.
 */
export interface Breakdown {
  name?: string;
  prefix?: string;
  by: string;
  from: string;
  to: string;
  tz: string;
  total: number;
  rows: BreakdownRow[];
  more: number;
  /** The range's annotations, by `at`, when asked (`annotations=true`). */
  annotations?: Annotation[];
}

/** A skipped or refused line of an import. */
export interface ImportLine {
  line: number;
  name?: string;
  outcome: "skipped" | "refused";
  reason: "exists" | "malformed" | "invalid_name" | "reserved" | "invalid_bounds" | "out_of_range" | "permission_denied";
  message: string;
}

/** What an import did. */
export interface ImportReport {
  mode: "create" | "overwrite";
  atomic: boolean;
  applied: boolean;
  read: number;
  created: number;
  overwritten: number;
  skipped: number;
  refused: number;
  /** The first 1,000 skipped or refused lines. */
  lines: ImportLine[];
  /** There were more. */
  truncated: boolean;
}

/** A board hands out ticket numbers: the first ticket of board NINJA is NINJA-1. */
export interface Board {
  id: number;
  company_id: number;
  slug: string;
  title: string;
  created_at: string;
}

/** A numbered ticket of a board. */
export interface Ticket {
  id: number;
  board_id: number;
  local_id: number;
  /** Such as NINJA-7. */
  key: string;
  title: string;
  description: string;
  created_at: string;
}

/** One page of a board's tickets. */
export interface TicketPage {
  tickets: Ticket[];
  next_after: number | null;
}

/** What an API key may do. */
export type Scope = "read" | "write" | "admin";

/** An API key: who may touch which counters, boards and tickets. */
export interface Key {
  id: number;
  name: string;
  scopes: Scope[];
  /** Counter names it may touch, by prefix; "" is every non-reserved name. */
  prefixes: string[];
  companies: number[];
  created_at: string;
  expires_at: string | null;
  last_used_at: string | null;
}

/** A key as created: the only time its secret is shown. */
export interface KeyWithSecret extends Key {
  secret: string;
}

/** A new API key. */
export interface KeyRequest {
  name: string;
  scopes: Scope[];
  prefixes?: string[];
  companies?: number[];
  expires_at?: string | null;
}

/** Which way a crossing counts. */
export type Direction = "up" | "down" | "both";

/**
 * A webhook calls a URL when a counter crosses a threshold (thresholds,
 * every, direction), or as an alert when its count over a window rises to
 * a number (above) or falls under it (below; below 1 is silence).
 */
export interface Webhook {
  id: number;
  url: string;
  /** The one counter it watches, or */
  name?: string;
  /** every counter under a prefix. */
  prefix?: string;
  /** A threshold hook's: */
  thresholds?: number[];
  every?: number | null;
  direction?: Direction;
  /** An alert's: its window ("1h", "2d"), and one of above and below. */
  window?: string;
  above?: number;
  below?: number;
  created_at: string;
  disabled_at: string | null;
}

/** A webhook as created: the only time its secret is shown. */
export interface WebhookWithSecret extends Webhook {
  secret: string;
}

/** A webhook after a rotation of its secret. */
export interface WebhookRotated extends WebhookWithSecret {
  /** Until when the secret this rotation replaced signs the calls too. */
  previous_secret_expires_at: string;
}

/**
 * A new webhook: name or prefix, and thresholds and/or every, or an
 * alert's window (5m to 7d) with exactly one of above and below.
 */
export interface WebhookRequest {
  url: string;
  name?: string;
  prefix?: string;
  thresholds?: number[];
  every?: number;
  /** "up" when left out. */
  direction?: Direction;
  window?: string;
  above?: number;
  below?: number;
}

/** The body of a threshold hook's call. */
export interface ThresholdEvent {
  type: "counter.threshold";
  timestamp: string;
  data: {
    name: string;
    threshold: number;
    direction: "up" | "down";
    previous: number;
    value: number;
  };
}

/** The body of an alert's call: when its condition starts and ends to hold. */
export interface AlertEvent {
  type: "alert.started" | "alert.ended";
  timestamp: string;
  data: {
    name?: string;
    prefix?: string;
    window: string;
    above?: number;
    below?: number;
    /** The window's sum, from history. */
    sum: number;
    /** What was summed: from the start of a quarter hour up to to. */
    from: string;
    to: string;
  };
}

/** The body of a webhook's call. */
export type WebhookEvent = ThresholdEvent | AlertEvent;

/** One event sent, or being sent, to a webhook. */
export interface Delivery {
  id: string;
  status: "pending" | "delivered" | "failed";
  attempts: number;
  last_status_code: number | null;
  next_attempt_at: string | null;
  created_at: string;
  event: WebhookEvent;
}

/** GET /readyz's answer. */
export interface Readiness {
  status: "ok" | "degraded" | "unavailable" | "draining";
  /** "not_synced": a Galera node that is not Synced in the Primary component. */
  mysql: "ok" | "down" | "not_synced";
  redis: "ok" | "down" | "disabled";
  /** Only with mysql "not_synced": what the node reports. */
  detail?: string;
}

/** A change of a watched counter (docs/live-updates.md, "What a stream sends"). */
export interface CounterEvent {
  /** "counter" (a new value) or "deleted". */
  type: string;
  /** Orders the changes of the stream; sent back as Last-Event-ID on reconnect. */
  id: string;
  name: string;
  /** The new value, for "counter". */
  value?: number;
  /** The change's commit time, for "counter". */
  at?: string;
  /** The event's JSON as the service sent it. */
  data: string;
}
