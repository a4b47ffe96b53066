/**
 * The worker loop's acks, heartbeats and stopping, over a scripted lease source and a clock the tests advance:
 * when outcomes go and in what batches, what a lost lease drops, how held jobs finish or are handed back.
 */

import assert from "node:assert/strict";
import { before, test } from "node:test";

import { LeaseLostError } from "../src/index.js";
import { ShutdownError } from "../src/worker/context.js";
import { aborted, gate, jobs, leased, loadTracing, nodeWarnings, scriptedLoop, settle, tokens } from "./fakes.js";

// The last test fails if Node emitted any warning while the loops ran.
const warnings = nodeWarnings();
before(loadTracing);

test("outcomes go in one ack once ackBatch are ready, or ackIntervalMs after the first, or at once when no job is held", async () => {
  const gates = new Map(jobs(5).map((job) => [job.id, gate()]));
  const finish = async (...ids: string[]) => {
    for (const id of ids) gates.get(id)?.resolve();
    await settle();
  };
  const { loop, source, clock } = scriptedLoop(jobs(5), { t: (_payload, ctx) => gates.get(ctx.job.id)?.promise }, {
    concurrency: 5,
    prefetch: 0,
    ackBatch: 3,
    ackIntervalMs: 10,
  });
  const stopped = loop.start();
  await settle();
  await finish("j0");
  await clock.advance(9);
  assert.equal(source.acks.length, 0);
  await clock.advance(1);
  assert.deepEqual(tokens(source), ["j0-1"]);
  await finish("j1", "j2");
  assert.equal(source.acks.length, 1);
  await finish("j3"); // the third of a batch of 3
  await finish("j4"); // the last job held
  assert.deepEqual(
    source.acks.map((batch) => batch.map((recorded) => recorded.id)),
    [["j0"], ["j1", "j2", "j3"], ["j4"]],
  );
  assert.deepEqual(loop.ackBatches, [1, 3, 1]);
  assert.equal(clock.now(), 10);
  await loop.stop();
  await stopped;
});

test("outcomes go at once when leasing waits for them, however long ackIntervalMs", async () => {
  // One slot and one job ahead (a capacity of 2, below ackBatch) stalled the worker for ackIntervalMs every two jobs:
  // leasing waited for the acks, and the acks for a batch that could not fill.
  const gates = new Map(jobs(10).map((job) => [job.id, gate()]));
  const { loop, source, clock } = scriptedLoop(jobs(10), { t: (_payload, ctx) => gates.get(ctx.job.id)?.promise }, {
    concurrency: 1,
    prefetch: 1,
    ackIntervalMs: 60_000,
  });
  const stopped = loop.start();
  await settle();
  for (let n = 0; n < 10; n += 1) {
    gates.get(`j${n}`)?.resolve();
    await settle();
    // Every outcome but the latest is acked: it waits for a batch only while the next lease does not wait for it.
    assert.ok(source.acks.flat().length >= n, `${n + 1} jobs ran, acks: ${JSON.stringify(loop.ackBatches)}`);
  }
  assert.equal(source.outcomes.size, 10);
  assert.equal(clock.now(), 0);
  await loop.stop();
  await stopped;
});

test("while a whole capacity of outcomes waits for its acks, it leases no more", async () => {
  // Leasing on while acks lagged filled a slow server with leases the worker could not record in time.
  const hung = gate();
  let ran = 0;
  const { loop, source } = scriptedLoop(jobs(40), { t: () => (ran += 1) }, { concurrency: 2, prefetch: 2 });
  source.ackGate = hung.promise;
  const stopped = loop.start();
  await settle();
  await settle();
  // Two leases' jobs ran (4, then 2 as half the places came free); their outcomes went in one ack once no job was
  // held, and it hangs: 6 outcomes wait, more than the 4 places, so no third lease is asked.
  assert.deepEqual([ran, source.acks.length, source.asked.length, source.leasing], [6, 1, 2, 0]);
  source.ackGate = undefined;
  hung.resolve();
  await settle();
  assert.equal(source.outcomes.size, 40);
  await loop.stop();
  await stopped;
});

