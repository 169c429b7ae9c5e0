// Export and import as streams, against the real service and scripted answers.
import assert from "node:assert/strict";
import { test } from "node:test";
import { CountersError } from "../dist/index.js";
import { client, rejection, scripted, unique } from "./helpers.mjs";

const c = client();

test("what export streams, import takes back, from text, bytes, a Blob or an async iterable", async () => {
  const p = unique("export");
  await c.set(p + "a", 10, { min: 0 });
  await c.increment(p + "b", 2);
  const text = await new Response(await c.export({ prefix: p })).text();
  const lines = text.trimEnd().split("\n").map((l) => JSON.parse(l));
  assert.deepEqual(lines.map((l) => [l.name, l.value]), [[p + "a", 10], [p + "b", 2]]);

  const same = await c.import(text);
  assert.deepEqual([same.read, same.skipped, same.created], [2, 2, 0], "on their own service the counters exist and are skipped");

  for (const [what, body] of [
    ["text", (q) => text.replaceAll(p, q)],
    ["bytes", (q) => new TextEncoder().encode(text.replaceAll(p, q))],
    ["a Blob", (q) => new Blob([text.replaceAll(p, q)])],
    ["an async iterable", (q) => (async function* () {
      for (const line of text.replaceAll(p, q).split(/(?<=\n)/)) yield line;
    })()],
  ]) {
    const q = unique("moved");
    const report = await c.import(body(q), { overwrite: true, atomic: true });
    assert.deepEqual([report.mode, report.atomic, report.applied, report.created], ["overwrite", true, true, 2], what);
    const a = await c.get(q + "a");
    assert.deepEqual([a.value, a.min], [10, 0], what);
  }

  const q = unique("refused");
  const e = await rejection(c.import(`{"name":"${q}c","value":"lots"}\n`, { atomic: true }));
  assert.ok(e instanceof CountersError);
  assert.equal(e.code, "invalid_argument");
  assert.equal(e.report?.refused, 1, "the error carries the import's report");
  assert.equal(e.report.lines[0].reason, "malformed");
});

test("an export the service ended with an error line, or one cut short, errors its stream", async (t) => {
  const line = '{"name":"a","value":1,"created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z"}\n';
  const failed = await scripted(t, [200, line + '{"error":{"code":"unavailable","message":"MySQL went away."}}\n', { "Content-Type": "application/x-ndjson" }]);
  const e = await rejection(new Response(await client(failed.url).export()).text());
  assert.ok(e instanceof CountersError, `${e}`);
  assert.deepEqual([e.code, e.message], ["unavailable", "MySQL went away."]);

  const cut = await scripted(t, [200, line + '{"name":"b","val', { "Content-Type": "application/x-ndjson" }]);
  const read = [];
  const err = await rejection((async () => {
    for await (const chunk of await client(cut.url).export()) read.push(new TextDecoder().decode(chunk));
  })());
  assert.match(String(err), /cut after 1 lines/);
  assert.deepEqual(read, [line], "whole lines only came through");
  assert.equal(failed.reqs[0].headers.accept, "application/x-ndjson");
});

test("a stream longer than 1 MiB is imported as it arrives, sent once, with a key only when given", async (t) => {
  const line = JSON.stringify({ name: "big/" + "x".repeat(60), value: 1 }) + "\n";
  const lines = Math.ceil((1 << 20) / line.length) + 100;
  const long = () => (async function* () {
    for (let i = 0; i < lines; i += 100) yield line.repeat(Math.min(100, lines - i));
  })();
  const s = await scripted(t, [503, '{"error":{"code":"unavailable","message":"Try again."}}']);
  const e = await rejection(client(s.url).import(long()));
  assert.equal(e.code, "unavailable");
  assert.equal(s.reqs.length, 1, "a stream whose lines were read is not sent again");
  assert.equal(s.reqs[0].body.length, lines * line.length, "every line arrived");
  assert.equal(s.reqs[0].headers["idempotency-key"], undefined);
  assert.equal(s.reqs[0].headers["content-type"], "application/x-ndjson");
  await rejection(client(s.url).import(long(), { idempotencyKey: "import-1" }));
  assert.equal(s.reqs[1].headers["idempotency-key"], "import-1");

  const short = await scripted(t, [503, '{"error":{"code":"unavailable","message":"Try again."}}'], [200, '{"mode":"create"}']);
  await client(short.url).import((async function* () { yield line; })(), { gzip: false });
  assert.equal(short.reqs.length, 2, "a short stream is read whole and retried");
  assert.equal(short.reqs[0].headers["idempotency-key"], short.reqs[1].headers["idempotency-key"]);
  assert.equal(short.reqs[1].headers["content-length"], String(line.length), "a whole body is sent with its length");
});

test("an export's signal ends its stream while the service is still sending", async (t) => {
  const { createServer } = await import("node:http");
  const server = createServer((req, res) => {
    res.writeHead(200, { "Content-Type": "application/x-ndjson" });
    res.write('{"name":"a","value":1}\n'); // and nothing more, for now
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  t.after(() => {
    server.closeAllConnections();
    return new Promise((r) => server.close(r));
  });
  const ctl = new AbortController();
  const stream = await client(`http://127.0.0.1:${server.address().port}`).export({ signal: ctl.signal });
  const reader = stream.getReader();
  assert.equal(new TextDecoder().decode((await reader.read()).value), '{"name":"a","value":1}\n');
  setTimeout(() => ctl.abort(), 50);
  const e = await rejection(reader.read());
  assert.equal(e.name, "AbortError");
});
