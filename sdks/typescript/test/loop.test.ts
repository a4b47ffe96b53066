/**
 * The worker loop on its own, over a scripted lease source and a clock the tests advance (no server, no waiting
 * for time): what it leases and when, how it runs handlers and what it records of them, what it logs. Its acks,
 * heartbeats and stopping: loop.acks.test.ts. worker.test.ts keeps what needs the real server (end-to-end leases
 * and acks, their wire format, process signals).
 */

import assert from "node:assert/strict";
import { before, test } from "node:test";

import { AuthenticationError, FatalError, LeaseLostError, PermissionDeniedError, RetryError, ValidationError } from "../src/index.js";
import { DeadlineError } from "../src/worker/context.js";
import { FakeClock, aborted, gate, jobs, leased, loadTracing, nodeWarnings, scriptedLoop, settle, tokens } from "./fakes.js";

// The last test fails if Node emitted any warning while the loops ran.
const warnings = nodeWarnings();
before(loadTracing);

test("never more than `concurrency` handlers run at once, and every job runs", async () => {
  const release = gate();
  let running = 0;
  let most = 0;
  const { loop, source, errors } = scriptedLoop(jobs(10), {
    t: async () => {
      running += 1;
      most = Math.max(most, running);
      await release.promise;
      running -= 1;
    },
  }, { concurrency: 3 });
  const stopped = loop.start();
  await settle();
  assert.equal(loop.runningJobs, 3);
  assert.equal(loop.activeJobs, 6); // as many ahead as there are slots, until durations are measured
  release.resolve();
  await settle();
  assert.equal(source.outcomes.size, 10);
  assert.equal(most, 3);
  await loop.stop();
  await stopped;
  assert.deepEqual(errors, []);
});

test("jobs are leased ahead of free slots, up to `prefetch`, and all run", async () => {
  const release = gate();
  let arrived = 0;
  const { loop, source } = scriptedLoop(jobs(7), {
    t: async () => {
      arrived += 1;
      await release.promise;
    },
  }, { concurrency: 2, prefetch: 3 });
  const stopped = loop.start();
  await settle();
  assert.deepEqual([loop.activeJobs, loop.runningJobs, arrived], [5, 2, 2]);
  assert.deepEqual(source.asked, [5]);
  release.resolve();
  await settle();
  assert.equal(source.outcomes.size, 7);
  await loop.stop();
  await stopped;
});

for (const [what, roundTripMs, taskMs, second] of [
  // 10 slots of 1 ms tasks get through 2 × 10 / 1 × 10 jobs in two 10 ms round trips: 10 + 201 places.
  ["short tasks: the slots' share of two round trips", 10, 1, 211 - 19],
  // Two 500 ms round trips would be 10,000 such jobs: 500 ahead at most.
  ["slow leases: at most 500 ahead", 500, 1, 510 - 19],
] as const) {
  test(`by default it holds as many jobs as it runs in two lease round trips (${what})`, async () => {
    const { loop, source, clock } = scriptedLoop(jobs(3000), { t: () => clock.sleep(taskMs) }, {}, roundTripMs);
    const stopped = loop.start();
    await clock.advance(roundTripMs); // the first lease: 10 slots and 10 ahead, nothing measured yet
    assert.deepEqual(source.asked, [20]);
    await clock.advance(taskMs); // the first task ended (19 jobs held): its duration and the lease's are known
    assert.deepEqual(source.asked, [20, second]);
    const ending = loop.stop();
    await clock.advance(10_000);
    await ending;
    await stopped;
  });
}

test("by default it holds hardly any jobs ahead of long tasks", async () => {
  const { loop, source, clock } = scriptedLoop(jobs(100), { t: () => clock.sleep(1_000) }, {}, 10);
  const stopped = loop.start();
  await clock.advance(2_000); // the first lease's 20 jobs (asked for before anything was measured) have run
  // 10 slots of 1 s tasks get through 0.2 jobs in two 10 ms round trips: one place ahead of the slots.
  let most = 0;
  for (let ms = 2_000; ms < 5_000; ms += 5) {
    await clock.advance(5);
    most = Math.max(most, loop.activeJobs);
  }
  assert.ok(source.asked.length > 2);
  assert.equal(most, 11);
  assert.ok(source.asked.slice(1).every((asked) => asked <= 11), JSON.stringify(source.asked));
  const ending = loop.stop();
  await clock.advance(10_000);
  await ending;
  await stopped;
});

