// The type test: the client's JSON types are the API's. `npm test`
// generates generated/openapi.d.ts from openapi.yaml with openapi-typescript
// and compiles this file with tsc --noEmit; each line fails to compile when
// what the service sends or takes, as openapi.yaml describes it, is not
// assignable to the client's type, or the client's to it: a field renamed,
// made optional or required, or given another type on either side.
import type * as C from "../../src/index.js";
import type { components, operations } from "./generated/openapi.js";

type S = components["schemas"];

/** Compiles only when U is assignable to T. */
type To<T, U extends T> = [T, U];
/** Compiles only when A and B are assignable to each other. */
type Both<A extends B, B extends A2, A2 = A> = [A, B];

// Answers: what the service sends fits the client's type, and back.
export type Answers = [
  Both<C.Counter, S["Counter"]>,
  Both<C.CounterValue, S["CounterValue"]>,
  Both<C.CounterPage, S["CounterPage"]>,
  Both<C.History, S["History"]>,
  Both<C.HistoryPoint, S["History"]["points"][number]>,
  Both<C.Breakdown, S["Breakdown"]>,
  Both<C.BreakdownRow, S["Breakdown"]["rows"][number]>,
  Both<C.ImportReport, S["ImportReport"]>,
  Both<C.ImportLine, S["ImportReport"]["lines"][number]>,
  Both<C.Board, S["Board"]>,
  Both<C.Ticket, S["Ticket"]>,
  Both<C.TicketPage, S["TicketPage"]>,
  Both<C.Key, S["Key"]>,
  Both<C.KeyWithSecret, S["KeyWithSecret"]>,
  Both<C.Webhook, S["Webhook"]>,
  Both<C.WebhookWithSecret, S["WebhookWithSecret"]>,
  Both<C.WebhookRotated, S["WebhookRotated"]>,
  Both<C.Delivery, S["WebhookDelivery"]>,
  Both<C.WebhookEvent, S["WebhookEvent"]>,
  Both<C.Readiness, S["Readiness"]>,
  Both<C.ErrorCode, S["Error"]["error"]["code"]>,
  Both<C.Scope, S["Scope"]>,
  Both<C.Direction, NonNullable<S["WebhookFields"]["direction"]>>,
  Both<{ reset: number }, S["ResetResponse"]>,
  Both<{ counters: C.CounterValue[] }, S["BatchResponse"]>,
];

// Fields: the client's types name every field the API's do, and no other
// (an optional field on one side only would pass the lines above).
type Fields<A extends B, B extends A2, A2 = A> = [A, B];
type K<T> = keyof T;
export type Names = [
  Fields<K<C.Counter>, K<S["Counter"]>>,
  Fields<K<C.History>, K<S["History"]>>,
  Fields<K<C.HistoryPoint>, K<S["History"]["points"][number]>>,
  Fields<K<C.Breakdown>, K<S["Breakdown"]>>,
  Fields<K<C.ImportReport>, K<S["ImportReport"]>>,
  Fields<K<C.ImportLine>, K<S["ImportReport"]["lines"][number]>>,
  Fields<K<C.Board>, K<S["Board"]>>,
  Fields<K<C.Ticket>, K<S["Ticket"]>>,
  Fields<K<C.Key>, K<S["Key"]>>,
  Fields<K<C.KeyWithSecret>, K<S["KeyWithSecret"]>>,
  Fields<K<C.KeyRequest>, K<S["KeyCreate"]>>,
  Fields<K<C.Webhook>, K<S["Webhook"]>>,
  Fields<K<C.WebhookRotated>, K<S["WebhookRotated"]>>,
  Fields<K<C.Delivery>, K<S["WebhookDelivery"]>>,
  Fields<K<C.Step>, K<S["BatchRequest"]["increments"][number]>>,
];

// Requests: what the client sends is what the service takes, and back.
export type Requests = [
  Both<C.KeyRequest, S["KeyCreate"]>,
  Both<C.Labels, S["Labels"]>,
  Both<C.Step, S["BatchRequest"]["increments"][number]>,
  Both<{ by: number; labels?: C.Labels }, S["IncrementRequest"] & { by: number }>,
  Both<{ value: number } & Pick<C.SetOptions, "min" | "max">, S["SetRequest"]>,
  To<S["ResetRequest"], { prefix: string; value: number }>,
  To<S["ResetRequest"], { all: true; value: number }>,
  Both<{ company_id: number; slug: string; title: string }, S["BoardCreate"]>,
  To<S["TicketCreate"], { title: string; description: string }>,
  // WebhookCreate's oneOf and anyOf of required-only branches come out of
  // openapi-typescript as `unknown`, which anything is assignable to: the
  // request is held to the fields of the hook it makes instead.
  To<Partial<Pick<S["WebhookFields"], "url" | "name" | "prefix" | "thresholds" | "every" | "direction">>, C.WebhookRequest>,
];

type Query<Op extends keyof operations> = NonNullable<operations[Op]["parameters"]["query"]>;

// Query parameters: the typed options take the values the API lists.
export type Parameters = [
  Both<NonNullable<C.HistoryOptions["step"]>, NonNullable<Query<"counterHistory">["step"]>>,
  Both<NonNullable<C.HistoryOptions["step"]>, NonNullable<Query<"prefixHistory">["step"]>>,
  To<string, NonNullable<Query<"counterHistory">["from"]>>,
  To<string, NonNullable<Query<"counterBreakdown">["tz"]>>,
  To<number, NonNullable<Query<"counterBreakdown">["limit"]>>,
  To<number, NonNullable<Query<"listCounters">["limit"]>>,
];

