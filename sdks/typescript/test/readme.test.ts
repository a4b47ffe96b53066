/**
 * The README's TypeScript examples run as written (the address aside) against a live server: every ```ts block
 * that is not marked `<!-- fragment -->`, type-stripped with the compiler's `transpileModule` and run by Node as
 * an ES module beside this package, so `@queueflow/client` resolves to the built package itself.
 */

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";

import ts from "typescript";

import { API_KEY, type LiveServer, PACKAGE_DIR, WORKER_KEY, startServer } from "./live.js";

const run = promisify(execFile);
const README_URL = "http://127.0.0.1:8000";

let server: LiveServer;
let scratch: string;

before(async () => {
  // The push endpoint example's receiver listens on 127.0.0.1.
  server = await startServer({ args: ["--allow-private-endpoints"] });
  scratch = await mkdtemp(join(PACKAGE_DIR, ".readme-run-"));
});
after(async () => {
  await server.stop();
  await rm(scratch, { recursive: true, force: true });
});

const readme = await readFile(join(PACKAGE_DIR, "README.md"), "utf8");
const blocks = [...readme.matchAll(/^(<!-- fragment -->\n)?```ts\n([\s\S]*?)^```$/gm)]
  .filter((match) => match[1] === undefined)
  .map((match) => ({ line: readme.slice(0, match.index).split("\n").length + 1, code: match[2] ?? "" }));

test("the README has runnable TypeScript examples", () => {
  assert.ok(blocks.length >= 3, `found ${blocks.length}`);
});

// A program that reads DATABASE_URL (the transactional enqueue) runs on the session's migrated database, which the
// pytest wrapper passes as QUEUEFLOW_TEST_PG_URL; run alone, without it, that program skips.
const databaseUrl = process.env.QUEUEFLOW_TEST_PG_URL;

for (const block of blocks) {
  const needsDatabase = block.code.includes("DATABASE_URL");
  const skip = needsDatabase && !databaseUrl ? "QUEUEFLOW_TEST_PG_URL is not set (the pytest wrapper sets it)" : false;
  test(`README.md:${block.line} runs as written`, { skip }, async () => {
    const { outputText } = ts.transpileModule(block.code.replaceAll(README_URL, server.url), {
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: true },
    });
    const file = join(scratch, `block-${block.line}.mjs`);
    await writeFile(file, outputText);
    const env = {
      ...process.env,
      QUEUEFLOW_API_KEY: API_KEY,
      QUEUEFLOW_WORKER_KEY: WORKER_KEY,
      ...(needsDatabase ? { DATABASE_URL: databaseUrl } : {}),
    };
    await run(process.execPath, [file], { cwd: scratch, env, timeout: 30_000 });
  });
}