test("what a handler returns completes its job; what it throws fails it, as RetryError and FatalError say", async () => {
  const { loop, source } = scriptedLoop(
    ["ok", "none", "boom", "later", "fatal"].map((task_name) => leased(task_name, { task_name })),
    {
      ok: () => ({ sent: true }),
      none: () => undefined,
      boom: () => {
        throw new TypeError("cannot read the thing");
      },
      later: async () => {
        throw new RetryError(60, "rate limited");
      },
      fatal: () => {
        throw new FatalError("bad input");
      },
    },
  );
  const stopped = loop.start();
  await settle();
  await loop.stop();
  await stopped;
  const outcome = (id: string) => source.outcomes.get(id)?.outcome;
  assert.deepEqual(outcome("ok"), { result: { sent: true } });
  assert.deepEqual(outcome("none"), { result: null });
  const boom = outcome("boom");
  assert.ok(boom && "error" in boom && boom.retryable);
  assert.match(boom.error, /^TypeError: cannot read the thing\n\nTypeError: cannot read the thing\n {4}at /);
  assert.deepEqual(outcome("later"), { error: "RetryError: rate limited", retryable: true, retryAfterSeconds: 60, requested: true });
  const fatal = outcome("fatal");
  assert.ok(fatal && "error" in fatal && !fatal.retryable);
  assert.match(fatal.error, /^FatalError: bad input\n\n/);
  assert.deepEqual(tokens(source).sort(), ["boom-1", "fatal-1", "later-1", "none-1", "ok-1"]);
});

test("a job of a task it has no handler for is dead-lettered, and each such task named once in a warning", async () => {
  const { loop, source, logger } = scriptedLoop(
    [leased("r1", { task_name: "resize" }), leased("r2", { task_name: "resize" }), leased("th", { task_name: "thumbnail" })],
    { known: () => null },
    { workerId: "w-1" },
  );
  const stopped = loop.start();
  await settle();
  await loop.stop();
  await stopped;
  for (const [id, task] of [["r1", "resize"], ["r2", "resize"], ["th", "thumbnail"]]) {
    assert.deepEqual(source.outcomes.get(id ?? "")?.outcome, {
      error: `no handler for task "${task}" on this worker (it has: known)`,
      retryable: false,
      said: true,
    });
  }
  assert.deepEqual(
    logger.of("warn"),
    [["r1", "resize"], ["th", "thumbnail"]].map(
      ([id, task]) =>
        `worker w-1: leased job ${id} of task "${task}", which this worker has no handler for (it has: known): dead-lettering it ` +
        "(replay it from the dead-letter queue once a worker runs the task); further jobs of that task are not logged again",
    ),
  );
});

test("it logs a startup line, a warning with the stack for each failure, and with logJobs a line per job", async () => {
  const { loop, logger } = scriptedLoop(
    [
      leased("ok1", { task_name: "ok" }),
      leased("boom1", { task_name: "boom", max_retries: 0 }),
      leased("boom2", { task_name: "boom", retry_count: 1, max_retries: 3 }),
      leased("later1", { task_name: "later" }),
    ],
    {
      ok: () => 1,
      boom: () => {
        throw new RangeError("boom");
      },
      later: () => {
        throw new RetryError(5, "not yet");
      },
    },
    { logJobs: true, concurrency: 3, workerId: "w-1", queues: ["mail", "default"] },
  );
  const stopped = loop.start();
  await settle();
  await loop.stop();
  await stopped;
  const info = logger.of("info");
  assert.equal(info[0], "worker w-1: started; queues: mail, default; tasks: boom, later, ok; concurrency 3");
  assert.ok(info.includes("ok job ok1 (delivery 1): completed in 0.000 s"), info.join("\n"));
  assert.ok(info.includes("later job later1 (delivery 1): asked to retry in 5 s after 0.000 s: RetryError: not yet"), info.join("\n"));
  assert.equal(info.at(-1), "worker w-1: stopped");
  const failures = logger.of("warn");
  assert.equal(failures.length, 2, failures.join("\n"));
  assert.match(failures[0] ?? "", /^boom job boom1 \(delivery 1\): failed after 0\.000 s \(dead-lettered: no retries left\): RangeError: boom\n\nRangeError: boom\n {4}at /);
  assert.match(failures[1] ?? "", /^boom job boom2 \(delivery 1\): failed after 0\.000 s \(retry 2 of 3 follows\): RangeError: boom\n/);
});

