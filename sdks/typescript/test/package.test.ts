/**
 * The package as a user gets it: `npm pack`, installed into an empty project, used from plain JavaScript
 * by the README's quick start, word for word except for the server's address.
 */

import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";

import { type LiveServer, PACKAGE_DIR, startServer } from "./live.js";

const run = promisify(execFile);
const README_URL = "http://127.0.0.1:8000";

let server: LiveServer;
let project: string;

before(async () => {
  server = await startServer({ auth: false });
  project = await mkdtemp(join(tmpdir(), "queueflow-client-"));
});
after(async () => {
  await server.stop();
  await rm(project, { recursive: true, force: true });
});

/** The code block after `<!-- quickstart: NAME -->` in the README. */
function quickstart(readme: string, name: string): string {
  const match = new RegExp(`<!-- quickstart: ${name.replace(".", "\\.")} -->\\s*\`\`\`js\\n([\\s\\S]*?)\`\`\``).exec(readme);
  assert.ok(match?.[1], `README has no quick start block for ${name}`);
  return match[1];
}

test("the packed tarball installs into an empty project and runs the README quick start", async () => {
  // --ignore-scripts: the dist this suite runs from is packed as built; prepack's tsc would compile it again in
  // place while the suite's other files import it (a half-written dist/worker/leasing.js failed the README test).
  const { stdout } = await run("npm", ["pack", "--json", "--ignore-scripts", "--pack-destination", project], {
    cwd: PACKAGE_DIR,
  });
  const [packed] = JSON.parse(stdout) as { filename: string; files: { path: string }[] }[];
  assert.ok(packed);
  const files = packed.files.map((file) => file.path);
  assert.ok(files.includes("dist/index.js") && files.includes("dist/index.d.ts"), files.join(", "));
  assert.ok(!files.some((file) => file.startsWith("src/") || file.startsWith("dist-test/")), files.join(", "));

  await writeFile(join(project, "package.json"), JSON.stringify({ name: "empty", private: true, type: "module" }));
  await run("npm", ["install", join(project, packed.filename), "--no-audit", "--no-fund", "--prefer-offline"], { cwd: project });

  const readme = await readFile(join(PACKAGE_DIR, "README.md"), "utf8");
  for (const name of ["worker.mjs", "enqueue.mjs"]) {
    await writeFile(join(project, name), quickstart(readme, name).replaceAll(README_URL, server.url));
  }

  const worker = spawn(process.execPath, ["worker.mjs"], { cwd: project, stdio: ["ignore", "pipe", "pipe"] });
  let workerOutput = "";
  worker.stdout.setEncoding("utf8").on("data", (chunk: string) => (workerOutput += chunk));
  worker.stderr.setEncoding("utf8").on("data", (chunk: string) => (workerOutput += chunk));
  const exited = once(worker, "exit");
  try {
    const { stdout: enqueued } = await run(process.execPath, ["enqueue.mjs"], { cwd: project, timeout: 20_000 });
    assert.match(enqueued, /^enqueued job_\w+\ncompleted { sent: true }\n$/);
    assert.match(workerOutput, /sending to ada@example\.com \(job job_\w+, delivery 1\)/);
  } finally {
    worker.kill("SIGTERM");
  }
  const [code] = await exited;
  assert.equal(code, 0, workerOutput);
  assert.match(workerOutput, /worker stopped/);
});
