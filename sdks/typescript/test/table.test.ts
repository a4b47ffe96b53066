/** `Table` (src/table.ts): what the worker relies on of a `Map`, for any string key a server may send. */

import assert from "node:assert/strict";
import { test } from "node:test";

import { Table } from "../src/table.js";

test("set, get, delete and size behave as a Map's, for keys an object would treat specially", () => {
  const table = new Table<string>();
  const keys = ["job_1", "__proto__", "constructor", "toString", "0", "42", ""];
  for (const key of keys) table.set(key, `v${key}`);
  table.set("job_1", "again"); // replacing does not count twice
  assert.equal(table.size, keys.length);
  assert.equal(table.get("job_1"), "again");
  assert.equal(table.get("__proto__"), "v__proto__");
  assert.equal(table.get("hasOwnProperty"), undefined); // no inherited names
  table.delete("__proto__");
  table.delete("absent");
  assert.equal(table.size, keys.length - 1);
  assert.equal(table.get("__proto__"), undefined);
  assert.deepEqual(new Map(table.entries()), new Map(keys.filter((k) => k !== "__proto__").map((k) => [k, k === "job_1" ? "again" : `v${k}`])));
  assert.deepEqual(table.values().sort(), [...new Map(table.entries()).values()].sort());
});

test("a long random run of sets and deletes, growing past its first size, agrees with a Map at every step", () => {
  // A small first size: long probe runs, deletes in their middle (each shifting the run back), and doubling.
  const table = new Table<number>(8);
  const model = new Map<string, number>();
  let seed = 7;
  const random = (below: number) => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return seed % below;
  };
  for (let step = 0; step < 20_000; step++) {
    const key = `job_${random(step < 10_000 ? 64 : 600)}`;
    if (random(3) === 0) {
      table.delete(key);
      model.delete(key);
    } else {
      table.set(key, step);
      model.set(key, step);
    }
    assert.equal(table.size, model.size);
    assert.equal(table.get(key), model.get(key));
  }
  for (let key = 0; key < 600; key++) assert.equal(table.get(`job_${key}`), model.get(`job_${key}`), `job_${key}`);
  assert.deepEqual(new Map(table.entries()), model);
});
