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

function checkJson(body: unknown, root: string): void {
  const pending: [unknown, string][] = [[body, root]];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const [value, path] = next;
    const json = hasToJSON(value) ? value.toJSON() : value; // a Date becomes its ISO string, as JSON.stringify does
    switch (typeof json) {
      case "string":
      case "boolean":
      case "undefined": // dropped from an object, null in an array: JSON.stringify's own, documented behaviour
        continue;
      case "number":
        if (!Number.isFinite(json)) throw new ArgumentError(`${where(path)} is ${json}, which JSON cannot carry: send a finite number or null`);
        continue;
      case "object":
        if (json === null) continue;
        if (Array.isArray(json)) {
          json.forEach((item, index) => pending.push([item, `${path}[${index}]`]));
          continue;
        }
        if (json instanceof Map || json instanceof Set) throw unsupported(path, json.constructor.name);
        for (const [key, item] of Object.entries(json)) pending.push([item, path ? `${path}.${key}` : key]);
        continue;
      default: // bigint, function, symbol
        throw unsupported(path, typeof json);
    }
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
