/**
 * What a plain-JavaScript user can reach on each class is exactly what the README documents. TypeScript's
 * `private` is erased at compile time, so a member that is not API must be a `#private` one; otherwise
 * `worker.run()` looks callable and fails with a TypeError far from the mistake.
 */

import assert from "node:assert/strict";
import { test } from "node:test";

import { Endpoints, Events, Jobs, QueueFlow, Queues, Schedules, Sequences, Triggers, Worker, Workflows } from "../src/index.js";

/** Every property name (string or symbol) an instance answers, own or from its class, without Object's. */
function surface(instance: object): string[] {
  const names = new Set<string>();
  for (let proto: object | null = instance; proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
    for (const key of Reflect.ownKeys(proto)) if (key !== "constructor") names.add(String(key));
  }
  return [...names].sort();
}

const options = { baseUrl: "http://127.0.0.1:9" };

test("a Worker shows only its documented API: no run(), lease(), held, options, …", () => {
  const worker = new Worker({ ...options, queues: ["default"] });
  assert.deepEqual(surface(worker), ["ackBatches", "activeJobs", "quit", "runLocal", "runningJobs", "start", "stop", "stopOnSignals", "task"]);
  assert.equal((worker as unknown as Record<string, unknown>).run, undefined);
});

test("QueueFlow and its resources show only their documented API", () => {
  const client = new QueueFlow(options);
  assert.deepEqual(surface(client), ["api", "endpoints", "events", "jobs", "queues", "schedules", "sequences", "triggers", "workflows"]);
  assert.ok(client.triggers instanceof Triggers && client.events instanceof Events);
  assert.ok(client.jobs instanceof Jobs && client.queues instanceof Queues);
  assert.ok(client.workflows instanceof Workflows && client.schedules instanceof Schedules);
  assert.deepEqual(surface(client.jobs), ["cancel", "enqueue", "enqueueMany", "get", "iterate", "list", "retry", "run", "wait"]);
  assert.deepEqual(surface(client.queues), ["get", "list", "pause", "resume", "update"]);
  assert.deepEqual(surface(client.workflows), ["cancel", "create", "get", "iterate", "list", "retry", "signal", "wait"]);
  assert.deepEqual(surface(client.schedules), ["create", "delete", "get", "iterate", "list", "update"]);
  assert.ok(client.endpoints instanceof Endpoints);
  assert.deepEqual(surface(client.endpoints), ["create", "delete", "get", "iterate", "list", "rotateSecret", "update"]);
  assert.deepEqual(surface(client.triggers), ["create", "delete", "get", "iterate", "list", "update"]);
  assert.deepEqual(surface(client.events), ["send"]);
  assert.ok(client.sequences instanceof Sequences);
  assert.deepEqual(surface(client.sequences), ["resume"]);
});