test("an outcome recorded while an ack is in flight is sent, and so is every later one (the ack chain never sticks)", async () => {
  // The first ack is held until the second job's outcome is recorded: the chain sends that one too, and ends
  // before the timer that outcome armed fires; that timer then finds nothing to send. Every later outcome must
  // still go out (the chain once stayed "in flight" forever from there, and its jobs were heartbeated forever).
  // A third job runs throughout: with no job held, an outcome goes at once instead of arming the timer.
  const gates = new Map(["a", "b", "z", "c"].map((id) => [id, gate()]));
  const { loop, source, clock } = scriptedLoop(
    ["a", "b", "z"].map((id) => leased(id)),
    { t: (_payload, ctx) => gates.get(ctx.job.id)?.promise },
    { concurrency: 3, prefetch: 0, ackIntervalMs: 300 },
  );
  const held = gate();
  source.ackGate = held.promise;
  const stopped = loop.start();
  await settle();
  gates.get("a")?.resolve();
  await clock.advance(300); // a's ack goes, and hangs
  assert.deepEqual(tokens(source), ["a-1"]);
  gates.get("b")?.resolve();
  await settle(); // b's outcome is recorded, its timer armed
  source.ackGate = undefined;
  held.resolve();
  await settle();
  assert.deepEqual(tokens(source), ["a-1", "b-1"]); // sent by the chain a's ack began
  await clock.advance(300); // b's timer fires, with nothing left to send
  source.deliver(leased("c"));
  await settle();
  gates.get("c")?.resolve();
  await clock.advance(300);
  assert.deepEqual(tokens(source), ["a-1", "b-1", "c-1"]);
  gates.get("z")?.resolve();
  await settle();
  assert.deepEqual(tokens(source), ["a-1", "b-1", "c-1", "z-1"]);
  await loop.stop();
  await stopped;
});

test("outcomes it could not send are told to onError and left to their leases' expiry", async () => {
  const { loop, source, clock, errors } = scriptedLoop(jobs(2), { t: () => null }, { heartbeatMs: 1_000 });
  const away = new Error("the server is away");
  source.ackError = away;
  const stopped = loop.start();
  await settle();
  assert.deepEqual(source.acks.flat().map(({ id }) => id), ["j0", "j1"]);
  assert.deepEqual(errors, source.acks.map(() => away)); // each ack that failed, told once
  await clock.advance(1_000);
  assert.deepEqual(source.beats, []); // no lease held any more: nothing to extend
  await loop.stop();
  await stopped;
});

test("every heartbeat extends every held lease in one call, waiting ones too; a waiting job found lost is dropped unrun", async () => {
  const release = gate();
  const ran: string[] = [];
  const { loop, source, clock } = scriptedLoop(
    [leased("a"), leased("b")],
    {
      t: async (_payload, ctx) => {
        ran.push(ctx.job.id);
        await release.promise;
      },
    },
    { concurrency: 1, prefetch: 1, heartbeatMs: 1_000 },
  );
  const stopped = loop.start();
  await settle();
  await clock.advance(999);
  assert.equal(source.beats.length, 0);
  await clock.advance(1);
  assert.deepEqual(source.beats.map((beat) => beat.sort()), [[["a", "a-1"], ["b", "b-1"]]]);
  source.lost.add("b-1");
  await clock.advance(1_000);
  assert.equal(loop.activeJobs, 1);
  release.resolve();
  await settle();
  await clock.advance(1_000); // nothing held: no heartbeat
  assert.equal(source.beats.length, 2);
  await loop.stop();
  await stopped;
  assert.deepEqual(ran, ["a"]);
  assert.deepEqual(tokens(source), ["a-1"]);
});

