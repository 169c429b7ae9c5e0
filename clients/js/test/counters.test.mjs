// Counters, history, breakdowns and page hits against the real service.
import assert from "node:assert/strict";
import { test } from "node:test";
import { BY_NAME, CountersError } from "../dist/index.js";
import { client, rejection, serviceURL, unique } from "./helpers.mjs";

const c = client();

test("an increment answers the value it produced, and get, set and delete see it", async () => {
  const p = unique("basic");
  assert.equal(await c.increment(p + "a"), 1);
  assert.equal(await c.increment(p + "a", 41), 42);
  assert.equal(await c.increment(p + "a", -2), 40);
  const ctr = await c.get(p + "a");
  assert.equal(ctr.name, p + "a");
  assert.equal(ctr.value, 40);
  assert.ok(Date.parse(ctr.created_at) > 0 && Date.parse(ctr.updated_at) > 0);

  const made = await c.set(p + "stock", 20, { min: 0 });
  assert.deepEqual([made.created, made.counter.value, made.counter.min], [true, 20, 0]);
  const again = await c.set(p + "stock", 25);
  assert.deepEqual([again.created, again.counter.value, again.counter.min], [false, 25, 0], "a set without min keeps the bound");
  const e = await rejection(c.increment(p + "stock", -26));
  assert.ok(e instanceof CountersError);
  assert.deepEqual([e.code, e.status], ["out_of_range", 422]);
  assert.equal((await c.get(p + "stock")).value, 25, "nothing changed");
  const unbounded = await c.set(p + "stock", 25, { min: null });
  assert.equal(unbounded.counter.min, undefined, "null removes the bound");

  const conflict = await rejection(c.set(p + "stock", 1, { createOnly: true }));
  assert.deepEqual([conflict.code, conflict.status], ["conflict", 409]);

  await c.delete(p + "a");
  const gone = await rejection(c.get(p + "a"));
  assert.deepEqual([gone.code, gone.status], ["not_found", 404]);
  assert.ok(gone.message.length > 0 && gone.requestId.length > 0, "an answered error carries the message and the request id");
});

test("a name is one path segment however many slashes, spaces and signs it has", async () => {
  const name = unique("names") + "books/Red Horse Hill?#%2F+ü";
  assert.equal(await c.increment(name, 3), 3);
  assert.equal((await c.get(name)).name, name);
});

test("an idempotency key given to the call counts once; the same key with another request is a conflict", async () => {
  const p = unique("keyed");
  const key = `sale-${p}`;
  assert.equal(await c.increment(p + "sales", 2, { idempotencyKey: key }), 2);
  assert.equal(await c.increment(p + "sales", 2, { idempotencyKey: key }), 2, "the repeat answers the first answer");
  assert.equal((await c.get(p + "sales")).value, 2);
  const e = await rejection(c.increment(p + "sales", 3, { idempotencyKey: key }));
  assert.equal(e.code, "conflict");
});

test("a list follows the pages to the last, and breaking out stops it", async () => {
  const p = unique("list");
  const want = [];
  for (let i = 0; i < 7; i++) {
    want.push(`${p}${String(i).padStart(2, "0")}`);
    await c.increment(want[i], i);
  }
  await c.increment(p.slice(0, -1) + "x", 1); // shares the prefix without its slash
  const got = [];
  for await (const ctr of c.list({ prefix: p, pageSize: 3 })) got.push(ctr.name);
  assert.deepEqual(got, want);
  let n = 0;
  for await (const _ of c.list({ prefix: p, pageSize: 3 })) if (++n === 4) break;
  assert.equal(n, 4);
  const page = await c.listPage({ prefix: p, pageSize: 5 });
  assert.equal(page.counters.length, 5);
  assert.equal(page.next_after, want[4]);
  const last = await c.listPage({ prefix: p, after: page.next_after, pageSize: 5 });
  assert.deepEqual(last.counters.map((x) => x.name), want.slice(5));
  assert.equal(last.next_after, null);
});

test("reset sets a prefix; a batch applies all its items or none", async () => {
  const p = unique("batch");
  const values = await c.batch([
    { name: p + "Bulldozer", by: 2 },
    { name: p + "revenue/cents", by: 2598, labels: { channel: "web" } },
  ]);
  assert.deepEqual(values, [
    { name: p + "Bulldozer", value: 2 },
    { name: p + "revenue/cents", value: 2598 },
  ]);
  await c.set(p + "max", 10, { max: 10 });
  const e = await rejection(c.batch([{ name: p + "Bulldozer", by: 1 }, { name: p + "max", by: 1 }]));
  assert.equal(e.code, "out_of_range");
  assert.equal((await c.get(p + "Bulldozer")).value, 2, "a failed batch changed nothing");
  assert.equal(await c.reset(p, 0), 3);
  assert.equal((await c.get(p + "revenue/cents")).value, 0);
});