test("without logJobs, a completed job writes no line", async () => {
  const { loop, source, logger } = scriptedLoop([leased("a")], { t: () => 1 }, { workerId: "w-2" });
  const stopped = loop.start();
  await settle();
  await loop.stop();
  await stopped;
  assert.equal(source.outcomes.size, 1);
  assert.deepEqual(logger.lines, [
    ["info", "worker w-2: started; queues: default; tasks: t; concurrency 10"],
    ["info", "worker w-2: stopped"],
  ]);
});

for (const refusal of [new AuthenticationError(401, "unauthorized", "no such key"), new PermissionDeniedError(403, "forbidden", "a tenant key")]) {
  test(`a refused key (${refusal.name}) stops the loop with one clear error instead of retrying`, async () => {
    const { loop, source, logger, errors, clock } = scriptedLoop([], { t: () => null });
    source.leaseErrors.push(refusal);
    await assert.rejects(loop.start(), (error) => error === refusal);
    await clock.advance(60_000);
    assert.equal(source.asked.length, 1);
    assert.deepEqual(errors, []);
    const lines = logger.of("error");
    assert.equal(lines.length, 1);
    assert.match(lines[0] ?? "", /^worker w: the server refused the worker key \(.*\); stopping\. .*not a tenant API key\.$/);
    await loop.stop(); // already stopped: resolves
    assert.equal(source.closed, 1);
  });
}

test("a lease that fails is told to onError and tried again after 1, 2, 4 … s", async () => {
  const { loop, source, clock, errors } = scriptedLoop([], { t: () => null });
  const away = new Error("the server is away");
  source.leaseErrors.push(away, away, away);
  const stopped = loop.start();
  await clock.advance(7_000);
  assert.deepEqual(source.askedAt, [0, 1_000, 3_000, 7_000]);
  assert.deepEqual(errors, [away, away, away]);
  assert.equal(source.leasing, 1); // the fourth one parked, waiting for work
  await loop.stop();
  await stopped;
});

test("a job delivered again while its earlier delivery runs: the earlier one is aborted and never reported", async () => {
  // What a worker sees when a lease it holds expires and the janitor hands the job to it anew: the same job twice,
  // under two tokens.
  const release = gate();
  const signals: AbortSignal[] = [];
  const { loop, source } = scriptedLoop(
    [leased("a")],
    {
      t: async (_payload, { signal }) => {
        signals.push(signal);
        await release.promise;
        return "done";
      },
    },
    { concurrency: 2 },
  );
  const stopped = loop.start();
  await settle();
  source.deliver(leased("a", { lease_token: "a-2", delivery_count: 2 }));
  await settle();
  assert.equal(signals.length, 2);
  assert.ok(signals[0]?.reason instanceof LeaseLostError, "the earlier delivery's handler is told its lease is lost");
  assert.equal(signals[1]?.aborted, false);
  release.resolve();
  await settle();
  await loop.stop();
  await stopped;
  assert.deepEqual(tokens(source), ["a-2"]);
});

