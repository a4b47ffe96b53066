/** A real `queueflow serve` on a free loopback port, started per test file, and helpers to wait on it. */

import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync } from "node:fs";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";

/** The package's folder (this file runs from dist-test/test/). */
export const PACKAGE_DIR = fileURLToPath(new URL("../../", import.meta.url));
const REPO_DIR = fileURLToPath(new URL("../../../../", import.meta.url));

export const API_KEY = "tenant-a-key";
export const OTHER_API_KEY = "tenant-b-key";
export const WORKER_KEY = "worker-key";

export interface LiveServer {
  url: string;
  stop(): Promise<void>;
}

function queueflowBinary(): string {
  const configured = process.env.QUEUEFLOW_BIN;
  if (configured) return configured;
  const venv = `${REPO_DIR}.venv/bin/queueflow`;
  if (!existsSync(venv)) throw new Error(`${venv} is missing: run \`make test\` at the repository root once`);
  return venv;
}

async function freePort(): Promise<number> {
  const probe = createServer();
  probe.listen(0, "127.0.0.1");
  await once(probe, "listening");
  const address = probe.address();
  probe.close();
  if (address === null || typeof address === "string") throw new Error("no port");
  return address.port;
}

/**
 * A loopback port nobody listens on, for tests of a refused connection: 4, privileged and unassigned (and not one of
 * the ports fetch refuses to call, as it does 1), and never handed out for port 0 — a port that `freePort` found free
 * may be bound by a concurrent test's server before the test connects to it.
 */
export const NOBODY_LISTENS = 4;

/**
 * Start the server on the in-memory store with tenant and worker keys (or in development mode with
 * `auth: false`), and resolve once it says it listens.
 */
export async function startServer(options: { auth?: boolean; args?: string[] } = {}): Promise<LiveServer> {
  // A port free a moment ago may be bound by a concurrent test's server (this suite's, or pytest's beside it) before
  // this one binds it: this server then says so and exits, and another port is tried. Ready is the server's own line
  // that it listens, not an answer on the port, which could come from that other server.
  for (let attempt = 1; ; attempt += 1) {
    const started = await startOn(await freePort(), options);
    if (started !== "port taken") return started;
    if (attempt === 3) throw new Error("three free ports in a row were taken before queueflow serve could bind them");
  }
}

async function startOn(port: number, options: { auth?: boolean; args?: string[] }): Promise<LiveServer | "port taken"> {
  const keys = options.auth === false ? [] : ["--api-keys", `${API_KEY}=tenant-a,${OTHER_API_KEY}=tenant-b`, "--worker-keys", WORKER_KEY];
  const args = ["serve", "--host", "127.0.0.1", "--port", String(port), "--database-url", "memory://", "--safety-poll", "0.1", ...keys, ...(options.args ?? [])];
  const child = spawn(queueflowBinary(), args, { cwd: REPO_DIR, stdio: ["ignore", "pipe", "pipe"] });
  let log = "";
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => (log += chunk));
  const listening = new Promise<boolean>((resolve) => {
    let out = "";
    child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
      out += chunk;
      if (out.includes("QueueFlow is listening")) resolve(true);
    });
    child.once("exit", () => resolve(false));
  });
  const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
  const listens = await listening;
  clearTimeout(timer);
  if (!listens) {
    if (log.includes("already in use")) return "port taken";
    throw new Error(`queueflow serve exited (${child.exitCode ?? child.signalCode}) before it listened:\n${log}`);
  }
  return { url: `http://127.0.0.1:${port}`, stop: () => stopProcess(child) };
}

async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, "exit");
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
  await exited;
  clearTimeout(timer);
}

/**
 * Ask `probe` until `done` holds of its answer. The server is another process: asking again is the only
 * way to see its state change, so this polls briefly rather than sleeping a fixed time.
 */
export async function waitFor<T>(probe: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting; last value: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A promise with its resolve function outside, for a test to wait on an event inside a handler. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}
