// The package as an app gets it: `npm pack`, installed offline into an
// empty project, imported from JavaScript and from TypeScript.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { serviceURL, unique } from "./helpers.mjs";

const pkg = fileURLToPath(new URL("..", import.meta.url));

function run(cmd, args, cwd) {
  try {
    return execFileSync(cmd, args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, COUNTERS_JS_URL: serviceURL } });
  } catch (e) {
    throw new Error(`${cmd} ${args.join(" ")} failed in ${cwd}:\n${e.stdout}\n${e.stderr}`);
  }
}

test("npm pack gives a package that installs offline into an empty project and works there", async (t) => {
  const tmp = mkdtempSync(join(tmpdir(), "countersvc-js-pack-"));
  t.after(() => rmSync(tmp, { recursive: true, force: true }));
  // --ignore-scripts: the tests run on the dist/ they import; npm test's
  // caller built it.
  const [packed] = JSON.parse(run("npm", ["pack", "--json", "--ignore-scripts", "--pack-destination", tmp], pkg));
  const files = packed.files.map((f) => f.path).sort();
  assert.ok(files.includes("dist/index.js") && files.includes("dist/index.d.ts"), `packed: ${files}`);
  assert.deepEqual(files.filter((f) => !f.startsWith("dist/")), ["README.md", "package.json"], "only dist/, the README and package.json");

  const app = join(tmp, "app");
  mkdirSync(app);
  writeFileSync(join(app, "package.json"), JSON.stringify({ name: "app", private: true, type: "module" }));
  run("npm", ["install", "--offline", "--no-audit", "--no-fund", "--no-package-lock", join(tmp, packed.filename)], app);

  const name = unique("packed") + "sales";
  writeFileSync(
    join(app, "main.js"),
    `import { CountersClient, CountersError } from "@countersvc/client";
const c = new CountersClient(process.env.COUNTERS_JS_URL);
const v = await c.increment(process.argv[2], 2, { labels: { channel: "web" } });
const e = await c.get(process.argv[2] + "/missing").catch((e) => e);
console.log(v, e instanceof CountersError ? e.code : e);
`,
  );
  assert.equal(run("node", ["main.js", name], app).trim(), "2 not_found");

  // Its declarations, as an app's TypeScript resolves them (exports, NodeNext).
  writeFileSync(
    join(app, "main.ts"),
    `import { CountersClient, CountersError, type Counter, type CounterEvent } from "@countersvc/client";
const c = new CountersClient("http://localhost:8080", { token: "t", timeoutMs: 5000 });
const v: number = await c.increment("shop/sales", 1, { idempotencyKey: "order-1", signal: AbortSignal.timeout(1000) });
const ctr: Counter = await c.get("shop/sales");
for await (const ev of c.watch("shop/sales")) {
  const e: CounterEvent = ev;
  if (e.value !== undefined) break;
}
try {
  await c.delete("x");
} catch (e) {
  if (e instanceof CountersError && e.code === "not_found" && e.status === 404) console.log(e.requestId);
}
export { v, ctr };
`,
  );
  writeFileSync(
    join(app, "tsconfig.json"),
    JSON.stringify({ compilerOptions: { module: "nodenext", moduleResolution: "nodenext", target: "es2022", lib: ["es2022", "dom"], types: [], strict: true, noEmit: true, skipLibCheck: true }, files: ["main.ts"] }),
  );
  run("node", [join(pkg, "node_modules", "typescript", "bin", "tsc"), "-p", app], app);
});
