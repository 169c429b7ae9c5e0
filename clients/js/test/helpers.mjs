// What the tests share: the service's URLs (set by
// internal/clienttest/js_test.go, which starts the service), clients that
// retry fast, and names of their own.
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import { CountersClient } from "../dist/index.js";

function env(name) {
  const v = process.env[name];
  if (!v) {
    throw new Error(`${name} is not set: run these tests through go test ./internal/clienttest -run TypeScript, which starts the service and its proxies`);
  }
  return v;
}

/** The service, straight. */
export const serviceURL = env("COUNTERS_JS_URL");
/** A proxy that drops the answer of each write's first attempt, after the service committed it. */
export const dropURL = env("COUNTERS_JS_DROP_URL");
/** A proxy that answers each write's first attempt 429, 502, 503 or 504 in turn. */
export const flakyURL = env("COUNTERS_JS_FLAKY_URL");

/** A client whose retries come quickly. */
export function client(url = serviceURL, options = {}) {
  return new CountersClient(url, { backoffMs: 5, maxBackoffMs: 20, timeoutMs: 20_000, ...options });
}

/** A prefix no other test, nor an earlier run on the same service, uses. */
export function unique(what) {
  return `js-${what}-${randomUUID().slice(0, 8)}/`;
}

/** The rejection of p, failing when it resolves. */
export async function rejection(p) {
  try {
    await p;
  } catch (e) {
    return e;
  }
  throw new Error("the call succeeded; want an error");
}

/**
 * A server that answers each request with the next of answers (the last
 * repeats) and records what it was sent. An answer is [status, body,
 * headers], or "drop" to close the connection without one.
 */
export async function scripted(t, ...answers) {
  const reqs = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      const a = answers[Math.min(reqs.length, answers.length - 1)];
      reqs.push({ method: req.method, url: req.url, headers: req.headers, body });
      if (a === "drop") return req.socket.destroy();
      const [status, text = "", headers = {}] = a;
      res.writeHead(status, { "Content-Type": "application/json", ...headers });
      res.end(text);
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  t.after(() => new Promise((r) => server.close(r)));
  return { url: `http://127.0.0.1:${server.address().port}`, reqs };
}
