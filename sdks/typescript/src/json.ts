/**
 * The request body, checked before it is sent. `JSON.stringify` turns a `Map` or a `Set` into `{}` and NaN
 * into `null` without a word, drops functions, and throws a bare TypeError on a BigInt; here each of those is an
 * `ArgumentError` that names the value by its path (`payload.tags[1]`) and its type, and no request is made.
 */

import { ArgumentError } from "./errors.js";

/** The body as JSON, or an `ArgumentError` for the first value JSON cannot carry faithfully. */
export function serializeBody(body: unknown): string {
  return toJson(body, "");
}

/** `value` (found at `path`, e.g. `metadata`) as JSON, or an `ArgumentError` naming what JSON cannot carry. */
export function toJson(value: unknown, path: string): string {
  checkJson(value, path);
  return JSON.stringify(value);
}

const HINTS: Record<string, string> = {
  Map: "an object, e.g. Object.fromEntries(value)",
  Set: "an array, e.g. [...value]",
  bigint: "a number or a string, e.g. value.toString()",
};

/**
 * Throws an `ArgumentError` naming the first value (by its path) that JSON cannot carry. Paths are spelled out only
 * in a second walk, once a value failed: spelling one for every value of a valid body (a string each) was most of
 * what a worker's ack cost to serialise. That second walk calls each `toJSON` again.
 */
function checkJson(body: unknown, root: string, named = false): void {
  const values: unknown[] = [body];
  const paths: string[] = [root];
  while (values.length > 0) {
    const value = values.pop();
    const path = paths.pop() ?? root;
    const json = hasToJSON(value) ? value.toJSON() : value; // a Date becomes its ISO string, as JSON.stringify does
    let problem: ArgumentError;
    switch (typeof json) {
      case "string":
      case "boolean":
      case "undefined": // dropped from an object, null in an array: JSON.stringify's own, documented behaviour
        continue;
      case "number":
        if (Number.isFinite(json)) continue;
        problem = new ArgumentError(`${where(path)} is ${json}, which JSON cannot carry: send a finite number or null`);
        break;
      case "object":
        if (json === null) continue;
        if (Array.isArray(json)) {
          for (let index = 0; index < json.length; index++) {
            values.push(json[index]);
            paths.push(named ? `${path}[${index}]` : "");
          }
          continue;
        }
        if (json instanceof Map || json instanceof Set) {
          problem = unsupported(path, json.constructor.name);
          break;
        }
        for (const key in json) {
          if (!Object.hasOwn(json, key)) continue; // JSON.stringify writes own enumerable keys only
          values.push((json as Record<string, unknown>)[key]);
          paths.push(named ? (path ? `${path}.${key}` : key) : "");
        }
        continue;
      default: // bigint, function, symbol
        problem = unsupported(path, typeof json);
    }
    if (named) throw problem;
    checkJson(body, root, true); // throws the same problem with its path spelled out
    throw problem; // only if a toJSON answered differently the second time: the body is refused all the same
  }
}

function unsupported(path: string, kind: string): ArgumentError {
  const hint = HINTS[kind] ?? "a string, number, boolean, null, array or plain object";
  return new ArgumentError(`${where(path)} is a ${kind}, which JSON cannot carry: send ${hint}`);
}

function where(path: string): string {
  return path || "the request body";
}

function hasToJSON(value: unknown): value is { toJSON(): unknown } {
  return typeof value === "object" && value !== null && typeof (value as { toJSON?: unknown }).toJSON === "function";
}
