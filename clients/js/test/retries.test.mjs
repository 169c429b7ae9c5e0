// Retries: through the service's proxies (every increment counts exactly
// once), and against scripted answers for the rules of when and how often.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { test } from "node:test";
import { CountersError } from "../dist/index.js";
import { client, dropURL, flakyURL, rejection, scripted, unique } from "./helpers.mjs";

const direct = client();

for (const [proxy, url] of [
  ["a proxy that drops each write's first answer after the service committed it", dropURL],
  ["a proxy that answers each write first 429, 502, 503 or 504 in turn", flakyURL],
]) {
  test(`through ${proxy}, every increment, batch and set counts exactly once`, async () => {
    const p = unique("once");
    const through = client(url);
    // 24 increments, some at once, each of 1 to 24: the counter ends at their sum.
    const steps = Array.from({ length: 24 }, (_, i) => i + 1);
    const answers = await Promise.all(steps.map((by) => through.increment(p + "sales", by, { labels: { channel: "web" } })));
    const total = steps.reduce((a, b) => a + b, 0);
    assert.equal((await direct.get(p + "sales")).value, total, "the counter moved more or less than the increments");
    assert.equal(new Set(answers).size, answers.length, "two increments answered the same value");
    assert.equal(Math.max(...answers), total);
    // The history and the labels counted each once too.
    assert.equal((await direct.history(p + "sales")).total, total);
    assert.equal((await direct.breakdown(p + "sales", "channel")).rows[0].count, total);

    const values = await through.batch([{ name: p + "sales", by: 100 }, { name: p + "other", by: 7 }]);
    assert.deepEqual(values.map((v) => v.value), [total + 100, 7]);
    const { counter, created } = await through.set(p + "stock", 5, { createOnly: true });
    assert.deepEqual([counter.value, created], [5, true], "the replayed answer keeps its 201");
    const key = "order-" + p;
    assert.equal(await through.increment(p + "orders", 1, { idempotencyKey: key }), 1);
    assert.equal(await direct.increment(p + "orders", 1, { idempotencyKey: key }), 1, "a key given to the call, sent again later");
    assert.equal((await direct.get(p + "sales")).value, total + 100);
    assert.equal((await direct.get(p + "other")).value, 7);
    assert.equal((await direct.get(p + "orders")).value, 1);
  });
}

test("an import of a short stream is retried with one key through the drop proxy", async () => {
  const p = unique("import");
  const lines = `{"name":"${p}a","value":5}\n{"name":"${p}b","value":6}\n`;
  const stream = new ReadableStream({
    start(c) {
      c.enqueue(new TextEncoder().encode(lines));
      c.close();
    },
  });
  const report = await client(dropURL).import(stream);
  assert.deepEqual([report.read, report.created], [2, 2], "the retry answers the first attempt's report");
  assert.equal((await direct.get(p + "b")).value, 6);
});

const apiError = (status, code) => [status, JSON.stringify({ error: { code, message: "It failed." } })];
const ok = [200, '{"name":"a","value":3}'];

test("network errors, 429, 502, 503 and 504 are retried, every attempt with the call's one key", async (t) => {
  for (const [what, failure] of [
    ["connection dropped", "drop"],
    ["429", [429, '{"error":{"code":"rate_limited","message":"Slow down."}}', { "Retry-After": "0" }]],
    ["502 from a proxy", [502, "<html>Bad Gateway</html>", { "Content-Type": "text/html" }]],
    ["503", apiError(503, "unavailable")],
    ["504 from a proxy", [504]],
  ]) {
    const s = await scripted(t, failure, failure, ok);
    const c = client(s.url);
    assert.equal(await c.increment("a", 3), 3, what);
    assert.equal(s.reqs.length, 3, what);
    const key = s.reqs[0].headers["idempotency-key"];
    assert.match(key, /^[0-9a-f-]{36}$/, what);
    assert.ok(s.reqs.every((r) => r.headers["idempotency-key"] === key), `${what}: the key changed between attempts`);
    await c.increment("a", 3);
    assert.notEqual(s.reqs[3].headers["idempotency-key"], key, `${what}: a second call reused the first call's key`);
  }
});

test("what the service refused is not sent again, and retries stop after the client's retries", async (t) => {
  for (const [status, code] of [[400, "invalid_argument"], [404, "not_found"], [409, "conflict"], [422, "out_of_range"], [500, "internal"]]) {
    const s = await scripted(t, apiError(status, code));
    const e = await rejection(client(s.url).increment("a", 1));
    assert.deepEqual([e.code, e.status, s.reqs.length], [code, status, 1]);
  }
  const s = await scripted(t, apiError(503, "unavailable"));
  const e = await rejection(client(s.url, { retries: 2 }).get("a"));
  assert.deepEqual([e.code, s.reqs.length], ["unavailable", 3]);
  const once = await scripted(t, apiError(503, "unavailable"));
  await rejection(client(once.url, { retries: -1 }).get("a"));
  assert.equal(once.reqs.length, 1, "negative retries: sent once");
  const proxy = await scripted(t, [502, "<html>Bad Gateway</html>", { "Content-Type": "text/html" }]);
  const pe = await rejection(client(proxy.url, { retries: -1 }).get("a"));
  assert.ok(pe instanceof CountersError);
  assert.deepEqual([pe.code, pe.status], ["unavailable", 502], "a proxy's page is an error with the status's code");
});

