// Boards and tickets, API keys and webhooks against the real service.
import assert from "node:assert/strict";
import { randomInt } from "node:crypto";
import { createServer } from "node:http";
import { test } from "node:test";
import { client, rejection, serviceURL, unique } from "./helpers.mjs";

const c = client();

test("boards number their tickets; a list follows the pages", async () => {
  const company = randomInt(1, 2 ** 31);
  const slug = "N" + randomInt(36 ** 5).toString(36).padStart(5, "0");
  const b = await c.createBoard(company, slug, "Ninja Board");
  assert.deepEqual([b.slug, b.company_id, b.title], [slug.toUpperCase(), company, "Ninja Board"]);
  assert.equal((await rejection(c.createBoard(company, slug.toUpperCase(), "again"))).code, "conflict");
  for (let i = 1; i <= 3; i++) {
    const tk = await c.createTicket(b.id, `ticket ${i}`, i === 1 ? "Every third one." : undefined);
    assert.equal(tk.key, `${b.slug}-${i}`);
  }
  await c.deleteTicket(b.id, 2);
  const keys = [];
  for await (const tk of c.tickets(b.id)) keys.push(tk.key);
  assert.deepEqual(keys, [`${b.slug}-1`, `${b.slug}-3`]);
  const page = await c.ticketsPage(b.id, 1);
  assert.deepEqual(page.tickets.map((x) => x.local_id), [3]);
  assert.equal((await c.ticketByKey(company, `${b.slug}-1`)).description, "Every third one.");
  assert.equal((await c.ticket(b.id, 3)).title, "ticket 3");
  assert.equal((await rejection(c.ticket(b.id, 2))).code, "not_found");
  assert.equal((await c.board(b.id)).title, "Ninja Board");
});

test("a key works within its prefixes and nowhere else, and stops working once deleted", async () => {
  const p = unique("shop");
  const k = await c.createKey({ name: "shop " + p, scopes: ["read", "write"], prefixes: [p] });
  assert.match(k.secret, /^ck_/);
  const shop = client(serviceURL, { token: k.secret });
  assert.equal(await shop.increment(p + "sales"), 1);
  const denied = await rejection(shop.increment(unique("other") + "sales"));
  assert.deepEqual([denied.code, denied.status], ["permission_denied", 403]);
  const listed = (await c.keys()).find((x) => x.id === k.id);
  assert.ok(listed && !("secret" in listed), "listed without its secret");
  assert.deepEqual((await c.key(k.id)).prefixes, [p]);
  await c.deleteKey(k.id);
  // Every process refuses a deleted key within a second.
  for (const deadline = Date.now() + 3000; ; await new Promise((r) => setTimeout(r, 100))) {
    const e = await shop.get(p + "sales").then(() => undefined, (e) => e);
    if (e?.code === "unauthenticated") break;
    assert.ok(Date.now() < deadline, `a deleted key still answered: ${e}`);
  }
});

test("a webhook is called when its counter crosses the threshold, and is managed through the client", async (t) => {
  const calls = [];
  const receiver = createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      calls.push({ headers: req.headers, body: JSON.parse(body) });
      res.writeHead(204).end();
    });
  });
  await new Promise((r) => receiver.listen(0, "127.0.0.1", r));
  t.after(() => new Promise((r) => receiver.close(r)));

  const name = unique("stock") + "widget";
  await c.set(name, 1);
  const hook = await c.createWebhook({ url: `http://127.0.0.1:${receiver.address().port}/restock`, name, thresholds: [0], direction: "down" });
  assert.match(hook.secret, /^whsec_/);
  assert.deepEqual([hook.name, hook.thresholds, hook.direction, hook.every, hook.disabled_at], [name, [0], "down", null, null]);
  await c.increment(name, -1);
  for (const deadline = Date.now() + 15_000; calls.length === 0; await new Promise((r) => setTimeout(r, 50))) {
    assert.ok(Date.now() < deadline, "no call within 15 s of the crossing");
  }
  assert.deepEqual(calls[0].body.data, { name, threshold: 0, direction: "down", previous: 1, value: 0 });
  assert.match(calls[0].headers["webhook-signature"], /^v1,/);
  const deliveries = await c.deliveries(hook.id, { limit: 5 });
  assert.equal(deliveries[0].event.data.value, 0);

  assert.ok((await c.webhooks()).some((h) => h.id === hook.id));
  assert.equal((await c.webhook(hook.id)).name, name);
  await c.enableWebhook(hook.id);
  const rotated = await c.rotateWebhookSecret(hook.id);
  assert.ok(rotated.secret !== hook.secret && Date.parse(rotated.previous_secret_expires_at) > Date.now());
  await c.deleteWebhook(hook.id);
  assert.equal((await rejection(c.webhook(hook.id))).code, "not_found");
});
