/**
 * The worker loop gives back what it will not run in time: a job too close to its lease's end or deadline to start
 * is released, never started, and the prefetch stays within what the slots start in half the shortest timeout.
 * Stopping's releases: loop.acks.test.ts. Time moves only through the `FakeClock`.
 */

import assert from "node:assert/strict";
import { before, test } from "node:test";

import type { LeasedJob } from "../src/index.js";
import { ShutdownError } from "../src/worker/context.js";
import { LEASE_ANSWER_WAIT_MS } from "../src/worker/loop.js";
import { gate, jobs, leased, loadTracing, scriptedLoop, settle } from "./fakes.js";

before(loadTracing);

test("a job whose lease runs out while it waits is released before it does, and never started", async () => {
  const release = gate();
  const started: string[] = [];
  const { loop, source, clock } = scriptedLoop(
    [leased("a"), leased("b")],
    {
      t: async (_payload, ctx) => {
        started.push(ctx.job.id);
        await release.promise;
      },
    },
    { concurrency: 1, prefetch: 1 },
  );
  source.heartbeatError = new Error("the server is away");
  const stopped = loop.start();
  await clock.advance(28_500);
  assert.deepEqual(source.released, []); // 1.5 s of its lease left: more than the 1 s margin
  await clock.advance(500);
  assert.deepEqual(source.released, ["b"]); // the margin reached: back to the queue before its lease runs out
  release.resolve();
  await settle();
  await loop.stop();
  await stopped;
  assert.deepEqual(started, ["a"]);
});

test("a job that cannot end a typical run before its deadline is released, not started", async () => {
  // The deadline counts from the claim: 5 s gone waiting of an 8 s timeout, a 5 s run would pass it.
  const { loop, source, clock } = scriptedLoop(jobs(2, { timeout_seconds: 8 }), { t: () => clock.sleep(5_000) }, {
    concurrency: 1,
    prefetch: 1,
  });
  const stopped = loop.start();
  await clock.advance(5_000);
  assert.deepEqual(source.released, ["j1"]);
  assert.deepEqual([...source.outcomes.keys()], ["j0"]);
  await loop.stop();
  await stopped;
});

test("a job whose timeout is shorter than a typical run still runs: released, it would come back no better off", async () => {
  const { loop, source, clock } = scriptedLoop(jobs(2, { timeout_seconds: 4 }), { t: () => clock.sleep(5_000) }, {
    concurrency: 2,
    prefetch: 0,
  });
  const stopped = loop.start();
  await clock.advance(5_000);
  const ending = loop.stop();
  await clock.advance(1_000);
  await ending;
  await stopped;
  assert.deepEqual(source.released, []);
  assert.deepEqual([...source.outcomes.keys()].sort(), ["j0", "j1"]);
});

test("it holds no more jobs than its slots start within half the shortest timeout", async () => {
  // 1 s tasks on one slot, 10 s timeouts: 5 ahead start within 5 s; `prefetch: 50` would let most pass their deadlines.
  const { loop, source, clock } = scriptedLoop(jobs(60, { timeout_seconds: 10 }), { t: () => clock.sleep(1_000) }, {
    concurrency: 1,
    prefetch: 50,
  });
  const stopped = loop.start();
  await clock.advance(60_000);
  assert.equal(source.asked[0], 51); // nothing measured yet
  assert.ok(source.asked.slice(1).every((asked) => asked <= 6), JSON.stringify(source.asked));
  const ending = loop.stop();
  await clock.advance(1_000);
  await ending;
  await stopped;
});

test("a stop cuts a lease that does not wait but is still unanswered a while after", async () => {
  // It waited for the lease's answer as long as the request's timeout let it (30 s by default) before finishing.
  const { loop, source, clock } = scriptedLoop(jobs(1), { t: () => "done" }, { concurrency: 1, prefetch: 0 });
  const lease = source.lease.bind(source);
  let cutWith: unknown;
  source.lease = (maxJobs: number, signal: AbortSignal, cut?: AbortSignal): Promise<LeasedJob[]> => {
    if (source.asked.length === 0) return lease(maxJobs, signal);
    source.asked.push(maxJobs);
    // Stuck on a slow server: the stop's signal does not end it (its answer may be on its way), `cut` does.
    return new Promise((_, reject) =>
      cut?.addEventListener("abort", () => reject((cutWith = cut.reason)), { once: true }),
    );
  };
  const stopped = loop.start();
  await settle();
  assert.equal(source.asked.length, 2);
  let done = false;
  const stopping = loop.stop().then(() => (done = true));
  await clock.advance(LEASE_ANSWER_WAIT_MS - 1);
  assert.equal(done, false); // its answer may be on its way: it is let to arrive for a while
  await clock.advance(1);
  await stopping;
  await stopped;
  assert.ok(cutWith instanceof ShutdownError);
  assert.deepEqual(source.outcomes.get("j0")?.outcome, { result: "done" });
});

test("a long-poll that waited longer than a job's timeout still starts it: its claim came that much later", async () => {
  // Counted from the poll's sending alone, a job of a 10 s timeout claimed after a 20 s wait looked past its deadline,
  // and every job of such a poll was released.
  const started: string[] = [];
  const job = leased("a", { timeout_seconds: 10, claimed_after_seconds: 19.9 });
  const { loop, source, clock } = scriptedLoop([job], { t: (_payload, ctx) => void started.push(ctx.job.id) }, {}, 20_000);
  const stopped = loop.start();
  await clock.advance(20_000);
  assert.deepEqual([started, source.released], [["a"], []]);
  await loop.stop();
  await stopped;
});

test("a loop started again releases its waiting jobs in time, as its first run did", async () => {
  // The first run armed the expiry watch for b (29 s); its stop cleared the timer. A second run's waiting job, due
  // later than that old time, must arm the watch again (it did not: the old due time outlived the stop).
  let release = gate();
  const started: string[] = [];
  const { loop, source, clock } = scriptedLoop(
    [leased("a"), leased("b")],
    {
      t: async (_payload, ctx) => {
        started.push(ctx.job.id);
        await release.promise;
      },
    },
    { concurrency: 1, prefetch: 1 },
  );
  source.heartbeatError = new Error("the server is away");
  let stopped = loop.start();
  await clock.advance(1_000);
  const stopping = loop.stop();
  await settle();
  release.resolve();
  await stopping;
  await stopped;
  assert.deepEqual(source.released, ["b"]); // the stop gave back what had not started

  release = gate();
  source.backlog.push(leased("c"), leased("d"));
  stopped = loop.start();
  await clock.advance(28_000); // d was claimed at 1 s: 30 s of lease, its last moment to start (1 s margin) is 30 s
  assert.deepEqual(source.released, ["b"]);
  await clock.advance(1_500);
  assert.deepEqual(source.released, ["b", "d"]);
  release.resolve();
  await settle();
  await loop.stop();
  await stopped;
  assert.deepEqual(started, ["a", "c"]);
});
