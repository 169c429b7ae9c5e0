// Live updates: watch, watchPrefix and watchHits over the real service's
// Server-Sent Events, through a proxy that cuts connections.
import assert from "node:assert/strict";
import { createServer, request } from "node:http";
import { test } from "node:test";
import { CountersError } from "../dist/index.js";
import { client, rejection, serviceURL, unique } from "./helpers.mjs";

const c = client();

/**
 * Runs a watch in the background; next() is its next event, within 10 s.
 * The watch ends with the test.
 */
function watching(t, watch) {
  const ctl = new AbortController();
  const events = [];
  let wake;
  let failure;
  const done = (async () => {
    try {
      for await (const ev of watch(ctl.signal)) {
        events.push(ev);
        wake?.();
      }
    } catch (e) {
      if (!ctl.signal.aborted) failure = e;
      wake?.();
    }
  })();
  t.after(async () => {
    ctl.abort();
    await done;
  });
  return {
    /** The next event; within ms, else undefined when ms is given, else a failure after 10 s. */
    async next(ms) {
      const deadline = Date.now() + (ms ?? 10_000);
      while (events.length === 0) {
        if (failure) throw failure;
        if (Date.now() > deadline) {
          if (ms !== undefined) return undefined;
          throw new Error("no event within 10 s");
        }
        await new Promise((r) => {
          wake = r;
          setTimeout(r, 20);
        });
      }
      return events.shift();
    },
    /** Reads events until one carries want; returns every value seen on the way. */
    async until(want) {
      const seen = [];
      for (;;) {
        const ev = await this.next();
        seen.push(ev.value);
        if (ev.value === want) return seen;
        assert.ok(ev.value < want, `value ${ev.value} came before ${want} (saw ${seen})`);
      }
    },
  };
}

const nonDecreasing = (vs) => vs.every((v, i) => i === 0 || v >= vs[i - 1]);

test("watch sends the current value, then new values in order under concurrent increments", async (t) => {
  const name = unique("watch") + "concurrent";
  await c.set(name, 0);
  const w = watching(t, (signal) => c.watch(name, { signal }));
  const first = await w.next();
  assert.deepEqual([first.type, first.name, first.value], ["counter", name, 0]);
  assert.ok(first.id !== "" && Date.parse(first.at) > 0, "an id and a time");
  assert.equal(JSON.parse(first.data).value, 0);
  await Promise.all(Array.from({ length: 4 }, async () => {
    for (let i = 0; i < 10; i++) await c.increment(name);
  }));
  assert.ok(nonDecreasing(await w.until(40)));
});

test("watchHits starts at 0 before the first hit, sees each hit, and counts none", async (t) => {
  const name = "hits/" + unique("watched");
  const w = watching(t, (signal) => c.watchHits(name, { signal }));
  const first = await w.next();
  assert.deepEqual([first.name, first.value], [name, 0]);
  await c.hit(name);
  await w.until(1);
  assert.equal((await c.get(name)).value, 1, "watching counted a hit");
});

test("watchPrefix sends the changes of its counters only, deletions too", async (t) => {
  const p = unique("prefix");
  const w = watching(t, (signal) => c.watchPrefix(p, { signal }));
  // A prefix stream sends changes only: change a counter until the stream shows it is open.
  for (let open = false; !open; ) {
    await c.increment(p + "a");
    open = (await w.next(200))?.name === p + "a";
  }
  await c.increment(unique("elsewhere") + "x");
  await c.set(p + "b", 5);
  await c.delete(p + "a");
  for (let sawB = false, sawDeleted = false; !sawB || !sawDeleted; ) {
    const ev = await w.next();
    assert.ok(ev.name.startsWith(p), `an event of ${ev.name}, outside the prefix`);
    sawB ||= ev.name === p + "b" && ev.type === "counter" && ev.value === 5;
    sawDeleted ||= ev.name === p + "a" && ev.type === "deleted" && ev.value === undefined;
  }
});

/** A proxy to the service that records each request's Last-Event-ID and cuts every connection on cut(). */
async function cutProxy(t) {
  const target = new URL(serviceURL);
  const lastIds = [];
  const sockets = new Set();
  const server = createServer((req, res) => {
    lastIds.push(req.headers["last-event-id"] ?? "");
    const up = request({ host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode, answer.headers);
      answer.pipe(res);
    });
    up.on("error", () => res.destroy());
    res.on("close", () => up.destroy());
    req.pipe(up);
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  t.after(() => {
    for (const s of sockets) s.destroy();
    return new Promise((r) => server.close(r));
  });
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    lastIds,
    cut() {
      for (const s of sockets) s.destroy();
    },
    async waitRequests(n) {
      for (const deadline = Date.now() + 10_000; lastIds.length < n; await new Promise((r) => setTimeout(r, 20))) {
        if (Date.now() > deadline) throw new Error(`${lastIds.length} requests reached the proxy, want ${n}: the watch did not reconnect`);
      }
    },
  };
}

test("a cut connection resumes with Last-Event-ID and loses no final value", async (t) => {
  const name = unique("resumed") + "x";
  await c.set(name, 1);
  const proxy = await cutProxy(t);
  const through = client(proxy.url);
  const w = watching(t, (signal) => through.watch(name, { signal }));
  const first = await w.next();
  assert.equal(first.value, 1);

  // Changes while the watcher is away: the last one must come.
  proxy.cut();
  for (let i = 0; i < 5; i++) await c.increment(name);
  const seen = await w.until(6);
  assert.ok(seen[0] > 1 && nonDecreasing(seen), `after the reconnection the values were ${seen}: want new values only, in order, up to 6`);
  assert.deepEqual(proxy.lastIds, ["", first.id], "Last-Event-IDs: none, then the first event's");

  // Nothing changed while it was away: nothing is sent again, so the next event is the next change.
  const n = proxy.lastIds.length;
  proxy.cut();
  await proxy.waitRequests(n + 1);
  await c.increment(name);
  assert.equal((await w.next()).value, 7, "after a reconnection with nothing changed the next value is the next change");
});

test("a counter that does not exist ends the watch with not_found; breaking out ends it quietly", async () => {
  const e = await rejection((async () => {
    for await (const _ of c.watch(unique("missing") + "x")) {
      // no event comes
    }
  })());
  assert.ok(e instanceof CountersError);
  assert.equal(e.code, "not_found");

  const name = unique("break") + "x";
  await c.increment(name, 9);
  for await (const ev of c.watch(name)) {
    assert.equal(ev.value, 9);
    break;
  }
  const ctl = new AbortController();
  const events = [];
  const ended = rejection((async () => {
    for await (const ev of c.watch(name, { signal: ctl.signal })) {
      events.push(ev);
      ctl.abort();
    }
  })());
  assert.equal((await ended).name, "AbortError");
  assert.equal(events.length, 1);
});
