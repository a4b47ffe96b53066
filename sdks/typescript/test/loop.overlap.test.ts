/**
 * The worker loop's overlapping leases: while the backlog is deep (the last lease came back full) two leases are in
 * flight at once; a short answer brings it back to one, so an idle worker parks one long-poll; a stop lets every
 * lease in flight answer (or cuts it) and releases what each brings. Time moves only through the `FakeClock`.
 */

import assert from "node:assert/strict";
import { before, test } from "node:test";

import type { LeasedJob } from "../src/index.js";
import { ShutdownError } from "../src/worker/context.js";
import { HttpSource } from "../src/worker/httpSource.js";
import { LEASE_ANSWER_WAIT_MS } from "../src/worker/loop.js";
import { answerByHand, gate, jobs, leased, loadTracing, scriptedLoop, settle } from "./fakes.js";

before(loadTracing);

/** Handlers that run until the test finishes them, the first started first. */
function byHand(): { handlers: { t: () => Promise<void> }; finish: (count: number) => Promise<void> } {
  const running: (() => void)[] = [];
  return {
    handlers: { t: () => new Promise<void>((resolve) => running.push(resolve)) },
    finish: async (count) => {
      for (let n = 0; n < count; n += 1) {
        running.shift()?.();
        await settle();
      }
    },
  };
}

/** `count` jobs named `<prefix>0`, `<prefix>1`, … */
function named(prefix: string, count: number): LeasedJob[] {
  return Array.from({ length: count }, (_, n) => leased(`${prefix}${n}`));
}

test("a deep backlog keeps two leases in flight, and an idle worker parks one", async () => {
  // One claim at a time, asked only once half the places were free: the lease's round trip, then the ack's, in turn
  // left the server and PostgreSQL idle part of the time (one worker: ~19–20k no-op jobs a second, 1.35 of 2 cores busy).
  const all = jobs(400);
  const { loop, source, clock } = scriptedLoop(all, { t: () => null }, { concurrency: 4, prefetch: 40 }, 5);
  const stopped = loop.start();
  await clock.advance(1_000);
  assert.equal(source.backlog.length, 0);
  assert.equal(source.mostLeasing, 2);
  assert.deepEqual([source.leasing, source.parked], [1, 1]); // idle: one lease parked, waiting for work
  await loop.stop();
  await stopped;
  assert.equal(source.mostParked, 1);
  assert.deepEqual([...source.outcomes.keys(), ...source.released].sort(), all.map(({ id }) => id).sort());
  assert.ok(Math.max(...source.asked) <= 44, JSON.stringify(source.asked)); // together never more than the places
});

test("a lease overlaps another only after a full answer: a short one ends the overlap", async () => {
  const hand = byHand();
  const { loop: worker, source: leases } = scriptedLoop([], hand.handlers, { concurrency: 2, prefetch: 6, ackIntervalMs: 0 }); // 8 places
  const { calls } = answerByHand(leases);
  const stopped = worker.start();
  await settle();
  assert.deepEqual(leases.asked, [8]);
  calls[0]?.answer(named("a", 8)); // full: the backlog is deep
  await settle();
  assert.equal(worker.activeJobs, 8);
  await hand.finish(2); // a quarter of the places free: another lease, the only one in flight
  assert.deepEqual([leases.asked, calls.length], [[8, 2], 1]);
  await hand.finish(2); // another quarter: a second lease overlaps the first
  assert.deepEqual([leases.asked, calls.length], [[8, 2, 2], 2]);
  calls[1]?.answer(named("b", 2)); // the later one answers first, full: one overlap allowed again
  await settle();
  calls[0]?.answer(named("c", 1)); // short: one lease at a time again
  await settle();
  assert.deepEqual([worker.activeJobs, calls.length], [7, 0]);
  await hand.finish(5); // half the places free: one lease; then a quarter more free, and no lease overlaps it
  assert.deepEqual([worker.activeJobs, leases.asked, calls.length], [2, [8, 2, 2, 4], 1]);
  assert.equal(leases.mostLeasing, 2);
  const stopping = worker.stop();
  calls[0]?.answer([]);
  await hand.finish(2);
  await stopping;
  await stopped;
  assert.equal(leases.outcomes.size, 11);
});