test("a creation without a key is sent again after a 429 or no connection, never after a 503 or a lost answer", async (t) => {
  const ticket = [201, '{"id":1,"board_id":1,"local_id":1,"key":"NINJA-1","title":"t","description":"","created_at":"2026-01-01T00:00:00Z"}'];
  for (const [what, failure, attempts] of [
    ["429", [429, '{"error":{"code":"rate_limited","message":"Slow down."}}', { "Retry-After": "0" }], 2],
    ["503", apiError(503, "unavailable"), 1],
    ["a lost answer", "drop", 1],
  ]) {
    const s = await scripted(t, failure, ticket);
    const c = client(s.url);
    const got = await c.createTicket(1, "t").then(
      (x) => x.key,
      (e) => e,
    );
    assert.equal(s.reqs.length, attempts, what);
    assert.equal(s.reqs[0].headers["idempotency-key"], undefined, `${what}: a creation carries no key`);
    if (attempts === 2) assert.equal(got, "NINJA-1", what);
  }
  for (const [what, call] of [
    ["a page hit", (c) => c.hit("hits/a")],
    ["a webhook secret's rotation", (c) => c.rotateWebhookSecret(1)],
  ]) {
    const s = await scripted(t, "drop", ok);
    await rejection(call(client(s.url)));
    assert.equal(s.reqs.length, 1, `${what} was sent again after a lost answer`);
  }
  // No connection at all: nothing was sent, so a creation is tried again.
  const closed = createServer();
  await new Promise((r) => closed.listen(0, "127.0.0.1", r));
  const port = closed.address().port;
  await new Promise((r) => closed.close(r));
  let calls = 0;
  const refused = client(`http://127.0.0.1:${port}`, { retries: 2, fetch: (...a) => (calls++, fetch(...a)) });
  await rejection(refused.createBoard(1, "NINJA", "Ninja"));
  assert.equal(calls, 3, "a refused connection is retried");
});

test("Retry-After is honoured when the timeout leaves room for it, and when not, the call answers at once", async (t) => {
  const limited = [429, '{"error":{"code":"rate_limited","message":"Slow down."}}', { "Retry-After": "1" }];
  const s = await scripted(t, limited, ok);
  let start = Date.now();
  assert.equal(await client(s.url).increment("a"), 3);
  assert.ok(Date.now() - start >= 950, `retried after ${Date.now() - start} ms, want Retry-After's 1 s`);
  const short = await scripted(t, limited, ok);
  start = Date.now();
  const e = await rejection(client(short.url, { timeoutMs: 500 }).increment("a"));
  assert.equal(e.code, "rate_limited");
  assert.ok(Date.now() - start < 400, "it waited for a retry the timeout had no room for");
  assert.equal(short.reqs.length, 1);
});

test("a call ends with its timeout or its signal, retries included", async (t) => {
  const s = await scripted(t, apiError(503, "unavailable"));
  const slow = client(s.url, { backoffMs: 1000, maxBackoffMs: 1000, retries: 100 });
  let start = Date.now();
  let e = await rejection(slow.get("a", { timeoutMs: 400 }));
  assert.ok(e instanceof CountersError && e.code === "unavailable", `a pause past the timeout is not taken; the call answers the last error: ${e}`);
  assert.ok(Date.now() - start < 350, "it paused for a retry the timeout had no room for");

  const hang = createServer(() => {}); // never answers
  await new Promise((r) => hang.listen(0, "127.0.0.1", r));
  t.after(() => {
    hang.closeAllConnections();
    return new Promise((r) => hang.close(r));
  });
  const url = `http://127.0.0.1:${hang.address().port}`;
  e = await rejection(client(url).get("a", { timeoutMs: 200 }));
  assert.equal(e.name, "TimeoutError");
  const ctl = new AbortController();
  setTimeout(() => ctl.abort(), 100);
  e = await rejection(client(url).get("a", { signal: ctl.signal }));
  assert.equal(e.name, "AbortError");
  e = await rejection(client(url).get("a", { signal: AbortSignal.abort() }));
  assert.equal(e.name, "AbortError");
});

test("a delete whose answer was lost and whose retry finds nothing has done what was asked", async (t) => {
  const s = await scripted(t, "drop", apiError(404, "not_found"));
  await client(s.url).delete("a");
  assert.equal(s.reqs.length, 2);
  const plain = await scripted(t, apiError(404, "not_found"));
  assert.equal((await rejection(client(plain.url).delete("a"))).code, "not_found", "a delete of nothing, answered, is not_found");
});

test("the service's URL may end in /v1 or a slash; anything else but http(s) is refused", async (t) => {
  const s = await scripted(t, ok);
  for (const base of [s.url, s.url + "/", s.url + "/v1", s.url + "/v1/"]) await client(base).increment("a b/c");
  assert.deepEqual(new Set(s.reqs.map((r) => r.url)), new Set(["/v1/counters/a%20b%2Fc/increment"]));
  assert.throws(() => client("ftp://example.com"), TypeError);
  assert.throws(() => client("localhost:8080"), TypeError);
});