test("history counts the increments per period; breakdowns split them by a label", async () => {
  const p = unique("history");
  await c.increment(p + "a", 3, { labels: { channel: "web", region: "EU" } });
  await c.increment(p + "a", 2, { labels: { channel: "shop" } });
  await c.batch([{ name: p + "a", by: 4, labels: { channel: "web" } }, { name: p + "b", by: 1 }]);

  const h = await c.history(p + "a", { step: "day", tz: "Europe/Berlin" });
  assert.deepEqual([h.name, h.step, h.tz, h.total, h.points.length], [p + "a", "day", "Europe/Berlin", 9, 30]);
  assert.equal(h.points.reduce((s, x) => s + x.count, 0), 9);
  const m = await c.prefixHistory(p, { step: "month" });
  assert.deepEqual([m.prefix, m.total], [p, 10]);
  // A range of local days, across the switch to summer time.
  const r = await c.history(p + "a", { from: "2026-03-28", to: "2026-03-31", tz: "Europe/Berlin" });
  assert.deepEqual(
    r.points.map((x) => x.start),
    ["2026-03-28T00:00:00+01:00", "2026-03-29T00:00:00+01:00", "2026-03-30T00:00:00+02:00"],
  );
  const d = await c.history(p + "a", { step: "hour", from: new Date(Date.now() - 3_600_000), to: new Date() });
  assert.ok(d.points.length >= 1 && d.points.length <= 2, `an hour's range as Dates: ${d.points.length} points`);
  const bad = await rejection(c.history(p + "a", { tz: "Mars/Olympus" }));
  assert.equal(bad.code, "invalid_argument");

  const b = await c.breakdown(p + "a", "channel");
  assert.deepEqual([b.by, b.total, b.more, b.rows], ["channel", 9, 0, [{ value: "web", count: 7 }, { value: "shop", count: 2 }]]);
  const top = await c.prefixBreakdown(p, BY_NAME, { limit: 1, tz: "Europe/Berlin" });
  assert.deepEqual([top.prefix, top.total, top.more, top.rows], [p, 10, 1, [{ value: p + "a", count: 9 }]]);
  const missing = await rejection(c.breakdown(p + "none", "channel"));
  assert.equal(missing.code, "not_found");
});

test("a page hit counts once per visitor window, and only under the public prefixes", async () => {
  const name = "hits/" + unique("page");
  assert.equal(await c.hit(name), 1);
  assert.equal(await c.hit(name), 1, "a repeat within the window is answered, not counted");
  const e = await rejection(c.hit(unique("private") + "x"));
  assert.deepEqual([e.code, e.status], ["permission_denied", 403]);
});

test("the service answers ready", async () => {
  const r = await c.ready();
  assert.equal(r.status, "ok");
});

test("bad input is refused before sending, with the service's code", async () => {
  let sent = 0;
  const counting = client(serviceURL, {
    fetch: (...args) => {
      sent++;
      return fetch(...args);
    },
  });
  const p = unique("local");
  for (const [what, call] of [
    ["a name of 256 bytes", () => counting.increment("é".repeat(128))],
    ["an empty name", () => counting.get("")],
    ["a name with a control character", () => counting.increment(p + "a\u0001b")],
    ["a name that is not UTF-8", () => counting.increment(p + "\uD800")],
    ["a label key in capitals", () => counting.increment(p + "a", 1, { labels: { Channel: "web" } })],
    ["a label key of 33 characters", () => counting.increment(p + "a", 1, { labels: { ["k".repeat(33)]: "web" } })],
    ["nine labels", () => counting.increment(p + "a", 1, { labels: Object.fromEntries([..."abcdefghi"].map((k) => [k, "v"])) })],
    ["an empty label value", () => counting.increment(p + "a", 1, { labels: { channel: "" } })],
    ["a label value of 129 bytes", () => counting.increment(p + "a", 1, { labels: { channel: "x".repeat(129) } })],
    ["a step past 2^53", () => counting.increment(p + "a", 2 ** 53)],
    ["a step that is not an integer", () => counting.increment(p + "a", 1.5)],
    ["an idempotency key that is not ASCII", () => counting.increment(p + "a", 1, { idempotencyKey: "vente-été" })],
    ["a batch item's name", () => counting.batch([{ name: p + "ok", by: 1 }, { name: "x".repeat(256), by: 1 }])],
    ["an empty batch", () => counting.batch([])],
  ]) {
    const e = await rejection(call());
    assert.ok(e instanceof CountersError, `${what}: ${e}`);
    assert.deepEqual([e.code, e.status, e.requestId], ["invalid_argument", 400, ""], what);
  }
  assert.equal(sent, 0, "nothing was sent");
  // The same rules at the edge: 255 bytes and 32-character keys pass, and
  // the service agrees with the client on them.
  const room = 255 - new TextEncoder().encode(p).length;
  const longest = p + "x".repeat(room % 2) + "é".repeat(room >> 1);
  assert.equal(await counting.increment(longest, 1, { labels: { ["k".repeat(32)]: "ü".repeat(64) } }), 1);
  const e = await rejection(counting.increment(longest + "é"));
  assert.equal(e.code, "invalid_argument");
});