test("a job delivered again while its earlier delivery waits for a slot runs once", async () => {
  const release = gate();
  const ran: string[] = [];
  const { loop, source } = scriptedLoop(
    [leased("x"), leased("a"), leased("a", { lease_token: "a-2", delivery_count: 2 })],
    {
      t: async (_payload, ctx) => {
        ran.push(ctx.job.lease_token);
        await release.promise;
      },
    },
    { concurrency: 1, prefetch: 5 },
  );
  const stopped = loop.start();
  await settle();
  assert.equal(loop.activeJobs, 2); // x running, and only the new delivery of a waiting
  release.resolve();
  await settle();
  await loop.stop();
  await stopped;
  assert.deepEqual(ran, ["x-1", "a-2"]);
  assert.deepEqual(tokens(source), ["x-1", "a-2"]);
});

test("a job's signal aborts with a DeadlineError when its deadline passes", async () => {
  const reasons: unknown[] = [];
  const deadline = new Date(FakeClock.epoch + 500).toISOString();
  const { loop, source, clock } = scriptedLoop([leased("a", { deadline })], {
    t: async (_payload, ctx) => {
      await aborted(ctx.signal);
      reasons.push(ctx.signal.reason);
    },
  });
  const stopped = loop.start();
  await clock.advance(499);
  assert.equal(reasons.length, 0);
  await clock.advance(1);
  assert.ok(reasons[0] instanceof DeadlineError);
  assert.deepEqual(source.outcomes.get("a")?.outcome, { result: null }); // what the handler did next is reported
  await loop.stop();
  await stopped;
});

test("ctx.progress reports through the source; a lost lease answers false and aborts the signal with the source's error", async () => {
  const answers: unknown[] = [];
  const lost = new LeaseLostError(409, "lease_lost", "the job was cancelled");
  const invalid = new ValidationError(400, "validation_error", "too large");
  const s = scriptedLoop([leased("a")], {
    t: async (_payload, ctx) => {
      answers.push(await ctx.progress({ done: 1 }));
      s.source.progressError = invalid;
      answers.push(await ctx.progress({ done: 2 }).catch((error: unknown) => error));
      s.source.progressError = lost;
      answers.push(await ctx.progress({ done: 3 }));
      answers.push(await ctx.progress({ done: 4 })); // lost already: not sent
      answers.push(ctx.signal.reason);
    },
  });
  const stopped = s.loop.start();
  await settle();
  await s.loop.stop();
  await stopped;
  assert.deepEqual(answers, [true, invalid, false, false, lost]);
  assert.deepEqual(s.source.progressed, [["a", { done: 1 }], ["a", { done: 2 }], ["a", { done: 3 }]]);
  assert.deepEqual(s.source.acks, []);
});

test("a job whose handler never reads ctx.signal gets no AbortSignal made for it; one that reads it gets a live one", async () => {
  // Node 20 makes each AbortSignal with Object.setPrototypeOf, and V8 then carries it into the old generation
  // even when it is garbage: one per job filled the old generation of a busy worker (its peak RSS).
  const signals: AbortSignal[] = [];
  const { loop, source } = scriptedLoop(jobs(100, { task_name: "blind" }), {
    blind: async () => null,
    reads: (_payload, ctx) => {
      signals.push(ctx.signal);
      return ctx.signal.aborted;
    },
  });
  const made: AbortController[] = [];
  const Original = globalThis.AbortController;
  globalThis.AbortController = class extends Original {
    constructor() {
      super();
      made.push(this);
    }
  };
  let stopped: Promise<void>;
  try {
    stopped = loop.start();
    await settle();
  } finally {
    globalThis.AbortController = Original;
  }
  assert.equal(source.outcomes.size, 100);
  assert.equal(made.length, 1 + source.asked.length, "one for the loop's stop, one per lease call, none per job");
  source.deliver(leased("r", { task_name: "reads" }));
  await settle();
  assert.deepEqual(source.outcomes.get("r")?.outcome, { result: false });
  assert.equal(signals.length, 1);
  assert.ok(signals[0] instanceof AbortSignal);
  await loop.stop();
  await stopped;
});

test("Node printed no warning in this file", async () => {
  assert.deepEqual(await warnings(), []);
});
