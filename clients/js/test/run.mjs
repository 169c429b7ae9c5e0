// npm test's runner: Node's own test runner over test/*.test.mjs, four
// files at a time. Most of the files wait on the service, its proxies and
// their timers, and two on tsc and npm: one file at a time (node --test's
// default on a 2-core machine, the number of cores less one) left the
// CPU idle through the waits, and the files took 52 s in a row on the
// project's machine. --test-concurrency would say the same from Node
// 20.10, but Debian 12's Node is 18; run() takes it from 18.9. Every file
// still runs in a process of its own, and any failure fails the run.
import { readdirSync } from "node:fs";
import { run } from "node:test";
import { tap } from "node:test/reporters";
import { fileURLToPath } from "node:url";

const dir = fileURLToPath(new URL(".", import.meta.url));
const files = readdirSync(dir)
  .filter((f) => f.endsWith(".test.mjs"))
  .sort()
  .map((f) => dir + f);
const stream = run({ files, concurrency: 4 });
stream.on("test:fail", () => {
  process.exitCode = 1;
});
stream.compose(tap).pipe(process.stdout);
