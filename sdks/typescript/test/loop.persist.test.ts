/**
 * The worker loop persists with what it records while the server is away: an ack or a release that fails with no
 * answer or a 5xx is made again, with backoff, as long as a lease it carries could still hold — and no longer; later
 * outcomes wait behind it. Over a scripted source and a clock the tests advance.
 */

import assert from "node:assert/strict";
import { before, test } from "node:test";

import { APIError, ConnectionError, UnavailableError } from "../src/index.js";
import { gate, jobs, loadTracing, scriptedLoop, type ScriptedSource, settle } from "./fakes.js";

before(loadTracing);

const away = () => new ConnectionError("cannot reach QueueFlow: ECONNREFUSED");

/** Acks fail with the next of `failures` while there is one (each call is still recorded in `source.acks`). */
function failing(source: ScriptedSource, failures: unknown[]): void {
  const ack = source.ack.bind(source);
  source.ack = async (outcomes) => {
    await ack(outcomes);
    if (failures.length > 0) throw failures.shift();
  };
}

test("an ack that fails while the server is away is made again until it lands", async () => {
  // Given up at the first failure, the outcome was lost while the lease still held: the job ran again elsewhere.
  const { loop, source, clock, errors } = scriptedLoop(jobs(1), { t: () => "done" }, { leaseMs: 10_000, heartbeatMs: 3_000 });
  failing(source, [away(), new UnavailableError(503, "unavailable", "the database is unavailable"), away()]);
  const stopped = loop.start();
  await settle();
  for (let n = 0; n < 40 && source.acks.length < 4; n += 1) await clock.advance(100);
  assert.deepEqual(
    source.acks.map((batch) => batch.map(({ id }) => id)),
    [["j0"], ["j0"], ["j0"], ["j0"]],
  );
  assert.ok(clock.now() < 3_000, `the last try came at ${clock.now()} ms`); // a restarting server is back in a second or two
  assert.deepEqual(errors, []);
  await loop.stop();
  await stopped;
});

test("it gives up once no lease of the batch could still hold", async () => {
  const { loop, source, clock, errors } = scriptedLoop(jobs(1), { t: () => "done" }, { leaseMs: 10_000, heartbeatMs: 3_000 });
  failing(source, Array.from({ length: 10_000 }, away));
  source.heartbeatError = away(); // no lease is extended: leased at 0, none holds past 10 s
  const stopped = loop.start();
  await settle();
  await clock.advance(9_500);
  assert.equal(errors.length, 3); // the three heartbeats', not yet the ack's
  await clock.advance(1_000);
  assert.equal(errors.length, 4); // and the ack, given up
  const tries = source.acks.length;
  await clock.advance(5_000);
  assert.equal(source.acks.length, tries);
  source.heartbeatError = undefined;
  await loop.stop();
  await stopped;
});

test("a heartbeat that gets through keeps it trying, and an error a repeat cannot change is final", async () => {
  const { loop, source, clock, errors } = scriptedLoop(jobs(2), { t: () => "done" }, {
    leaseMs: 10_000,
    heartbeatMs: 3_000,
    concurrency: 1,
    prefetch: 0,
  });
  const refused = new APIError(400, "validation_error", "bad");
  const failures: unknown[] = [refused, ...Array.from({ length: 10_000 }, away)];
  failing(source, failures);
  const stopped = loop.start();
  await clock.advance(20_000); // twice the lease: the heartbeats hold it
  failures.length = 0; // the server is back
  const tries = source.acks.length;
  await clock.advance(1_000);
  // j0's ack: refused once, never again; j1's: made again past its first lease, then landed.
  assert.deepEqual(errors, [refused]);
  assert.ok(tries > 20, `${tries} acks`);
  assert.deepEqual(source.acks.length, tries + 1);
  assert.deepEqual(
    source.acks.map((batch) => batch.map(({ id }) => id).join()),
    ["j0", ...Array.from({ length: tries }, () => "j1")],
  );
  await loop.stop();
  await stopped;
});

test("a release that fails while the server is away is made again", async () => {
  const hold = gate();
  const { loop, source, clock } = scriptedLoop(jobs(3), { t: () => hold.promise }, { concurrency: 1, prefetch: 2 });
  const release = source.release.bind(source);
  let refusals = 2;
  source.release = async (leases) => {
    if (refusals-- > 0) throw away();
    return release(leases);
  };
  const stopped = loop.start();
  await settle();
  const stopping = loop.stop();
  for (let n = 0; n < 20 && source.released.length === 0; n += 1) await clock.advance(100);
  assert.deepEqual(source.released, ["j1", "j2"]);
  hold.resolve();
  await stopping;
  await stopped;
});

test("a quit gives up at once", async () => {
  const { loop, source, clock } = scriptedLoop(jobs(1), { t: () => "done" }, { leaseMs: 10_000 });
  failing(source, Array.from({ length: 10_000 }, away));
  const stopped = loop.start();
  await settle();
  let done = false;
  const stopping = loop.stop().then(() => (done = true));
  await clock.advance(500);
  assert.equal(done, false); // the ack still tries: the lease may hold for 10 s
  loop.quit();
  await stopping;
  await stopped;
  assert.ok(clock.now() < 1_000);
});