test("a lease found lost at a heartbeat aborts its handler's signal with a LeaseLostError, and nothing is reported for it", async () => {
  const reasons: unknown[] = [];
  const { loop, source, clock } = scriptedLoop(
    [leased("a")],
    {
      t: async (_payload, ctx) => {
        await aborted(ctx.signal);
        reasons.push(ctx.signal.reason);
        throw ctx.signal.reason;
      },
    },
    { heartbeatMs: 1_000 },
  );
  const stopped = loop.start();
  await settle();
  source.lost.add("a-1");
  await clock.advance(1_000);
  assert.equal(reasons.length, 1);
  assert.ok(reasons[0] instanceof LeaseLostError);
  assert.equal(loop.activeJobs, 0);
  await loop.stop();
  await stopped;
  assert.deepEqual(source.acks, []);
});

test("stop() during an idle lease ends it at once, and leases nothing after", async () => {
  const { loop, source, clock } = scriptedLoop([], { t: () => null });
  const stopped = loop.start();
  await settle();
  assert.equal(source.leasing, 1);
  await loop.stop();
  await stopped;
  assert.equal(source.leasing, 0);
  assert.equal(source.closed, 1);
  assert.equal(clock.now(), 0);
  source.deliver(leased("late"));
  await settle();
  assert.deepEqual(source.asked, [20]);
  assert.equal(source.backlog.length, 1);
});

test("stop() lets running jobs finish, records their outcomes, and leases nothing more", async () => {
  const release = gate();
  const { loop, source, logger } = scriptedLoop(
    [leased("a"), leased("later")],
    {
      t: async () => {
        await release.promise;
        return "finished";
      },
    },
    { concurrency: 1, prefetch: 0 },
  );
  const running = loop.start();
  await settle();
  const stopped = loop.stop();
  await settle();
  assert.equal(loop.activeJobs, 1);
  assert.ok(logger.of("info").includes("worker w: finishing 1 running jobs (up to 30 s)"));
  release.resolve();
  await stopped;
  await running;
  assert.deepEqual(source.outcomes.get("a")?.outcome, { result: "finished" });
  assert.deepEqual(source.asked, [1]);
  assert.equal(source.backlog.length, 1);
  assert.equal(loop.activeJobs, 0);
});

test("stop() releases every job not started at once; past the grace period it aborts the handlers and releases their jobs", async () => {
  const reasons: unknown[] = [];
  const { loop, source, clock } = scriptedLoop(
    [leased("a"), leased("b"), leased("c")],
    {
      t: async (_payload, ctx) => {
        await aborted(ctx.signal);
        reasons.push(ctx.signal.reason);
        return "too late";
      },
    },
    { concurrency: 1, prefetch: 2, shutdownGraceMs: 100 },
  );
  const running = loop.start();
  await settle();
  const stopped = loop.stop();
  await settle();
  assert.deepEqual(source.releases, [[["b", "b-1"], ["c", "c-1"]]]); // at once, for another worker: no retry counted
  await clock.advance(99);
  assert.deepEqual([reasons.length, source.acks.length, source.released], [0, 0, ["b", "c"]]);
  await clock.advance(1);
  await stopped;
  await running;
  assert.equal(reasons.length, 1);
  assert.ok(reasons[0] instanceof ShutdownError);
  assert.deepEqual(source.released, ["b", "c", "a"]); // running: aborted, its result comes too late
  assert.deepEqual(source.acks, []);
  assert.equal(loop.released, 3);
});

test("quit() during the drain releases running jobs at once", async () => {
  const { loop, source, clock, logger } = scriptedLoop([leased("a")], { t: (_payload, ctx) => aborted(ctx.signal) });
  const running = loop.start();
  await settle();
  const stopped = loop.stop(" (Ctrl-C again to quit)");
  await settle();
  assert.ok(logger.of("info").includes("worker w: finishing 1 running jobs (up to 30 s) (Ctrl-C again to quit)"));
  loop.quit();
  await stopped;
  await running;
  assert.equal(clock.now(), 0);
  assert.deepEqual(source.released, ["a"]);
  assert.deepEqual(tokens(source), []);
  assert.equal(clock.pending, 0); // no timer left behind: the heartbeats' and the grace period's are cleared
});

test("Node printed no warning in this file", async () => {
  assert.deepEqual(await warnings(), []);
});
