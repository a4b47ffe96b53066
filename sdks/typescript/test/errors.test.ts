/**
 * A value the client cannot send faithfully, and a server nobody answers for, fail with a message that names the
 * value's path or the URL (issue 17, item 5). No server needed: a fake `fetch` records what would have been sent.
 */

import assert from "node:assert/strict";
import { test } from "node:test";

import { ArgumentError, ConnectionError, QueueFlow, QueueFlowError } from "../src/index.js";
import { NOBODY_LISTENS } from "./live.js";

function recording(): { client: QueueFlow; sent: Request[] } {
  const sent: Request[] = [];
  const fetch = async (input: string | URL | Request): Promise<Response> => {
    sent.push(input as Request);
    return Response.json({ jobs: [] }, { status: 201 });
  };
  return { client: new QueueFlow({ baseUrl: "http://queueflow.test", fetch, maxRetries: 0 }), sent };
}

const CASES: [string, Record<string, unknown>, RegExp][] = [
  ["a Set", { tags: ["a", new Set(["b"])] }, /^payload\.tags\[1\] is a Set, which JSON cannot carry: send an array, e\.g\. \[\.\.\.value\]$/],
  ["a Map", { byId: new Map([[1, "a"]]) }, /^payload\.byId is a Map, .*Object\.fromEntries\(value\)$/],
  ["a BigInt", { n: 2n ** 70n }, /^payload\.n is a bigint, .*value\.toString\(\)$/],
  ["NaN", { ratio: Number.NaN }, /^payload\.ratio is NaN, which JSON cannot carry: send a finite number or null$/],
  ["Infinity", { deep: [{ x: Number.POSITIVE_INFINITY }] }, /^payload\.deep\[0\]\.x is Infinity/],
  ["a function", { callback: () => 1 }, /^payload\.callback is a function, .*plain object$/],
];

for (const [what, payload, message] of CASES) {
  test(`${what} in a payload is an ArgumentError naming its path, and nothing is sent`, async () => {
    const { client, sent } = recording();
    const error = await client.jobs.enqueue({ task_name: "t", payload }).catch((e: unknown) => e);
    assert.ok(error instanceof ArgumentError, String(error));
    assert.ok(error instanceof QueueFlowError);
    assert.match(error.message, message);
    assert.equal(sent.length, 0);
  });
}

test("every body is checked: a batch item is named by its index", async () => {
  const { client, sent } = recording();
  const batch = client.jobs.enqueueMany([{ task_name: "a" }, { task_name: "b", metadata: { ids: new Set([1]) } }]);
  await assert.rejects(batch, (error: unknown) => error instanceof ArgumentError && /^jobs\[1\]\.metadata\.ids is a Set/.test(error.message));
  assert.equal(sent.length, 0);
});

test("a jobs.list metadata filter is checked the same way", async () => {
  const { client, sent } = recording();
  const listing = client.jobs.list({ metadata: { ids: new Set([1]) } });
  await assert.rejects(listing, (error: unknown) => error instanceof ArgumentError && /^metadata\.ids is a Set/.test(error.message));
  assert.equal(sent.length, 0);
});

test("what JSON.stringify carries faithfully is sent as it would be: a Date as its ISO string", async () => {
  const { client, sent } = recording();
  await client.jobs.enqueueMany([{ task_name: "a", payload: { at: new Date(Date.UTC(2026, 0, 1)), n: null, skip: undefined } }]);
  assert.equal(sent.length, 1);
  const body = (await sent[0]!.json()) as { jobs: { payload: unknown }[] };
  assert.deepEqual(body.jobs[0]!.payload, { at: "2026-01-01T00:00:00.000Z", n: null });
});

test("a connection error names the method and URL it could not reach", async () => {
  const port = NOBODY_LISTENS;
  const nowhere = new QueueFlow({ baseUrl: `http://127.0.0.1:${port}`, maxRetries: 0 });
  const error = await nowhere.jobs.get("job_1").catch((e: unknown) => e);
  assert.ok(error instanceof ConnectionError);
  assert.match(error.message, new RegExp(`^cannot reach QueueFlow at GET http://127\\.0\\.0\\.1:${port}/v1/jobs/job_1: ECONNREFUSED$`));
});
