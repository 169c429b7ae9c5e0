// The TypeScript examples of docs/client.md and of this package's README
// compile against the client: a renamed call or option fails here, not in
// a reader's editor.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const pkg = fileURLToPath(new URL("..", import.meta.url));

/** The ```ts blocks of markdown text, from the heading `from` to the next heading of its level. */
function blocks(text, from) {
  let section = text;
  if (from) {
    const start = text.indexOf(from + "\n");
    assert.ok(start >= 0, `no ${from}`);
    const level = from.split(" ")[0];
    const end = text.indexOf("\n" + level + " ", start + from.length);
    section = text.slice(start, end < 0 ? undefined : end);
  }
  return [...section.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]);
}

test("the TypeScript examples of the guide and the README compile", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "countersvc-js-docs-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  // What the examples take from their surroundings.
  const ambient = "declare const process: { env: Record<string, string | undefined> };\ndeclare function render(v: unknown): void;\n";
  const guide = blocks(readFileSync(join(pkg, "../../docs/client.md"), "utf8"), "## TypeScript");
  const readme = blocks(readFileSync(join(pkg, "README.md"), "utf8"), "## Start");
  assert.equal(guide.length, 3, "the guide shows three tasks");
  assert.equal(readme.length, 1);
  writeFileSync(join(dir, "ambient.d.ts"), ambient);
  writeFileSync(join(dir, "guide.ts"), guide.join("\n") + "\nexport { recordSale, views };\n");
  writeFileSync(join(dir, "readme.ts"), readme[0] + "\nexport {};\n");
  writeFileSync(
    join(dir, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        target: "es2022", module: "es2022", moduleResolution: "bundler", lib: ["es2022", "dom", "dom.iterable"], types: [],
        strict: true, noEmit: true, skipLibCheck: true, paths: { "@countersvc/client": [join(pkg, "src/index.ts")] },
      },
      files: ["ambient.d.ts", "guide.ts", "readme.ts"],
    }),
  );
  try {
    execFileSync("node", [join(pkg, "node_modules/typescript/bin/tsc"), "-p", dir], { encoding: "utf8", stdio: "pipe" });
  } catch (e) {
    assert.fail(`the examples do not compile:\n${e.stdout}${e.stderr}`);
  }
});
