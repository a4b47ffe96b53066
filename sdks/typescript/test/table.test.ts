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