for (const cut of [false, true]) {
  test(`a stop with two leases in flight lets both answer${cut ? ", cuts the one still unanswered" : ""}, and releases all they bring`, async () => {
    const hand = byHand();
    const { loop, source, clock } = scriptedLoop([], hand.handlers, { concurrency: 2, prefetch: 6, ackIntervalMs: 0 });
    const { calls, cutWith } = answerByHand(source);
    const stopped = loop.start();
    await settle();
    calls[0]?.answer(named("a", 8));
    await settle();
    await hand.finish(4);
    assert.equal(calls.length, 2); // two leases in flight
    const [first, second] = calls;
    let done = false;
    const stopping = loop.stop().then(() => (done = true));
    await settle();
    assert.deepEqual(source.released.sort(), ["a6", "a7"]); // the jobs held and not started
    await hand.finish(2); // the running ones end
    await clock.advance(500);
    second?.answer(named("b", 2)); // the later lease answers first
    await settle();
    assert.deepEqual(source.released.slice(2).sort(), ["b0", "b1"]);
    assert.equal(done, false); // the first lease may still answer
    if (cut) {
      await clock.advance(LEASE_ANSWER_WAIT_MS - 500 - 1);
      assert.equal(done, false);
      await clock.advance(1); // still unanswered: cut
      assert.equal(cutWith.length, 1);
      assert.ok(cutWith[0] instanceof ShutdownError);
    } else {
      await clock.advance(1_000);
      first?.answer(named("c", 2));
      await settle();
    }
    await stopping;
    await stopped;
    assert.equal(done, true);
    const brought = [...named("a", 8), ...named("b", 2), ...(cut ? [] : named("c", 2))].map(({ id }) => id);
    const ran = [...source.outcomes.keys()];
    assert.deepEqual(ran.sort(), ["a0", "a1", "a2", "a3", "a4", "a5"]);
    assert.deepEqual([...ran, ...source.released].sort(), brought.sort()); // none lost, none twice
    assert.equal(source.leasing, 0);
    assert.equal(clock.pending, 0); // no cut timer left behind
  });
}

test("HttpSource: a lease sent while another is in flight never parks; one alone after an empty answer does", async () => {
  const waits: number[] = [];
  const answers: ((jobs: LeasedJob[]) => void)[] = [];
  const fetch: typeof globalThis.fetch = async (input) => {
    const request = input as Request;
    waits.push((JSON.parse(await request.text()) as { wait_seconds: number }).wait_seconds);
    const jobs = await new Promise<LeasedJob[]>((resolve) => answers.push(resolve));
    return new Response(JSON.stringify({ jobs }), { status: 200, headers: { "content-type": "application/json" } });
  };
  const source = new HttpSource(
    { baseUrl: "http://127.0.0.1:9", token: "worker-key", fetch, maxRetries: 0 },
    { queues: ["q"], leaseSeconds: 30, waitSeconds: 1, workerId: "w", taskNames: () => ["t"] },
  );
  const signal = new AbortController().signal;
  const until = async (count: number) => {
    while (answers.length < count) await settle();
  };
  const empty = source.lease(10, signal);
  await until(1);
  answers[0]?.([]);
  assert.deepEqual(await empty, []);
  const parked = source.lease(10, signal); // alone after an empty answer: waits for work
  const overlapping = source.lease(10, signal);
  await until(3);
  assert.deepEqual(waits, [0, 1, 0]);
  answers[1]?.([]);
  answers[2]?.([]);
  await Promise.all([parked, overlapping]);
  source.close();
});

test("after a lease that came back short, the next is sent only once the outcomes in hand are acked", async () => {
  // Sent beside the acks, each lease of a worker that had taken all there was brought the one or two jobs that came
  // within its round trip, a claim each (bench/results/2026-12-06-notes.md).
  const { loop, source } = scriptedLoop(named("a", 3), { t: () => null }, { concurrency: 4, prefetch: 40, ackIntervalMs: 0 });
  const ack = gate();
  source.ackGate = ack.promise; // a slow server: the acks wait
  const stopped = loop.start();
  await settle();
  assert.deepEqual(source.acks.flat().map(({ id }) => id), ["a0"]); // its ack waits, and a1 and a2 behind it
  const asked = source.asked.length;
  source.deliver(...named("b", 2)); // answers a parked lease, if one was sent: short again
  await settle();
  assert.equal(source.asked.length, asked);
  assert.ok(source.asked.length <= 2, JSON.stringify(source.asked));
  ack.resolve();
  await settle();
  assert.equal(source.asked.length, asked + 1); // acked: the worker leases again
  await loop.stop();
  await stopped;
  assert.deepEqual([...source.outcomes.keys()].sort(), ["a0", "a1", "a2", "b0", "b1"]);
});
